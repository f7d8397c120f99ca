import ActorStore
import Foundation

// The migration modes of the crash child (Tests/CrashOracleTests/MigrationCrashTests):
//
//   migrate-prepare <file> <count>   writes <count> people with the old model (schema version 1)
//   migrate <file>                   prints OPENING, opens with the new model and a migration block
//                                    (rename one property, fill one from two), prints MIGRATED
//   migrate-check <file> <count>     prints `CHECK v1`, `CHECK v2` (the file is wholly old or wholly
//                                    migrated, every value right) or `CHECK bad <why>` (exit 1)

/// The old model: two names and yearsSinceBirth.
enum CrashPersonV1 {
    final class Person: Object {
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var yearsSinceBirth = 0
    }
}

/// The new model: yearsSinceBirth renamed to age, fullName from the two names.
enum CrashPersonV2 {
    final class Person: Object {
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var age = 0
        @Persisted var fullName = ""
    }
}

private func migrationConfiguration(_ path: String, version: UInt64) -> Realm.Configuration {
    var configuration = Realm.Configuration(
        fileURL: URL(fileURLWithPath: path), schemaVersion: version,
        objectTypes: [version == 1 ? CrashPersonV1.Person.self : CrashPersonV2.Person.self])
    configuration.automaticCompaction = false
    if version == 2 {
        configuration.migrationBlock = { migration, oldSchemaVersion in
            if oldSchemaVersion < 2 {
                migration.renameProperty(onType: CrashPersonV2.Person.className(), from: "yearsSinceBirth", to: "age")
                migration.enumerateObjects(ofType: CrashPersonV2.Person.className()) { oldObject, newObject in
                    let first = oldObject!["firstName"] as! String
                    let last = oldObject!["lastName"] as! String
                    newObject!["fullName"] = "\(first) \(last)"
                }
            }
        }
    }
    return configuration
}

func runMigrationPrepare(path: String, count: Int) async throws {
    let realm = try await Realm(configuration: migrationConfiguration(path, version: 1))
    try await realm.write { realm in
        for i in 0..<count {
            realm.create(
                CrashPersonV1.Person.self,
                value: ["firstName": "f\(i)", "lastName": "l\(i)", "yearsSinceBirth": i % 90])
        }
    }
    emit("PREPARED")
}

func runMigrate(path: String) async throws {
    emit("OPENING")
    let realm = try await Realm(configuration: migrationConfiguration(path, version: 2))
    _ = realm
    emit("MIGRATED")
}

func runMigrationCheck(path: String, count: Int) async -> Int32 {
    do {
        let version = try await Realm.schemaVersion(at: URL(fileURLWithPath: path))
        switch version {
        case 1:
            var configuration = migrationConfiguration(path, version: 1)
            configuration.readOnly = true
            let realm = try await Realm(configuration: configuration)
            let problem = await realm.read { realm -> String? in
                let people = realm.objects(CrashPersonV1.Person.self)
                guard people.count == count else { return "v1 with \(people.count) people, not \(count)" }
                for (i, person) in people.enumerated()
                where person.firstName != "f\(i)" || person.lastName != "l\(i)" || person.yearsSinceBirth != i % 90 {
                    return "v1 person \(i) is \(person)"
                }
                return nil
            }
            emit(problem.map { "CHECK bad \($0)" } ?? "CHECK v1")
            return problem == nil ? 0 : 1
        case 2:
            var configuration = migrationConfiguration(path, version: 2)
            configuration.migrationBlock = nil
            configuration.readOnly = true
            let realm = try await Realm(configuration: configuration)
            let problem = await realm.read { realm -> String? in
                let people = realm.objects(CrashPersonV2.Person.self)
                guard people.count == count else { return "v2 with \(people.count) people, not \(count)" }
                for (i, person) in people.enumerated()
                where person.fullName != "f\(i) l\(i)" || person.age != i % 90 || person.firstName != "f\(i)" {
                    return "v2 person \(i) is \(person)"
                }
                return nil
            }
            emit(problem.map { "CHECK bad \($0)" } ?? "CHECK v2")
            return problem == nil ? 0 : 1
        default:
            emit("CHECK bad schema version \(version)")
            return 1
        }
    } catch {
        emit("CHECK bad \(describe(error))")
        return 1
    }
}
