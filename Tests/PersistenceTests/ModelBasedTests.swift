import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// Random operation sequences applied to the engine and to a plain `Dictionary`, compared after every
/// step, while held snapshots must stay exactly as they were: this one test exercises MVCC isolation,
/// reading your own writes, rollback, indexes and recovery.
@Suite("Model-based engine")
struct ModelBasedTests {
    typealias Model = [Int64: String]

    struct Held {
        let snapshot: Snapshot
        let model: Model
    }

    static func check(_ store: some ReadableStore, _ table: TableID, against model: Model) throws {
        #expect(store.count(table) == model.count)
        var seen = 0
        for (key, _) in store.keys(table) {
            guard case .int(let k) = try store.value(table, key, column: 0),
                case .string(let v) = try store.value(table, key, column: 1)
            else {
                Issue.record("row \(key) is malformed")
                return
            }
            #expect(model[k] == v, "key \(k)")
            #expect(store.object(table, primaryKey: .int(k)) == key)
            seen += 1
        }
        #expect(seen == model.count)
        let problems = primaryIndexLocationProblems(store.state)
        #expect(problems.isEmpty, "\(problems.prefix(3))")
    }

    /// An engine on `fs` whose node cache holds almost nothing: loaded nodes are dropped at nearly every
    /// snapshot, so that reads keep loading nodes from the file.
    static func smallCacheEngine(_ fs: MemoryFileSystem) async throws -> StorageEngine {
        var configuration = StorageEngine.Configuration(
            path: "/db/test.store", fileSystem: fs, durability: .none, autoCompaction: nil)
        configuration.nodeCacheLimit = 4 << 10
        return try await StorageEngine.open(configuration)
    }

    @Test(
        "25k random operations (100k: ACTORSTORE_LONG=1), checkpoints, cache evictions and reopens agree with a Dictionary; held snapshots never change"
    )
    func randomOperations() async throws {
        let seed = testSeed("model")
        let target = TestDepth.long ? 100_000 : 25_000
        var rng = SplitMix64(seed: seed)
        let fs = MemoryFileSystem()
        var engine = try await Self.smallCacheEngine(fs)
        var checkpoints = 0
        var reopens = 0
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        var committed: Model = [:]
        var held: [Held] = []
        var operations = 0
        var commits = 0
        var rollbacks = 0
        while operations < target {
            let txn = try await engine.beginWrite()
            var working = committed
            for _ in 0..<Int.random(in: 1...40, using: &rng) {
                operations += 1
                let k = Int64.random(in: 0..<600, using: &rng)
                let value = "v\(operations)-" + String(repeating: "x", count: Int.random(in: 0...40, using: &rng))
                let existing = txn.object(table, primaryKey: .int(k))
                #expect((existing != nil) == (working[k] != nil))
                switch (Int.random(in: 0..<3, using: &rng), existing) {
                case (0, nil), (1, nil):
                    try txn.insert(table, [.int(k), .string(value)])
                    working[k] = value
                case (0, let object?), (1, let object?):
                    try txn.update(table, object, [(1, .string(value))])
                    working[k] = value
                case (_, let object?):
                    try txn.delete(table, object)
                    working[k] = nil
                case (_, nil):
                    #expect(throws: StorageError.self) { try txn.delete(table, ObjectKey(Int64.max)) }
                }
                // Reads inside the transaction see its own writes.
                let object = txn.object(table, primaryKey: .int(k))
                #expect(try object.flatMap { try txn.value(table, $0, column: 1) } == working[k].map(Value.string))
            }
            #expect(txn.count(table) == working.count)
            if Int.random(in: 0..<5, using: &rng) == 0 {
                txn.rollback()
                rollbacks += 1
            } else {
                try await txn.commit()
                committed = working
                commits += 1
            }
            // Checkpoints now and then, and a reopen (from the checkpoint close writes) more rarely; the
            // snapshots held meanwhile keep their versions, whatever the nodes they loaded came from.
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<3:
                try await engine.checkpoint()
                checkpoints += 1
            case 3:
                await engine.close()
                engine = try await Self.smallCacheEngine(fs)
                #expect(engine.recoveryReport.checkpointVersion == engine.latestVersion)
                #expect(engine.recoveryReport.recordsReplayed == 0)
                reopens += 1
            default: break
            }
            // The published version matches the model; sometimes check every row.
            let snapshot = try engine.snapshot()
            #expect(snapshot.count(table) == committed.count)
            if commits % 97 == 0 { try Self.check(snapshot, table, against: committed) }
            // Hold a few snapshots for a while; each must keep showing its own version exactly.
            if Int.random(in: 0..<50, using: &rng) == 0 {
                held.append(Held(snapshot: snapshot, model: committed))
                if held.count > 4 {
                    let old = held.removeFirst()
                    try Self.check(old.snapshot, table, against: old.model)
                }
            }
        }
        for h in held { try Self.check(h.snapshot, table, against: h.model) }
        try Self.check(try engine.snapshot(), table, against: committed)
        // Reading every row loaded nodes from the file (the engine was reopened from a checkpoint at least
        // once; before this full read, a reopen near the end may have left nothing loaded yet).
        #expect(engine.statistics.nodesLoaded > 0)
        // Everything survives a reopen (the log replays to the same state).
        await engine.close()
        let reopened = try await memoryEngine(fs.processCrashImage(), durability: .none)
        try Self.check(try reopened.snapshot(), table, against: committed)
        print(
            "[model] \(operations) operations, \(commits) commits, \(rollbacks) rollbacks, \(checkpoints) checkpoints, "
                + "\(reopens) reopens")
        #expect(checkpoints > 0 && reopens > 0)
        #expect(operations >= target)
    }
}
