import Foundation
import Synchronization
import Testing

@testable import ActorStore

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

    @Test(.tags(.seed)) func schemaVersionMismatchOnReopen() async throws {
        var config = seedConfiguration()
        config.schemaVersion = 2
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(SeedDog.self, value: ["name": "v2"]) }
        }
        // A file written by a newer schema version cannot be opened by an older model.
        var older = config
        older.schemaVersion = 1
        await expectRealmError(.schemaMismatch) { _ = try await Realm(configuration: older) }
        // The same or a newer version opens it with its data.
        config.schemaVersion = 3
        let newer = try await Realm(configuration: config)
        let names = await newer.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["v2"])
    }

    @Test(.tags(.seed)) func deleteRealmIfMigrationNeededStartsEmpty() async throws {
        var config = seedConfiguration()
        config.schemaVersion = 2
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(SeedDog.self, value: ["name": "v2"]) }
        }
        config.schemaVersion = 1
        config.deleteRealmIfMigrationNeeded = true
        let realm = try await Realm(configuration: config)
        #expect(await realm.isEmpty)
        try await realm.write { $0.create(SeedDog.self, value: ["name": "fresh"]) }
        let names = await realm.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["fresh"])
    }

    @Test(.tags(.regression)) func aVersionBumpIsNotRecordedForTablesNotChecked() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: regressionConfiguration(url, types: [RegMigV1.RegMigPet.self]))
            try await realm.write { $0.create(RegMigV1.RegMigPet.self, value: ["name": "Rex"]) }
        }
        _ = RegMigV2.RegMigPet()  // both versions are known to the process: the name is ambiguous
        do {
            // Without objectTypes, the table is not checked: the version must not be recorded, and writing
            // the changed class is refused with directions.
            let realm = try await Realm(configuration: regressionConfiguration(url, version: 1))
            do {
                try await realm.write { $0.create(RegMigV2.RegMigPet.self, value: ["name": "Tom", "age": 3]) }
                Issue.record("a changed class was written without migration")
            } catch let error as RealmError {
                #expect(error.code == .schemaMismatch)
                #expect(error.message.contains("objectTypes"))
            }
        }
        // Listing the class migrates it at the same version.
        let realm = try await Realm(
            configuration: regressionConfiguration(url, version: 1, types: [RegMigV2.RegMigPet.self]))
        try await realm.write { $0.create(RegMigV2.RegMigPet.self, value: ["name": "Tom", "age": 3]) }
        #expect(await realm.read { $0.objects(RegMigV2.RegMigPet.self).map(\.age) } == [0, 3])
    }

    @Test(.tags(.regression)) func indexChangesNeedNoVersionBump() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: regressionConfiguration(url, types: [RegIdxV1.RegIdxPet.self]))
            try await realm.write { $0.create(RegIdxV1.RegIdxPet.self, value: ["name": "Rex"]) }
        }
        let realm = try await Realm(configuration: regressionConfiguration(url, types: [RegIdxV2.RegIdxPet.self]))
        #expect(await realm.read { $0.objects(RegIdxV2.RegIdxPet.self).map(\.name) } == ["Rex"])
    }

    @Test(.tags(.regression)) func listElementsOfAnEnumCaseNoLongerDeclaredReadAsTheDefault() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: regressionConfiguration(url, types: [RegEnumV1.RegEnumPet.self]))
            try await realm.write { $0.create(RegEnumV1.RegEnumPet.self, value: ["tastes": ["sweet", "bitter"]]) }
        }
        let realm = try await Realm(configuration: regressionConfiguration(url, types: [RegEnumV2.RegEnumPet.self]))
        let tastes = await realm.read { $0.objects(RegEnumV2.RegEnumPet.self).first!.tastes.map(\.rawValue) }
        #expect(tastes == ["sweet", "sweet"])
    }

    /// A realm keeps its schema bindings across ordinary commits and rebuilds them when the file's tables
    /// change: here another realm on the file adds a table, and the first realm, which never used that
    /// class, writes and reads both classes afterwards.
    @Test(.tags(.regression)) func bindingsFollowTablesAnotherRealmAdds() async throws {
        let a = try await Realm(configuration: testConfiguration(nil))
        try await a.write { $0.create(RegDog.self, value: ["name": "Rex"]) }
        try await a.write { $0.create(RegDog.self, value: ["name": "Rex 2"]) }
        let b = try await Realm(configuration: a.configuration)
        try await b.write { realm in
            realm.create(RegTag.self, value: ["label": "t"])
            realm.create(RegDog.self, value: ["name": "Fido"])
            realm.create(RegBook.self, value: ["id": 1, "title": "B", "note": ["label": "n"]])
        }
        try await a.write { realm in
            realm.create(RegDog.self, value: ["name": "Max"])
            realm.create(RegTag.self, value: ["label": "u"])
            realm.create(RegBook.self, value: ["id": 2, "title": "C"])
        }
        let (dogs, tags, books) = await a.read { realm in
            (
                realm.objects(RegDog.self).map(\.name), realm.objects(RegTag.self).map(\.label),
                realm.objects(RegBook.self).map { "\($0.id) \($0.title) \($0.note?.label ?? "-")" }
            )
        }
        #expect(dogs == ["Rex", "Rex 2", "Fido", "Max"])
        #expect(tags == ["t", "n", "u"])
        #expect(books == ["1 B n", "2 C -"])
        let seenByB = await b.read { realm in realm.objects(RegTag.self).count + realm.objects(RegDog.self).count }
        #expect(seenByB == 7)
    }

    @Test(.tags(.seed)) func addingAnOptionalPropertyNeedsOnlyAVersionBump() async throws {
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

    @Test(.tags(.seed)) func deletingAPropertyNeedsOnlyAVersionBump() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [PersonWithoutAge.Person.self], version: 2))
        #expect(await realm.read { $0.objects(PersonWithoutAge.Person.self).map(\.lastName) } == ["Doe", "Smith"])
        #expect(await realm.schema["Person"]?.properties.map(\.name) == ["firstName", "lastName"])
    }

    @Test(.tags(.seed)) func renamingAPropertyKeepsItsValuesAndTakesTheNewIndex() async throws {
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

    @Test(.tags(.seed)) func combiningFieldsThenChangingATypeMigratesLinearlyInOneOpen() async throws {
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

    @Test(.tags(.seed)) func aFileOfTheMiddleVersionRunsOnlyTheLaterStep() async throws {
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

    @Test(.tags(.seed)) func theGuidesEmptyBlockMigratesAddedAndRemovedProperties() async throws {
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

    @Test(.tags(.seed), arguments: [UInt64(0), 1])
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

    @Test(.tags(.seed)) func theGuidesRenameOfYearsSinceBirthToAge() async throws {
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

    @Test(.tags(.seed)) func className() {
        #expect(PersonV3.Person.className() == "Person")
        #expect(PersonV3.Person().objectSchema.properties.map(\.name) == ["fullName", "age"])
    }
}
