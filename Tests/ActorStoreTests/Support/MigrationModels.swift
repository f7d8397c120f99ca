import ActorStore
import Foundation
import Synchronization
import Testing

// The Person model of the seeds (realm-swift-migrations.txt, the guide's Migrations section), one enum per
// schema version; every class is named "Person" in the file. Used by the migration, schema-drift and
// dynamic-query tests.

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

/// Versions a migration block saw (the block is `@Sendable`, so it records through a lock).
final class SeenVersions: Sendable {
    private let storage = Mutex<[UInt64]>([])
    func record(_ version: UInt64) { storage.withLock { $0.append(version) } }
    var versions: [UInt64] { storage.withLock { $0 } }
}
