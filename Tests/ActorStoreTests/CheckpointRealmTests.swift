import Foundation
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

/// Checkpoints through the object API: a reopened realm starts from the one its close wrote, the statistics
/// show it, `verify()` reads the whole file, and `verifiesWholeFileAtOpen` replays it.
@Suite("Checkpoints (object API)")
struct CheckpointRealmTests {
    @Test("a reopened realm starts from a checkpoint; verify() and verifiesWholeFileAtOpen agree")
    func reopenFromCheckpoint() async throws {
        let url = temporaryRealmURL()
        var configuration = Realm.Configuration(fileURL: url, objectTypes: [Dog.self, Person.self, Address.self])
        configuration.indexCacheLimit = 1 << 20
        do {
            let realm = try await Realm(configuration: configuration)
            try await realm.write { realm in
                for i in 0..<2_000 {
                    let person = realm.create(Person.self, value: ["name": "person \(i)"])
                    let dog = realm.create(Dog.self, value: ["name": "dog \(i)", "age": i % 17])
                    dog.owner = person
                }
            }
            #expect(await realm.statistics.checkpointVersion == nil)
        }
        await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(url, nil))

        let reopened = try await Realm(configuration: configuration)
        let stats = await reopened.statistics
        #expect(stats.checkpointVersion == stats.version)
        #expect(stats.bytesSinceCheckpoint == 0)
        let (count, owners) = await reopened.read { realm in
            (realm.objects(Dog.self).count, realm.objects(Dog.self).filter { $0.owner != nil }.count)
        }
        #expect(count == 2_000 && owners == 2_000)
        #expect(await reopened.statistics.indexNodesLoaded > 0)
        try await reopened.verify()
        let expected = await reopened.read { realm in realm.objects(Dog.self).map(\.name) }

        var whole = configuration
        whole.verifiesWholeFileAtOpen = true
        _ = consume reopened
        await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(url, nil))
        let replayed = try await Realm(configuration: whole)
        #expect(await replayed.read { realm in realm.objects(Dog.self).map(\.name) } == expected)
    }

    @Test("a realm that only reads stays within indexCacheLimit: it takes the version whose nodes were dropped")
    func readerStaysWithinCacheLimit() async throws {
        let url = temporaryRealmURL()
        var configuration = Realm.Configuration(fileURL: url, objectTypes: [Book.self])
        do {
            let realm = try await Realm(configuration: configuration)
            try await realm.write { realm in
                for i in 0..<30_000 { realm.create(Book.self, value: ["id": i, "title": "book \(i)"]) }
            }
        }
        await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(url, nil))
        configuration.indexCacheLimit = 256 << 10
        let realm = try await Realm(configuration: configuration)
        var found = 0
        var largest = 0
        for batch in 0..<30 {
            found += await realm.read { realm in
                (0..<1_000).filter {
                    realm.object(ofType: Book.self, forPrimaryKey: batch * 1_000 + $0) != nil
                }.count
            }
            largest = max(largest, await realm.statistics.indexCacheBytes)
        }
        #expect(found == 30_000)
        // At most the limit plus what one read loads before the next read lets the nodes go.
        #expect(largest <= 2 * configuration.indexCacheLimit, "\(largest) bytes of nodes held")
        #expect(await realm.statistics.indexBytesLoaded > configuration.indexCacheLimit, "nodes were loaded again")
    }
}
