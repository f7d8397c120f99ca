import ActorStore
import ActorStoreTestSupport
import Foundation
import Testing

// The randomized oracle for collection change streams: random commits (inserts, deletes, changes that move
// objects in and out of a filtered, sorted query, list reorderings) while observers consume at random
// speeds. Every delivered change set must turn the previously delivered collection into the new one,
// report every kept object whose observed properties changed, and the last delivery must equal the final
// state. Seeds are printed; replay one with ACTORSTORE_NOTIFY_SEED=<seed>, scale with
// ACTORSTORE_NOTIFY_COMMITS=<n>.

final class ONItem: Object {
    @Persisted var id = 0
    @Persisted var score = 0
    @Persisted var name = ""
}

final class ONOwner: Object {
    @Persisted var items: List<ONItem>
    @Persisted var scores: List<Int>
    @Persisted var kennel: Map<String, ONItem?>
}

/// What one observer saw: the ids and observed values of each delivered collection.
struct Observed: Sendable, Equatable {
    var ids: [Int]
    var values: [Int: String]
}

@Suite struct NotificationOracleTests {
    static let commits = TestDepth.count("ACTORSTORE_NOTIFY_COMMITS", long: 1_000, sampled: 250)

    static var seeds: [UInt64] { TestDepth.seeds("ACTORSTORE_NOTIFY_SEED", count: 3) }

    @Test(arguments: seeds) func deliveredChangeSetsReplayTheCommits(seed: UInt64) async throws {
        print("notification oracle seed \(seed) (replay with ACTORSTORE_NOTIFY_SEED=\(seed))")
        let realm = try await Realm(configuration: testConfiguration([ONItem.self, ONOwner.self]))
        try await realm.write { realm in
            let owner = realm.create(ONOwner.self)
            for i in 0..<40 {
                let item = realm.create(ONItem.self, value: ["id": i, "score": i * 5 % 100, "name": "n\(i)"])
                if i % 2 == 0 { owner.items.append(item) }
            }
        }
        // Four observers: a filtered sorted query, the whole table, the owner's list, a key-path-filtered query.
        let filtered = try await realm.read {
            try $0.objects(ONItem.self).filter("score < 50").sorted(byKeyPath: "score").changes.detailed
        }
        let all = await realm.read { $0.objects(ONItem.self).changes.detailed }
        let list = await realm.read { $0.objects(ONOwner.self)[0].items.changes.detailed }
        let names = try await realm.read {
            try $0.objects(ONItem.self).filter("name BEGINSWITH 'n1'").sorted(byKeyPath: "id", ascending: false)
                .changes(keyPaths: ["name"]).detailed
        }
        let consumers = [
            Task { try await Self.consume(filtered, seed: seed &+ 1, observing: { "\($0.score)|\($0.name)" }) },
            Task { try await Self.consume(all, seed: seed &+ 2, observing: { "\($0.score)|\($0.name)" }) },
            Task { try await Self.consume(list, seed: seed &+ 3, observing: { "\($0.score)|\($0.name)" }) },
            Task { try await Self.consume(names, seed: seed &+ 4, observing: { $0.name }) },
        ]
        // Every observer has its initial delivery before the commits start.
        try await waitUntil {
            Self.latest.withLock { latest in (1...4).allSatisfy { latest[seed &+ UInt64($0)] != nil } }
        }
        var random = SplitMix64(seed: seed)
        var nextID = 40
        for commit in 0..<Self.commits {
            // Let the observers run between some commits, and fall behind on others (coalescing).
            switch Int.random(in: 0..<10, using: &random) {
            case 0: await Self.yield(times: 30)
            case 1, 2: await Task.yield()
            default: break
            }
            _ = commit
            let op = Int.random(in: 0..<100, using: &random)
            let a = Int.random(in: 0..<1_000, using: &random)
            let b = Int.random(in: 0..<1_000, using: &random)
            let id = nextID
            try await realm.write { realm in
                let items = realm.objects(ONItem.self)
                let owner = realm.objects(ONOwner.self)[0]
                switch op {
                case 0..<15:
                    let item = realm.create(ONItem.self, value: ["id": id, "score": a % 100, "name": "n\(b)"])
                    if b % 2 == 0 { owner.items.insert(item, at: a % (owner.items.count + 1)) }
                case 15..<27 where !items.isEmpty:
                    realm.delete(items[a % items.count])
                case 27..<60 where !items.isEmpty:
                    items[a % items.count].score = b % 100  // moves within or across the filter
                case 60..<72 where !items.isEmpty:
                    items[a % items.count].name = "n\(b)"
                case 72..<84 where owner.items.count > 1:
                    owner.items.move(from: a % owner.items.count, to: b % owner.items.count)
                case 84..<92 where !owner.items.isEmpty:
                    owner.items.remove(at: a % owner.items.count)
                case 92..<100 where !items.isEmpty:
                    // Several changes in one commit.
                    for k in 0..<5 { items[(a + k * 7) % items.count].score = (b + k) % 100 }
                default:
                    realm.create(ONItem.self, value: ["id": id, "score": a % 100, "name": "n\(b)"])
                }
            }
            nextID += 1
        }
        // The final state each observer must reach.
        let expected = await realm.read { realm -> [[Int]] in
            [
                try! realm.objects(ONItem.self).filter("score < 50").sorted(byKeyPath: "score").map(\.id),
                realm.objects(ONItem.self).map(\.id),
                realm.objects(ONOwner.self)[0].items.map(\.id),
                try! realm.objects(ONItem.self).filter("name BEGINSWITH 'n1'").sorted(byKeyPath: "id", ascending: false)
                    .map(\.id),
            ]
        }
        // Each observer must reach the final state; then observation is cancelled.
        for (index, consumer) in consumers.enumerated() {
            let key = seed &+ UInt64(index + 1)
            let target = expected[index]
            try? await waitUntil("seed \(seed): observer \(index) reaching the final state") {
                Self.latest.withLock { $0[key] } == target
            }
            #expect(
                Self.latest.withLock { $0[key] } == expected[index],
                "seed \(seed): observer \(index) did not reach the final state")
            consumer.cancel()
            let deliveries = try await consumer.value
            #expect(deliveries > 1)
        }
    }

    /// Lets other tasks run: `times` yields, a pause that depends on no clock.
    static func yield(times: Int) async {
        for _ in 0..<times { await Task.yield() }
    }

    /// The ids each observer last saw, by its seed.
    static let latest = Locked<[UInt64: [Int]]>([:])

    /// Consumes change sets at a random pace, checking each against the previous delivery, until cancelled.
    static func consume(
        _ changes: DetailedCollectionChanges<ONItem>, seed: UInt64,
        observing: @escaping @Sendable (Frozen<ONItem>) -> String
    ) async throws -> Int {
        var random = SplitMix64(seed: seed)
        var previous: Observed?
        var deliveries = 0
        for await change in changes {
            deliveries += 1
            let current = Observed(
                ids: change.collection.map(\.id),
                values: Dictionary(change.collection.map { ($0.id, observing($0)) }, uniquingKeysWith: { a, _ in a }))
            if change.isInitial {
                #expect(previous == nil)
            } else if let old = previous {
                // Deletions then insertions turn the previous collection into the new one.
                var replayed = old.ids
                for i in change.deletions.reversed() { replayed.remove(at: i) }
                for j in change.insertions { replayed.insert(current.ids[j], at: j) }
                #expect(replayed == current.ids, "seed \(seed): change set does not replay")
                #expect(
                    change.deletions == change.deletions.sorted() && change.insertions == change.insertions.sorted())
                #expect(Set(change.modifications).isDisjoint(with: change.insertions))
                #expect(change.modifications.count == change.modificationsInOld.count)
                // Every kept object whose observed values changed is reported modified, at both indices.
                let inserted = Set(change.insertions)
                for (j, id) in current.ids.enumerated() where !inserted.contains(j) {
                    if let before = old.values[id], before != current.values[id] {
                        #expect(change.modifications.contains(j), "seed \(seed): object \(id) changed but not reported")
                    }
                }
                for (j, i) in zip(change.modifications, change.modificationsInOld) {
                    #expect(old.ids[i] == current.ids[j])
                }
                #expect(!(change.deletions.isEmpty && change.insertions.isEmpty && change.modifications.isEmpty))
            }
            previous = current
            latest.withLock { $0[seed] = current.ids }
            let pause = Int.random(in: 0..<10, using: &random)
            if pause < 3 { await yield(times: pause * 20) }
        }
        return deliveries
    }

    /// The same contract for a map of objects and a list of values: random commits set, relink and remove
    /// keys, delete and change the objects behind them, and edit the list; every delivered change set must
    /// replay, report each key whose object changed, and the last delivery must equal the final state.
    @Test(arguments: seeds) func mapAndValueListChangeSetsReplayTheCommits(seed: UInt64) async throws {
        print("notification oracle (maps, value lists) seed \(seed) (replay with ACTORSTORE_NOTIFY_SEED=\(seed))")
        let realm = try await Realm(configuration: testConfiguration([ONItem.self, ONOwner.self]))
        try await realm.write { realm in
            let owner = realm.create(ONOwner.self)
            for i in 0..<20 {
                let item = realm.create(ONItem.self, value: ["id": i, "score": i, "name": "n\(i)"])
                if i % 2 == 0 { owner.kennel["k\(i)"] = item }
                owner.scores.append(i)
            }
        }
        let (map, scores) = await realm.read { realm in
            let owner = realm.objects(ONOwner.self)[0]
            return (owner.kennel.changes, owner.scores.changes)
        }
        let mapDone = Locked<[String: String]?>(nil)
        let listDone = Locked<[Int]?>(nil)
        let mapConsumer = Task { try await Self.consumeMap(map, seed: seed &+ 1, latest: mapDone) }
        let listConsumer = Task { try await Self.consumeList(scores, seed: seed &+ 2, latest: listDone) }
        try await waitUntil { mapDone.withLock { $0 != nil } && listDone.withLock { $0 != nil } }
        var random = SplitMix64(seed: seed)
        var nextID = 20
        for _ in 0..<Self.commits {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: await Self.yield(times: 30)
            case 1, 2: await Task.yield()
            default: break
            }
            let op = Int.random(in: 0..<100, using: &random)
            let a = Int.random(in: 0..<1_000, using: &random)
            let b = Int.random(in: 0..<1_000, using: &random)
            let id = nextID
            nextID += 1
            try await realm.write { realm in
                let items = realm.objects(ONItem.self)
                let owner = realm.objects(ONOwner.self)[0]
                switch op {
                case 0..<15:  // a key set to a new object
                    owner.kennel["k\(a % 40)"] = realm.create(ONItem.self, value: ["id": id, "score": b, "name": "n"])
                case 15..<25 where !items.isEmpty:  // a key set to an existing object
                    owner.kennel["k\(a % 40)"] = items[b % items.count]
                case 25..<35:  // a key removed
                    owner.kennel["k\(a % 40)"] = nil
                case 35..<45 where !items.isEmpty:  // an object deleted: its entries hold nil
                    realm.delete(items[a % items.count])
                case 45..<65 where !items.isEmpty:  // an object changed
                    items[a % items.count].score = b
                case 65..<70 where !items.isEmpty:
                    items[a % items.count].name = "m\(b)"
                case 70..<80:
                    owner.scores.insert(b % 50, at: a % (owner.scores.count + 1))
                case 80..<88 where !owner.scores.isEmpty:
                    owner.scores.remove(at: a % owner.scores.count)
                case 88..<94 where owner.scores.count > 1:
                    owner.scores.move(from: a % owner.scores.count, to: b % owner.scores.count)
                case 94..<100 where !owner.scores.isEmpty:
                    owner.scores[a % owner.scores.count] = b % 50
                default:
                    owner.scores.append(a % 50)
                }
            }
        }
        let (expectedMap, expectedList) = await realm.read { realm in
            let owner = realm.objects(ONOwner.self)[0]
            var map: [String: String] = [:]
            for key in owner.kennel.keys { map[key] = Self.describe(owner.kennel[key] ?? nil) }
            return (map, Array(owner.scores))
        }
        try? await waitUntil("seed \(seed): the map and list observers reaching the final state") {
            mapDone.withLock { $0 } == expectedMap && listDone.withLock { $0 } == expectedList
        }
        #expect(mapDone.withLock { $0 } == expectedMap, "seed \(seed): the map observer did not reach the final state")
        #expect(
            listDone.withLock { $0 } == expectedList, "seed \(seed): the list observer did not reach the final state")
        mapConsumer.cancel()
        listConsumer.cancel()
        #expect(try await mapConsumer.value > 1)
        #expect(try await listConsumer.value > 1)
    }

    /// A map entry as the oracle compares it: which object (by id) and its observed values.
    static func describe(_ item: ONItem?) -> String { item.map { "\($0.id)|\($0.score)|\($0.name)" } ?? "nil" }
    static func describe(_ item: Frozen<ONItem>?) -> String { item.map { "\($0.id)|\($0.score)|\($0.name)" } ?? "nil" }

    static func consumeMap(
        _ changes: ValueCollectionChanges<[String: Frozen<ONItem>?]>, seed: UInt64, latest: Locked<[String: String]?>
    ) async throws -> Int {
        var random = SplitMix64(seed: seed)
        var previous: [String: String]?
        var deliveries = 0
        for await change in changes {
            deliveries += 1
            let map: [String: Frozen<ONItem>?]
            var update: (deletions: [Int], insertions: [Int], modifications: [Int])?
            switch change {
            case .initial(let m): map = m
            case .update(let m, let d, let i, let mods):
                map = m
                update = (d, i, mods)
            case .error(let error):
                Issue.record("seed \(seed): \(error)")
                return deliveries
            }
            let current = map.mapValues { Self.describe($0) }
            if let old = previous, let update {
                // Deletions then insertions turn the previous sorted keys into the new ones.
                var keys = old.keys.sorted()
                let newKeys = current.keys.sorted()
                for i in update.deletions.reversed() { keys.remove(at: i) }
                for j in update.insertions { keys.insert(newKeys[j], at: j) }
                #expect(keys == newKeys, "seed \(seed): map change set does not replay")
                let inserted = Set(update.insertions)
                for (j, key) in newKeys.enumerated() where !inserted.contains(j) {
                    if old[key] != current[key] {
                        #expect(update.modifications.contains(j), "seed \(seed): key \(key) changed but not reported")
                    }
                }
                #expect(!(update.deletions.isEmpty && update.insertions.isEmpty && update.modifications.isEmpty))
            } else {
                #expect(previous == nil && update == nil)
            }
            previous = current
            latest.withLock { $0 = current }
            let pause = Int.random(in: 0..<10, using: &random)
            if pause < 3 { await yield(times: pause * 20) }
        }
        return deliveries
    }

    static func consumeList(
        _ changes: ValueCollectionChanges<[Int]>, seed: UInt64, latest: Locked<[Int]?>
    )
        async throws -> Int
    {
        var random = SplitMix64(seed: seed)
        var previous: [Int]?
        var deliveries = 0
        for await change in changes {
            deliveries += 1
            switch change {
            case .initial(let values):
                #expect(previous == nil)
                previous = values
            case .update(let values, let deletions, let insertions, _):
                var replayed = previous ?? []
                for i in deletions.reversed() { replayed.remove(at: i) }
                for j in insertions { replayed.insert(values[j], at: j) }
                #expect(replayed == values, "seed \(seed): list change set does not replay")
                previous = values
            case .error(let error):
                Issue.record("seed \(seed): \(error)")
                return deliveries
            }
            latest.withLock { $0 = previous }
            let pause = Int.random(in: 0..<10, using: &random)
            if pause < 3 { await yield(times: pause * 20) }
        }
        return deliveries
    }
}
