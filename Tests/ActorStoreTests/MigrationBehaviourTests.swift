import ActorStore
import Foundation
import Synchronization
import Testing

/// Contacts with addresses, before and after `Address` became an `EmbeddedObject` (the migrations page's
/// "Convert from Object to EmbeddedObject").
enum AddressV1 {
    final class Address: Object {
        @Persisted var street = ""
        @Persisted var city = ""
    }
    final class Contact: Object {
        @Persisted var name = ""
        @Persisted var address: Address?
    }
}

enum AddressV2 {
    final class Address: EmbeddedObject {
        @Persisted var street = ""
        @Persisted var city = ""
    }
    final class Contact: Object {
        @Persisted var name = ""
        @Persisted var address: Address?
    }
}

/// A pet whose name becomes optional and whose optional weight becomes required.
enum NullabilityV1 {
    final class Critter: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
        @Persisted var weight: Int?
        @Persisted var tags: List<String>
    }
}

enum NullabilityV2 {
    final class Critter: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name: String?
        @Persisted var weight = 0
        @Persisted var tags: List<String?>
    }
}

/// A second class of the people file, removed in the next version.
enum KennelV1 {
    final class Kennel: Object {
        @Persisted var label = ""
    }
}

/// A tag whose primary key is renamed from `code` to `id`.
enum TagV1 {
    final class Tag: Object {
        @Persisted(primaryKey: true) var code = ""
        @Persisted var uses = 0
    }
}

enum TagV2 {
    final class Tag: Object {
        @Persisted(primaryKey: true) var id = ""
        @Persisted var uses = 0
    }
}

struct BlockFailure: Error, Equatable {}

@Suite struct MigrationBehaviourTests {
    /// Contacts Ann (Main St), Bob (Side St) and Cy and Di sharing Elm St, plus an address no one uses.
    private func writeContacts(_ url: URL) async throws {
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [AddressV1.Contact.self, AddressV1.Address.self], version: 1))
        try await realm.write { realm in
            realm.create(
                AddressV1.Contact.self, value: ["name": "Ann", "address": ["street": "Main St", "city": "A"]])
            realm.create(
                AddressV1.Contact.self, value: ["name": "Bob", "address": ["street": "Side St", "city": "B"]])
            let shared = realm.create(AddressV1.Address.self, value: ["street": "Elm St", "city": "C"])
            realm.create(AddressV1.Contact.self, value: ["name": "Cy", "address": shared])
            realm.create(AddressV1.Contact.self, value: ["name": "Di", "address": shared])
            realm.create(AddressV1.Address.self, value: ["street": "Nowhere", "city": "X"])
        }
    }

    private func v2(_ url: URL, _ block: (@Sendable (Migration, UInt64) throws -> Void)? = nil) -> Realm.Configuration {
        migrationConfiguration(url, [AddressV2.Contact.self, AddressV2.Address.self], version: 2, block: block)
    }

    private func contactsV1(_ url: URL) async throws -> [String] {
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [AddressV1.Contact.self, AddressV1.Address.self], version: 1))
        return await realm.read { realm in
            realm.objects(AddressV1.Contact.self).map { "\($0.name): \($0.address?.street ?? "-")" }
                + ["addresses: \(realm.objects(AddressV1.Address.self).count)"]
        }
    }

    @Test func objectToEmbeddedObjectNeedsExactlyOneParentPerObject() async throws {
        let url = temporaryRealmURL()
        try await writeContacts(url)
        let before = try await contactsV1(url)
        do {
            _ = try await Realm(configuration: v2(url))
            Issue.record("an Address without a parent and one with two parents became embedded")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("Address became an EmbeddedObject"))
            #expect(error.message.contains("1 object has no parent"))
            #expect(error.message.contains("1 object has several parents"))
        }
        // The file is unchanged: the old model opens it at the old version, with every object.
        #expect(try await Realm.schemaVersion(at: url) == 1)
        #expect(try await contactsV1(url) == before)
    }

    @Test func aBlockThatGivesEachEmbeddedObjectOneParentMigrates() async throws {
        let url = temporaryRealmURL()
        try await writeContacts(url)
        let realm = try await Realm(
            configuration: v2(url) { migration, oldSchemaVersion in
                guard oldSchemaVersion < 2 else { return }
                var used: [MigrationObject] = []
                migration.enumerateObjects(ofType: AddressV2.Contact.className()) { _, newObject in
                    guard let contact = newObject, let address = contact["address"] as? MigrationObject else { return }
                    if used.contains(where: { $0.isSameObject(as: address) }) {
                        // A second parent gets its own copy.
                        contact["address"] = migration.create(
                            AddressV2.Address.className(),
                            value: ["street": address["street"] as Any, "city": address["city"] as Any])
                    } else {
                        used.append(address)
                    }
                }
                migration.enumerateObjects(ofType: AddressV2.Address.className()) { _, newObject in
                    // An address no one uses would be lost: delete it.
                    if let address = newObject, !used.contains(where: { $0.isSameObject(as: address) }),
                        address["street"] as? String == "Nowhere"
                    {
                        migration.delete(address)
                    }
                }
            })
        let contacts = await realm.read { realm in
            realm.objects(AddressV2.Contact.self).map { "\($0.name): \($0.address?.street ?? "-")" }
        }
        #expect(contacts == ["Ann: Main St", "Bob: Side St", "Cy: Elm St", "Di: Elm St"])
        #expect(await realm.schema["Address"]?.isEmbedded == true)
        // Embedded now: changing Di's copy leaves Cy's alone, deleting Ann deletes her address.
        try await realm.write { realm in
            realm.objects(AddressV2.Contact.self).filter { $0.name == "Di" }.first?.address?.street = "Oak St"
            if let ann = realm.objects(AddressV2.Contact.self).first { realm.delete(ann) }
        }
        let after = await realm.read { realm in
            realm.objects(AddressV2.Contact.self).map { "\($0.name): \($0.address?.street ?? "-")" }
        }
        #expect(after == ["Bob: Side St", "Cy: Elm St", "Di: Oak St"])
        #expect(await realm.read { $0.dynamicObjects("Address").count } == 3)
    }

    @Test func aThrowingBlockLeavesTheFileAsItWas() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        await #expect(throws: BlockFailure()) {
            _ = try await Realm(
                configuration: migrationConfiguration(url, [PersonV3.Person.self], version: 3) { migration, old in
                    SeedMigrations.toVersion3(migration, old)
                    migration.create(PersonV3.Person.className(), value: ["fullName": "Never", "age": "1"])
                    throw BlockFailure()
                })
        }
        #expect(try await Realm.schemaVersion(at: url) == 1)
        let realm = try await Realm(configuration: migrationConfiguration(url, [PersonV1.Person.self], version: 1))
        let people = await realm.read { $0.objects(PersonV1.Person.self).map { "\($0.firstName) \($0.age)" } }
        #expect(people == ["Jane 30", "John 41"])
    }

    @Test func aValueThatDoesNotFitFailsTheMigration() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        do {
            _ = try await Realm(
                configuration: migrationConfiguration(url, [PersonV2.Person.self], version: 2) { migration, _ in
                    migration.enumerateObjects(ofType: "Person") { _, newObject in newObject!["age"] = "thirty" }
                })
            Issue.record("a String was stored in an Int property")
        } catch let error as RealmError {
            #expect(error.code == .invalidValue)
            #expect(error.message.contains("'Person.age'"))
        }
        #expect(try await Realm.schemaVersion(at: url) == 1)
    }

    @Test func createDeleteAndDeleteDataInABlock() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        do {
            let realm = try await Realm(
                configuration: migrationConfiguration(url, [PersonV1.Person.self, KennelV1.Kennel.self], version: 1))
            try await realm.write { $0.create(KennelV1.Kennel.self, value: ["label": "k1"]) }
        }
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [PersonV1.Person.self], version: 2) { migration, _ in
                migration.enumerateObjects(ofType: "Person") { oldObject, newObject in
                    if (oldObject!["age"] as! Int) < 35 { migration.delete(newObject!) }
                }
                migration.create("Person", value: ["firstName": "Ann", "lastName": "Lee", "age": 7])
                #expect(migration.deleteData(forType: "Kennel"))
                #expect(!migration.deleteData(forType: "NoSuchClass"))
            })
        #expect(await realm.read { $0.objects(PersonV1.Person.self).map(\.firstName) } == ["John", "Ann"])
        #expect(await realm.schema["Kennel"] == nil)
        #expect(await realm.schema.objectSchema.map(\.className) == ["Person"])
    }

    @Test func aClassLeftOutOfTheModelKeepsItsDataUntilDeleted() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(
                configuration: migrationConfiguration(url, [PersonV1.Person.self, KennelV1.Kennel.self], version: 1))
            try await realm.write { $0.create(KennelV1.Kennel.self, value: ["label": "k1"]) }
        }
        let realm = try await Realm(configuration: migrationConfiguration(url, [PersonV2.Person.self], version: 2))
        let labels = await realm.read { $0.dynamicObjects("Kennel").map { $0["label"] as? String } }
        #expect(labels == ["k1"])
    }

    @Test func requiredAndOptionalSwapWithoutABlock() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(
                configuration: migrationConfiguration(url, [NullabilityV1.Critter.self], version: 1))
            try await realm.write { realm in
                realm.create(NullabilityV1.Critter.self, value: ["id": 1, "name": "Rex", "weight": 30, "tags": ["a"]])
                realm.create(NullabilityV1.Critter.self, value: ["id": 2, "name": "Tom"])
            }
        }
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [NullabilityV2.Critter.self], version: 2))
        let critters = await realm.read { realm in
            realm.objects(NullabilityV2.Critter.self).map {
                "\($0.id) \($0.name ?? "nil") \($0.weight) \($0.tags.count)"
            }
        }
        #expect(critters == ["1 Rex 30 1", "2 Tom 0 0"])
        // The primary key still finds objects.
        #expect(await realm.read { $0.object(ofType: NullabilityV2.Critter.self, forPrimaryKey: 2)?.name } == "Tom")
        let name = await realm.schema["Critter"]?["name"]
        #expect(name?.isOptional == true)
    }

    @Test func theBlockSeesTheOldAndTheNewSchema() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        let seen = SeenSchemas()
        _ = try await Realm(
            configuration: migrationConfiguration(url, [PersonV3.Person.self], version: 3) { migration, old in
                seen.record(migration.oldSchema, migration.newSchema)
                SeedMigrations.toVersion3(migration, old)
            })
        let (old, new) = try #require(seen.schemas)
        #expect(old["Person"]?.properties.map(\.name) == ["firstName", "lastName", "age"])
        #expect(old["Person"]?["age"]?.type == .int)
        #expect(new["Person"]?.properties.map(\.name) == ["fullName", "age"])
        #expect(new["Person"]?["age"]?.type == .string)
    }

    @Test func aRenamedPrimaryKeyStillFindsAndGuardsObjects() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: migrationConfiguration(url, [TagV1.Tag.self], version: 1))
            try await realm.write { realm in
                realm.create(TagV1.Tag.self, value: ["code": "a", "uses": 1])
                realm.create(TagV1.Tag.self, value: ["code": "b", "uses": 2])
            }
        }
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [TagV2.Tag.self], version: 2) { migration, _ in
                migration.renameProperty(onType: TagV2.Tag.className(), from: "code", to: "id")
            })
        #expect(await realm.read { $0.object(ofType: TagV2.Tag.self, forPrimaryKey: "b")?.uses } == 2)
        #expect(await realm.schema["Tag"]?.primaryKeyProperty?.name == "id")
        await #expect(throws: RealmError.self) {
            try await realm.write { $0.create(TagV2.Tag.self, value: ["id": "a"]) }
        }
    }

    @Test func realmsOpenedTogetherMigrateOnce() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        let seen = SeenVersions()
        let config = migrationConfiguration(url, [PersonV3.Person.self], version: 3) { migration, old in
            seen.record(old)
            SeedMigrations.toVersion3(migration, old)
        }
        async let first = Realm(configuration: config)
        async let second = Realm(configuration: config)
        let realms = try await [first, second]
        #expect(seen.versions == [1])
        for realm in realms {
            let people = await realm.read { $0.objects(PersonV3.Person.self).map { "\($0.fullName) \($0.age)" } }
            #expect(people == ["Jane Doe 30", "John Smith 41"])
        }
    }

    @Test func renamingAMissingPropertyFailsAndChangesNothing() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url)
        do {
            _ = try await Realm(
                configuration: migrationConfiguration(url, [PersonYearsSinceBirth.Person.self], version: 2) {
                    migration, _ in
                    migration.renameProperty(onType: "Person", from: "agee", to: "yearsSinceBirth")
                })
            Issue.record("a rename of a missing property migrated")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("no property 'agee'"))
        }
        #expect(try await Realm.schemaVersion(at: url) == 1)
    }

    @Test func theDynamicAPIReadsWithoutTheModelClass() async throws {
        let url = temporaryRealmURL()
        try await writeContacts(url)
        let realm = try await Realm(configuration: Realm.Configuration(fileURL: url, schemaVersion: 1))
        let rows = await realm.read { realm in
            realm.dynamicObjects("Contact").map { contact -> String in
                let address = contact["address"] as? DynamicObject
                return
                    "\(contact["name"] as! String) \(address?["street"] as? String ?? "-") \(address?.className ?? "")"
            }
        }
        #expect(rows == ["Ann Main St Address", "Bob Side St Address", "Cy Elm St Address", "Di Elm St Address"])
        #expect(await realm.read { $0.dynamicObjects("Nothing").isEmpty })
        let schema = await realm.schema
        #expect(schema.objectSchema.map(\.className) == ["Address", "Contact"])
        let address = schema["Contact"]?["address"]
        #expect(address?.type == .object)
        #expect(address?.objectClassName == "Address")
        #expect(address?.isOptional == true)
        #expect(schema["Contact"]?.primaryKeyProperty == nil)
        let critter = NullabilityV1.Critter()
        #expect(critter.objectSchema.primaryKeyProperty?.name == "id")
        #expect(critter.objectSchema.primaryKeyProperty?.isPrimary == true)
        #expect(critter.objectSchema["tags"]?.isArray == true)
        #expect(critter.objectSchema["weight"]?.isOptional == true)
        critter.name = "Rex"
        #expect(critter["name"] as? String == "Rex")
    }

    @Test func schemaVersionAtAURLReadsWithoutOpeningForWriting() async throws {
        let url = temporaryRealmURL()
        try await writeV1People(url, version: 4)
        #expect(try await Realm.schemaVersion(at: url) == 4)
        // While a realm has it open, too.
        let realm = try await Realm(configuration: migrationConfiguration(url, [PersonV1.Person.self], version: 4))
        #expect(try await Realm.schemaVersion(at: url) == 4)
        _ = realm
        await #expect(throws: RealmError.self) {
            _ = try await Realm.schemaVersion(at: temporaryRealmURL("missing.realm"))
        }
    }
}

@Suite struct MigrationWithoutObjectTypesTests {
    @Test func aBlockNamingAClassWhoseModelIsAmbiguousFailsClearly() async throws {
        // Several test models are named Person in this process: without objectTypes the new one is unknown.
        let url = temporaryRealmURL()
        try await writeV1People(url)
        var configuration = Realm.Configuration(
            fileURL: url, schemaVersion: 3, migrationBlock: SeedMigrations.toVersion3)
        configuration.durability = .none
        do {
            _ = try await Realm(configuration: configuration)
            Issue.record("a migration guessed the new schema of Person")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("List the model classes in Configuration.objectTypes"))
        }
        #expect(try await Realm.schemaVersion(at: url) == 1)
    }
}

/// The schemas a migration block saw.
final class SeenSchemas: Sendable {
    private let storage = Mutex<(Schema, Schema)?>(nil)
    func record(_ old: Schema, _ new: Schema) { storage.withLock { $0 = (old, new) } }
    var schemas: (Schema, Schema)? { storage.withLock { $0 } }
}
