import Foundation
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

/// Encryption through the object API: `Configuration.encryptionKey`, `writeCopy(toFile:encryptionKey:)`,
/// `schemaVersion(at:encryptionKey:)`, the errors of wrong keys, and no plaintext in any file written
/// through commits, checkpoints, compaction, copies and migrations.
@Suite("Encryption (object API)")
struct EncryptionRealmTests {
    static let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })
    static let otherKey = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 99) })
    static let canaries = ["CANARY-name-5c1f", "CANARY-subtitle-9e2b", "CANARY-migrated-77aa", "CANARY-blob-31d0"]

    func configuration(
        _ url: URL, key: Data? = Self.key, types: [ObjectBase.Type] = [Book.self, AllTypes.self]
    )
        -> Realm.Configuration
    {
        var configuration = Realm.Configuration(fileURL: url, objectTypes: types)
        configuration.encryptionKey = key
        return configuration
    }

    static func expectNoPlaintext(in directory: URL, _ secrets: [[UInt8]]) throws {
        let names = try FileManager.default.subpathsOfDirectory(atPath: directory.path)
        #expect(!names.isEmpty)
        for name in names {
            guard let bytes = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) else {
                continue
            }
            let file = [UInt8](bytes)
            for secret in secrets {
                #expect(!containsBytes(file, secret), "\(String(decoding: secret, as: UTF8.self)) in \(name)")
            }
        }
    }

    @Test(
        "values written through commits, checkpoints, compaction, a migration and copies never reach the files in plaintext"
    )
    func canaries() async throws {
        let url = temporaryRealmURL()
        let directory = url.deletingLastPathComponent()
        let blob = Data(Self.canaries[3].utf8)
        do {
            let realm = try await Realm(configuration: configuration(url))
            try await realm.write { realm in
                for i in 0..<200 {
                    realm.create(
                        Book.self, value: ["id": i, "title": "\(Self.canaries[0]) \(i)", "subtitle": Self.canaries[1]])
                }
                let all = realm.create(AllTypes.self)
                all.data = blob
                all.indexedName = Self.canaries[0]
            }
            try await realm.compact()
            try await realm.write { realm in realm.objects(Book.self).first?.title = Self.canaries[0] + " edited" }
            try await realm.writeCopy(
                toFile: directory.appendingPathComponent("copy.realm"), encryptionKey: Self.otherKey)
        }
        await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(url, nil))
        // A migration that rewrites every title.
        var migrating = configuration(url)
        migrating.schemaVersion = 1
        migrating.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "Book") { _, new in new?["title"] = Self.canaries[2] }
        }
        do {
            let realm = try await Realm(configuration: migrating)
            #expect(await realm.read { $0.objects(Book.self).first?.title } == Self.canaries[2])
            #expect(await realm.read { $0.objects(AllTypes.self).first?.data } == blob)
        }
        await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(url, nil))
        let secrets =
            Self.canaries.map { Array($0.utf8) } + [Array(Self.key.prefix(24)), Array(Self.otherKey.suffix(24))]
        try Self.expectNoPlaintext(in: directory, secrets)

        // Both files open with their keys and hold the data.
        let copy = try await Realm(
            configuration: configuration(directory.appendingPathComponent("copy.realm"), key: Self.otherKey))
        #expect(await copy.read { $0.objects(Book.self).count } == 200)
        #expect(await copy.read { $0.objects(Book.self).filter { $0.title.hasPrefix(Self.canaries[0]) }.count } == 200)
        try await copy.verify()
    }

    @Test("a wrong key, no key, a key for a plain file and a short key are clear errors; the file is untouched")
    func wrongKeys() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: configuration(url))
            try await realm.write { $0.create(Book.self, value: ["id": 1, "title": "one"]) }
        }
        await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(url, nil))
        let before = try Data(contentsOf: url)

        func code(_ configuration: Realm.Configuration) async -> RealmError.Code? {
            do {
                _ = try await Realm(configuration: configuration)
                return nil
            } catch let error as RealmError {
                return error.code
            } catch {
                Issue.record("not a RealmError: \(error)")
                return nil
            }
        }
        #expect(await code(configuration(url, key: Self.otherKey)) == .wrongKey)
        #expect(await code(configuration(url, key: nil)) == .wrongKey)
        #expect(await code(configuration(url, key: Self.key.prefix(63))) == .invalidValue)
        #expect(await code(configuration(url, key: Self.key + Data([1]))) == .invalidValue)
        #expect(try Data(contentsOf: url) == before)
        await #expect(throws: RealmError.self) { _ = try await Realm.schemaVersion(at: url) }
        #expect(try await Realm.schemaVersion(at: url, encryptionKey: Self.key) == 0)

        // A key for a file that is not encrypted.
        let plainURL = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: configuration(plainURL, key: nil))
            try await realm.write { $0.create(Book.self, value: ["id": 1]) }
        }
        await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(plainURL, nil))
        #expect(await code(configuration(plainURL, key: Self.key)) == .wrongKey)

        // While the file is open in this process, another key (or none) is refused, not handed the open realm.
        let open = try await Realm(configuration: configuration(url))
        #expect(await code(configuration(url, key: Self.otherKey)) == .wrongKey)
        #expect(await code(configuration(url, key: nil)) == .wrongKey)
        #expect(await open.read { $0.objects(Book.self).count } == 1)
    }

    @Test("writeCopy encrypts a plain realm and decrypts an encrypted one")
    func copies() async throws {
        let url = temporaryRealmURL()
        let directory = url.deletingLastPathComponent()
        let realm = try await Realm(configuration: configuration(url, key: nil))
        try await realm.write { realm in
            for i in 0..<50 { realm.create(Book.self, value: ["id": i, "title": Self.canaries[0]]) }
        }
        let encryptedURL = directory.appendingPathComponent("encrypted.realm")
        try await realm.writeCopy(toFile: encryptedURL, encryptionKey: Self.key)
        await #expect(throws: RealmError.self) {
            try await realm.writeCopy(toFile: directory.appendingPathComponent("short.realm"), encryptionKey: Data([1]))
        }
        let encrypted = try await Realm(configuration: configuration(encryptedURL))
        #expect(await encrypted.read { $0.objects(Book.self).count } == 50)
        let decryptedURL = directory.appendingPathComponent("decrypted.realm")
        try await encrypted.writeCopy(toFile: decryptedURL)
        let decrypted = try await Realm(configuration: configuration(decryptedURL, key: nil))
        #expect(
            await decrypted.read { $0.objects(Book.self).map(\.title) } == Array(repeating: Self.canaries[0], count: 50)
        )
        #expect(!containsBytes([UInt8](try Data(contentsOf: encryptedURL)), Array(Self.canaries[0].utf8)))
        #expect(containsBytes([UInt8](try Data(contentsOf: decryptedURL)), Array(Self.canaries[0].utf8)))
    }
}

/// Whether `needle` occurs in `haystack`.
private func containsBytes(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= haystack.count else { return false }
    var index = haystack.startIndex
    while let found = haystack[index...].firstIndex(of: needle[0]), found + needle.count <= haystack.count {
        if haystack[found..<found + needle.count].elementsEqual(needle) { return true }
        index = found + 1
    }
    return false
}
