import ActorStore
import Foundation
import Testing

// Three versions of one model: the table is named after the class ("Pet") in each.
enum PetV1 {
    final class Pet: Object {
        @Persisted var name = ""
        @Persisted var age = 0
    }
}

enum PetV2 {
    final class Pet: Object {
        @Persisted var name = ""
        @Persisted var weight = 0.0
        @Persisted var tags: List<String>
        @Persisted(indexed: true) var chip = ""
    }
}

enum PetV3 {
    final class Pet: Object {
        @Persisted var name = 0
    }
}

@Suite struct MigrationTests {
    private func configuration(_ url: URL, _ type: ObjectBase.Type, version: UInt64) -> Realm.Configuration {
        var configuration = Realm.Configuration(fileURL: url, schemaVersion: version, objectTypes: [type])
        configuration.durability = .none
        return configuration
    }

    @Test func addedAndRemovedPropertiesMigrateWhenTheVersionIncreases() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: configuration(url, PetV1.Pet.self, version: 0))
            try await realm.write { realm in
                realm.create(PetV1.Pet.self, value: ["name": "Rex", "age": 3])
                realm.create(PetV1.Pet.self, value: ["name": "Tom", "age": 5])
            }
        }
        // A changed model without a version bump: a clear error, the file untouched.
        do {
            _ = try await Realm(configuration: configuration(url, PetV2.Pet.self, version: 0))
            Issue.record("a changed model opened without migration")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("'Pet.weight' was added"))
            #expect(error.message.contains("'Pet.age' was removed"))
            #expect(error.message.contains("Increase Configuration.schemaVersion"))
        }
        // With a bump: migrated automatically.
        let realm = try await Realm(configuration: configuration(url, PetV2.Pet.self, version: 1))
        let pets = await realm.read { realm in
            realm.objects(PetV2.Pet.self).map { "\($0.name) \($0.weight) \($0.tags.count) '\($0.chip)'" }
        }
        #expect(pets == ["Rex 0.0 0 ''", "Tom 0.0 0 ''"])
        try await realm.write { realm in
            realm.create(PetV2.Pet.self, value: ["name": "Kit", "weight": 4.5, "tags": ["small"], "chip": "c1"])
            realm.objects(PetV2.Pet.self).first?.weight = 30
        }
        let after = await realm.read { realm in
            realm.objects(PetV2.Pet.self).map { "\($0.name) \($0.weight) \(Array($0.tags))" }
        }
        #expect(after == ["Rex 30.0 []", "Tom 0.0 []", "Kit 4.5 [\"small\"]"])
        // An older schema version than the file's is refused.
        await #expect(throws: RealmError.self) {
            _ = try await Realm(configuration: configuration(url, PetV2.Pet.self, version: 0))
        }
    }

    @Test func typeChangesAreRefusedEvenWithABump() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: configuration(url, PetV1.Pet.self, version: 0))
            try await realm.write { $0.create(PetV1.Pet.self, value: ["name": "Rex"]) }
        }
        do {
            _ = try await Realm(configuration: configuration(url, PetV3.Pet.self, version: 1))
            Issue.record("a type change migrated")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("changed type"))
        }
        // The data is intact for the old model.
        let realm = try await Realm(configuration: configuration(url, PetV1.Pet.self, version: 0))
        #expect(await realm.read { $0.objects(PetV1.Pet.self).map(\.name) } == ["Rex"])
    }

    @Test func deleteRealmIfMigrationNeededStartsOver() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: configuration(url, PetV1.Pet.self, version: 0))
            try await realm.write { $0.create(PetV1.Pet.self, value: ["name": "Rex"]) }
        }
        var config = configuration(url, PetV3.Pet.self, version: 0)
        config.deleteRealmIfMigrationNeeded = true
        let realm = try await Realm(configuration: config)
        #expect(await realm.read { $0.objects(PetV3.Pet.self).count } == 0)
        try await realm.write { $0.create(PetV3.Pet.self, value: ["name": 7]) }
        #expect(await realm.read { $0.objects(PetV3.Pet.self).map(\.name) } == [7])
    }
}
