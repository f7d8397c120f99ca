import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// Power-loss simulation: stores written through a ``MemoryFileSystem`` that records every write since the
/// last sync are cut at random system calls into images where each 4 KiB page written since that sync
/// holds any of its versions (``MemoryFileSystem/pagedPowerLossImage(using:pageSize:)``): the unordered
/// write-back of a kernel losing power. Every image must open, hold every acknowledged commit, and equal the
/// store after exactly the commits it recovered (no partial transaction).
///
/// The default run checks at least 210 images over three workloads; `ACTORSTORE_LONG=1` checks at least
/// 2,100. Replay a run with the seed it prints (`ACTORSTORE_SEED`).
@Suite("Power loss", .tags(.reliabilityCampaign))
struct PowerLossTests {
    enum Workload: String, CaseIterable, CustomStringConvertible {
        /// One writer, one small commit at a time.
        case serial
        /// Four writers at once: records appended while a sync runs (group commit).
        case groupCommit
        /// Records of 150 KiB to 1.5 MiB, spanning many pages (the large-record append path above 1 MiB).
        case largeRecords
        var description: String { rawValue }
    }

    @Test(
        "every page-granular power-loss image opens with every acknowledged commit and no partial one",
        arguments: Workload.allCases)
    func imagesRecover(_ workload: Workload) async throws {
        let seed = testSeed("power loss \(workload)")
        var rng = SplitMix64(seed: seed)
        let wanted = TestDepth.long ? 700 : 70
        var checked = 0
        var discarded = 0
        var cutRecords = 0
        var round = 0
        while checked < wanted {
            round += 1
            let result = try await Self.round(workload, seed: rng.next())
            checked += result.images
            discarded += result.discardedRecords
            cutRecords += result.cutImages
        }
        print(
            "[power loss \(workload)] \(checked) images in \(round) rounds: all opened with every acknowledged "
                + "commit; \(cutRecords) cut a torn tail, \(discarded) complete unacknowledged records went with it")
        #expect(checked >= wanted)
    }

    /// A record starting 1 to 3 bytes before a sector boundary, whose first sector a power loss did not
    /// write, keeps only those 1 to 3 zeros of its magic there while the rest of it, and a record after it,
    /// reached the disk (found by `imagesRecover(.groupCommit)`: such an image did not open). Nothing
    /// vouches for it, so it is a torn tail, not damage; zeros anywhere else in a header still are damage.
    @Test(arguments: [1, 2, 3])
    func aRecordTornInItsFirstBytesIsATornTail(_ zeros: Int) throws {
        var file: [UInt8] = []
        func record(_ count: Int) {
            let payload = [UInt8](repeating: 7, count: count)
            payload.withUnsafeBytes { Record.frame(kind: .commit, payload: $0, into: &file) }
        }
        record(1024 - zeros - Record.overhead)  // the next record starts `zeros` bytes before offset 1024
        let torn = file.count
        #expect(torn == 1024 - zeros)
        record(100)
        record(100)
        for i in torn..<(torn + zeros) { file[i] = 0 }
        let outcome = try file.withUnsafeBytes { bytes in
            try LogScanner.scan(bytes, from: 0, path: "/db/test.store") { _ in }
        }
        #expect(outcome.validEnd == torn)
        #expect(outcome.tornTailAt == torn)
        #expect(outcome.discardedRecords == 1)

        // The same zeros where the header does not cross a sector boundary: damage, not a torn write.
        var damaged: [UInt8] = []
        file = []
        record(600)
        let start = file.count
        record(100)
        record(100)
        damaged = file
        for i in start..<(start + zeros) { damaged[i] = 0 }
        #expect(throws: StorageError.self) {
            try damaged.withUnsafeBytes { bytes in
                try LogScanner.scan(bytes, from: 0, path: "/db/test.store") { _ in }
            }
        }
    }

    /// One store, one workload, images taken at random system calls, then each image checked.
    static func round(
        _ workload: Workload, seed: UInt64
    ) async throws -> (images: Int, discardedRecords: Int, cutImages: Int) {
        let memory = MemoryFileSystem(tracksDurability: true)
        let probability: Double =
            switch workload {
            case .serial: 0.12
            case .groupCommit: 0.06
            case .largeRecords: 0.3
            }
        let recorder = ImageRecorder(base: memory, seed: seed, probability: probability)
        let engine = try await memoryEngine(recorder, reservedSpace: 16 << 10)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        let log = TransactionLog()
        switch workload {
        case .serial:
            try await writer(
                0, engine, table, commits: 30, valueSize: 20...300, log: log, recorder: recorder, seed: seed)
        case .groupCommit:
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<4 {
                    group.addTask {
                        try await writer(
                            w, engine, table, commits: 12, valueSize: 20...600, log: log, recorder: recorder,
                            seed: seed &+ UInt64(w))
                    }
                }
                try await group.waitForAll()
            }
        case .largeRecords:
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<2 {
                    group.addTask {
                        try await writer(
                            w, engine, table, commits: 3, valueSize: 150_000...1_500_000, log: log,
                            recorder: recorder, seed: seed &+ UInt64(w))
                    }
                }
                try await group.waitForAll()
            }
        }
        await engine.close()
        let transactions = log.all
        var discarded = 0
        var cut = 0
        let images = recorder.images
        for (index, image) in images.enumerated() {
            let engine: StorageEngine
            do {
                engine = try await memoryEngine(image.fileSystem)
            } catch {
                Issue.record("\(workload) seed \(seed) image \(index) did not open: \(error)")
                continue
            }
            let version = engine.latestVersion
            if let newest = image.acknowledged.max(), newest > version {
                Issue.record(
                    "\(workload) seed \(seed) image \(index): acknowledged \(newest) lost, recovered \(version)")
            }
            var expected: [Int64: String] = [:]
            for transaction in transactions.sorted(by: { $0.version < $1.version }) where transaction.version <= version
            {
                for (key, value) in transaction.changes { expected[key] = value }
            }
            let contents = try CrashRecoveryTests.kvContents(engine)
            if contents != expected.compactMapValues({ $0 }) {
                Issue.record(
                    "\(workload) seed \(seed) image \(index): contents differ from the commits up to \(version)")
            }
            discarded += engine.recoveryReport.discardedRecords
            if engine.recoveryReport.truncatedBytes > 0 { cut += 1 }
            await engine.close()
        }
        return (images.count, discarded, cut)
    }

    /// Commits `commits` transactions of 1–4 inserts of new keys of writer `w`, sometimes an update or a
    /// delete of a key the writer committed before; records each with its version, and acknowledges it.
    static func writer(
        _ w: Int, _ engine: StorageEngine, _ table: TableID, commits: Int, valueSize: ClosedRange<Int>,
        log: TransactionLog, recorder: ImageRecorder, seed: UInt64
    ) async throws {
        var rng = SplitMix64(seed: seed)
        var mine: [Int64] = []
        var next = Int64(w) * 1_000_000
        for _ in 0..<commits {
            var changes: [(Int64, String?)] = []
            let txn = try await engine.beginWrite()
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                next += 1
                let value = String(repeating: "v", count: Int.random(in: valueSize, using: &rng) / 4)
                try txn.insert(table, [.int(next), .string(value)])
                changes.append((next, value))
            }
            if !mine.isEmpty && Int.random(in: 0..<10, using: &rng) < 3 {
                let key = mine[Int.random(in: 0..<mine.count, using: &rng)]
                let object = try #require(txn.object(table, primaryKey: .int(key)))
                try txn.update(table, object, [(1, .string("updated \(key)"))])
                changes.append((key, "updated \(key)"))
            } else if mine.count > 2 && Int.random(in: 0..<10, using: &rng) < 3 {
                let key = mine.remove(at: Int.random(in: 0..<mine.count, using: &rng))
                try txn.delete(table, try #require(txn.object(table, primaryKey: .int(key))))
                changes.append((key, nil))
            }
            let result = try await txn.commit()
            mine += changes.compactMap { $0.1 == nil ? nil : $0.0 }.filter { !mine.contains($0) }
            log.append(.init(version: result.version, changes: changes))
            recorder.acknowledge(result.version)
        }
    }

    @Test("a zeroed header is corruption when a later record vouches for it, a torn tail when none does")
    func vouching() async throws {
        for durability in [StorageEngine.Durability.full, .none] {
            let fs = MemoryFileSystem(tracksDurability: true)
            // Without a checkpoint at close: open reads the whole log (a checkpoint's open trusts what lies
            // before it, see CheckpointTests).
            let engine = try await memoryEngine(fs, durability: durability, checkpoints: false)
            let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
            var starts: [UInt64] = []
            for k in 1...5 {
                starts.append(engine.statistics.totalBytes)
                _ = try await engine.write { txn in try txn.insert(table, [.int(Int64(k)), .string("value \(k)")]) }
            }
            await engine.close()
            var image = try #require(fs.contents(of: "/db/test.store"))
            let damaged = Int(starts[1])
            image.replaceSubrange(damaged..<(damaged + Record.headerSize), with: [UInt8](repeating: 0, count: 24))
            let damagedFS = MemoryFileSystem(files: ["/db/test.store": image])
            switch durability {
            case .full:
                // Commit 3 was written after commit 2's sync: its watermark vouches that commit 2 was on disk.
                let error = await #expect(throws: StorageError.self) { try await memoryEngine(damagedFS) }
                #expect(error?.code == .corrupted)
                #expect(error?.offset == FileOffset(UInt64(damaged)))
                #expect(damagedFS.contents(of: "/db/test.store") == image, "a corrupt file is not modified")
            case .none:
                // Nothing was synced after open: no record vouches, and a zeroed header is a crash's shape.
                let reopened = try await memoryEngine(damagedFS)
                #expect(reopened.recoveryReport.discardedRecords == 3)
                #expect(try CrashRecoveryTests.kvContents(reopened) == [1: "value 1"])
            }
        }
    }

    @Test("bytes removed from inside the last record are corruption, not a torn tail that drops it")
    func splicedLastRecord() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        let start = Int(engine.statistics.totalBytes)
        _ = try await engine.write { txn in
            try txn.insert(table, [.int(1), .string(String(repeating: "x", count: 3000))])
        }
        await engine.close()
        let file = try #require(fs.contents(of: "/db/test.store"))
        for (offset, count) in [(start + 100, 1), (start + 1000, 1972), (start + Record.headerSize, 8)] {
            var image = file
            image.removeSubrange(offset..<(offset + count))
            let spliced = MemoryFileSystem(files: ["/db/test.store": image])
            let error = await #expect(throws: StorageError.self) { try await memoryEngine(spliced) }
            #expect(error?.code == .corrupted)
            #expect(error?.offset == FileOffset(UInt64(start)))
        }
        // A cut (no footer at the end) is still a torn tail.
        let cut = MemoryFileSystem(files: ["/db/test.store": Array(file[..<(file.count - 20)])])
        #expect(try await memoryEngine(cut).recoveryReport.truncatedBytes > 0)
    }

    @Test("power-loss images found by the outside campaign open with every acknowledged commit")
    func campaignImages() async throws {
        // Group-commit images (format before watermarks): the header of an unacknowledged record is a zero
        // page and a later page of a later unacknowledged record persisted. `acked`: per writer stream, the
        // last acknowledged transaction (the campaign's Counter objects).
        for (name, acked) in [("plsim2-conc-1-6", [4, 4, 4]), ("plsim2-conc-11-5", [15, 17, 17, 17])] {
            let url = try #require(
                Bundle.module.url(forResource: name, withExtension: "store", subdirectory: "Fixtures"))
            let bytes = try [UInt8](Data(contentsOf: url))
            let fs = MemoryFileSystem(files: ["/db/test.store": bytes])
            let engine = try await memoryEngine(fs)
            #expect(engine.recoveryReport.truncatedBytes > 0, "\(name): the torn tail is cut")
            let snapshot = try engine.snapshot()
            let counters = try snapshot.contents("Counter")
            var lasts: [Int64: Int64] = [:]
            for values in counters.values {
                guard case .int(let id) = values[0], case .int(let last) = values[1] else { continue }
                lasts[id] = last
            }
            for (stream, last) in acked.enumerated() {
                #expect(
                    (lasts[Int64(stream)] ?? 0) >= Int64(last), "\(name): stream \(stream) lost an acknowledged commit")
            }
            // Every transaction up to each stream's counter is present (Tx ids are stream * 10^8 + t).
            let ids = Set(
                try snapshot.contents("Tx").values.compactMap { values -> Int64? in
                    if case .int(let id) = values[0] { return id } else { return nil }
                })
            for (stream, last) in lasts where last > 0 {
                for t in 1...last {
                    #expect(ids.contains(stream * 100_000_000 + t), "\(name): transaction \(stream):\(t) is missing")
                }
            }
        }
    }
}

/// The transactions a round committed, with their versions.
final class TransactionLog: Sendable {
    struct Transaction: Sendable {
        var version: Version
        /// Key → new value, nil for a delete, in order.
        var changes: [(Int64, String?)]
    }
    private let storage = Locked<[Transaction]>([])
    func append(_ transaction: Transaction) { storage.withLock { $0.append(transaction) } }
    var all: [Transaction] { storage.withLock { $0 } }
}

/// A ``FileSystem`` over a durability-tracking ``MemoryFileSystem`` that, after a random share of the write,
/// truncate and sync calls, takes a page-granular power-loss image together with the versions acknowledged
/// by then (read first: every acknowledged version was synced before it was acknowledged).
final class ImageRecorder: ForwardingFileSystem {
    struct Image: Sendable {
        var acknowledged: Set<Version>
        var fileSystem: MemoryFileSystem
    }
    private struct State {
        var rng: SplitMix64
        var acknowledged: Set<Version> = []
        var images: [Image] = []
    }
    let base: MemoryFileSystem
    var forwardee: any FileSystem { base }
    private let probability: Double
    private let state: Locked<State>

    init(base: MemoryFileSystem, seed: UInt64, probability: Double) {
        self.base = base
        self.probability = probability
        state = Locked(State(rng: SplitMix64(seed: seed)))
    }

    var images: [Image] { state.withLock { $0.images } }
    func acknowledge(_ version: Version) { state.withLock { _ = $0.acknowledged.insert(version) } }

    private func maybeTakeImage() {
        state.withLock { state in
            guard Double.random(in: 0..<1, using: &state.rng) < probability else { return }
            let acknowledged = state.acknowledged
            let image = base.pagedPowerLossImage(using: &state.rng)
            state.images.append(Image(acknowledged: acknowledged, fileSystem: image))
        }
    }

    func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) -> Int {
        maybeTakeImage()
        defer { maybeTakeImage() }
        return try base.write(file, bytes, at: offset)
    }
    func sync(_ file: OpenFile) throws(StorageError) {
        maybeTakeImage()
        try base.sync(file)
    }
    func truncate(_ file: OpenFile, to size: UInt64) throws(StorageError) {
        defer { maybeTakeImage() }
        try base.truncate(file, to: size)
    }
}
