import ActorStore
import ActorStoreTestSupport
import Foundation
import Testing

// `realm.delete(results)` of a query that scans the rows (no index fits) tests and deletes in one pass
// (`WriteTransaction.deleteRows(_:where:)`), for a class with no embedded objects that no object links to.
// Checked against a plain-Swift oracle: the objects left, the index and the primary key, the backlinks of the
// deleted objects' links, and the change set an observer receives; in transactions that first insert and
// update objects (rows in the transaction's own record, updates still waiting in the engine).

final class SDPlain: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var age = 0
    @Persisted var score = 0
    @Persisted var name = ""
    @Persisted var label: SDLabel?
}

final class SDLabel: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted(originProperty: "label") var plains: LinkingObjects<SDPlain>
}

struct SDRow: Equatable, Sendable {
    var age: Int
    var score: Int
    var name: String
    var label: String?
}

@Suite struct ScanDeleteTests {
    static let steps = TestDepth.count("ACTORSTORE_BULK_STEPS", long: 300, sampled: 40)

    static var seeds: [UInt64] { TestDepth.seeds("ACTORSTORE_BULK_SEED", count: 2) }

    /// A predicate as a query string and as the oracle's test. Cases 0–5 read unindexed properties only
    /// (the one-pass scan); 6 and 7 involve the indexed `age` or the primary key (deleted by key).
    static func predicate(_ random: inout SplitMix64, count: Int) -> (format: String, test: (Int, SDRow) -> Bool) {
        let a = Int.random(in: 0..<60, using: &random)
        let n = Int.random(in: 0..<10, using: &random)
        let i = Int.random(in: 0..<(count + 5), using: &random)
        switch Int.random(in: 0..<8, using: &random) {
        case 0: return ("score < \(a)", { $1.score < a })
        case 1: return ("score >= \(a) AND name != 'n\(n)'", { $1.score >= a && $1.name != "n\(n)" })
        case 2: return ("name == 'n\(n)' OR score > 55", { $1.name == "n\(n)" || $1.score > 55 })
        case 3: return ("NOT (score BETWEEN {10, \(a)})", { !($1.score >= 10 && $1.score <= a) })
        case 4: return ("name BEGINSWITH 'n1'", { $1.name.hasPrefix("n1") })
        case 5: return ("score == -1", { $1.score == -1 })  // matches nothing
        case 6: return ("age < \(a % 25) AND score > 20", { $1.age < a % 25 && $1.score > 20 })
        default: return ("id > \(i) AND score < 30", { id, row in id > i && row.score < 30 })
        }
    }

    static func add(_ rows: [(Int, SDRow)], to realm: isolated Realm) {
        for (id, row) in rows {
            let plain = realm.create(
                SDPlain.self, value: ["id": id, "age": row.age, "score": row.score, "name": row.name])
            plain.label = row.label.map { realm.object(ofType: SDLabel.self, forPrimaryKey: $0)! }
        }
    }

    @Test(.timeLimit(.minutes(5)), arguments: seeds)
    func scanningDeleteMatchesThePlainSwiftOracle(seed: UInt64) async throws {
        print("scan delete oracle seed \(seed) (replay with ACTORSTORE_BULK_SEED=\(seed))")
        var random = SplitMix64(seed: seed)
        let realm = try await Realm(configuration: testConfiguration([SDPlain.self, SDLabel.self]))
        var oracle: [Int: SDRow] = [:]
        var nextID = 0
        func newRows(_ count: Int, _ random: inout SplitMix64) -> [(Int, SDRow)] {
            (0..<count).map { _ in
                defer { nextID += 1 }
                let label = Bool.random(using: &random) ? "l\(Int.random(in: 0..<3, using: &random))" : nil
                return (
                    nextID,
                    SDRow(
                        age: Int.random(in: 0..<25, using: &random), score: Int.random(in: 0..<60, using: &random),
                        name: "n\(Int.random(in: 0..<10, using: &random))", label: label)
                )
            }
        }
        let initial = newRows(200, &random)
        try await realm.write { realm in
            for name in ["l0", "l1", "l2"] { realm.create(SDLabel.self, value: ["name": name]) }
            Self.add(initial, to: realm)
        }
        for (id, row) in initial { oracle[id] = row }
        let changes = try await realm.read { try $0.objects(SDPlain.self).changes(keyPaths: ["score"]) }
        var iterator = changes.detailed.makeAsyncIterator()
        #expect(await iterator.next()?.isInitial == true)

        for step in 0..<Self.steps {
            let (format, test) = Self.predicate(&random, count: nextID)
            let bump = Int.random(in: 0..<4, using: &random)
            let more = newRows(Int.random(in: 0..<4, using: &random), &random)
            let beforeRows = oracle
            let context = "seed \(seed) step \(step) \(format) bump \(bump) adding \(more.count)"
            try await realm.write { realm in
                // First, in the same transaction: new objects, and an update of every object whose id is a
                // multiple of 4 plus `bump` (object by object: the updates wait in the engine).
                Self.add(more, to: realm)
                for plain in realm.objects(SDPlain.self) where plain.id % 4 == bump {
                    plain.score = (plain.score + 7) % 60
                }
                realm.delete(try realm.objects(SDPlain.self).filter(format))
            }
            for (id, row) in more { oracle[id] = row }
            for id in oracle.keys where id % 4 == bump { oracle[id]!.score = (oracle[id]!.score + 7) % 60 }
            for (id, row) in oracle where test(id, row) { oracle[id] = nil }

            let stored = await realm.read { realm in
                Dictionary(
                    uniqueKeysWithValues: realm.objects(SDPlain.self).map {
                        ($0.id, SDRow(age: $0.age, score: $0.score, name: $0.name, label: $0.label?.name))
                    })
            }
            #expect(stored == oracle, "\(context)")
            // The index, the primary key and the backlinks agree with the objects left.
            let age = Int.random(in: 0..<25, using: &random)
            let ids = nextID
            let (indexed, present, backlinks) = await realm.read { realm in
                (
                    realm.objects(SDPlain.self).where { $0.age == age }.map(\.id).sorted(),
                    (0..<ids).filter { realm.object(ofType: SDPlain.self, forPrimaryKey: $0) != nil },
                    ["l0", "l1", "l2"].map {
                        realm.object(ofType: SDLabel.self, forPrimaryKey: $0)!.plains.map(\.id).sorted()
                    }
                )
            }
            #expect(indexed == oracle.filter { $0.value.age == age }.keys.sorted(), "\(context): index")
            #expect(present == oracle.keys.sorted(), "\(context): primary key")
            let expectedBacklinks = ["l0", "l1", "l2"].map { name in
                oracle.filter { $0.value.label == name }.keys.sorted()
            }
            #expect(backlinks == expectedBacklinks, "\(context): backlinks")

            // The observer's change set for the whole transaction.
            let expected = ExpectedChanges(from: beforeRows, to: oracle) { $0.score != $1.score }
            guard !expected.isEmpty else { continue }
            let change = await iterator.next()
            expected.expect(
                change.map { ($0.deletions, $0.insertions, $0.modifications, $0.collection.map(\.id)) }, context)
        }
    }

    /// Objects deleted one by one and a scanning delete of the same class in one write: the observer gets
    /// every deleted object once, at its index before the write, whichever delete recorded it first.
    @Test func singleDeletesAndAScanningDeleteInOneWriteReportEveryDeletion() async throws {
        let realm = try await Realm(configuration: testConfiguration([SDPlain.self, SDLabel.self]))
        try await realm.write { realm in
            for i in 0..<40 { realm.create(SDPlain.self, value: ["id": i, "score": i % 10]) }
        }
        let changes = try await realm.read { try $0.objects(SDPlain.self).changes(keyPaths: ["score"]) }
        var iterator = changes.detailed.makeAsyncIterator()
        #expect(await iterator.next()?.isInitial == true)
        try await realm.write { realm in
            // 35 and 7 one by one (7 would match below), then every object with score < 3, then 25.
            for id in [35, 7] { realm.delete(realm.object(ofType: SDPlain.self, forPrimaryKey: id)!) }
            realm.delete(realm.objects(SDPlain.self).where { $0.score < 3 })
            realm.delete(realm.object(ofType: SDPlain.self, forPrimaryKey: 25)!)
        }
        let deleted = Set([35, 7, 25] + (0..<40).filter { $0 % 10 < 3 })
        let change = await iterator.next()
        #expect(change?.deletions == (0..<40).filter { deleted.contains($0) })
        #expect(change?.insertions.isEmpty == true)
        #expect(change?.collection.map { $0.id } == (0..<40).filter { !deleted.contains($0) })
    }

    /// A scanning delete in a write block that throws is rolled back with it: every object and backlink is
    /// still there; the same delete then commits.
    @Test func aScanningDeleteRolledBackWithItsWriteBlockLeavesEveryObject() async throws {
        struct Stop: Error {}
        let realm = try await Realm(configuration: testConfiguration([SDPlain.self, SDLabel.self]))
        try await realm.write { realm in
            let label = realm.create(SDLabel.self, value: ["name": "l0"])
            for i in 0..<50 { realm.create(SDPlain.self, value: ["id": i, "score": i]).label = label }
        }
        await #expect(throws: Stop.self) {
            try await realm.write { realm in
                realm.delete(realm.objects(SDPlain.self).where { $0.score < 25 })
                throw Stop()
            }
        }
        let (count, linked) = await realm.read { realm in
            (realm.objects(SDPlain.self).count, realm.object(ofType: SDLabel.self, forPrimaryKey: "l0")!.plains.count)
        }
        #expect(count == 50)
        #expect(linked == 50)
        try await realm.write { realm in realm.delete(realm.objects(SDPlain.self).where { $0.score < 25 }) }
        let left = await realm.read { realm in realm.objects(SDPlain.self).map(\.id) }
        #expect(left == Array(25..<50))
    }

    /// A scanning delete survives closing and reopening the realm, from the checkpoint and by replaying the log:
    /// the objects left, the index on `age`, the primary keys and the labels' backlinks read back from the file
    /// are those of the objects left.
    @Test func aScanningDeleteReadsBackTheSameAfterReopening() async throws {
        let configuration = testConfiguration([SDPlain.self, SDLabel.self])
        func summary(_ realm: Realm) async -> [String] {
            await realm.read { realm in
                [
                    realm.objects(SDPlain.self).sorted(by: \.id).map { "\($0.id):\($0.score):\($0.name)" }
                        .joined(separator: ","),
                    (0..<25).map { age in "\(realm.objects(SDPlain.self).where { $0.age == age }.count)" }
                        .joined(separator: ","),
                    (0..<300).filter { realm.object(ofType: SDPlain.self, forPrimaryKey: $0) != nil }.map(String.init)
                        .joined(separator: ","),
                    ["l0", "l1"].map { name in
                        let ids = realm.object(ofType: SDLabel.self, forPrimaryKey: name)!.plains.map(\.id)
                        return ids.sorted().map(String.init).joined(separator: " ")
                    }.joined(separator: ","),
                ]
            }
        }
        let expectedIDs = (0..<300).filter { !($0 % 60 < 30 && $0 % 10 != 3) }
        let written: [String]
        do {
            let realm = try await Realm(configuration: configuration)
            try await realm.write { realm in
                let labels = ["l0", "l1"].map { realm.create(SDLabel.self, value: ["name": $0]) }
                for i in 0..<300 {
                    realm.create(
                        SDPlain.self, value: ["id": i, "age": i % 25, "score": i % 60, "name": "n\(i % 10)"]
                    ).label = labels[i % 2]
                }
            }
            try await realm.write { realm in
                realm.delete(realm.objects(SDPlain.self).where { $0.score < 30 && $0.name != "n3" })
            }
            written = await summary(realm)
            #expect(written[2] == expectedIDs.map(String.init).joined(separator: ","))
            let ageCounts = (0..<25).map { age in "\(expectedIDs.filter { $0 % 25 == age }.count)" }
            #expect(written[1] == ageCounts.joined(separator: ","))
        }
        // From the checkpoint written at close, then by replaying the whole log (the delete operations).
        do {
            let reopened = try await Realm(configuration: configuration)
            #expect(await summary(reopened) == written)
        }
        var replaying = configuration
        replaying.verifiesWholeFileAtOpen = true
        let replayed = try await Realm(configuration: replaying)
        #expect(await summary(replayed) == written)
    }
}
