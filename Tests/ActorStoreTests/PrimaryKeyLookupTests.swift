import ActorStore
import Foundation
import Testing

// `object(ofType:forPrimaryKey:)` has a typed form (a key whose static type is known) besides the
// `Any?` one: both must find exactly the same objects, whatever the key's type.

final class LookupIntKeyed: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

final class LookupStringKeyed: Object {
    @Persisted(primaryKey: true) var id = ""
    @Persisted var age = 0
}

final class LookupOptionalKeyed: Object {
    @Persisted(primaryKey: true) var id: Int?
    @Persisted var name = ""
}

final class LookupUUIDKeyed: Object {
    @Persisted(primaryKey: true) var id = UUID()
    @Persisted var name = ""
}

final class LookupObjectIdKeyed: Object {
    @Persisted(primaryKey: true) var id = ObjectId.generate()
    @Persisted var name = ""
}

@Suite("Primary-key lookups")
struct PrimaryKeyLookupTests {
    private func openRealm() async throws -> Realm {
        var config = Realm.Configuration(inMemoryIdentifier: "PrimaryKeyLookup-" + UUID().uuidString)
        config.objectTypes = [
            LookupIntKeyed.self, LookupStringKeyed.self, LookupOptionalKeyed.self, LookupUUIDKeyed.self,
            LookupObjectIdKeyed.self,
        ]
        return try await Realm(configuration: config)
    }

    /// The names found for `key` by the typed form and by the `Any?` form (given `boxed`, the same key
    /// converted to `Any?` where its type is concrete, as a caller's would be), which must agree.
    private static func both<T: Object, K: _PersistableScalar>(
        _ realm: isolated Realm, _ type: T.Type, _ key: K, _ boxed: Any?, _ read: (T) -> String
    ) -> String {
        let typed = realm.object(ofType: type, forPrimaryKey: key).map(read) ?? "nil"
        let untyped = realm.object(ofType: type, forPrimaryKey: boxed).map(read) ?? "nil"
        return typed == untyped ? typed : "typed \(typed) but Any? \(untyped)"
    }

    @Test func typedAndAnyKeysFindTheSameObjects() async throws {
        let realm = try await openRealm()
        let uuid = UUID()
        let objectId = ObjectId.generate()
        try await realm.write { realm in
            for i in [-5, 0, 1, 2, 1_000, Int.max, Int.min] {
                realm.create(LookupIntKeyed.self, value: ["id": i, "name": "n\(i)"])
            }
            realm.create(LookupStringKeyed.self, value: ["id": "a", "age": 1])
            realm.create(LookupStringKeyed.self, value: ["id": "", "age": 2])
            realm.create(LookupOptionalKeyed.self, value: ["id": 7, "name": "seven"])
            realm.create(LookupOptionalKeyed.self, value: ["id": NSNull(), "name": "none"])
            realm.create(LookupUUIDKeyed.self, value: ["id": uuid, "name": "u"])
            realm.create(LookupObjectIdKeyed.self, value: ["id": objectId, "name": "o"])
        }
        let results = await realm.read { realm -> [String] in
            let name: (LookupIntKeyed) -> String = { $0.name }
            return [
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, 2, 2, name),
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, -5, -5, name),
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, Int.max, Int.max, name),
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, Int.min, Int.min, name),
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, 3, 3, name),
                // Other integer types convert, as through `Any?`.
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, Int32(1_000), Int32(1_000), name),
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, Int8(1), Int8(1), name),
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, Optional(2), Optional(2), name),
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, Int?.none, Int?.none, name),
                // Keys of the wrong type find nothing.
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, "2", "2", name),
                PrimaryKeyLookupTests.both(realm, LookupIntKeyed.self, 2.5, 2.5, name),
                PrimaryKeyLookupTests.both(realm, LookupStringKeyed.self, "a", "a") { "\($0.age)" },
                PrimaryKeyLookupTests.both(realm, LookupStringKeyed.self, "", "") { "\($0.age)" },
                PrimaryKeyLookupTests.both(realm, LookupStringKeyed.self, "b", "b") { "\($0.age)" },
                PrimaryKeyLookupTests.both(realm, LookupStringKeyed.self, 1, 1) { "\($0.age)" },
                PrimaryKeyLookupTests.both(realm, LookupOptionalKeyed.self, Optional(7), Optional(7)) { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupOptionalKeyed.self, 7, 7) { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupOptionalKeyed.self, Int?.none, Int?.none) { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupOptionalKeyed.self, Optional(8), Optional(8)) { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupUUIDKeyed.self, uuid, uuid) { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupUUIDKeyed.self, uuid.uuidString, uuid.uuidString) { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupUUIDKeyed.self, UUID(), UUID()) { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupObjectIdKeyed.self, objectId, objectId) { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupObjectIdKeyed.self, objectId.stringValue, objectId.stringValue)
                { $0.name },
                PrimaryKeyLookupTests.both(realm, LookupObjectIdKeyed.self, ObjectId.generate(), ObjectId.generate()) {
                    $0.name
                },
            ]
        }
        #expect(
            results == [
                "n2", "n-5", "n\(Int.max)", "n\(Int.min)", "nil", "n1000", "n1", "n2", "nil", "nil", "nil", "1", "2",
                "nil", "nil", "seven", "seven", "none", "nil", "u", "u", "nil", "o", "o", "nil",
            ])
        // A literal key picks the typed form; nil the `Any?` one.
        let literal = await realm.read { realm in
            (
                realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: 1)?.name,
                realm.object(ofType: LookupOptionalKeyed.self, forPrimaryKey: nil)?.name
            )
        }
        #expect(literal.0 == "n1" && literal.1 == "none")

        // The frozen forms find exactly what the live ones find.
        let frozen = await realm.freeze()
        func frozenBoth<T: Object, K: _PersistableScalar>(
            _ type: T.Type, _ key: K, _ boxed: Any?, _ read: (Frozen<T>) -> String
        ) -> String {
            let typed = frozen.object(ofType: type, forPrimaryKey: key).map(read) ?? "nil"
            let untyped = frozen.object(ofType: type, forPrimaryKey: boxed).map(read) ?? "nil"
            return typed == untyped ? typed : "typed \(typed) but Any? \(untyped)"
        }
        let name: (Frozen<LookupIntKeyed>) -> String = { $0.name }
        let frozenResults = [
            frozenBoth(LookupIntKeyed.self, 2, 2, name),
            frozenBoth(LookupIntKeyed.self, -5, -5, name),
            frozenBoth(LookupIntKeyed.self, Int.max, Int.max, name),
            frozenBoth(LookupIntKeyed.self, Int.min, Int.min, name),
            frozenBoth(LookupIntKeyed.self, 3, 3, name),
            frozenBoth(LookupIntKeyed.self, Int32(1_000), Int32(1_000), name),
            frozenBoth(LookupIntKeyed.self, Int8(1), Int8(1), name),
            frozenBoth(LookupIntKeyed.self, Optional(2), Optional(2), name),
            frozenBoth(LookupIntKeyed.self, Int?.none, Int?.none, name),
            frozenBoth(LookupIntKeyed.self, "2", "2", name),
            frozenBoth(LookupIntKeyed.self, 2.5, 2.5, name),
            frozenBoth(LookupStringKeyed.self, "a", "a") { "\($0.age)" },
            frozenBoth(LookupStringKeyed.self, "", "") { "\($0.age)" },
            frozenBoth(LookupStringKeyed.self, "b", "b") { "\($0.age)" },
            frozenBoth(LookupStringKeyed.self, 1, 1) { "\($0.age)" },
            frozenBoth(LookupOptionalKeyed.self, Optional(7), Optional(7)) { $0.name },
            frozenBoth(LookupOptionalKeyed.self, 7, 7) { $0.name },
            frozenBoth(LookupOptionalKeyed.self, Int?.none, Int?.none) { $0.name },
            frozenBoth(LookupOptionalKeyed.self, Optional(8), Optional(8)) { $0.name },
            frozenBoth(LookupUUIDKeyed.self, uuid, uuid) { $0.name },
            frozenBoth(LookupUUIDKeyed.self, uuid.uuidString, uuid.uuidString) { $0.name },
            frozenBoth(LookupUUIDKeyed.self, UUID(), UUID()) { $0.name },
            frozenBoth(LookupObjectIdKeyed.self, objectId, objectId) { $0.name },
            frozenBoth(LookupObjectIdKeyed.self, objectId.stringValue, objectId.stringValue) { $0.name },
            frozenBoth(LookupObjectIdKeyed.self, ObjectId.generate(), ObjectId.generate()) { $0.name },
        ]
        #expect(frozenResults == results)
        #expect(frozen.object(ofType: LookupIntKeyed.self, forPrimaryKey: 1)?.name == "n1")
        #expect(frozen.object(ofType: LookupOptionalKeyed.self, forPrimaryKey: nil)?.name == "none")
    }

    @Test func deletedAndUncommittedObjects() async throws {
        let realm = try await openRealm()
        try await realm.write { realm in
            for i in 0..<100 { realm.create(LookupIntKeyed.self, value: ["id": i, "name": "n\(i)"]) }
        }
        try await realm.write { realm in
            realm.delete(realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: 40)!)
            // Inside the transaction: the deletion and a new object are seen at once.
            #expect(realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: 40) == nil)
            realm.create(LookupIntKeyed.self, value: ["id": 500, "name": "new"])
            #expect(realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: 500)?.name == "new")
        }
        let found = await realm.read { realm in
            (0..<101).filter { realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: $0) != nil }.count
        }
        #expect(found == 99)
        let frozen = await realm.freeze()
        #expect(frozen.object(ofType: LookupIntKeyed.self, forPrimaryKey: 40) == nil)
        #expect(frozen.object(ofType: LookupIntKeyed.self, forPrimaryKey: 41)?.name == "n41")
    }

    /// The names of the `LookupIntKeyed` objects by primary key, found by a scan of all objects, and
    /// whether a lookup of every key in `keys` (typed, `Any?` and frozen) finds exactly those, reading the
    /// current row.
    private static func lookupsAgreeWithScan(_ realm: Realm, keys: Range<Int>) async -> [String] {
        let (scanned, live) = await realm.read { realm -> ([Int: String], [String]) in
            var scanned: [Int: String] = [:]
            for object in realm.objects(LookupIntKeyed.self) { scanned[object.id] = object.name }
            var problems: [String] = []
            for key in keys {
                let typed = realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: key)?.name
                let untyped = realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: key as Any?)?.name
                if typed != scanned[key] || untyped != scanned[key] {
                    problems.append(
                        "\(key): typed \(typed ?? "nil"), Any? \(untyped ?? "nil"), scan \(scanned[key] ?? "nil")")
                }
            }
            return (scanned, problems)
        }
        let frozen = await realm.freeze()
        var problems = live
        for key in keys {
            let name = frozen.object(ofType: LookupIntKeyed.self, forPrimaryKey: key)?.name
            if name != scanned[key] {
                problems.append("frozen \(key): \(name ?? "nil"), scan \(scanned[key] ?? "nil")")
            }
        }
        return problems
    }

    @Test func lookupsFollowUpdatesDeletesCompactionAndReopen() async throws {
        let url = temporaryRealmURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        var config = Realm.Configuration(fileURL: url)
        config.objectTypes = [LookupIntKeyed.self]
        config.automaticCompaction = false
        let keys = -5..<1_000
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { realm in
                for i in 0..<300 { realm.create(LookupIntKeyed.self, value: ["id": i * 3, "name": "n\(i * 3)"]) }
            }
            #expect(await Self.lookupsAgreeWithScan(realm, keys: keys) == [])
            // Updates move rows; a lookup must read the new row, inside the transaction and after it.
            try await realm.write { realm in
                for i in stride(from: 0, to: 900, by: 6) {
                    realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: i)?.name = "set \(i)"
                    #expect(realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: i)?.name == "set \(i)")
                }
                for i in stride(from: 3, to: 900, by: 12) {
                    realm.create(LookupIntKeyed.self, value: ["id": i, "name": "upserted \(i)"], update: .modified)
                    #expect(realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: i)?.name == "upserted \(i)")
                }
                for i in stride(from: 9, to: 900, by: 24) {
                    if let object = realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: i) { realm.delete(object) }
                    #expect(realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: i) == nil)
                }
                for i in stride(from: 1, to: 100, by: 3) {
                    realm.create(LookupIntKeyed.self, value: ["id": i, "name": "new \(i)"])
                }
            }
            #expect(await Self.lookupsAgreeWithScan(realm, keys: keys) == [])
            // A cancelled transaction leaves the lookups as they were.
            try await realm.write { realm in
                realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: 0)?.name = "cancelled"
                realm.create(LookupIntKeyed.self, value: ["id": 998, "name": "cancelled"])
                realm.cancelWrite()
            }
            #expect(await realm.read { $0.object(ofType: LookupIntKeyed.self, forPrimaryKey: 0)?.name } == "set 0")
            #expect(await Self.lookupsAgreeWithScan(realm, keys: keys) == [])
            // Compaction moves every row.
            try await realm.compact()
            #expect(await Self.lookupsAgreeWithScan(realm, keys: keys) == [])
            try await realm.write { realm in
                for i in stride(from: 0, to: 900, by: 5) {
                    realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: i)?.name = "after compaction \(i)"
                }
            }
            #expect(await Self.lookupsAgreeWithScan(realm, keys: keys) == [])
        }
        // Reopening rebuilds the index from the file.
        let reopened = try await Realm(configuration: config)
        #expect(await Self.lookupsAgreeWithScan(reopened, keys: keys) == [])
        let found = await reopened.read { realm in
            (
                realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: 0)?.name,
                realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: 3)?.name,
                realm.object(ofType: LookupIntKeyed.self, forPrimaryKey: 9)?.name
            )
        }
        #expect(found.0 == "after compaction 0" && found.1 == "upserted 3" && found.2 == nil)
    }
}
