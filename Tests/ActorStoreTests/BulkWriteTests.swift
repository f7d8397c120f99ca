import ActorStore
import ActorStoreTestSupport
import Foundation
import Testing

// Set-based writes (`Results.setValue(_:forKey:)`, `Results.update(_:)`, `Results.update(_:_:)`, `Realm.delete(_: Results)`) against a
// plain-Swift oracle: random predicates (indexed equality and ranges, BETWEEN on the primary key, scans, links
// and embedded objects), every object compared after each commit, and an observer that must receive exactly
// the change set the oracle computes. Replay a seed with ACTORSTORE_BULK_SEED=<seed>.

final class BKItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var age = 0
    @Persisted var score = 0
    @Persisted var name = ""
    @Persisted var tag: BKTag?
    @Persisted var spot: BKSpot?
}

final class BKTag: Object {
    @Persisted var label = ""
    @Persisted var items: List<BKItem>
}

final class BKSpot: EmbeddedObject {
    @Persisted var x = 0
}

/// The oracle's copy of one item.
struct BKRow: Equatable, Sendable {
    var age: Int
    var score: Int
    var name: String
    var tag: String?
    var spot: Int?
}

/// One random predicate, as a query string and as the plain-Swift test it means.
struct BKPredicate: CustomStringConvertible {
    let format: String
    let test: (Int, BKRow) -> Bool
    var description: String { format }

    static func random(using random: inout SplitMix64, count: Int) -> BKPredicate {
        let a = Int.random(in: 0..<20, using: &random)
        let b = a + Int.random(in: 0..<8, using: &random)
        let i = Int.random(in: 0..<(count + 5), using: &random)
        let j = i + Int.random(in: 0..<30, using: &random)
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return BKPredicate(format: "age == \(a)") { $1.age == a }
        case 1: return BKPredicate(format: "age < \(a)") { $1.age < a }
        case 2: return BKPredicate(format: "age >= \(a) AND age < \(b)") { $1.age >= a && $1.age < b }
        case 3: return BKPredicate(format: "age BETWEEN {\(a), \(b)}") { $1.age >= a && $1.age <= b }
        case 4: return BKPredicate(format: "id BETWEEN {\(i), \(j)}") { id, _ in id >= i && id <= j }
        case 5: return BKPredicate(format: "id > \(i)") { id, _ in id > i }
        case 6: return BKPredicate(format: "score < \(a * 3)") { $1.score < a * 3 }
        case 7:
            return BKPredicate(format: "age == \(a) OR score > \(40)") { $1.age == a || $1.score > 40 }
        case 8: return BKPredicate(format: "tag.label == 't\(a % 3)'") { $1.tag == "t\(a % 3)" }
        case 9: return BKPredicate(format: "spot.x < \(a)") { $1.spot.map { $0 < a } ?? false }
        case 10:
            return BKPredicate(format: "age BETWEEN {\(a), \(b)} AND score >= \(10)") {
                $1.age >= a && $1.age <= b && $1.score >= 10
            }
        default: return BKPredicate(format: "name BEGINSWITH 'n1'") { $1.name.hasPrefix("n1") }
        }
    }
}

@Suite struct BulkWriteTests {
    static let steps = TestDepth.count("ACTORSTORE_BULK_STEPS", long: 400, sampled: 60)

    static var seeds: [UInt64] { TestDepth.seeds("ACTORSTORE_BULK_SEED", count: 2) }

    /// The realm's items as the oracle describes them, by id.
    static func snapshot(_ realm: Realm) async -> [Int: BKRow] {
        await realm.read { realm in
            var rows: [Int: BKRow] = [:]
            for item in realm.objects(BKItem.self) {
                rows[item.id] = BKRow(
                    age: item.age, score: item.score, name: item.name, tag: item.tag?.label, spot: item.spot?.x)
            }
            return rows
        }
    }

    @Test(arguments: seeds) func setBasedWritesMatchThePlainSwiftOracle(seed: UInt64) async throws {
        print("bulk write oracle seed \(seed) (replay with ACTORSTORE_BULK_SEED=\(seed))")
        var random = SplitMix64(seed: seed)
        let realm = try await Realm(configuration: testConfiguration([BKItem.self, BKTag.self, BKSpot.self]))
        var oracle: [Int: BKRow] = [:]
        var lists: [String: [Int]] = ["t0": [], "t1": [], "t2": []]
        var nextID = 0
        func addItems(_ n: Int, _ random: inout SplitMix64) -> [(Int, BKRow)] {
            (0..<n).map { _ in
                defer { nextID += 1 }
                let row = BKRow(
                    age: Int.random(in: 0..<25, using: &random), score: Int.random(in: 0..<60, using: &random),
                    name: "n\(Int.random(in: 0..<30, using: &random))",
                    tag: Bool.random(using: &random) ? "t\(Int.random(in: 0..<3, using: &random))" : nil,
                    spot: Bool.random(using: &random) ? Int.random(in: 0..<25, using: &random) : nil)
                return (nextID, row)
            }
        }
        func insert(_ rows: [(Int, BKRow)], into realm: Realm) async throws {
            try await realm.write { realm in
                for tag in ["t0", "t1", "t2"] where realm.objects(BKTag.self).where({ $0.label == tag }).isEmpty {
                    realm.create(BKTag.self, value: ["label": tag])
                }
                for (id, row) in rows {
                    let item = realm.create(
                        BKItem.self, value: ["id": id, "age": row.age, "score": row.score, "name": row.name])
                    if let label = row.tag {
                        let tag = realm.objects(BKTag.self).where { $0.label == label }.first!
                        item.tag = tag
                        tag.items.append(item)
                    }
                    if let x = row.spot { item.spot = BKSpot(value: ["x": x]) }
                }
            }
        }
        let initial = addItems(120, &random)
        try await insert(initial, into: realm)
        for (id, row) in initial {
            oracle[id] = row
            if let tag = row.tag { lists[tag]!.append(id) }
        }
        // Observed with the item's own scalar properties: modifications are then exactly the objects whose
        // age, score or name changed.
        let changes = try await realm.read { try $0.objects(BKItem.self).changes(keyPaths: ["age", "score", "name"]) }
        var iterator = changes.detailed.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.isInitial == true)

        for step in 0..<Self.steps {
            let predicate = BKPredicate.random(using: &random, count: nextID)
            let matches = Set(oracle.filter { predicate.test($0.key, $0.value) }.keys)
            let operation = Int.random(in: 0..<8, using: &random)
            let value = Int.random(in: 0..<60, using: &random)
            let beforeRows = oracle
            let context = "seed \(seed) step \(step) op \(operation) \(predicate)"
            let format = predicate.format
            try await realm.write { realm in
                let results = try realm.objects(BKItem.self).filter(format)
                switch operation {
                case 0: results.setValue(value, forKey: "score")
                case 1: results.update { $0.score += 1 }
                case 2:
                    results.update { item in
                        item.age = (item.age + value) % 25
                        item.name = "n\(value)"
                    }
                case 3: realm.delete(results)
                case 4: results.setValue(["x": value], forKey: "spot")
                case 6: results.update(\.score) { $0 += value % 3 }
                case 7: results.update(\.age) { $0 = ($0 + value) % 25 }
                default:
                    let tag = realm.objects(BKTag.self).where { $0.label == "t\(value % 3)" }.first
                    results.setValue(value % 4 == 0 ? nil : tag, forKey: "tag")
                }
            }
            for id in matches {
                switch operation {
                case 0: oracle[id]!.score = value
                case 1: oracle[id]!.score += 1
                case 2:
                    oracle[id]!.age = (oracle[id]!.age + value) % 25
                    oracle[id]!.name = "n\(value)"
                case 3:
                    oracle[id] = nil
                    for tag in lists.keys { lists[tag]!.removeAll { $0 == id } }
                case 4: oracle[id]!.spot = value
                case 6: oracle[id]!.score += value % 3
                case 7: oracle[id]!.age = (oracle[id]!.age + value) % 25
                default: oracle[id]!.tag = value % 4 == 0 ? nil : "t\(value % 3)"
                }
            }
            if step % 10 == 9 {
                let more = addItems(5, &random)
                try await insert(more, into: realm)
                for (id, row) in more {
                    oracle[id] = row
                    if let tag = row.tag { lists[tag]!.append(id) }
                }
            }
            #expect(await Self.snapshot(realm) == oracle, "\(context)")
            let stored = await realm.read { realm in
                Dictionary(uniqueKeysWithValues: realm.objects(BKTag.self).map { ($0.label, $0.items.map(\.id)) })
            }
            #expect(stored == lists, "\(context): tag lists")
            // Embedded objects replaced or deleted with their parents leave nothing behind.
            let spots = await realm.read { realm in realm.objects(BKItem.self).filter { $0.spot != nil }.count }
            #expect(spots == oracle.values.filter { $0.spot != nil }.count, "\(context)")

            // The observer's change set for the bulk write (and the inserts, when there were some).
            let expected = ExpectedChanges(from: beforeRows, to: oracle) {
                $0.age != $1.age || $0.score != $1.score || $0.name != $1.name
            }
            guard !expected.isEmpty else { continue }
            let change = await iterator.next()
            expected.expect(
                change.map { ($0.deletions, $0.insertions, $0.modifications, $0.collection.map(\.id)) }, context)
        }
    }

    @Test func setValueRejectsBadNamesValuesAndThePrimaryKeyAndCommitsNothing() async throws {
        let realm = try await Realm(configuration: testConfiguration([BKItem.self, BKTag.self, BKSpot.self]))
        try await realm.write { realm in
            for i in 0..<3 { realm.create(BKItem.self, value: ["id": i, "score": i]) }
        }
        let attempts: [(String, @Sendable (Results<BKItem>) -> Void)] = [
            ("no such property", { $0.setValue(1, forKey: "nope") }),
            ("primary key", { $0.setValue(7, forKey: "id") }),
            ("wrong type", { $0.setValue("seven", forKey: "score") }),
            ("nil for a non-optional", { $0.setValue(nil, forKey: "score") }),
        ]
        for (label, attempt) in attempts {
            await #expect(throws: RealmError.self, "\(label)") {
                try await realm.write { realm in
                    realm.objects(BKItem.self).setValue(99, forKey: "score")  // rolled back with the rest
                    attempt(realm.objects(BKItem.self))
                }
            }
            let scores = await realm.read { $0.objects(BKItem.self).map(\.score) }
            #expect(scores == [0, 1, 2], "\(label)")
        }
        do {
            try await realm.write { realm in realm.objects(BKItem.self).setValue(1, forKey: "nope") }
            Issue.record("expected an error")
        } catch let error as RealmError {
            #expect(error.code == .invalidValue)
            #expect(error.message.contains("nope"))
        }
    }

    @Test func updateReusesOneObjectOnlyWhileTheBodyDoesNotKeepIt() async throws {
        let realm = try await Realm(configuration: testConfiguration([BKItem.self, BKTag.self, BKSpot.self]))
        let ids = try await realm.write { realm -> [Int] in
            for i in 0..<10 { realm.create(BKItem.self, value: ["id": i, "score": i]) }
            var kept: [BKItem] = []
            realm.objects(BKItem.self).where { $0.id >= 5 }.update { item in
                item.score *= 10
                kept.append(item)  // kept objects must stay valid and distinct
            }
            var seen: [Int] = []
            realm.objects(BKItem.self).where { $0.id < 5 }.update { seen.append($0.id) }
            return kept.map(\.id) + seen
        }
        #expect(ids == [5, 6, 7, 8, 9, 0, 1, 2, 3, 4])
        let scores = await realm.read { $0.objects(BKItem.self).map(\.score) }
        #expect(scores == [0, 1, 2, 3, 4, 50, 60, 70, 80, 90])
    }

    @Test func updateSkipsObjectsTheBodyDeletedAndRethrows() async throws {
        struct Stop: Error {}
        let realm = try await Realm(configuration: testConfiguration([BKItem.self, BKTag.self, BKSpot.self]))
        try await realm.write { realm in
            for i in 0..<6 { realm.create(BKItem.self, value: ["id": i]) }
            var visited: [Int] = []
            realm.objects(BKItem.self).update { item in
                visited.append(item.id)
                if item.id == 1 { realm.delete(realm.object(ofType: BKItem.self, forPrimaryKey: 2)!) }
            }
            #expect(visited == [0, 1, 3, 4, 5])
        }
        await #expect(throws: Stop.self) {
            try await realm.write { realm in
                try realm.objects(BKItem.self).update { item in
                    item.score = 5
                    if item.id == 3 { throw Stop() }
                }
            }
        }
        let scores = await realm.read { $0.objects(BKItem.self).map(\.score) }
        #expect(scores == [0, 0, 0, 0, 0])
    }
    /// Over every object (the rows are looked up a chunk at a time) and over a query that scans the rows
    /// (their locations come from the scan, and hold only until the transform moves another row).
    @Test(arguments: [false, true])
    func computedUpdateOfOnePropertySeesAndSurvivesWritesFromItsTransform(scanned: Bool) async throws {
        struct Stop: Error {}
        let realm = try await Realm(configuration: testConfiguration([BKItem.self, BKTag.self, BKSpot.self]))
        let n = 5_000  // more than the engine applies at a time
        let (seen, counted) = try await realm.write { realm -> ([Int], Int) in
            for i in 0..<n { realm.create(BKItem.self, value: ["id": i, "age": i % 7, "score": i]) }
            var seen: [Int] = []
            var counted = -1
            let all = realm.objects(BKItem.self)
            (scanned ? all.where { $0.name == "" } : all).update(\.score) { score in
                if score == 10 {
                    // A write from the transform: object 20 gets +1000 before its turn, object 5 after it,
                    // and object 4_800, in a later chunk of rows, before its turn too (its row moves: the
                    // location the query read for it no longer holds).
                    realm.object(ofType: BKItem.self, forPrimaryKey: 20)!.score += 1000
                    realm.object(ofType: BKItem.self, forPrimaryKey: 5)!.score += 1000
                    realm.object(ofType: BKItem.self, forPrimaryKey: 4_800)!.score += 1000
                    seen.append(realm.object(ofType: BKItem.self, forPrimaryKey: 9)!.score)  // already updated
                }
                if score == 4_500 {
                    // A query reads the updates before it (more than a chunk of them).
                    counted = realm.objects(BKItem.self).where { $0.score > 4_500 }.count
                }
                score += 1
            }
            return (seen, counted)
        }
        #expect(seen == [10])
        // By object 4_500's turn, objects 0...4_499 hold i + 1 (at most 4_500; 5 and 20 are near 1_000):
        // the scores above 4_500 are the objects not reached yet.
        #expect(counted == n - 4_501)
        let scores = await realm.read { $0.objects(BKItem.self).map(\.score) }
        var expected = (0..<n).map { $0 + 1 }
        expected[20] += 1000
        expected[5] += 1000
        expected[4_800] += 1000
        #expect(scores == expected)
        // The indexed property, through the index afterwards.
        try await realm.write { realm in realm.objects(BKItem.self).where { $0.age == 3 }.update(\.age) { $0 = 6 } }
        let ages = await realm.read { realm in
            (
                realm.objects(BKItem.self).where { $0.age == 3 }.count,
                realm.objects(BKItem.self).where { $0.age == 6 }.count
            )
        }
        #expect(ages == (0, (0..<n).filter { $0 % 7 == 3 || $0 % 7 == 6 }.count))

        // A throw stops the update where it is; throwing out of the write rolls everything back.
        await #expect(throws: Stop.self) {
            try await realm.write { realm in
                try realm.objects(BKItem.self).update(\.name) { name in
                    if realm.objects(BKItem.self).where({ $0.name == "x" }).count == 3 { throw Stop() }
                    name = "x"
                }
            }
        }
        #expect(await realm.read { $0.objects(BKItem.self).where { $0.name != "" }.count } == 0)
        let partial = try await realm.write { realm -> Int in
            do {
                try realm.objects(BKItem.self).update(\.name) { name in
                    if realm.objects(BKItem.self).where({ $0.name == "x" }).count == 3 { throw Stop() }
                    name = "x"
                }
            } catch {}
            return realm.objects(BKItem.self).where { $0.name == "x" }.count
        }
        #expect(partial == 3)

        // Not a property it can compute: the write fails with a message, nothing is committed.
        let badPaths: [(String, @Sendable (Results<BKItem>) -> Void)] = [
            ("primary key", { $0.update(\.id) { $0 += 1 } }),
            ("link", { $0.update(\.tag) { $0 = nil } }),
        ]
        for (label, attempt) in badPaths {
            let error = await #expect(throws: RealmError.self, "\(label)") {
                try await realm.write { realm in
                    realm.objects(BKItem.self).setValue(-1, forKey: "score")
                    attempt(realm.objects(BKItem.self))
                }
            }
            #expect(error?.code == .invalidValue, "\(label)")
            #expect(error?.message.contains("update(_:_:)") == true, "\(label): \(String(describing: error))")
            #expect(await realm.read { $0.objects(BKItem.self).where { $0.score == -1 }.count } == 0, "\(label)")
        }
    }
}
