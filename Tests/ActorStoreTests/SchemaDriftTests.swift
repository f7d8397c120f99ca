import ActorStore
import Foundation
import Testing

/// One class, two shapes, the same name in the file: `count` is an Int, then a String.
enum DriftV1 {
    final class Drifter: Object {
        @Persisted var name = ""
        @Persisted var count = 0
    }
    /// A class that matches its table and links to one that drifts.
    final class DriftHolder: Object {
        @Persisted var name = ""
        @Persisted var drifter: Drifter?
    }
}

enum DriftV2 {
    final class Drifter: Object {
        @Persisted var name = ""
        @Persisted var count = ""
    }
    final class DriftHolder: Object {
        @Persisted var name = ""
        @Persisted var drifter: Drifter?
    }
}

/// Realm Swift's legacy model style: stored properties without `@Persisted`, which ActorStore cannot see.
final class LegacyDynamicDog: Object {
    dynamic var name = ""
    dynamic var age = 0
}

/// A `List` declared without `@Persisted` next to a persisted property.
final class LegacyListOwner: Object {
    @Persisted var name = ""
    let dogs = List<LegacyDynamicDog>()
}

/// Standard error of a child process contains `message`.
private func expectStandardError(
    _ result: ExitTest.Result?, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(output.contains(message), "standard error: \(output.suffix(600))", sourceLocation: sourceLocation)
}

/// Writes two Drifters with the first model (listed in objectTypes, schema version 0).
private func writeDrifters(_ url: URL) async throws {
    var configuration = Realm.Configuration(fileURL: url, objectTypes: [DriftV1.Drifter.self])
    configuration.durability = .none
    let realm = try await Realm(configuration: configuration)
    try await realm.write { realm in
        realm.create(DriftV1.Drifter.self, value: ["name": "a", "count": 7])
        realm.create(DriftV1.Drifter.self, value: ["name": "b", "count": 9])
    }
}

/// Writes a DriftHolder linking to a Drifter, and one linking to nothing, with the first models.
private func writeHolders(_ url: URL) async throws {
    var configuration = Realm.Configuration(
        fileURL: url, objectTypes: [DriftV1.Drifter.self, DriftV1.DriftHolder.self])
    configuration.durability = .none
    let realm = try await Realm(configuration: configuration)
    try await realm.write { realm in
        let drifter = realm.create(DriftV1.Drifter.self, value: ["name": "a", "count": 7])
        realm.create(DriftV1.DriftHolder.self, value: ["name": "h", "drifter": drifter])
        realm.create(DriftV1.DriftHolder.self, value: ["name": "g"])
    }
}

/// The silent misbehaviours of issue 18: a model that does not match the file it reads, and a model whose
/// properties are not `@Persisted`, must never read defaults or store nothing without saying so.
@Suite struct SchemaDriftTests {
    @Test func readingAChangedClassWithoutObjectTypesFindsNothingAndSaysWhy() async {
        // In a child process: the report goes to standard error once per process.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(UUID().uuidString).realm")
            // The child's files go with it (they were left in the temporary directory, two per run).
            defer { for file in [url.path, url.path + ".lock"] { try? FileManager.default.removeItem(atPath: file) } }
            try await writeDrifters(url)
            // objectTypes nil: the class joins when first used, after the open checked the file.
            var configuration = Realm.Configuration(fileURL: url)
            configuration.durability = .none
            let realm = try await Realm(configuration: configuration)
            let counts = await realm.read { $0.objects(DriftV2.Drifter.self).map(\.count) }
            // Never the stored Ints read back as "": the class is not bound, so it has no objects.
            guard counts.isEmpty else { fatalError("read \(counts) from a class that does not match the file") }
            let queried = try await realm.read { try $0.objects(DriftV2.Drifter.self).filter("name == 'a'").count }
            guard queried == 0 else { fatalError("a query found \(queried) objects of an unbound class") }
        }
        expectStandardError(result, "property 'Drifter.count' changed type from int64 to string")
        expectStandardError(result, "Increase Configuration.schemaVersion")
        expectStandardError(result, "reads of this class find no objects")
    }

    @Test func readingAChangedClassFromAFrozenRealmFindsNothingAndSaysWhy() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(UUID().uuidString).realm")
            // The child's files go with it (they were left in the temporary directory, two per run).
            defer { for file in [url.path, url.path + ".lock"] { try? FileManager.default.removeItem(atPath: file) } }
            try await writeDrifters(url)
            var configuration = Realm.Configuration(fileURL: url)
            configuration.durability = .none
            let frozen = try await Realm(configuration: configuration).freeze()
            let counts = frozen.objects(DriftV2.Drifter.self).map(\.count)
            guard counts.isEmpty else { fatalError("read \(counts) from a class that does not match the file") }
        }
        expectStandardError(result, "property 'Drifter.count' changed type from int64 to string")
    }

    @Test func aClassLinkingToAChangedClassHasNoObjectsToSortFilterOrIndex() async throws {
        // Found by fuzz-open: the holder matches its own table, so a query resolved it on its own and found
        // its rows, while the realm had left it unbound (the class it links to drifted): `first` on a sorted
        // query then trapped reading a match of a class with no binding.
        let url = temporaryRealmURL()
        try await writeHolders(url)
        var reading = Realm.Configuration(fileURL: url)
        reading.durability = .none
        let realm = try await Realm(configuration: reading)
        let (first, count, filtered, last) = try await realm.read { realm in
            let holders = realm.objects(DriftV2.DriftHolder.self)
            return (
                try holders.sorted(byKeyPath: "name").first?.name, holders.count,
                try holders.filter("name BEGINSWITH 'h'").count, try holders.sorted(byKeyPath: "name").last?.name
            )
        }
        #expect(first == nil && count == 0 && filtered == 0 && last == nil)
        // A frozen realm binds the holder by its own table: what it finds, it can read.
        let frozen = try await realm.freeze().objects(DriftV2.DriftHolder.self).sorted(byKeyPath: "name")
        #expect(frozen.first?.name == (frozen.isEmpty ? nil : "g"))
    }

    @Test func aChangedClassLeavesTheRealmUsableAndItsDataIntact() async throws {
        let url = temporaryRealmURL()
        try await writeDrifters(url)
        var configuration = Realm.Configuration(fileURL: url)
        configuration.durability = .none
        let realm = try await Realm(configuration: configuration)
        #expect(await realm.read { $0.objects(DriftV2.Drifter.self).count } == 0)
        // A later write of the class throws; the data written with the matching model is untouched.
        await #expect(throws: RealmError.self) {
            try await realm.write { $0.create(DriftV2.Drifter.self, value: ["name": "c", "count": "x"]) }
        }
        let listed = try await Realm(
            configuration: migrationConfiguration(url, [DriftV1.Drifter.self], version: 0))
        #expect(await listed.read { $0.objects(DriftV1.Drifter.self).map(\.count).sorted() } == [7, 9])
    }

    @Test func writingAChangedClassWithoutObjectTypesThrowsSchemaMismatch() async throws {
        let url = temporaryRealmURL()
        try await writeDrifters(url)
        var configuration = Realm.Configuration(fileURL: url)
        configuration.durability = .none
        let realm = try await Realm(configuration: configuration)
        do {
            try await realm.write { $0.create(DriftV2.Drifter.self, value: ["name": "c", "count": "x"]) }
            Issue.record("a write of a changed class succeeded")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("'Drifter.count' changed type"))
        }
        // The data is still there for the model that matches.
        let listed = try await Realm(
            configuration: migrationConfiguration(url, [DriftV1.Drifter.self], version: 0))
        #expect(await listed.read { $0.objects(DriftV1.Drifter.self).map(\.count) } == [7, 9])
    }

    @Test func legacyDynamicPropertiesAreAnErrorNotSilence() async throws {
        // Listed: the open throws.
        do {
            _ = try await Realm(configuration: testConfiguration([LegacyDynamicDog.self]))
            Issue.record("a model without @Persisted properties opened")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("LegacyDynamicDog"))
            #expect(error.message.contains("@Persisted"))
        }
        // Not listed: writing one throws instead of storing an empty object.
        let realm = try await Realm(configuration: testConfiguration())
        do {
            try await realm.write { realm in
                let dog = LegacyDynamicDog()
                dog.name = "Rex"
                realm.add(dog)
            }
            Issue.record("an object of a model without @Persisted properties was stored")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("'LegacyDynamicDog.name' is not @Persisted"))
        }
    }

    @Test func aListWithoutPersistedIsAnError() async throws {
        do {
            _ = try await Realm(configuration: testConfiguration([LegacyListOwner.self, LegacyDynamicDog.self]))
            Issue.record("a List without @Persisted was accepted")
        } catch let error as RealmError {
            #expect(error.message.contains("'LegacyListOwner.dogs' is not @Persisted"))
        }
    }
}
