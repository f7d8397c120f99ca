import ActorStore
import Foundation
import Synchronization
import Testing

// The Person model of the seeds (realm-swift-migrations.txt, the guide's Migrations section), one enum per
// schema version; every class is named "Person" in the file.

/// Version 1 of the migrations page (version 0 of the guide): separate names and an Int age.
enum PersonV1 {
    final class Person: Object {
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var age = 0
    }
}

/// The page's "add a property" step: an optional email.
enum PersonWithEmail {
    final class Person: Object {
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var email: String?
        @Persisted var age = 0
    }
}

/// The page's "delete a property" step: no age.
enum PersonWithoutAge {
    final class Person: Object {
        @Persisted var firstName = ""
        @Persisted var lastName = ""
    }
}

/// The page's rename step: age renamed to yearsSinceBirth (indexed, to see the index follow).
enum PersonYearsSinceBirth {
    final class Person: Object {
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted(indexed: true) var yearsSinceBirth = 0
    }
}

/// Version 2 of the page (version 1 of the guide): one combined name, age still an Int.
enum PersonV2 {
    final class Person: Object {
        @Persisted var fullName = ""
        @Persisted var age = 0
    }
}

/// Version 3 of the page: age became a String.
enum PersonV3 {
    final class Person: Object {
        @Persisted var fullName = ""
        @Persisted var age = "0"
    }
}

/// Version 2 of the guide: a required email was added.
enum PersonGuideV2 {
    final class Person: Object {
        @Persisted var fullName = ""
        @Persisted var email = ""
        @Persisted var age = 0
    }
}

/// The guide's rename: yearsSinceBirth (version 0) becomes age.
enum PersonGuideRenamed {
    final class Person: Object {
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var age = 0
    }
}

/// Opens `url` with one model class at a schema version, with a migration block.
func migrationConfiguration(
    _ url: URL, _ types: [ObjectBase.Type], version: UInt64,
    block: (@Sendable (Migration, UInt64) throws -> Void)? = nil
) -> Realm.Configuration {
    var configuration = Realm.Configuration(
        fileURL: url, schemaVersion: version, migrationBlock: block, objectTypes: types)
    configuration.durability = .none
    return configuration
}

/// Writes a file with the first model of the seeds: Jane Doe 30 and John Smith 41.
func writeV1People(_ url: URL, version: UInt64 = 1) async throws {
    let realm = try await Realm(configuration: migrationConfiguration(url, [PersonV1.Person.self], version: version))
    try await realm.write { realm in
        realm.create(PersonV1.Person.self, value: ["firstName": "Jane", "lastName": "Doe", "age": 30])
        realm.create(PersonV1.Person.self, value: ["firstName": "John", "lastName": "Smith", "age": 41])
    }
}

/// The seeds' migration blocks, as the seeds write them.
enum SeedMigrations {
    /// The migrations page's version 3 block: combine the names (< 2), make age a String (< 3).
    static let toVersion3: @Sendable (Migration, UInt64) -> Void = { migration, oldSchemaVersion in
        if oldSchemaVersion < 2 {
            // Previous Migration.
            migration.enumerateObjects(ofType: PersonV3.Person.className()) { oldObject, newObject in
                let firstName = oldObject!["firstName"] as? String
                let lastName = oldObject!["lastName"] as? String
                newObject!["fullName"] = "\(firstName!) \(lastName!)"
            }
        }
        if oldSchemaVersion < 3 {
            // New Migration.
            migration.enumerateObjects(ofType: PersonV3.Person.className()) { oldObject, newObject in
                // Make age a String instead of an Int
                newObject!["age"] = "\(oldObject!["age"] ?? 0)"
            }
        }
    }
}

@Suite struct MigrationSeedTests {
    @Test func addingAnOptionalPropertyNeedsOnlyAVersionBump() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [PersonWithEmail.Person.self], version: 2))
        let people = await realm.read { realm in
            realm.objects(PersonWithEmail.Person.self).map {
                "\($0.firstName) \($0.lastName) \($0.age) \($0.email ?? "nil")"
            }
        }
        #expect(people == ["Jane Doe 30 nil", "John Smith 41 nil"])
        #expect(try await Realm.schemaVersion(at: url) == 2)
    }

    @Test func deletingAPropertyNeedsOnlyAVersionBump() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [PersonWithoutAge.Person.self], version: 2))
        #expect(await realm.read { $0.objects(PersonWithoutAge.Person.self).map(\.lastName) } == ["Doe", "Smith"])
        #expect(await realm.schema["Person"]?.properties.map(\.name) == ["firstName", "lastName"])
    }

    @Test func renamingAPropertyKeepsItsValuesAndTakesTheNewIndex() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        let config = migrationConfiguration(url, [PersonYearsSinceBirth.Person.self], version: 2) {
            migration, oldSchemaVersion in
            if oldSchemaVersion < 2 {
                // Rename the "age" property to "yearsSinceBirth".
                // The renaming operation should be done outside of calls to `enumerateObjects(ofType: _:)`.
                migration.renameProperty(
                    onType: PersonYearsSinceBirth.Person.className(), from: "age", to: "yearsSinceBirth")
            }
        }
        let realm = try await Realm(configuration: config)
        let ages = await realm.read { $0.objects(PersonYearsSinceBirth.Person.self).map(\.yearsSinceBirth) }
        #expect(ages == [30, 41])
        // The new index answers queries.
        let found = try await realm.read { realm in
            try realm.objects(PersonYearsSinceBirth.Person.self).filter("yearsSinceBirth == 41").map(\.firstName)
        }
        #expect(found == ["John"])
        let property = await realm.schema["Person"]?["yearsSinceBirth"]
        #expect(property?.isIndexed == true)
        #expect(property?.type == .int)
    }

    @Test func combiningFieldsThenChangingATypeMigratesLinearlyInOneOpen() async throws {
        // A file at version 1 meets the version 3 block: both steps run, in order.
        let url = temporaryRealmURL()
        try await writeV1People(url)
        let realm = try await Realm(
            configuration: migrationConfiguration(
                url, [PersonV3.Person.self], version: 3, block: SeedMigrations.toVersion3))
        let people = await realm.read { $0.objects(PersonV3.Person.self).map { "\($0.fullName) (\($0.age))" } }
        #expect(people == ["Jane Doe (30)", "John Smith (41)"])
        #expect(try await Realm.schemaVersion(at: url) == 3)
        let age = await realm.schema["Person"]?["age"]
        #expect(age?.type == .string)
    }

    @Test func aFileOfTheMiddleVersionRunsOnlyTheLaterStep() async throws {
        let url = temporaryRealmURL()
        // Version 1 migrated to version 2 by the version 2 app.
        try await writeV1People(url)
        do {
            let realm = try await Realm(
                configuration: migrationConfiguration(url, [PersonV2.Person.self], version: 2) { migration, old in
                    if old < 2 {
                        migration.enumerateObjects(ofType: PersonV2.Person.className()) { oldObject, newObject in
                            let firstName = oldObject!["firstName"] as? String
                            let lastName = oldObject!["lastName"] as? String
                            newObject!["fullName"] = "\(firstName!) \(lastName!)"
                        }
                    }
                })
            try await realm.write { $0.create(PersonV2.Person.self, value: ["fullName": "Ann Lee", "age": 7]) }
        }
        #expect(try await Realm.schemaVersion(at: url) == 2)
        let seen = SeenVersions()
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [PersonV3.Person.self], version: 3) { migration, old in
                seen.record(old)
                SeedMigrations.toVersion3(migration, old)
            })
        #expect(seen.versions == [2])
        let people = await realm.read { $0.objects(PersonV3.Person.self).map { "\($0.fullName) (\($0.age))" } }
        #expect(people == ["Jane Doe (30)", "John Smith (41)", "Ann Lee (7)"])
    }

    @Test func theGuidesEmptyBlockMigratesAddedAndRemovedProperties() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url, version: 0)
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [PersonV2.Person.self], version: 1) { _, oldSchemaVersion in
                // We haven’t migrated anything yet, so oldSchemaVersion == 0
                if oldSchemaVersion < 1 {
                    // Nothing to do!
                }
            })
        #expect(
            await realm.read { $0.objects(PersonV2.Person.self).map { "'\($0.fullName)' \($0.age)" } } == [
                "'' 30", "'' 41",
            ])
    }

    @Test(arguments: [UInt64(0), 1])
    func theGuidesTwoStepBlockMigratesFromEitherOldVersion(_ start: UInt64) async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url, version: 0)
        if start == 1 {
            _ = try await Realm(
                configuration: migrationConfiguration(url, [PersonV2.Person.self], version: 1) { migration, old in
                    migration.enumerateObjects(ofType: PersonV2.Person.className()) { oldObject, newObject in
                        if old < 1 {
                            let firstName = oldObject!["firstName"] as! String
                            let lastName = oldObject!["lastName"] as! String
                            newObject!["fullName"] = "\(firstName) \(lastName)"
                        }
                    }
                })
        }
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [PersonGuideV2.Person.self], version: 2) {
                migration, oldSchemaVersion in
                // The enumerateObjects:block: method iterates over every 'Person' object stored in the Realm file
                migration.enumerateObjects(ofType: PersonGuideV2.Person.className()) { oldObject, newObject in
                    // Add the `fullName` property only to Realms with a schema version of 0
                    if oldSchemaVersion < 1 {
                        let firstName = oldObject!["firstName"] as! String
                        let lastName = oldObject!["lastName"] as! String
                        newObject!["fullName"] = "\(firstName) \(lastName)"
                    }
                    // Add the `email` property to Realms with a schema version of 0 or 1
                    if oldSchemaVersion < 2 {
                        newObject!["email"] = ""
                    }
                }
            })
        let people = await realm.read { realm in
            realm.objects(PersonGuideV2.Person.self).map { "\($0.fullName) '\($0.email)' \($0.age)" }
        }
        #expect(people == ["Jane Doe '' 30", "John Smith '' 41"])
    }

    @Test func theGuidesRenameOfYearsSinceBirthToAge() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(
                configuration: migrationConfiguration(url, [PersonYearsSinceBirth.Person.self], version: 0))
            try await realm.write {
                $0.create(PersonYearsSinceBirth.Person.self, value: ["firstName": "Tim", "yearsSinceBirth": 12])
            }
        }
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [PersonGuideRenamed.Person.self], version: 1) {
                migration, oldSchemaVersion in
                // We haven’t migrated anything yet, so oldSchemaVersion == 0
                if oldSchemaVersion < 1 {
                    // The renaming operation should be done outside of calls to `enumerateObjects(ofType: _:)`.
                    migration.renameProperty(
                        onType: PersonGuideRenamed.Person.className(), from: "yearsSinceBirth", to: "age")
                }
            })
        #expect(await realm.read { $0.objects(PersonGuideRenamed.Person.self).map(\.age) } == [12])
    }

    @Test func className() {
        #expect(PersonV3.Person.className() == "Person")
        #expect(PersonV3.Person().objectSchema.properties.map(\.name) == ["fullName", "age"])
    }
}

/// Versions a migration block saw (the block is `@Sendable`, so it records through a lock).
final class SeenVersions: Sendable {
    private let storage = Mutex<[UInt64]>([])
    func record(_ version: UInt64) { storage.withLock { $0.append(version) } }
    var versions: [UInt64] { storage.withLock { $0 } }
}
