import Dispatch
import Foundation
import Testing

@testable import ActorStorePersistence

/// A write transaction with a large record writes its finished part to the file while it goes on
/// (`RecordStream`). The file a streamed commit leaves is the file an unstreamed one leaves, and a
/// transaction that does not commit leaves nothing behind. (Faults and crashes during the streaming:
/// `FaultInjectionTests.streamedCommitFaults`.)
@Suite struct RecordStreamTests {
    static let path = "/db/test.store"

    /// 2,000 rows of about 100 bytes (about 250 KB of record), in one transaction.
    static func bulk(_ txn: WriteTransaction, _ table: TableID, from start: Int = 0) throws {
        for i in start..<(start + 2000) {
            try txn.insert(table, [.int(Int64(i)), .string("row \(i) " + String(repeating: "x", count: 90))])
        }
    }

    @Test("a streamed commit leaves the same file as one written at commit", arguments: [4096, 1 << 16, nil])
    func streamedCommitWritesTheSameFile(chunk: Int?) async throws {
        func image(chunk: Int?) async throws -> ([UInt8], CompactionTests.Dump) {
            let fs = MemoryFileSystem(tracksDurability: true)
            // Without syncs, the records' durability watermarks do not depend on when a sync finished.
            let engine = try await memoryEngine(
                fs, path: Self.path, durability: .none, reservedSpace: 0, checkpoints: false, recordStreamChunk: chunk)
            let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
            _ = try await engine.write { txn in try Self.bulk(txn, table) }
            // Updates and deletes of rows of the record being streamed, and of rows in the file.
            _ = try await engine.write { txn in
                try Self.bulk(txn, table, from: 2000)
                for i in stride(from: 0, to: 4000, by: 7) {
                    let key = try #require(txn.object(table, primaryKey: .int(Int64(i))))
                    if i % 2 == 0 {
                        try txn.update(table, key, [(1, .string("updated \(i)"))])
                    } else {
                        try txn.delete(table, key)
                    }
                }
            }
            let dump = try CompactionTests.Dump(engine.snapshot())
            let file = try #require(fs.contents(of: Self.path))
            await engine.close()
            // The store reopens to the same contents, replaying every record, with no torn tail.
            let reopened = try await memoryEngine(fs.processCrashImage(), path: Self.path, checkpoints: false)
            #expect(try CompactionTests.Dump(reopened.snapshot()) == dump)
            #expect(reopened.recoveryReport.truncatedBytes == 0)
            #expect(reopened.recoveryReport.recordsReplayed == 3)
            await reopened.close()
            return (file, dump)
        }
        // (A file's header holds a random identity: the files are compared past it.)
        let (unstreamed, expected) = try await image(chunk: nil)
        let (streamed, found) = try await image(chunk: chunk)
        #expect(found == expected)
        #expect(streamed.count == unstreamed.count)
        let same = streamed.dropFirst(FileHeader.size) == unstreamed.dropFirst(FileHeader.size)
        #expect(same, "the records differ")
    }

    @Test("a streamed transaction that rolls back cuts the file back to where its record would start")
    func rollbackCutsTheFileBack() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs, path: Self.path, reservedSpace: 0, recordStreamChunk: 4096)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await engine.write { txn in try txn.insert(table, [.int(-1), .string("kept")]) }
        let before = try #require(fs.contents(of: Self.path))

        let txn = try await engine.beginWrite()
        try Self.bulk(txn, table)
        // The chunks reach the file while the transaction is open.
        await txn.buffer.recordStream?.drain()
        #expect(try #require(fs.contents(of: Self.path)).count > before.count + 100_000)
        txn.rollback()

        // The next writer starts once the file is cut back.
        let next = try await engine.beginWrite()
        #expect(try #require(fs.contents(of: Self.path)) == before)
        try next.insert(table, [.int(-2), .string("next")])
        try await next.commit()
        #expect(try engine.snapshot().count(table) == 2)
        await engine.close()
        let reopened = try await memoryEngine(fs.powerLossImage(), path: Self.path)
        #expect(try reopened.snapshot().count(table) == 2)
        #expect(reopened.recoveryReport.truncatedBytes == 0)
        await reopened.close()
    }

    @Test("a streamed transaction dropped unfinished leaves nothing behind")
    func droppedTransactionCutsTheFileBack() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs, path: Self.path, reservedSpace: 0, recordStreamChunk: 4096)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        let before = try #require(fs.contents(of: Self.path))
        do {
            let txn = try await engine.beginWrite()
            try Self.bulk(txn, table)
        }
        let next = try await engine.beginWrite()
        #expect(try #require(fs.contents(of: Self.path)) == before)
        next.rollback()
        await engine.close()
    }

    /// While another engine has the file open, it must not shrink (under that engine's mapping): the bytes
    /// streamed are overwritten with zeros instead, which are no record, and the next commit goes where the
    /// record would have started.
    @Test("with another engine on the file, a rollback writes zeros over what it streamed")
    func rollbackBesideAReaderWritesZeros() async throws {
        let directory = NSTemporaryDirectory() + "actorstore-stream-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/test.store"
        var configuration = StorageEngine.Configuration(path: path, durability: .full)
        configuration.recordStreamChunk = 4096
        let writer = try await StorageEngine.open(configuration)
        let (table, _) = try await writer.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await writer.write { txn in try txn.insert(table, [.int(-1), .string("kept")]) }
        let reader = try await StorageEngine.open(.init(path: path, readOnly: true))
        #expect(try reader.snapshot().count(table) == 1)
        let end = writer.core.withLock { $0.appendedEnd }

        let txn = try await writer.beginWrite()
        try Self.bulk(txn, table)
        txn.rollback()
        let next = try await writer.beginWrite()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.count > Int(end) + 100_000, "the file did not shrink")
        #expect(bytes[Int(end)...].allSatisfy { $0 == 0 }, "the streamed bytes are zeros")
        try next.insert(table, [.int(-2), .string("next")])
        try await next.commit()
        #expect(try reader.snapshot().count(table) == 2)
        await reader.close()
        await writer.close()

        let reopened = try await StorageEngine.open(.init(path: path))
        #expect(try reopened.snapshot().count(table) == 2)
        await reopened.close()
    }

    /// A truncation below what was streamed (an operation undone after its bytes went out) moves the buffer:
    /// a chunk write still waiting (behind a held one) reads the old memory, and gets the bytes it was asked to
    /// write; the bytes written after the truncation go to the new memory, and the file ends up holding the
    /// buffer's final bytes. (Written over in place instead, the waiting write would carry the new bytes.)
    @Test("a record buffer truncated below what it streamed streams its new bytes")
    func truncationBelowTheStreamedPart() async throws {
        let fs = GatedFileSystem(base: MemoryFileSystem())
        let file = try fs.open("/f", create: true, readOnly: false)
        let stream = RecordStream(fs: fs, file: file, recordStart: 100)
        let buffer = RecordBuffer(capacity: 64)
        for i in 0..<1000 { buffer.append(UInt32(i)) }
        fs.holdFirstWrite()
        buffer.stream(to: stream, from: 0)
        await fs.waitUntilHeld()
        for i in 1000..<2000 { buffer.append(UInt32(i)) }
        buffer.stream(to: stream, from: 0)
        #expect(buffer.streamed == 8000)
        let secondChunk = Array(buffer.bytes(at: 4000, count: 4000))
        buffer.truncate(to: 3000)
        #expect(buffer.streamed == 3000)
        #expect(stream.checksum(from: 0) == nil, "bytes streamed and checksummed will change")
        for i in 0..<5000 { buffer.append(UInt32(0xABCD_0000 + i)) }  // grows: moves again
        buffer.stream(to: stream, from: 0)
        fs.release()
        await stream.drain()
        #expect(stream.failure == nil)
        #expect(stream.furthest == 23_000)
        // The second chunk's write waited behind the held one, and read its memory after the truncation.
        #expect(fs.writes.map(\.offset) == [100, 4100, 3100])
        #expect(fs.writes.count == 3 && fs.writes[1].bytes == secondChunk, "a write got the bytes it was asked for")
        let written = try #require(fs.base.contents(of: "/f"))
        #expect(Array(written[100..<(100 + buffer.count)]) == Array(buffer.bytes))
        buffer.detachStream()
        #expect(buffer.streamed == 0)
    }

    @Test("a stream checksums the run of bytes it wrote")
    func streamChecksum() async throws {
        let fs = MemoryFileSystem()
        let stream = RecordStream(fs: fs, file: try fs.open("/f", create: true, readOnly: false), recordStart: 0)
        let buffer = RecordBuffer(capacity: 64)
        for i in 0..<1000 { buffer.append(UInt32(i)) }
        buffer.stream(to: stream, from: 8)
        for i in 1000..<2000 { buffer.append(UInt32(i)) }
        buffer.stream(to: stream, from: 8)
        await stream.drain()
        let run = try #require(stream.checksum(from: 8), "one run from 8")
        #expect(run.end == 8000)
        #expect(run.crc.value == CRC32C.checksum(buffer.bytes(at: 8, count: 7992)))
        #expect(stream.checksum(from: 0) == nil, "the run starts at 8")
        buffer.detachStream()
    }

    @Test("a tail of zeros is told from one with a byte that is not")
    func zeroCheck() {
        for length in [0, 1, 7, 8, 9, 511, 512, 513, 4096, 100_003] {
            var bytes = [UInt8](repeating: 0, count: length)
            #expect(bytes.withUnsafeBytes { StorageEngine.isZero($0) }, "\(length) zeros")
            for position in Set([0, length / 2, length - 1]) where position >= 0 && position < length {
                bytes[position] = 0x40
                #expect(!bytes.withUnsafeBytes { StorageEngine.isZero($0) }, "\(length) bytes, one at \(position)")
                bytes[position] = 0
            }
        }
    }

    @Test("the checksum of two runs of bytes combines into the checksum of both")
    func checksumsCombine() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 7, 8, 9, 100, 4096, 70_000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for split in Set([0, length / 3, length / 2, length, max(0, length - 1)]) where split <= length {
                let a = CRC32C.checksum(Array(bytes[..<split]))
                let b = CRC32C.checksum(Array(bytes[split...]))
                #expect(
                    CRC32C.combine(a, b, lengthOfB: length - split) == CRC32C.checksum(bytes),
                    "\(length) bytes split at \(split)")
            }
        }
    }
}

/// Records every write (offset and bytes, as the write read them); when armed, holds the first write until
/// released.
private final class GatedFileSystem: ForwardingFileSystem, @unchecked Sendable {
    // Safety (`@unchecked Sendable`): `recorded` and `armed` are `Locked`; the semaphores are thread-safe.
    let base: MemoryFileSystem
    var forwardee: any FileSystem { base }
    private let recorded = Locked<[(offset: UInt64, bytes: [UInt8])]>([])
    private let armed = Locked(false)
    private let held = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(base: MemoryFileSystem) { self.base = base }

    var writes: [(offset: UInt64, bytes: [UInt8])] { recorded.withLock { $0 } }
    func holdFirstWrite() { armed.withLock { $0 = true } }
    func release() { released.signal() }
    /// Returns once the write is held (waiting on a Dispatch thread).
    func waitUntilHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.held.wait()
                continuation.resume()
            }
        }
    }

    func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) -> Int {
        let hold = armed.withLock { armed in
            defer { armed = false }
            return armed
        }
        if hold {
            held.signal()
            released.wait()
        }
        recorded.withLock { $0.append((offset, Array(bytes))) }
        return try base.write(file, bytes, at: offset)
    }
}
