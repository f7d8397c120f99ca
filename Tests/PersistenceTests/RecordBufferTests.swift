import ActorStoreTestSupport
import Testing

@testable import ActorStorePersistence

@Suite("Record buffer")
struct RecordBufferTests {
    @Test("Bytes survive growth through many doublings (realloc), appends of integers and raw bytes, truncation")
    func growthKeepsBytes() {
        var rng = SplitMix64(seed: testSeed("RecordBuffer.growthKeepsBytes"))
        let buffer = RecordBuffer(capacity: 64)
        var expected: [UInt8] = []
        // Past 8 MiB: `malloc` serves the larger sizes with their own mappings, which `realloc` remaps.
        while expected.count < 9 << 20 {
            switch rng.next() % 4 {
            case 0:
                let value = UInt32(truncatingIfNeeded: rng.next())
                buffer.append(value)
                withUnsafeBytes(of: value.littleEndian) { expected.append(contentsOf: $0) }
            case 1:
                let value = rng.next()
                buffer.append(value)
                withUnsafeBytes(of: value.littleEndian) { expected.append(contentsOf: $0) }
            case 2:
                let chunk = (0..<Int(rng.next() % 70_000)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                buffer.append(chunk)
                expected += chunk
            default:
                let cut = Int(rng.next() % 100)
                buffer.truncate(to: expected.count - min(cut, expected.count))
                expected.removeLast(min(cut, expected.count))
            }
            #expect(buffer.count == expected.count)
        }
        #expect(Array(buffer.bytes) == expected)
        #expect(Int(bitPattern: buffer.bytes.baseAddress) & 15 == 0, "16-byte aligned")
        let middle = expected.count / 2
        #expect(Array(buffer.bytes(at: middle, count: 1000)) == Array(expected[middle..<middle + 1000]))
    }

    @Test("A record framed in place (a checkpoint's nodes) has the bytes of one framed around a copy of its body")
    func framingInPlaceMatchesFraming() {
        var rng = SplitMix64(seed: testSeed("RecordBuffer.framingInPlace"))
        for length in [0, 1, 7, 4096, 100_003] {
            let body = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let watermark = rng.next()
            var copied: [UInt8] = []
            body.withUnsafeBytes { Record.frame(kind: .nodes, payload: $0, watermark: watermark, into: &copied) }
            var writer = ByteWriter(reservingPrefix: Record.headerSize + Record.watermarkSize)
            #expect(writer.count == 0, "the reserved prefix is not content")
            writer.append(body)
            #expect(writer.count == length)
            var inPlace = writer.bytes
            Record.frameInPlace(kind: .nodes, watermark: watermark, &inPlace)
            #expect(inPlace == copied, "length \(length)")
            let header = inPlace.withUnsafeBytes { Record.parseHeader($0) }
            #expect(header?.length == UInt64(length + Record.watermarkSize))
        }
    }

    @Test("a write transaction builds its record in the last one's buffer; a big one goes after a small transaction")
    func buffersAreRecycled() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs)
        let world = try await FaultInjectionTests.seed(engine)
        let text = String(repeating: "x", count: 200)
        // A big transaction, rolled back: its buffer is kept, and none of its operations reach the next record.
        await #expect(throws: CancellationError.self) {
            _ = try await engine.write { txn in
                for i in 0..<10_000 { try txn.insert(world.kv, [.int(Int64(100_000 + i)), .string(text)]) }
                throw CancellationError()
            }
        }
        let spare = try #require(engine.core.withLock { $0.spareBuffer })
        #expect(spare.capacity >= 2 << 20)
        // A big transaction in it: kept again.
        let (bigBuffer, _) = try await engine.write { txn in
            for i in 0..<10_000 { try txn.insert(world.kv, [.int(Int64(200_000 + i)), .string(text)]) }
            return ObjectIdentifier(txn.buffer)
        }
        #expect(bigBuffer == ObjectIdentifier(spare))
        #expect(engine.core.withLock { $0.spareBuffer }.map(ObjectIdentifier.init) == bigBuffer)
        // A small one in it too, after which it is given back (under a sixteenth of it used).
        let (smallBuffer, _) = try await engine.write { txn in
            try txn.insert(world.kv, [.int(300_000), .string("small")])
            return ObjectIdentifier(txn.buffer)
        }
        #expect(smallBuffer == bigBuffer)
        #expect(engine.core.withLock { $0.spareBuffer } == nil)

        let expected = try CompactionTests.Dump(engine.snapshot())
        let crashed = try await memoryEngine(fs.powerLossImage())
        #expect(try CompactionTests.Dump(crashed.snapshot()) == expected)
        let snapshot = try crashed.snapshot()
        #expect(snapshot.object(world.kv, primaryKey: .int(100_000)) == nil)
        #expect(snapshot.object(world.kv, primaryKey: .int(209_999)) != nil)
        #expect(snapshot.object(world.kv, primaryKey: .int(300_000)) != nil)
        try crashed.verify()
        await crashed.close()
        await engine.close()
    }
}
