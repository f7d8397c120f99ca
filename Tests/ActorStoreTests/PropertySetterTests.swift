import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStore

// A managed object's property setter for a value type (or an optional value) goes straight to the write
// session's update, without the encoding step links and collections need. These tests hold it to the values
// an unmanaged object of the same properties holds, to Realm's rule that setting a property to the value it
// has is no change, and to an optional link's setter, which still takes the general path.

/// Every property but the primary key of `source`, set on `target` one by one through its setters.
private func copyProperties(from source: DITRow, to target: DITRow) {
    target.name = source.name
    target.note = source.note
    target.flag = source.flag
    target.small = source.small
    target.medium = source.medium
    target.wide = source.wide
    target.count = source.count
    target.ratio = source.ratio
    target.score = source.score
    target.maybeScore = source.maybeScore
    target.when = source.when
    target.blob = source.blob
    target.maybeBlob = source.maybeBlob
    target.uuid = source.uuid
    target.objectId = source.objectId
    target.decimal = source.decimal
}

/// `row`'s signature with its id replaced by `id`.
private func signature(_ row: DITRow, id: Int) -> String {
    let fields = row.signature.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
    return "\(id)|\(fields[1])"
}

enum PSTLevel: String, PersistableEnum {
    case low, high
}

final class PSTOwner: Object {
    @Persisted var name = ""
    @Persisted var level = PSTLevel.low
    @Persisted var maybeLevel: PSTLevel?
    @Persisted var pet: PSTPet?
}

final class PSTPet: Object {
    @Persisted var name = ""
}

@Suite struct PropertySetterTests {
    @Test func settingEveryPropertyInALoopStoresWhatTheSourceHolds() async throws {
        let realm = try await Realm(configuration: testConfiguration([DITRow.self]))
        try await realm.write { realm in
            for row in DITRow.samples(0..<300) { realm.add(row) }
        }
        let ids = DITRow.samples(0..<300).map(\.id).sorted()
        // The new values: other random objects (nulls and values both ways, edge values), every third object
        // given its own values again (no change).
        let expected = try await realm.write { realm in
            let sources = DITRow.samples(300..<600)
            let byID = Dictionary(uniqueKeysWithValues: DITRow.samples(0..<300).map { ($0.id, $0) })
            var expected: [String] = []
            for (i, object) in realm.objects(DITRow.self).sorted(by: \.id).enumerated() {
                let source = i % 3 == 0 ? byID[object.id]! : sources[i]
                copyProperties(from: source, to: object)
                // Read back at once, inside the transaction.
                #expect(object.signature == signature(source, id: object.id), "object \(object.id)")
                expected.append(signature(source, id: object.id))
            }
            return expected
        }
        let stored = await realm.read { $0.objects(DITRow.self).sorted(by: \.id).map(\.signature) }
        #expect(stored == expected)
        #expect(await realm.read { $0.objects(DITRow.self).sorted(by: \.id).map(\.id) } == ids)
    }

    @Test func aPropertySetToItsOwnValueIsNotAChange() async throws {
        let realm = try await Realm(configuration: testConfiguration([DITRow.self]))
        // Objects 0 and 3 (in key order).
        let (note, score) = try await realm.write { realm in
            let rows = DITRow.samples(0..<2)
            for row in rows { realm.add(row) }
            return (rows[1].note, rows[1].score)
        }
        let frozen = await realm.read { realm in realm.object(ofType: DITRow.self, forPrimaryKey: 3)?.freeze() }
        let objectReader = ChangeReader(try #require(frozen).changes)
        let reader = ChangeReader(await realm.read { $0.objects(DITRow.self).sorted(by: \.id).changes })
        guard case .initial? = try await reader.next() else {
            Issue.record("no initial delivery")
            return
        }
        // Every property of both objects set to the value it holds; then, on the second, `score` to a new
        // value and `note` to nil and then to "changed" (a change of `note` unless it held "changed").
        try await realm.write { realm in
            let samples = DITRow.samples(0..<2)
            for (object, sample) in zip(realm.objects(DITRow.self).sorted(by: \.id), samples) {
                copyProperties(from: sample, to: object)
            }
            let object = realm.object(ofType: DITRow.self, forPrimaryKey: 3)!
            object.score = score == 1 ? 2 : 1
            object.note = nil
            object.note = "changed"
        }
        guard case .update(_, let deletions, let insertions, let modifications)? = try await reader.next() else {
            Issue.record("no update delivered")
            return
        }
        #expect((deletions, insertions, modifications) == ([], [], [1]), "only the second object changed")
        guard case .change(let object, let properties)? = try await objectReader.next() else {
            Issue.record("no change delivered")
            return
        }
        #expect(properties.map { $0.name }.sorted() == (note == "changed" ? ["score"] : ["note", "score"]))
        #expect(object.note == "changed")
    }

    @Test func enumsOptionalValuesAndOptionalLinksAreSetThroughTheirSetters() async throws {
        let realm = try await Realm(configuration: testConfiguration([PSTOwner.self, PSTPet.self]))
        try await realm.write { realm in
            realm.add(PSTOwner(value: ["name": "a"]))
            realm.add(PSTPet(value: ["name": "rex"]))
        }
        try await realm.write { realm in
            let owner = realm.objects(PSTOwner.self).first!
            owner.level = .high
            owner.maybeLevel = .low
            owner.pet = realm.objects(PSTPet.self).first
            // An unmanaged pet set on a managed owner is added with it.
            owner.pet = PSTPet(value: ["name": "new"])
        }
        let first = await realm.read { realm in
            realm.objects(PSTOwner.self).map {
                "\($0.level) \($0.maybeLevel.map { "\($0)" } ?? "nil") \($0.pet?.name ?? "nil")"
            }
        }
        #expect(first == ["high low new"])
        #expect(await realm.read { $0.objects(PSTPet.self).map(\.name).sorted() } == ["new", "rex"])
        try await realm.write { realm in
            let owner = realm.objects(PSTOwner.self).first!
            owner.maybeLevel = nil
            owner.pet = nil
        }
        let second = await realm.read { realm in
            realm.objects(PSTOwner.self).map {
                "\($0.level) \($0.maybeLevel.map { "\($0)" } ?? "nil") \($0.pet?.name ?? "nil")"
            }
        }
        #expect(second == ["high nil nil"])
    }

    @Test func aSetThatCannotBeStoredFailsTheTransactionAndCommitsNothing() async throws {
        let realm = try await Realm(configuration: testConfiguration([DITRow.self]))
        let (id, before) = try await realm.write { realm in
            let row = DITRow.samples(0..<1)[0]
            realm.add(row)
            return (row.id, row.signature)
        }
        await #expect(throws: RealmError.self) {
            try await realm.write { realm in
                let object = realm.object(ofType: DITRow.self, forPrimaryKey: id)!
                object.score = 42
                // Over the 16 MB limit of one string.
                object.note = String(repeating: "x", count: 16 * 1024 * 1024 + 1)
                object.flag.toggle()
            }
        }
        let stored = await realm.read { $0.objects(DITRow.self).map(\.signature) }
        #expect(stored == [before])
    }
}
