import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// A store built by a workload of varied commits, with the expected contents after each one.
struct RecordedWorkload {
    /// The final file.
    var file: [UInt8]
    /// Per commit: (record start, payload end, record end) in the file.
    var records: [(start: Int, payloadEnd: Int, end: Int)]
    /// Expected KV contents (k → v) after each commit; `expected[0]` is the empty store before commit 1.
    var expected: [[Int64: String]]
    /// The checkpoints' bytes (nodes and checkpoint records) in the file.
    var checkpoints: [Range<Int>] = []
    /// How many set-based updates and batch deletes the commits made.
    var setBasedOperations = 0
    /// How many of those were one-pass deletes of the rows that pass a test (``WriteTransaction/deleteRows(_:where:)``).
    var scanningDeletes = 0

    /// Runs `commits` commits of 1–8 random inserts, updates and deletes of rows up to `maxValue` bytes, and
    /// now and then a set-based update or a batch delete of a random subset of the rows (the paths
    /// `Results.setValue` and `realm.delete(results)` take) or a one-pass delete of the rows that pass a test
    /// (`realm.delete(results)` of a scanning query; always once, five commits before the end), with a
    /// checkpoint after every `checkpointEvery`th commit.
    static func make(
        commits: Int, maxValue: Int, seed: UInt64, checkpointEvery: Int? = nil
    ) async throws -> RecordedWorkload {
        var rng = SplitMix64(seed: seed)
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs)
        var model: [Int64: String] = [:]
        var expected: [[Int64: String]] = [[:]]
        var records: [(Int, Int, Int)] = []
        var end = engine.statistics.totalBytes
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        expected.append(model)
        records.append(
            (Int(end), Int(engine.statistics.totalBytes) - Record.footerSize, Int(engine.statistics.totalBytes)))
        end = engine.statistics.totalBytes
        var nextKey: Int64 = 0
        var checkpoints: [Range<Int>] = []
        var setBased = 0
        var scanningDeletes = 0
        for commit in 1..<commits {
            if let every = checkpointEvery, commit % every == 0 {
                try await engine.checkpoint()
                checkpoints.append(Int(end)..<Int(engine.statistics.totalBytes))
                end = engine.statistics.totalBytes
            }
            let txn = try await engine.beginWrite()
            // The one-pass delete of a scanning query (`realm.delete(results)`): the rows whose key is `r`
            // modulo 3, tested on their bytes. Once for sure among the last 20 commits, where the images are cut.
            func scanningDelete(_ r: Int64) throws {
                let deleted = try txn.deleteRows(table) { row in
                    guard let k = try? row.int64(at: 0, type: .int64, optional: false) else { return false }
                    return k % 3 == r
                }
                let chosen = model.keys.filter { $0 % 3 == r }
                #expect(deleted == chosen.count)
                for k in chosen { model[k] = nil }
                scanningDeletes += 1
            }
            if commit == commits - 5 { try scanningDelete(Int64(commit % 3)) }
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                let value = String(repeating: "abcdefghij", count: Int.random(in: 0...maxValue / 10, using: &rng))
                switch Int.random(in: 0..<11, using: &rng) {
                case 10 where model.count > 1:
                    setBased += 1
                    let variant = Int.random(in: 0..<3, using: &rng)
                    if variant == 2 {
                        try scanningDelete(Int64.random(in: 0..<3, using: &rng))
                        continue
                    }
                    // By key, on every third row or so.
                    let chosen = model.keys.sorted().filter { _ in Int.random(in: 0..<3, using: &rng) == 0 }
                    var keys: [ObjectKey] = []
                    for k in chosen { keys.append(try #require(txn.object(table, primaryKey: .int(k)))) }
                    if variant == 0 {
                        try txn.update(table, keys: keys, column: 1, to: .string(value + "*"))
                        for k in chosen { model[k] = value + "*" }
                    } else {
                        try txn.delete(table, keys: keys)
                        for k in chosen { model[k] = nil }
                    }
                case 6..<8 where !model.isEmpty:
                    let k = model.keys.sorted()[Int.random(in: 0..<model.count, using: &rng)]
                    let object = try #require(txn.object(table, primaryKey: .int(k)))
                    try txn.update(table, object, [(1, .string(value + "!"))])
                    model[k] = value + "!"
                case 8..<10 where !model.isEmpty:
                    let k = model.keys.sorted()[Int.random(in: 0..<model.count, using: &rng)]
                    try txn.delete(table, try #require(txn.object(table, primaryKey: .int(k))))
                    model[k] = nil
                default:
                    nextKey += 1
                    try txn.insert(table, [.int(nextKey), .string(value)])
                    model[nextKey] = value
                }
            }
            try await txn.commit()
            let newEnd = engine.statistics.totalBytes
            // Updates that changed nothing write no record and take no version (a seed can draw only those).
            if newEnd == end { continue }
            records.append((Int(end), Int(newEnd) - Record.footerSize, Int(newEnd)))
            end = newEnd
            expected.append(model)
        }
        // The engine is still open, so the file ends with the zeros its commits reserve ahead; the images
        // are cut from the records (a zero-filled image is the same zeros, after a cut).
        let onDisk = try #require(fs.contents(of: "/db/test.store"))
        #expect(onDisk.count > Int(end), "durable commits reserve space after the last record")
        #expect(onDisk[Int(end)...].allSatisfy { $0 == 0 }, "the reserved space is zeros")
        return RecordedWorkload(
            file: Array(onDisk[..<Int(end)]), records: records, expected: expected, checkpoints: checkpoints,
            setBasedOperations: setBased, scanningDeletes: scanningDeletes)
    }
}

@Suite("Crash recovery")
struct CrashRecoveryTests {
    /// The KV contents of an engine.
    static func kvContents(_ engine: StorageEngine) throws -> [Int64: String] {
        let snapshot = try engine.snapshot()
        guard let table = snapshot.tableID(named: "KV") else { return [:] }
        // Recovery rebuilt the primary-key index by replay: its row locations must be the rows'.
        let problems = primaryIndexLocationProblems(snapshot.state)
        #expect(problems.isEmpty, "\(problems.prefix(3))")
        var result: [Int64: String] = [:]
        for (key, _) in snapshot.keys(table) {
            guard case .int(let k) = try snapshot.value(table, key, column: 0),
                case .string(let v) = try snapshot.value(table, key, column: 1)
            else { Issue.record("bad row"); continue }
            result[k] = v
        }
        return result
    }

    /// Where the crash images are cut, in the last 20 records: at every byte with `ACTORSTORE_EXHAUSTIVE=1`;
    /// else in each record at its first bytes, its length and checksum fields, the edges of its header, payload
    /// and footer, a random payload offset and a random offset anywhere in the record.
    static func crashCuts(_ workload: RecordedWorkload, exhaustive: Bool, seed: UInt64) -> [Int] {
        let tail = workload.records.suffix(20)
        if exhaustive { return Array(tail.first!.start..<workload.file.count) }
        var rng = SplitMix64(seed: seed ^ 0x5A3B_1ED)
        var cuts = Set<Int>()
        for record in tail {
            let payload = record.start + Record.headerSize
            let footer = record.payloadEnd
            // Header: magic, length, CRCs, last byte; payload: first, last byte; footer: length, CRCs, last byte.
            var edges = [0, 1, 8, 16, 20, Record.headerSize - 1].map { record.start + $0 }
            edges += [payload, footer - 1]
            edges += [0, 8, 12, Record.footerSize - 1].map { footer + $0 }
            edges.append(Int.random(in: payload..<max(payload + 1, footer), using: &rng))
            edges.append(Int.random(in: record.start..<record.end, using: &rng))
            cuts.formUnion(edges.filter { $0 >= record.start && $0 < record.end })
        }
        // Checkpoints between them: the edges of their two records and a few bytes inside.
        for range in workload.checkpoints where range.lowerBound >= tail.first!.start {
            cuts.formUnion([range.lowerBound, range.lowerBound + 1, range.upperBound - 1])
            for _ in 0..<4 { cuts.insert(Int.random(in: range, using: &rng)) }
        }
        return cuts.sorted()
    }

    @Test(
        "crash points in the last 20 records (every byte with ACTORSTORE_EXHAUSTIVE=1) recover the committed prefix",
        arguments: StorageKind.allCases)
    func everyByteOffset(kind: StorageKind) async throws {
        try await kind.run {
            let seed = testSeed("crash points")
            // Checkpoints among the commits: images are cut inside their records too.
            let workload = try await RecordedWorkload.make(commits: 60, maxValue: 120, seed: seed, checkpointEvery: 7)
            #expect(workload.checkpoints.count >= 2)
            #expect(workload.setBasedOperations > 0, "the commits include set-based updates and batch deletes")
            #expect(workload.scanningDeletes > 0, "and one-pass deletes of the rows that pass a test")
            let cuts = Self.crashCuts(workload, exhaustive: TestDepth.exhaustive, seed: seed)
            print(
                "[crash points] \(cuts.count) cut offsets in the last 20 records"
                    + (TestDepth.exhaustive
                        ? " (every byte)" : " (sampled; ACTORSTORE_EXHAUSTIVE=1 cuts at every byte)"))
            // The cuts are independent: one task per processor takes every n-th (the exhaustive run is some
            // 19,000 cuts, three images each).
            let workers = max(2, ProcessInfo.processInfo.activeProcessorCount)
            let (recovered, images) = await withTaskGroup(of: (recovered: Int, images: Int).self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        var total = (recovered: 0, images: 0)
                        for index in stride(from: worker, to: cuts.count, by: workers) {
                            let part = await Self.recoverImages(cutAt: cuts[index], of: workload, seed: seed)
                            total.recovered += part.recovered
                            total.images += part.images
                        }
                        return total
                    }
                }
                return await group.reduce(into: (recovered: 0, images: 0)) { total, part in
                    total.recovered += part.recovered
                    total.images += part.images
                }
            }
            print("[crash points] \(recovered)/\(images) images recovered")
            #expect(recovered == images)
            #expect(images == 3 * cuts.count)
            #expect(cuts.count >= 20 * (TestDepth.exhaustive ? Record.overhead : 11))
        }
    }

    /// Opens the three images of `workload` cut at `cut` — truncated there, and filled from there to the end
    /// with zeros or with random bytes — and checks that each recovers exactly its committed prefix. One of
    /// the three (in turn, by cut) then takes a new commit that must survive a reopen. Returns how many
    /// images recovered, of how many.
    static func recoverImages(
        cutAt cut: Int, of workload: RecordedWorkload, seed: UInt64
    ) async -> (recovered: Int, images: Int) {
        var rng = SplitMix64(seed: seed ^ 0xC0FFEE ^ UInt64(cut))
        let prefix = Array(workload.file[..<cut])
        let tailLength = workload.file.count - cut
        let random = (0..<tailLength).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var recovered = 0
        let images = [
            ("truncated", prefix), ("zero-filled", prefix + [UInt8](repeating: 0, count: tailLength)),
            ("random-filled", prefix + random),
        ]
        for (index, (kind, image)) in images.enumerated() {
            // The committed prefix: the leading records whose header and payload bytes are intact in the
            // image (a fill can rewrite bytes that were zero anyway: then the record is intact).
            let committed = workload.records.prefix { record in
                record.payloadEnd <= image.count
                    && image[record.start..<record.payloadEnd] == workload.file[record.start..<record.payloadEnd]
            }.count
            let fs = MemoryFileSystem(files: ["/db/test.store": image])
            do {
                let engine = try await memoryEngine(fs)
                let contents = try Self.kvContents(engine)
                guard contents == workload.expected[committed], engine.latestVersion == Version(UInt64(committed))
                else {
                    Issue.record(
                        "\(kind) image cut at \(cut): expected commit \(committed), got \(engine.latestVersion)")
                    continue
                }
                // A new commit works and survives a reopen.
                if committed > 0 && index == cut % images.count {
                    let table = try #require(try engine.snapshot().tableID(named: "KV"))
                    _ = try await engine.write { txn in
                        try txn.insert(table, [.int(-1), .string("after crash")])
                    }
                    await engine.close()
                    let reopened = try await memoryEngine(fs.powerLossImage())
                    #expect(try Self.kvContents(reopened)[-1] == "after crash")
                }
                recovered += 1
            } catch {
                Issue.record("\(kind) image cut at \(cut) failed to open: \(error)")
            }
        }
        return (recovered, images.count)
    }

    @Test(
        "in a store with checkpoints, every single-bit flip is found: at open, or by verify()",
        arguments: StorageKind.allCases)
    func bitFlipsWithCheckpoints(kind: StorageKind) async throws {
        try await kind.run {
            let seed = testSeed("bit flips, checkpoints")
            let workload = try await RecordedWorkload.make(commits: 12, maxValue: 60, seed: seed, checkpointEvery: 4)
            #expect(workload.checkpoints.count == 2)
            let lastFooter = workload.records.last!.payloadEnd
            var atOpen = 0
            var byVerify = 0
            var repaired = 0
            var flips = 0
            var rng = SplitMix64(seed: seed)
            for byte in FileHeader.size..<workload.file.count {
                // One random bit of each byte by default, all eight with ACTORSTORE_EXHAUSTIVE=1.
                let bits = TestDepth.exhaustive ? Array(0..<8) : [Int.random(in: 0..<8, using: &rng)]
                for bit in bits {
                    flips += 1
                    var image = workload.file
                    image[byte] ^= 1 << bit
                    let fs = MemoryFileSystem(files: ["/db/test.store": image])
                    let engine: StorageEngine
                    do {
                        engine = try await memoryEngine(fs)
                    } catch let error as StorageError {
                        // With an offset, except for a row that a commit replayed after the checkpoint reads (an
                        // update's old row): its record lies before the checkpoint and was not checked at open.
                        #expect(error.code == .corrupted, "flip at \(byte):\(bit): \(error)")
                        atOpen += 1
                        continue
                    }
                    if byte >= lastFooter {
                        // The last record's footer: the data is intact and the footer is rewritten.
                        #expect(engine.recoveryReport.repairedFooterAt == UInt64(lastFooter))
                        #expect(try Self.kvContents(engine) == workload.expected.last!)
                        repaired += 1
                        continue
                    }
                    // Open trusted what lies before the checkpoint it started from; verify() reads it all.
                    #expect(engine.recoveryReport.checkpointVersion != nil, "flip at \(byte):\(bit) opened without it")
                    do throws(StorageError) {
                        try engine.verify()
                        Issue.record("flip at \(byte):\(bit) was not found")
                    } catch {
                        #expect(error.code == .corrupted && error.offset != nil, "flip at \(byte):\(bit): \(error)")
                        byVerify += 1
                    }
                }
            }
            print(
                "[bit flips, checkpoints] \(atOpen) at open, \(byVerify) by verify(), \(repaired) footers repaired, of \(flips)"
            )
            #expect(atOpen + byVerify + repaired == flips)
            #expect(atOpen > 0 && byVerify > 0)
        }
    }

    @Test("every single-bit flip in committed records is detected with its offset", arguments: StorageKind.allCases)
    func bitFlips(kind: StorageKind) async throws {
        try await kind.run {
            let seed = testSeed("bit flips")
            let workload = try await RecordedWorkload.make(commits: 12, maxValue: 60, seed: seed)
            var detected = 0
            var repaired = 0
            var flips = 0
            let lastFooter = workload.records.last!.payloadEnd
            // Every byte of every record; two random bits of each by default, all eight with ACTORSTORE_EXHAUSTIVE=1.
            let exhaustive = TestDepth.exhaustive
            var rng = SplitMix64(seed: seed)
            for byte in FileHeader.size..<workload.file.count {
                let first = Int.random(in: 0..<8, using: &rng)
                let bits = exhaustive ? Array(0..<8) : [first, (first + Int.random(in: 1..<8, using: &rng)) % 8]
                for bit in bits {
                    flips += 1
                    var image = workload.file
                    image[byte] ^= 1 << bit
                    let fs = MemoryFileSystem(files: ["/db/test.store": image])
                    do {
                        let engine = try await memoryEngine(fs)
                        // Only a flip in the last record's footer opens: the data is intact and the footer is rewritten.
                        #expect(byte >= lastFooter, "flip at \(byte):\(bit) was not detected")
                        #expect(engine.recoveryReport.repairedFooterAt == UInt64(lastFooter))
                        #expect(try Self.kvContents(engine) == workload.expected.last!)
                        repaired += 1
                    } catch let error as StorageError {
                        #expect(error.code == .corrupted)
                        #expect(error.offset != nil)
                        #expect(fs.contents(of: "/db/test.store") == image, "a corrupt file must not be modified")
                        detected += 1
                    }
                }
            }
            print("[bit flips] \(detected) detected as corruption, \(repaired) repaired footer flips, of \(flips)")
            #expect(detected + repaired == flips)
            #expect(repaired == Record.footerSize * (exhaustive ? 8 : 2))
        }
    }
}
