import ActorStore
import Foundation
import Testing

// Invalid models: each must make opening a realm that lists it throw `schemaMismatch` naming the problem.

final class TwoPrimaryKeys: Object {
    @Persisted(primaryKey: true) var a = 0
    @Persisted(primaryKey: true) var b = ""
}

final class DoublePrimaryKey: Object {
    @Persisted(primaryKey: true) var value = 0.0
}

final class IndexedData: Object {
    @Persisted(indexed: true) var blob = Data()
}

final class EmbeddedWithKey: EmbeddedObject {
    @Persisted(primaryKey: true) var id = 0
}

final class BadOrigin: Object {
    @Persisted(originProperty: "nope") var owners: LinkingObjects<Person>
}

final class LinksOutside: Object {
    @Persisted var dog: Dog?
}

final class LongName: Object {
    @Persisted var aPropertyNameThatIsFarTooLongForRealmBecauseItGoesOnAndOnAndOnForever = 0
}

@Suite struct ErrorTests {
    private func expectSchemaError(_ types: [ObjectBase.Type], mentioning phrase: String) async {
        do {
            _ = try await Realm(configuration: testConfiguration(types))
            Issue.record("opening with \(types) should have thrown")
        } catch let error as RealmError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains(phrase), "message: \(error.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func invalidModelsAreRejectedAtOpen() async {
        await expectSchemaError([TwoPrimaryKeys.self], mentioning: "more than one primary key")
        await expectSchemaError([DoublePrimaryKey.self], mentioning: "cannot be a primary key")
        await expectSchemaError([IndexedData.self], mentioning: "cannot be indexed")
        await expectSchemaError([EmbeddedWithKey.self], mentioning: "cannot have a primary key")
        await expectSchemaError([BadOrigin.self, Person.self, Dog.self, Address.self], mentioning: "'nope'")
        await expectSchemaError([LinksOutside.self], mentioning: "not in objectTypes")
        await expectSchemaError([LongName.self], mentioning: "63 bytes")
    }

    @Test func missingDirectoryIsAFileAccessError() async {
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: "/nonexistent-\(UUID())/x/test.realm"))
        config.objectTypes = [Book.self]
        await #expect(throws: RealmError.self) { _ = try await Realm(configuration: config) }
    }

    @Test func corruptFileIsReportedAndLeftAlone() async throws {
        let url = temporaryRealmURL()
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try garbage.write(to: url)
        var config = Realm.Configuration(fileURL: url)
        config.objectTypes = [Book.self]
        do {
            _ = try await Realm(configuration: config)
            Issue.record("a garbage file opened")
        } catch let error as RealmError {
            #expect([.corrupted, .unsupportedFormat].contains(error.code), "\(error)")
        }
        #expect(try Data(contentsOf: url) == garbage)
    }

    @Test func duplicatePrimaryKeyRollsBackTheWholeWrite() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        try await realm.write { $0.create(Book.self, value: ["id": 1, "title": "A"]) }
        await #expect {
            try await realm.write { realm in
                realm.create(Book.self, value: ["id": 2, "title": "B"])
                realm.create(Book.self, value: ["id": 1, "title": "again"])
            }
        } throws: { error in
            (error as? RealmError)?.code == .primaryKeyExists
        }
        let titles = await realm.read { $0.objects(Book.self).map(\.title) }
        #expect(titles == ["A"])
        // The realm stays usable.
        try await realm.write { $0.create(Book.self, value: ["id": 2, "title": "B"]) }
        #expect(await realm.read { $0.objects(Book.self).count } == 2)
    }

    @Test func wrongValueTypesAreReportedByName() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        do {
            try await realm.write { $0.create(Book.self, value: ["id": 1, "price": "cheap", "colour": "red"]) }
            Issue.record("a wrong value was accepted")
        } catch let error as RealmError {
            #expect(error.code == .invalidValue)
            #expect(error.message.contains("'price'"))
            #expect(!error.message.contains("colour"), "a key that is not a property is ignored, as in Realm")
        }
        #expect(await realm.read { $0.objects(Book.self).isEmpty })
    }

    @Test func aValueOfNoUsableFormIsReported() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        let error = await #expect(throws: RealmError.self) {
            try await realm.write { $0.create(Book.self, value: 42) }
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.message.contains("a Int is not a dictionary, an array, a Book or a frozen Book") == true)
        #expect(await realm.read { $0.objects(Book.self).isEmpty })
    }

    @Test func oversizedStringIsALimitError() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        let huge = String(repeating: "x", count: 17 << 20)
        do {
            try await realm.write { $0.create(Book.self, value: ["id": 1, "title": huge]) }
            Issue.record("a 17 MB string was accepted")
        } catch let error as RealmError {
            #expect(error.code == .limitExceeded)
        }
        #expect(await realm.read { $0.objects(Book.self).isEmpty })
    }

    @Test func blockErrorsCancelTheTransaction() async throws {
        struct Stop: Error {}
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        await #expect(throws: Stop.self) {
            try await realm.write { realm in
                realm.create(Book.self, value: ["id": 1])
                throw Stop()
            }
        }
        #expect(await realm.read { $0.objects(Book.self).isEmpty })
        #expect(await realm.isInWriteTransaction == false)
    }
}

@Suite struct PinningTests {
    @Test func runawayPinningBecomesAClearError() async throws {
        var config = testConfiguration([Book.self])
        config.maximumNumberOfActiveVersions = 3
        let realm = try await Realm(configuration: config)
        var kept: [FrozenRealm] = []
        var failure: RealmError?
        for i in 0..<10 {
            do {
                try await realm.write { $0.create(Book.self, value: ["id": i]) }
            } catch let error as RealmError {
                failure = error
                break
            }
            kept.append(await realm.freeze())
        }
        #expect(failure?.code == .tooManyVersions)
        #expect(failure?.message.contains("maximumNumberOfActiveVersions") == true)
        let committed = await realm.read { $0.objects(Book.self).count }
        #expect(committed == kept.count)
        // Releasing the frozen values lets writes continue.
        kept.removeAll()
        try await realm.write { $0.create(Book.self, value: ["id": 100]) }
        let stats = await realm.statistics
        #expect(stats.pinnedVersions <= 2)
    }
}
