import ActorStore
import ActorStoreTestSupport
import Foundation
import Testing

// Loops that change one object after another (`for object in results`, `results.update { }`) let the engine
// apply the changes of the object they are at a chunk of rows at a time. Whatever the loop body does in
// between (reads and writes of other objects, queries, nested loops, deletes, inserts, links), every read
// must see every change made before it. Checked against a plain-Swift oracle over more objects than one
// chunk. Replay a seed with ACTORSTORE_LOOP_SEED=<seed>.

final class OLItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var age = 0
    @Persisted var score = 0
    @Persisted var name = ""
    @Persisted var friend: OLItem?
}

/// The oracle's copy of one item.
private struct OLRow: Equatable {
    var age: Int
    var score: Int
    var name: String
    var friend: Int?
}

@Suite(.timeLimit(.minutes(30))) struct ObjectLoopTests {
    static let seeds: [UInt64] = {
        if let text = ProcessInfo.processInfo.environment["ACTORSTORE_LOOP_SEED"], let seed = UInt64(text) {
            return [seed]
        }
        return [UInt64.random(in: 1...UInt64.max)]
    }()

    private static func contents(_ realm: Realm) async -> [Int: OLRow] {
        await realm.read { realm in
            var rows: [Int: OLRow] = [:]
            for item in realm.objects(OLItem.self) {
                rows[item.id] = OLRow(age: item.age, score: item.score, name: item.name, friend: item.friend?.id)
            }
            return rows
        }
    }

    @Test(arguments: seeds) func loopsSeeEveryChangeMadeBeforeEachRead(seed: UInt64) async throws {
        print("object loop oracle seed \(seed) (replay with ACTORSTORE_LOOP_SEED=\(seed))")
        let realm = try await Realm(configuration: testConfiguration([OLItem.self]))
        // More objects than the engine applies at a time (4,096).
        let n = 4_700
        try await realm.write { realm in
            for i in 0..<n { realm.create(OLItem.self, value: ["id": i, "age": i % 20]) }
        }
        var oracle = [Int: OLRow](
            uniqueKeysWithValues: (0..<n).map { ($0, OLRow(age: $0 % 20, score: 0, name: "", friend: nil)) })
        var random = SplitMix64(seed: seed)
        var nextID = n
        for round in 0..<8 {
            let kind = Int.random(in: 0..<4, using: &random)
            let bound = Int.random(in: 5..<20, using: &random)
            let context = "seed \(seed) round \(round) loop \(kind)"
            // Which objects the loop starts with, by the oracle.
            let startsWith: Set<Int> = Set(
                oracle.filter { kind == 0 || kind == 2 || (kind == 1 ? $0.value.age < bound : $0.value.score < bound) }
                    .keys)
            let (visited, deleted, mismatches, after, rng, next) = try await realm.write {
                [oracle, random, nextID] realm in
                var oracle = oracle
                var random = random
                var nextID = nextID
                var visited: [Int] = []
                var deleted: Set<Int> = []
                var mismatches: [String] = []
                let check = { (item: OLItem, what: String) in
                    let id = item.id
                    let seen = OLRow(age: item.age, score: item.score, name: item.name, friend: item.friend?.id)
                    if seen != oracle[id] {
                        mismatches.append("\(what) \(id): read \(seen), oracle \(String(describing: oracle[id]))")
                    }
                }
                let body = { (item: OLItem) in
                    guard !item.isInvalidated else { return }  // deleted by an earlier step of this loop
                    let id = item.id
                    visited.append(id)
                    check(item, "loop object")
                    item.score += 1
                    oracle[id]!.score += 1
                    if Int.random(in: 0..<3, using: &random) == 0 {
                        item.age = (item.age + 1) % 20
                        oracle[id]!.age = (oracle[id]!.age + 1) % 20
                    }
                    if Int.random(in: 0..<5, using: &random) == 0 {
                        item.name = "r\(round)"
                        oracle[id]!.name = "r\(round)"
                    }
                    check(item, "loop object after its changes")
                    switch Int.random(in: 0..<400, using: &random) {
                    case 0..<4:
                        // Another object, ahead of the loop or behind it: read it, and change it.
                        let other = Int.random(in: 0..<nextID, using: &random)
                        if let found = realm.object(ofType: OLItem.self, forPrimaryKey: other) {
                            check(found, "other object")
                            found.score += 100
                            oracle[other]!.score += 100
                            check(item, "loop object after another's change")
                        }
                    case 4..<6:
                        let age = Int.random(in: 0..<20, using: &random)
                        let counted = realm.objects(OLItem.self).where { $0.age == age }.count
                        let expected = oracle.values.filter { $0.age == age }.count
                        if counted != expected {
                            mismatches.append("count age == \(age): \(counted), oracle \(expected)")
                        }
                    case 6:
                        let other = Int.random(in: 0..<nextID, using: &random)
                        if other != id, let found = realm.object(ofType: OLItem.self, forPrimaryKey: other) {
                            realm.delete(found)
                            oracle[other] = nil
                            deleted.insert(other)
                            for key in oracle.keys where oracle[key]!.friend == other { oracle[key]!.friend = nil }
                        }
                    case 7:
                        realm.create(OLItem.self, value: ["id": nextID, "age": 3])
                        oracle[nextID] = OLRow(age: 3, score: 0, name: "", friend: nil)
                        nextID += 1
                    case 8..<12:
                        let other = Int.random(in: 0..<nextID, using: &random)
                        if let found = realm.object(ofType: OLItem.self, forPrimaryKey: other) {
                            item.friend = found
                            oracle[id]!.friend = other
                        }
                    case 12:
                        // A loop inside the loop, over the next few objects and this one.
                        for inner in realm.objects(OLItem.self).where({ $0.id >= id && $0.id < id + 4 }) {
                            check(inner, "inner loop object")
                            inner.score += 10
                            oracle[inner.id]!.score += 10
                        }
                        check(item, "loop object after an inner loop")
                    case 13..<25:
                        // The object the loop is at (its delete may wait in the engine, as its updates do).
                        realm.delete(item)
                        oracle[id] = nil
                        deleted.insert(id)
                        for key in oracle.keys where oracle[key]!.friend == id { oracle[key]!.friend = nil }
                        if !item.isInvalidated { mismatches.append("\(id) not invalidated by its delete") }
                    default: break
                    }
                }
                switch kind {
                case 0: for item in realm.objects(OLItem.self) { body(item) }
                case 1: for item in realm.objects(OLItem.self).where({ $0.age < bound }) { body(item) }
                case 2: realm.objects(OLItem.self).update { body($0) }
                default: try realm.objects(OLItem.self).filter("score < %@", bound).update { body($0) }
                }
                return (visited, deleted, mismatches, oracle, random, nextID)
            }
            (oracle, random, nextID) = (after, rng, next)
            #expect(mismatches.isEmpty, "\(context): \(mismatches.prefix(5))")
            #expect(Set(visited).count == visited.count, "\(context): an object visited twice")
            #expect(Set(visited).isSubset(of: startsWith), "\(context): visited objects the loop did not start with")
            #expect(startsWith.subtracting(visited).isSubset(of: deleted), "\(context): skipped objects")
            #expect(await Self.contents(realm) == oracle, "\(context): the committed objects")
        }
    }

    @Test func copiesOfAnIteratorAndNestedLoopsReadTheirOwnChanges() async throws {
        let realm = try await Realm(configuration: testConfiguration([OLItem.self]))
        let (fromCopy, nested) = try await realm.write { realm -> ([Int], [Int]) in
            for i in 0..<20 { realm.create(OLItem.self, value: ["id": i]) }
            // The original goes ahead changing each object; the copy, behind it, must read the changes.
            var original = realm.objects(OLItem.self).makeIterator()
            var copy = original
            while let item = original.next() { item.score = item.id * 2 }
            var fromCopy: [Int] = []
            while let item = copy.next() { fromCopy.append(item.score) }
            // Each outer object changes the inner loop's objects; the inner loop reads them all.
            var nested: [Int] = []
            for outer in realm.objects(OLItem.self).where({ $0.id < 3 }) {
                for inner in realm.objects(OLItem.self).where({ $0.id < 3 }) {
                    inner.score += 1
                    nested.append(inner.score)
                }
                outer.score += 100
                nested.append(outer.score)
            }
            return (fromCopy, nested)
        }
        #expect(fromCopy == (0..<20).map { $0 * 2 })
        #expect(nested == [1, 3, 5, 101, 102, 4, 6, 104, 103, 105, 7, 107])
        let stored = await realm.read { $0.objects(OLItem.self).where { $0.id < 3 }.map(\.score) }
        #expect(stored == [103, 105, 107])
    }
}
