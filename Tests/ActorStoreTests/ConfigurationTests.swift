import Foundation
import Synchronization
import Testing

@testable import ActorStore

// Opening realms: the default configuration, read-only and in-memory realms, class subsets, durability.

@Suite struct ConfigurationTests {
    @Test(.tags(.seed)) func defaultConfigurationIsSettable() async throws {
        let saved = Realm.Configuration.defaultConfiguration
        defer { Realm.Configuration.defaultConfiguration = saved }
        // The guide's setDefaultRealmForUser(username:).
        var config = seedConfiguration()
        config.fileURL = config.fileURL!.deletingLastPathComponent().appendingPathComponent("alice.realm")
        Realm.Configuration.defaultConfiguration = config
        #expect(Realm.Configuration.defaultConfiguration.fileURL == config.fileURL)

        let realm = try await Realm()
        #expect(realm.configuration.fileURL == config.fileURL)
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Alice's dog"]) }
        #expect(FileManager.default.fileExists(atPath: config.fileURL!.path))
        #expect(Realm.fileExists(for: config))
        let viaConfig = try await Realm(configuration: config)
        let names = await viaConfig.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["Alice's dog"])
        // The built-in default lives in a file named default.realm.
        #expect(Realm.Configuration().fileURL?.lastPathComponent == "default.realm")
    }

    @Test(.tags(.seed)) func readOnlyRealmsRefuseWrites() async throws {
        var config = seedConfiguration()
        do {
            let writer = try await Realm(configuration: config)
            try await writer.write { $0.create(SeedDog.self, value: ["name": "Bundled", "age": 6]) }
        }
        config.readOnly = true
        let realm = try await Realm(configuration: config)
        let names = await realm.read { realm in realm.objects(SeedDog.self).filter { $0.age > 5 }.map(\.name) }
        #expect(names == ["Bundled"])
        await expectRealmError(.readOnly) {
            try await realm.write { $0.create(SeedDog.self, value: ["name": "Nope"]) }
        }
        await expectRealmError(.readOnly) { try await realm.add(SeedDog(value: ["name": "Nope"])) }
        await expectRealmError(.readOnly) { try await realm.beginWrite() }
        #expect(await !realm.isInWriteTransaction)
        let count = await realm.read { $0.objects(SeedDog.self).count }
        #expect(count == 1)

        // A read-only realm needs an existing file.
        var missing = seedConfiguration()
        missing.readOnly = true
        await expectRealmError(.fileNotFound) { _ = try await Realm(configuration: missing) }
        #expect(!Realm.fileExists(for: missing))
    }

    @Test(.tags(.seed)) func readOnlyRealmRefusesWritesWhileAWritableRealmIsOpen() async throws {
        let config = seedConfiguration()
        let writer = try await Realm(configuration: config)
        try await writer.write { $0.create(SeedDog.self, value: ["name": "Original"]) }
        var readOnly = config
        readOnly.readOnly = true
        let reader: Realm
        do {
            reader = try await Realm(configuration: readOnly)
        } catch let error as RealmError {
            // Refusing to open with a different configuration while the file is open is fine too.
            #expect(error.code == .alreadyOpen || error.code == .fileAccess, "\(error)")
            return
        }
        await expectRealmError(.readOnly) {
            try await reader.write { $0.create(SeedDog.self, value: ["name": "Sneaky"]) }
        }
        let names = await writer.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["Original"])
    }

    @Test(.tags(.seed)) func inMemoryRealmsShareDataByIdentifier() async throws {
        let identifier = "SeedInMemory-" + UUID().uuidString
        var config = Realm.Configuration(inMemoryIdentifier: identifier)
        config.objectTypes = seedTypes
        #expect(config.fileURL == nil)
        #expect(!Realm.fileExists(for: config))
        var first: Realm? = try await Realm(configuration: config)
        try await first!.write { $0.create(SeedDog.self, value: ["name": "Memory"]) }
        let second = try await Realm(configuration: config)
        let seen = await second.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(seen == ["Memory"], "realms with one identifier share their data")

        var otherConfig = Realm.Configuration(inMemoryIdentifier: identifier + "-other")
        otherConfig.objectTypes = seedTypes
        let other = try await Realm(configuration: otherConfig)
        #expect(await other.isEmpty)

        // A write through either is seen by the other.
        try await second.write { $0.create(SeedDog.self, value: ["name": "Second"]) }
        let fromFirst = await first!.read { $0.objects(SeedDog.self).count }
        #expect(fromFirst == 2)
        first = nil
        let stillThere = await second.read { $0.objects(SeedDog.self).count }
        #expect(stillThere == 2, "the data lives as long as one realm with the identifier does")
        #expect(!Realm.fileExists(for: config))
    }

    @Test(.tags(.seed)) func inMemoryDataIsDiscardedWhenTheLastRealmIsReleased() async throws {
        var config = Realm.Configuration(inMemoryIdentifier: "SeedInMemoryGone-" + UUID().uuidString)
        config.objectTypes = seedTypes
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(SeedDog.self, value: ["name": "Ephemeral"]) }
        }
        let realm = try await Realm(configuration: config)
        #expect(await realm.isEmpty)
    }

    @Test(.tags(.seed)) func classSubsets() async throws {
        let config = testConfiguration([SeedAnimal.self, SeedDuck.self])
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(SeedDuck.self, value: ["name": "Gustav", "animal": ["age": 1]]) }
        let count = await realm.read { $0.objects(SeedDuck.self).count }
        #expect(count == 1)
        // A class outside objectTypes is a programmer error (the process stops).
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([SeedAnimal.self, SeedDuck.self]))
            try await realm.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        }
        expectStopMessage(stop, "is not managed by this Realm")
        // A class that links outside objectTypes is refused when opening.
        await expectRealmError(.schemaMismatch) {
            _ = try await Realm(configuration: testConfiguration([SeedDuck.self]))
        }
    }

    @Test(.tags(.regression)) func aSecondRealmWithAnotherDurabilityIsRefused() async throws {
        let url = temporaryRealmURL()
        var fast = Realm.Configuration(fileURL: url)
        fast.durability = .none
        let a = try await Realm(configuration: fast)
        do {
            _ = try await Realm(configuration: Realm.Configuration(fileURL: url))
            Issue.record("a .full realm silently shared a .none engine")
        } catch let error as RealmError {
            #expect(error.code == .alreadyOpen)
            #expect(error.message.contains("durability"))
        }
        _ = a
    }
}
