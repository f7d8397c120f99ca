import Dispatch
import Foundation
import Testing

@testable import ActorStorePersistence

/// Checkpoints (format 2): open from the newest one, what triggers them, old files, the node cache and
/// damaged nodes. Crash images, faults, bit flips and the model-based run cover them too (CrashRecoveryTests,
/// FaultInjectionTests, ModelBasedTests).
@Suite("Checkpoints")
struct CheckpointTests {
    typealias Dump = CompactionTests.Dump

    /// A store with links, a primary key, an index and 500 KV rows, over a few commits.
    static func populate(_ engine: StorageEngine) async throws -> FaultInjectionTests.World {
        let world = try await FaultInjectionTests.seed(engine)
        for batch in 0..<5 {
            _ = try await engine.write { txn in
                for i in 0..<100 {
                    try txn.insert(world.kv, [.int(Int64(1000 + batch * 100 + i)), .string("row \(batch)-\(i)")])
                }
            }
        }
        return world
    }

    @Test("a reopened store starts from the checkpoint close wrote and replays nothing; later commits replay")
    func reopenFromCheckpoint() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs)
        let world = try await Self.populate(engine)
        let before = try Dump(engine.snapshot())
        await engine.close()

        let reopened = try await memoryEngine(fs)
        #expect(reopened.recoveryReport.checkpointVersion == reopened.latestVersion)
        #expect(reopened.recoveryReport.recordsReplayed == 0)
        #expect(try Dump(reopened.snapshot()) == before)
        #expect(try Dump.indexProblems(reopened.snapshot()).isEmpty)
        #expect(reopened.statistics.nodesLoaded > 0)
        #expect(reopened.statistics.checkpointVersion == reopened.latestVersion)

        // Three commits after the checkpoint, then a power loss: open replays exactly those.
        for i in 0..<3 {
            _ = try await reopened.write { txn in try txn.insert(world.kv, [.int(Int64(5000 + i)), .string("late")]) }
        }
        let after = try Dump(reopened.snapshot())
        let crashed = try await memoryEngine(fs.powerLossImage())
        #expect(crashed.recoveryReport.checkpointVersion == before.version)
        #expect(crashed.recoveryReport.recordsReplayed == 3)
        #expect(try Dump(crashed.snapshot()) == after)
        #expect(try Dump.indexProblems(crashed.snapshot()).isEmpty)
        #expect(crashed.mayHaveDanglingLinks == false)
        try crashed.verify()
        await crashed.close()
        await reopened.close()
    }

    @Test("a checkpoint is written in the background every checkpointInterval bytes of log")
    func automaticCheckpoints() async throws {
        let fs = MemoryFileSystem()
        var configuration = StorageEngine.Configuration(
            path: "/db/test.store", fileSystem: fs, durability: .none, autoCompaction: nil)
        configuration.checkpointInterval = 16 << 10
        let engine = try await StorageEngine.open(configuration)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        for i in 0..<300 {
            _ = try await engine.write { txn in
                try txn.insert(table, [.int(Int64(i)), .string(String(repeating: "x", count: 200))])
            }
        }
        // The background checkpoint runs after a commit; wait for the one the last commits started.
        var turns = 0
        while engine.statistics.bytesSinceCheckpoint >= 32 << 10 && turns < 10_000_000 {
            turns += 1
            await Task.yield()
        }
        let stats = engine.statistics
        #expect(stats.checkpointVersion != nil)
        #expect(stats.bytesSinceCheckpoint < 32 << 10, "\(stats.bytesSinceCheckpoint) bytes of log since the last one")
        #expect(engine.lastCheckpointError == nil)
        let contents = try Dump(engine.snapshot())
        await engine.close()
        let reopened = try await StorageEngine.open(configuration)
        #expect(try Dump(reopened.snapshot()) == contents)
        await reopened.close()
    }

    @Test("a format-1 file opens by replaying its log, gets no checkpoint, and its first compaction upgrades it")
    func formatOneFile() async throws {
        let url = try #require(
            Bundle.module.url(forResource: "plsim2-conc-1-6", withExtension: "store", subdirectory: "Fixtures"))
        let bytes = try [UInt8](Data(contentsOf: url))
        #expect(bytes[8] == 1, "the fixture is a format-1 file")
        let fs = MemoryFileSystem(files: ["/db/test.store": bytes])
        let engine = try await memoryEngine(fs)
        #expect(engine.recoveryReport.checkpointVersion == nil)
        let contents = try Dump(engine.snapshot())
        try await engine.checkpoint()
        #expect(engine.statistics.checkpointVersion == nil, "no checkpoint in a format-1 file")
        await engine.close()
        let file = try #require(fs.contents(of: "/db/test.store"))
        #expect(file[8] == 1, "closing does not change the format")

        let again = try await memoryEngine(fs)
        #expect(try Dump(again.snapshot()) == contents)
        try await again.compact()
        #expect(try #require(fs.contents(of: "/db/test.store"))[8] == 2, "compaction writes format 2")
        #expect(again.statistics.checkpointVersion == again.latestVersion, "with a checkpoint")
        await again.close()

        let upgraded = try await memoryEngine(fs)
        #expect(upgraded.recoveryReport.checkpointVersion == upgraded.latestVersion)
        #expect(upgraded.recoveryReport.recordsReplayed == 0)
        #expect(try Dump(upgraded.snapshot()) == contents)
        let readOnly = try await StorageEngine.open(.init(path: "/db/test.store", fileSystem: fs, readOnly: true))
        #expect(try Dump(readOnly.snapshot()) == contents)
        await readOnly.close()
        await upgraded.close()
    }

    @Test("the nodes of the newest checkpoint count as live bytes: a compacted store of small rows is not dead space")
    func checkpointNodesAreLive() async throws {
        let fs = MemoryFileSystem()
        let engine = try await memoryEngine(fs, durability: .none)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        // Small rows: their index entries take about as many bytes as the rows.
        for batch in 0..<10 {
            _ = try await engine.write { txn in
                for i in 0..<2_000 { try txn.insert(table, [.int(Int64(batch * 2_000 + i)), .string("v")]) }
            }
        }
        try await engine.compact()
        let stats = engine.statistics
        #expect(stats.checkpointVersion == stats.version)
        // Everything but the file header and the framing is live: rows and the checkpoint's nodes.
        #expect(Double(stats.liveBytes) >= 0.97 * Double(stats.totalBytes), "\(stats.liveBytes) of \(stats.totalBytes)")
        await engine.close()
        let reopened = try await memoryEngine(fs, durability: .none)
        #expect(reopened.statistics.liveBytes == stats.liveBytes)
        await reopened.close()
    }

    @Test("past the node cache limit, new snapshots drop loaded nodes; a held snapshot keeps its version")
    func nodeCacheEviction() async throws {
        let fs = MemoryFileSystem()
        var configuration = StorageEngine.Configuration(
            path: "/db/test.store", fileSystem: fs, durability: .none, autoCompaction: nil)
        let writer = try await StorageEngine.open(configuration)
        let (table, _) = try await writer.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await writer.write { txn in
            for i in 0..<20_000 { try txn.insert(table, [.int(Int64(i)), .string("value \(i)")]) }
        }
        await writer.close()

        configuration.nodeCacheLimit = 64 << 10
        let engine = try await StorageEngine.open(configuration)
        let held = try engine.snapshot()
        var loads: [Int] = []
        for _ in 0..<3 {
            let snapshot = try engine.snapshot()
            var count = 0
            for (key, _) in snapshot.keys(table) {
                guard case .int(let k) = try snapshot.value(table, key, column: 0),
                    snapshot.object(table, primaryKey: .int(k)) == key
                else { break }
                count += 1
            }
            #expect(count == 20_000)
            loads.append(engine.statistics.nodesLoaded)
        }
        // Every pass loaded the nodes again: the cache let go of them in between.
        #expect(loads[1] - loads[0] >= loads[0] / 2 && loads[2] - loads[1] >= loads[0] / 2, "\(loads)")
        #expect(held.count(table) == 20_000)
        #expect(try held.value(table, ObjectKey(19_999), column: 1) == .string("value 19999"))
        await engine.close()
    }

    @Test("a damaged node: commits are refused with its offset, verify() finds it, ignoresCheckpoints rebuilds")
    func damagedNode() async throws {
        let fs = MemoryFileSystem()
        let engine = try await memoryEngine(fs)
        let world = try await Self.populate(engine)
        let contents = try Dump(engine.snapshot())
        await engine.close()
        // Damage a byte in the middle of the last nodes record: some node the store uses.
        var file = try #require(fs.contents(of: "/db/test.store"))
        let found = try #require(
            StorageEngine.newestCheckpoint(in: file.withUnsafeBytes { $0 }, path: "/db", cipher: nil))
        let nodes = Int(found.checkpoint.nodesStart)..<Int(found.checkpoint.nodesEnd)
        file[(nodes.lowerBound + nodes.upperBound) / 2] ^= 0x40
        fs.setContents(of: "/db/test.store", to: file)

        let damaged = try await memoryEngine(fs)
        #expect(throws: StorageError.self) { try damaged.verify() }
        let error = try #require(damaged.core.withLock { $0.nodeStore.damage })
        #expect(error.code == .corrupted)
        #expect(error.offset.map { nodes.contains(Int($0.rawValue)) } == true)
        await #expect(throws: StorageError.self) {
            _ = try await damaged.write { txn in try txn.insert(world.kv, [.int(-5), .string("refused")]) }
        }
        await damaged.close()
        #expect(fs.contents(of: "/db/test.store") == file, "nothing was written over the damage")

        var configuration = StorageEngine.Configuration(path: "/db/test.store", fileSystem: fs)
        configuration.ignoresCheckpoints = true
        let rebuilt = try await StorageEngine.open(configuration)
        #expect(rebuilt.recoveryReport.checkpointVersion == nil)
        #expect(rebuilt.recoveryReport.damagedNodeRecords == 1)
        #expect(try Dump(rebuilt.snapshot()) == contents)
        await rebuilt.close()
        // Its close wrote a new checkpoint: a plain open uses it, and every node reads back.
        let repaired = try await memoryEngine(fs)
        #expect(repaired.recoveryReport.checkpointVersion == repaired.latestVersion)
        #expect(try Dump(repaired.snapshot()) == contents)
        #expect(throws: StorageError.self) { try repaired.verify() }  // the old damaged record is still there
        #expect(repaired.core.withLock { $0.nodeStore.damage } == nil)
        await repaired.close()
    }

    @Test("commits go on while a checkpoint syncs its nodes; open replays those before its record too")
    func commitsDuringCheckpointSync() async throws {
        let base = MemoryFileSystem()
        let gate = HoldingSyncFileSystem(base: base)
        let engine = try await memoryEngine(gate, durability: .none)
        let world = try await Self.populate(engine)
        let checkpointed = engine.latestVersion
        gate.holdNextSync()
        let checkpoint = Task { try await engine.checkpoint() }
        await gate.waitUntilHeld()
        // The checkpoint holds its sync, without the write lock: commits are not held up.
        for i in 0..<3 {
            _ = try await engine.write { txn in try txn.insert(world.kv, [.int(Int64(7000 + i)), .string("during")]) }
        }
        gate.release()
        try await checkpoint.value
        #expect(engine.statistics.checkpointVersion == checkpointed)
        let after = try Dump(engine.snapshot())
        #expect(after.version == checkpointed.next.next.next)

        // The three commits lie between the checkpoint's nodes and its record, and are replayed.
        let crashed = try await memoryEngine(base.processCrashImage(), durability: .none)
        #expect(crashed.recoveryReport.checkpointVersion == checkpointed)
        #expect(crashed.recoveryReport.recordsReplayed == 3)
        #expect(try Dump(crashed.snapshot()) == after)
        #expect(try Dump.indexProblems(crashed.snapshot()).isEmpty)
        try crashed.verify()
        await crashed.close()
        await engine.close()
    }
    @Test(
        "commits go on while a checkpoint writes its nodes; a crash meanwhile leaves a record open steps over",
        arguments: StorageKind.allCases)
    func commitsDuringNodesWrite(kind: StorageKind) async throws {
        try await kind.run {
            let base = MemoryFileSystem(tracksDurability: true)
            let gate = HoldingWriteFileSystem(base: base)
            let engine = try await memoryEngine(gate, reservedSpace: 0)
            let world = try await Self.populate(engine)
            let checkpointed = engine.latestVersion
            let before = try Dump(engine.snapshot())
            let previous = engine.statistics.checkpointVersion
            gate.holdNextWrite(ofAtLeast: 1024)
            let checkpoint = Task { try await engine.checkpoint() }
            await gate.waitUntilHeld()
            // A crash with the nodes record's frame written and nothing after it.
            let early = base.processCrashImage()
            // The checkpoint holds the write of its nodes, without the write lock: durable commits go on.
            for i in 0..<3 {
                _ = try await engine.write { txn in
                    try txn.insert(world.kv, [.int(Int64(8000 + i)), .string("during")])
                }
            }
            let during = try Dump(engine.snapshot())
            #expect(during.version == checkpointed.next.next.next)
            // verify() does not take the record being written for damage.
            try engine.verify()

            // A crash now (of the process, or of the machine after the commits' syncs): the nodes record has
            // its frame and no payload. Open steps over it and keeps the commits after it; verify() finds no
            // damage. The checkpoint the open's close writes is used by the next open.
            let images = [(early, before), (base.processCrashImage(), during), (base.powerLossImage(), during)]
            for (image, contents) in images {
                let crashed = try await memoryEngine(image, reservedSpace: 0)
                #expect(crashed.recoveryReport.damagedNodeRecords == 1)
                #expect(crashed.recoveryReport.checkpointVersion == previous)
                #expect(crashed.recoveryReport.truncatedBytes == 0)
                #expect(try Dump(crashed.snapshot()) == contents)
                #expect(try Dump.indexProblems(crashed.snapshot()).isEmpty)
                try crashed.verify()
                await crashed.close()
                // With nothing after the unfinished record, the new checkpoint's record follows it, and its
                // commits are replayed from before it: the record is checked, not trusted.
                let reopened = try await memoryEngine(image, reservedSpace: 0)
                #expect(reopened.recoveryReport.checkpointVersion == reopened.latestVersion)
                #expect(try Dump(reopened.snapshot()) == contents)
                try reopened.verify()
                await reopened.close()
            }

            gate.release()
            try await checkpoint.value
            #expect(engine.statistics.checkpointVersion == checkpointed)
            // The three commits lie between the checkpoint's nodes and its record (not synced: a process
            // crash), and are replayed.
            let crashed = try await memoryEngine(base.processCrashImage())
            #expect(crashed.recoveryReport.checkpointVersion == checkpointed)
            #expect(crashed.recoveryReport.recordsReplayed == 3)
            #expect(crashed.recoveryReport.damagedNodeRecords == 0)
            #expect(try Dump(crashed.snapshot()) == during)
            try crashed.verify()
            await crashed.close()
            await engine.close()
        }
    }

    @Test(
        "nodes that cannot be written: cut off when nothing follows them, stepped over when commits do",
        arguments: StorageKind.allCases)
    func failedNodesWrite(kind: StorageKind) async throws {
        try await kind.run {
            let base = MemoryFileSystem(tracksDurability: true)
            let gate = HoldingWriteFileSystem(base: base)
            let engine = try await memoryEngine(gate, reservedSpace: 0)
            let world = try await Self.populate(engine)
            let end = engine.core.withLock { $0.appendedEnd }

            // Nothing was appended after the record, and no sync covered it: it is cut off, and the file
            // ends where it did.
            gate.holdNextWrite(ofAtLeast: 1024, failing: true)
            let first = Task { try await engine.checkpoint() }
            await gate.waitUntilHeld()
            gate.release()
            await #expect(throws: StorageError.self) { try await first.value }
            #expect(engine.core.withLock { $0.appendedEnd } == end)
            #expect(base.contents(of: "/db/test.store")?.count == Int(end))

            // Commits were appended after it: it stays, half written, and the store goes on.
            gate.holdNextWrite(ofAtLeast: 1024, failing: true)
            let second = Task { try await engine.checkpoint() }
            await gate.waitUntilHeld()
            for i in 0..<3 {
                _ = try await engine.write { txn in
                    try txn.insert(world.kv, [.int(Int64(9000 + i)), .string("after")])
                }
            }
            gate.release()
            await #expect(throws: StorageError.self) { try await second.value }
            _ = try await engine.write { txn in try txn.insert(world.kv, [.int(9100), .string("later")]) }
            let expected = try Dump(engine.snapshot())
            try engine.verify()

            let crashed = try await memoryEngine(base.powerLossImage())
            #expect(crashed.recoveryReport.damagedNodeRecords == 1)
            #expect(try Dump(crashed.snapshot()) == expected)
            try crashed.verify()
            await crashed.close()

            // The next checkpoint (at close) writes every node again; a reopen reads from it.
            await engine.close()
            let reopened = try await memoryEngine(base)
            #expect(reopened.recoveryReport.checkpointVersion == expected.version)
            #expect(reopened.recoveryReport.recordsReplayed == 0)
            #expect(try Dump(reopened.snapshot()) == expected)
            #expect(try Dump.indexProblems(reopened.snapshot()).isEmpty)
            try reopened.verify()
            await reopened.close()
        }
    }
}

/// Forwards to a base file system; when armed, holds the next write of at least a given size until
/// released, then makes it, or makes half of it and fails with `.diskFull`.
private final class HoldingWriteFileSystem: ForwardingFileSystem {
    let base: any FileSystem
    var forwardee: any FileSystem { base }
    private let armed = Locked<(minimum: Int, failing: Bool)?>(nil)
    private let held = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(base: any FileSystem) { self.base = base }

    func holdNextWrite(ofAtLeast minimum: Int, failing: Bool = false) {
        armed.withLock { $0 = (minimum, failing) }
    }
    func release() { released.signal() }
    /// Returns once a write is being held (the waiting happens on a Dispatch thread).
    func waitUntilHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.held.wait()
                continuation.resume()
            }
        }
    }

    func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) -> Int {
        let hold = armed.withLock { armed -> (minimum: Int, failing: Bool)? in
            guard let gate = armed, bytes.count >= gate.minimum else { return nil }
            armed = nil
            return gate
        }
        guard let hold else { return try base.write(file, bytes, at: offset) }
        held.signal()
        released.wait()
        guard hold.failing else { return try base.write(file, bytes, at: offset) }
        _ = try base.write(file, UnsafeRawBufferPointer(rebasing: bytes.prefix(bytes.count / 2)), at: offset)
        throw StorageError(.diskFull, "Injected: the disk is full.")
    }
}

/// Forwards to a base file system; when armed, holds the next `sync` until released.
private final class HoldingSyncFileSystem: ForwardingFileSystem {
    let base: any FileSystem
    var forwardee: any FileSystem { base }
    private let armed = Locked(false)
    private let held = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(base: any FileSystem) { self.base = base }

    func holdNextSync() { armed.withLock { $0 = true } }
    func release() { released.signal() }
    /// Returns once a sync is being held (the waiting happens on a Dispatch thread).
    func waitUntilHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.held.wait()
                continuation.resume()
            }
        }
    }

    func sync(_ file: OpenFile) throws(StorageError) {
        let hold = armed.withLock { armed in
            defer { armed = false }
            return armed
        }
        if hold {
            held.signal()
            released.wait()
        }
        try base.sync(file)
    }
}
