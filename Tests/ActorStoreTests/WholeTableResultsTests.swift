import ActorStore
import Foundation
import Testing

final class WholeTableItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

/// `count`, `results[i]` and `index(of:)` of all objects of a class read the version's row index directly
/// (in the snapshot, or in the open write transaction): they must agree with iteration, before and after
/// writes, inside a transaction (its own inserts and deletes), and after it is cancelled.
@Suite("Whole-table results")
struct WholeTableResultsTests {
    /// Each object's id by position, read three ways; a description of the first disagreement, or nil.
    private static func disagreement(_ realm: isolated Realm) -> String? {
        let results = realm.objects(WholeTableItem.self)
        let iterated = results.map(\.id)
        if results.count != iterated.count { return "count \(results.count), iterated \(iterated.count)" }
        for (position, id) in iterated.enumerated() {
            let object = results[position]
            if object.id != id { return "results[\(position)].id \(object.id), iterated \(id)" }
            if results.index(of: object) != position {
                return "index(of:) \(String(describing: results.index(of: object)))"
            }
        }
        if results.isEmpty != iterated.isEmpty { return "isEmpty" }
        if results.first?.id != iterated.first || results.last?.id != iterated.last { return "first/last" }
        return nil
    }

    @Test func indexAccessAgreesWithIteration() async throws {
        var config = Realm.Configuration(inMemoryIdentifier: "WholeTable-" + UUID().uuidString)
        config.objectTypes = [WholeTableItem.self]
        let realm = try await Realm(configuration: config)
        #expect(await realm.read { Self.disagreement($0) } == nil)
        #expect(await realm.read { $0.objects(WholeTableItem.self).count } == 0)
        try await realm.write { realm in
            for i in 0..<300 { realm.create(WholeTableItem.self, value: ["id": i, "name": "n\(i)"]) }
        }
        #expect(await realm.read { Self.disagreement($0) } == nil)
        try await realm.write { realm in
            // The transaction's own deletes and inserts are seen at once.
            for i in stride(from: 0, to: 300, by: 4) {
                realm.delete(realm.object(ofType: WholeTableItem.self, forPrimaryKey: i)!)
            }
            realm.create(WholeTableItem.self, value: ["id": 1_000, "name": "new"])
            #expect(Self.disagreement(realm) == nil)
            let results = realm.objects(WholeTableItem.self)
            #expect(results.count == 226)
            #expect(results[0].id == 1 && results[results.count - 1].id == 1_000)
        }
        #expect(await realm.read { Self.disagreement($0) } == nil)
        try await realm.write { realm in
            realm.create(WholeTableItem.self, value: ["id": 2_000, "name": "cancelled"])
            #expect(realm.objects(WholeTableItem.self).count == 227)
            realm.cancelWrite()
        }
        let after = await realm.read { realm in
            (realm.objects(WholeTableItem.self).count, Self.disagreement(realm))
        }
        #expect(after.0 == 226 && after.1 == nil)
    }
}

/// A filtered `Results` that scanned the rows keeps the matches' row locations and reads the objects through
/// them: what it returns must be the current rows, in a read, inside a transaction that changed them, and
/// when the loop itself changes the objects it iterates.
@Suite("Filtered results")
struct FilteredResultsTests {
    @Test func scannedMatchesReadTheCurrentRows() async throws {
        var config = Realm.Configuration(inMemoryIdentifier: "Filtered-" + UUID().uuidString)
        config.objectTypes = [WholeTableItem.self]
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            for i in 0..<200 { realm.create(WholeTableItem.self, value: ["id": i, "name": "n\(i % 3)"]) }
        }
        let read = try await realm.read { realm in
            let results = try realm.objects(WholeTableItem.self).filter("name == %@", "n1")
            return (results.map(\.id), (0..<results.count).map { results[$0].id })
        }
        let expected = Array(stride(from: 1, to: 200, by: 3))
        #expect(read.0 == expected && read.1 == expected)
        try await realm.write { realm in
            let results = try realm.objects(WholeTableItem.self).filter("name == %@", "n1")
            // Rows moved by this transaction: the matches are recomputed, with the new rows.
            for object in results { object.name = "n1" + "x" }
            let renamed = try realm.objects(WholeTableItem.self).filter("name == %@", "n1x")
            #expect(renamed.map(\.id) == expected)
            #expect((0..<renamed.count).map { renamed[$0].name } == Array(repeating: "n1x", count: expected.count))
            // Changing the objects during the loop: each one read after the change is its current row.
            var seen: [String] = []
            for object in renamed {
                seen.append(object.name)
                if object.id + 3 < 200 {
                    realm.object(ofType: WholeTableItem.self, forPrimaryKey: object.id + 3)?.name = "changed"
                }
            }
            #expect(seen == ["n1x"] + Array(repeating: "changed", count: expected.count - 1))
        }
        let after = try await realm.read { realm in
            try realm.objects(WholeTableItem.self).filter("name == %@", "changed").map(\.id)
        }
        #expect(after == Array(expected.dropFirst()))
    }
}
