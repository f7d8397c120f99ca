import Foundation
import Testing

@testable import ActorStorePersistence

// The engine side of notifications: subscriptions see only published (durable) commits to the tables they
// watch, merged into batches with the net effect, and never a commit whose fsync failed.

@Suite struct ChangeHubTests {
    static let counter = TableSchema("Counter", columns: [ColumnSchema("n", ColumnType(.int64))])

    private func engine(
        _ fs: any FileSystem = MemoryFileSystem(), durability: StorageEngine.Durability = .full
    ) async throws -> (StorageEngine, TableID, TableID) {
        let engine = try await memoryEngine(fs, durability: durability)
        let (ids, _) = try await engine.write { txn in try txn.setSchema([Fixtures.kv, Self.counter], version: 1) }
        return (engine, ids[0], ids[1])
    }

    /// The batches up to `version` (publishing happens just after a commit returns, on the sync thread).
    static func collect(
        _ subscription: ChangeSubscription, through version: Version
    ) async -> [ChangeSubscription.Batch] {
        var batches: [ChangeSubscription.Batch] = []
        while batches.last.map({ ($0.silentlyThrough ?? $0.snapshot).version < version }) ?? true {
            guard let more = await subscription.next() else { break }
            batches += more
        }
        return batches
    }

    @Test func mergingKeepsTheNetEffect() {
        var first = TableChanges()
        first.recordInsert(ObjectKey(1))
        first.recordModify(ObjectKey(2), ColumnSet([0]))
        first.recordModify(ObjectKey(3), ColumnSet([0]))
        var second = TableChanges()
        second.recordModify(ObjectKey(1), ColumnSet([1]))  // inserted earlier: stays an insert
        second.recordModify(ObjectKey(2), ColumnSet([1]))  // columns add up
        second.recordDelete(ObjectKey(3))  // modified then deleted: deleted
        second.recordInsert(ObjectKey(4))
        var third = TableChanges()
        third.recordDelete(ObjectKey(4))  // inserted then deleted: nowhere
        first.merge(second)
        first.merge(third)
        #expect(Array(first.inserted) == [ObjectKey(1)])
        #expect(Array(first.deleted) == [ObjectKey(3)])
        #expect(first.modified == [ObjectKey(2): ColumnSet([0, 1])])
    }

    @Test func modifiedObjectsActAsADictionary() {
        // Against a plain dictionary: runs of ascending keys with one column set (kept as ranges), keys
        // that leave or widen the shared set, removals, assignments, iteration and equality.
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            var modified = ModifiedObjects()
            var oracle: [ObjectKey: ColumnSet] = [:]
            let sets = [ColumnSet([0]), ColumnSet([1]), ColumnSet([0, 1]), ColumnSet([70])]
            var next: Int64 = 0
            for _ in 0..<Int.random(in: 1...300, using: &generator) {
                let ascending = round % 2 == 0 && Bool.random(using: &generator)
                let key = ObjectKey(ascending ? next : Int64.random(in: 0..<64, using: &generator))
                if ascending { next += 1 }
                switch Int.random(in: 0..<10, using: &generator) {
                case 0:
                    #expect(modified.removeValue(forKey: key) == oracle.removeValue(forKey: key))
                case 1:
                    let columns = sets.randomElement(using: &generator)!
                    modified[key] = columns
                    oracle[key] = columns
                default:
                    let columns = round % 3 == 0 ? sets[0] : sets.randomElement(using: &generator)!
                    modified.formUnion(key, columns)
                    oracle[key, default: ColumnSet()].formUnion(columns)
                }
                #expect(modified[key] == oracle[key])
            }
            #expect(modified.count == oracle.count)
            #expect(modified.isEmpty == oracle.isEmpty)
            var seen: [ObjectKey: ColumnSet] = [:]
            for (key, columns) in modified {
                #expect(seen.updateValue(columns, forKey: key) == nil, "key \(key) iterated twice")
            }
            #expect(seen == oracle)
            var rebuilt = ModifiedObjects()
            for (key, columns) in oracle.shuffled(using: &generator) { rebuilt[key] = columns }
            #expect(rebuilt == modified)
            #expect(
                modified.containsColumns(where: { $0.contains(70) })
                    == oracle.values.contains(where: { $0.contains(70) }))
            if let (key, columns) = oracle.first {
                var different = modified
                var wider = columns
                wider.insert(5)
                different[key] = wider
                #expect(different != modified)
            }
        }
    }

    @Test func subscriptionsSeeOnlyTheirTablesMergedIntoOneBatch() async throws {
        // Durability .none publishes inside the commit, so the batches are complete when `write` returns.
        let (engine, kv, counter) = try await engine(durability: .none)
        let (watching, base, _) = try engine.subscribe(tables: [kv])
        let (other, _, _) = try engine.subscribe(tables: [counter])
        for i in 0..<3 {
            _ = try await engine.write { txn in try txn.insert(kv, [.int(Int64(i)), .string("v")]) }
        }
        let batches = watching.poll()
        #expect(batches.count == 1)
        #expect(batches.first?.changes.tables[kv]?.inserted.count == 3)
        #expect(batches.first?.snapshot.version == base.version.next.next.next)
        #expect(other.poll().isEmpty)
        #expect(engine.hub.subscriptionCount == 2)
        other.cancel()
        #expect(engine.hub.subscriptionCount == 1)
        #expect(await other.next() == nil)
    }

    @Test func aFailedSyncNotifiesNobody() async throws {
        let faulty = FaultInjectingFileSystem(base: MemoryFileSystem())
        let (engine, kv, _) = try await engine(faulty)
        let (subscription, _, _) = try engine.subscribe(tables: nil)
        let txn = try await engine.beginWrite()
        try txn.insert(kv, [.int(1), .string("lost")])
        // The append (write) succeeds; the sync fails: the engine is poisoned, and nothing is published.
        faulty.inject(.error(EIO), atCall: 2)
        await #expect(throws: StorageError.self) { try await txn.commit() }
        #expect(subscription.poll().isEmpty)
    }

    @Test func aSilencedCommitEndsTheBatchBeforeIt() async throws {
        let (engine, kv, _) = try await engine()
        let (subscription, _, _) = try engine.subscribe(tables: [kv])
        _ = try await engine.write { txn in try txn.insert(kv, [.int(1), .string("a")]) }
        let txn = try await engine.beginWrite()
        try txn.insert(kv, [.int(2), .string("b")])
        txn.silencedSubscriptions = [subscription.id]
        let silenced = try await txn.commit()
        _ = try await engine.write { txn in try txn.insert(kv, [.int(3), .string("c")]) }
        let batches = await Self.collect(subscription, through: engine.latestVersion)
        try #require(batches.count == 2)
        #expect(batches[0].changes.tables[kv]?.inserted.count == 1)
        #expect(batches[0].silentlyThrough?.version == silenced.version)
        #expect(batches[0].snapshot.version.next == silenced.version)
        #expect(batches[1].changes.tables[kv]?.inserted.count == 1)
        #expect(batches[1].silentlyThrough == nil)
    }

    @Test func aSubscriptionCatchesUpFromAVersionItHolds() async throws {
        let (engine, kv, _) = try await engine()
        let held = try engine.snapshot()
        _ = try await engine.write { txn in try txn.insert(kv, [.int(1), .string("a")]) }
        _ = try await engine.write { txn in try txn.insert(kv, [.int(2), .string("b")]) }
        let (subscription, now, caughtUp) = try engine.subscribe(tables: [kv], after: held.version)
        #expect(caughtUp)
        let batches = subscription.poll()
        #expect(batches.count == 1)
        #expect(batches.first?.changes.tables[kv]?.inserted.count == 2)
        #expect(batches.first?.snapshot.version == now.version)
    }

    /// The log keeps the last `logLimit.commits` commits (dropping the oldest after each commit once full,
    /// and compacting its storage now and then): a subscription catches up exactly from a version still
    /// in it, and reports that it cannot from one already dropped.
    @Test func theLogKeepsTheNewestCommitsPastItsLimit() async throws {
        let (engine, kv, _) = try await engine(durability: .none)
        let limit = ChangeHub.logLimit.commits
        var held: [Snapshot] = []
        for i in 0..<(limit * 3 + 7) {
            if i % 97 == 0 || i == limit * 2 + 5 { held.append(try engine.snapshot()) }
            _ = try await engine.write { txn in try txn.insert(kv, [.int(Int64(i)), .string("v")]) }
        }
        let newest = engine.latestVersion
        for snapshot in held {
            let (subscription, now, caughtUp) = try engine.subscribe(tables: [kv], after: snapshot.version)
            #expect(now.version == newest)
            let behind = Int(newest.rawValue - snapshot.version.rawValue)
            #expect(caughtUp == (behind <= limit), "\(behind) commits behind")
            if caughtUp {
                #expect(subscription.poll().first?.changes.tables[kv]?.inserted.count == behind)
            }
        }
    }

    @Test func closingTheEngineEndsEverySubscription() async throws {
        let (engine, kv, _) = try await engine()
        let (subscription, _, _) = try engine.subscribe(tables: [kv])
        let waiting = Task { await subscription.next() }
        while !subscription.hasWaiter { await Task.yield() }  // close while the observer waits
        await engine.close()
        #expect(await waiting.value == nil)
    }
}
