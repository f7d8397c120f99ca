import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStore

// A query is resolved (its key paths turned into columns, its types checked) once per schema: building it
// resolves it to check it, and its results reuse that plan at every evaluation until the schema changes. A
// schema change (an index added, a migration, a table created inside a write transaction, or one rolled
// back) makes the next evaluation resolve it again, so its answers stay right.

final class QRPet: Object {
    @Persisted var name = ""
    @Persisted var age = 0
}

final class QRToy: Object {
    @Persisted var label = ""
    @Persisted var price = 0
}

enum QRIndexV1 {
    final class QRIndexPet: Object {
        @Persisted var name = ""
        @Persisted var age = 0
    }
}

enum QRIndexV2 {
    final class QRIndexPet: Object {
        @Persisted var name = ""
        @Persisted(indexed: true) var age = 0
    }
}

enum QRMigrationV1 {
    final class QRMigrationPet: Object {
        @Persisted var name = ""
        @Persisted var age = 0
    }
}

enum QRMigrationV2 {
    final class QRMigrationPet: Object {
        @Persisted var name = ""
        @Persisted var years = 0
    }
}

private func configuration(
    _ url: URL, _ types: [ObjectBase.Type]?, version: UInt64 = 0,
    migration: (@Sendable (Migration, UInt64) throws -> Void)? = nil
) -> Realm.Configuration {
    var configuration = Realm.Configuration(fileURL: url, schemaVersion: version, objectTypes: types)
    configuration.durability = .none
    configuration.encryptionKey = TestStorage.encryptionKey
    configuration.migrationBlock = migration
    return configuration
}

/// Runs `body` counting the queries it resolves.
private func countingResolutions<R>(
    _ body: () async throws -> R, isolation: isolated (any Actor)? = #isolation
) async rethrows -> (R, Int) {
    let counter = QueryResolutionCounter()
    let result = try await QueryResolutionCounter.$current.withValue(counter) { try await body() }
    return (result, counter.resolutions)
}

@Suite struct QueryResolutionTests {
    static let ages = [5, 1, 7, 3, 9, 2, 8]

    static func makePets(_ realm: Realm) async throws {
        try await realm.write { realm in
            for (i, age) in ages.enumerated() { realm.create(QRPet.self, value: ["name": "p\(i)", "age": age]) }
        }
    }

    @Test func aBuiltQueryIsResolvedOnceForItsCheckAndEveryEvaluation() async throws {
        let realm = try await Realm(configuration: configuration(temporaryRealmURL(), [QRPet.self]))
        try await Self.makePets(realm)
        let (names, resolutions) = try await countingResolutions {
            try await Self.readOldPetsRepeatedly(realm)
        }
        #expect(names == ["p4", "p6", "p2", "p0"])
        // `filter` resolves once and `sorted(byKeyPath:)` once (each checks the query it builds); counting,
        // iterating, `first`, `limit`, `explain`, a new version and a write reuse those plans.
        #expect(resolutions == 2)
    }

    private static func readOldPetsRepeatedly(_ realm: isolated Realm) async throws -> [String] {
        let old = try realm.objects(QRPet.self).filter("age > %@", 4)
        #expect(old.count == 4)
        let sorted = try old.sorted(byKeyPath: "age", ascending: false)
        #expect(sorted.first?.name == "p4")
        #expect(sorted.limit(2).map(\.name) == ["p4", "p6"])
        #expect(sorted.explain().contains("scan"))
        try await realm.write { realm in realm.create(QRPet.self, value: ["name": "late", "age": 4]) }
        #expect(old.count == 4)  // at a new version
        try await realm.beginWrite()
        realm.create(QRPet.self, value: ["name": "young", "age": 0])
        #expect(sorted.count == 4)  // inside a write transaction
        realm.cancelWrite()
        return sorted.map(\.name)
    }

    @Test func aQueryThatDoesNotCheckStillThrowsWhenBuilt() async throws {
        let realm = try await Realm(configuration: configuration(temporaryRealmURL(), [QRPet.self]))
        await realm.read { realm in
            #expect(throws: RealmError.self) { try realm.objects(QRPet.self).filter("weight > 1") }
            #expect(throws: RealmError.self) { try realm.objects(QRPet.self).sorted(byKeyPath: "weight") }
            #expect(throws: RealmError.self) { try realm.objects(QRPet.self).filter("name > 1") }
        }
    }

    @Test func frozenResultsResolveOnceAndKeepTheirAnswers() async throws {
        let realm = try await Realm(configuration: configuration(temporaryRealmURL(), [QRPet.self]))
        try await Self.makePets(realm)
        let (frozen, resolutions) = try await countingResolutions {
            try await realm.read { realm in try realm.objects(QRPet.self).filter("age < 4").freeze() }
        }
        #expect(resolutions == 1)
        try await realm.write { realm in realm.create(QRPet.self, value: ["name": "new", "age": 0]) }
        let (names, more) = try await countingResolutions {
            let names = frozen.map(\.name)
            let sorted = try frozen.sorted(byKeyPath: "name", ascending: false).map(\.name)
            #expect(frozen.count == 3 && frozen.explain().contains("scan"))
            return (names, sorted)
        }
        #expect(names.0 == ["p1", "p3", "p5"])
        #expect(names.1 == ["p5", "p3", "p1"])
        #expect(more == 1)  // the sorted query's check; the frozen plan is reused
    }

    /// An observed query is resolved when the observation starts, not again at each commit it evaluates.
    @Test(.timeLimit(.minutes(30))) func anObservedQueryIsNotResolvedAgainAtEachCommit() async throws {
        let realm = try await Realm(configuration: configuration(temporaryRealmURL(), [QRPet.self]))
        try await Self.makePets(realm)
        let (names, resolutions) = try await countingResolutions { () async throws -> [String] in
            let changes = try await realm.read { realm in
                try realm.objects(QRPet.self).filter("age > %@", 4).sorted(byKeyPath: "age").changes
            }
            let reader = ChangeReader(changes)
            guard case .initial? = try await reader.next() else { return [] }
            var last: [String] = []
            for age in [6, 10, 11] {
                try await realm.write { realm in realm.create(QRPet.self, value: ["name": "n\(age)", "age": age]) }
                guard case .update(let results, _, let insertions, _)? = try await reader.next() else { return [] }
                #expect(insertions.count == 1)
                last = results.map(\.name)
            }
            return last
        }
        #expect(names == ["p0", "n6", "p2", "p6", "p4", "n10", "n11"])
        #expect(resolutions == 3)  // `filter`'s and `sorted`'s checks, and the observation's plan
    }

    /// A table created inside a write transaction changes the schema: a query made before it resolves again
    /// and sees the transaction's objects; once the transaction is rolled back, it resolves against the
    /// schema before (without the table) and a new transaction creating it again is seen too.
    @Test func aQueryResolvesAgainAfterASchemaChangeInAWriteTransaction() async throws {
        let realm = try await Realm(configuration: configuration(temporaryRealmURL(), nil))
        try await realm.write { realm in realm.create(QRPet.self, value: ["name": "a", "age": 1]) }
        let (counts, resolutions) = try await countingResolutions {
            try await Self.createToysInTransactions(realm)
        }
        #expect(counts == [0, 2, 0, 1, 1])
        // Built once (no table: nothing to run), then run against the schema with the table, and against the
        // table created again (a new schema: the rolled-back one's plan is not reused).
        #expect(resolutions == 3)
    }

    private static func createToysInTransactions(_ realm: isolated Realm) async throws -> [Int] {
        let expensive = try realm.objects(QRToy.self).filter("price >= %@ AND label != 'free'", 10)
        var counts = [expensive.count]
        try await realm.beginWrite()
        for (label, price) in [("ball", 12), ("rope", 3), ("bone", 30)] {
            realm.create(QRToy.self, value: ["label": label, "price": price])
        }
        counts.append(expensive.count)
        realm.cancelWrite()
        counts.append(expensive.count)
        try await realm.beginWrite()
        realm.create(QRToy.self, value: ["label": "kite", "price": 10])
        counts.append(expensive.count)
        try await realm.commitWrite()
        counts.append(expensive.count)
        return counts
    }

    /// An index added by another realm of the file: the query made before it answers the same, now from
    /// the index, live and frozen.
    @Test func aQueryMadeBeforeAnIndexIsAddedUsesIt() async throws {
        let url = temporaryRealmURL()
        let realm = try await Realm(configuration: configuration(url, [QRIndexV1.QRIndexPet.self]))
        try await realm.write { realm in
            for (i, age) in Self.ages.enumerated() {
                realm.create(QRIndexV1.QRIndexPet.self, value: ["name": "p\(i)", "age": age])
            }
        }
        let before = try await realm.read { realm in
            try realm.objects(QRIndexV1.QRIndexPet.self).filter("age == 7").freeze()
        }
        #expect(before.explain().contains("scan"))
        let (explained, resolutions) = try await countingResolutions {
            try await Self.queryAcrossAnIndexChange(realm, url)
        }
        #expect(explained.before.contains("scan"))
        #expect(explained.after.contains("index on 'age'"))
        #expect(resolutions == 2)  // built, and again after the schema changed
        #expect(before.map(\.name) == ["p2"] && before.explain().contains("scan"))
        let after = await realm.read { realm in
            try? realm.objects(QRIndexV1.QRIndexPet.self).filter("age == 7").freeze()
        }
        #expect(after?.map(\.name) == ["p2", "q"])
        #expect(after?.explain().contains("index on 'age'") == true)
    }

    private static func queryAcrossAnIndexChange(
        _ realm: isolated Realm, _ url: URL
    ) async throws -> (before: String, after: String) {
        let seven = try realm.objects(QRIndexV1.QRIndexPet.self).filter("age == 7")
        #expect(seven.map(\.name) == ["p2"])
        let before = seven.explain()
        let other = try await Realm(configuration: configuration(url, [QRIndexV2.QRIndexPet.self]))
        try await other.write { realm in realm.create(QRIndexV2.QRIndexPet.self, value: ["name": "q", "age": 7]) }
        _ = realm.refresh()
        #expect(seven.map(\.name) == ["p2", "q"])
        return (before, seven.explain())
    }

    /// Inside a migration, a query on the new objects made before a rename resolves again after it, and
    /// reads the renamed property's values.
    @Test func aQueryMadeBeforeARenameInAMigrationReadsTheRenamedProperty() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: configuration(url, [QRMigrationV1.QRMigrationPet.self]))
            try await realm.write { realm in
                for (i, age) in Self.ages.enumerated() {
                    realm.create(QRMigrationV1.QRMigrationPet.self, value: ["name": "p\(i)", "age": age])
                }
            }
        }
        let seen = Locked<[[String]]>([])
        let realm = try await Realm(
            configuration: configuration(url, [QRMigrationV2.QRMigrationPet.self], version: 1) { migration, _ in
                let old = try migration.newObjects(ofType: "QRMigrationPet").filter("years > 6")
                let names = { old.map { $0["name"] as! String } }
                seen.withLock { $0.append(names()) }
                migration.renameProperty(onType: "QRMigrationPet", from: "age", to: "years")
                seen.withLock { $0.append(names()) }
            })
        #expect(seen.withLock { $0 } == [[], ["p2", "p4", "p6"]])
        let years = await realm.read { realm in realm.objects(QRMigrationV2.QRMigrationPet.self).map(\.years) }
        #expect(years == Self.ages)
    }
}
