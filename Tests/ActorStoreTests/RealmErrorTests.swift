import ActorStore
import ActorStorePersistence
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `RealmError`'s readable cause (`errno`, `fileOffset`), its source location, and the mapping from engine
/// codes. (The suite's name contains `ErrorTests`, so `swift test --filter ErrorTests` runs it.)
@Suite struct RealmErrorTests {
    /// The public code each engine code maps to, as the hand-written switch did before the mapping was
    /// derived from the codes' names.
    static let expectedCodes: [StorageError.Code: RealmError.Code] = [
        .fileAccess: .fileAccess, .permissionDenied: .fileAccess, .fileExists: .fileExists,
        .fileNotFound: .fileNotFound, .alreadyOpen: .alreadyOpen, .corrupted: .corrupted, .diskFull: .diskFull,
        .ioFailure: .ioFailure, .poisoned: .poisoned, .closed: .closed, .limitExceeded: .limitExceeded,
        .invalidValue: .invalidValue, .schemaMismatch: .schemaMismatch, .invalidObject: .invalidObject,
        .readOnly: .readOnly, .wrongKey: .wrongKey, .unsupportedFormat: .unsupportedFormat,
        .tooManyVersions: .tooManyVersions, .primaryKeyExists: .primaryKeyExists,
    ]

    @Test func theTableCoversEveryEngineCode() {
        #expect(Set(Self.expectedCodes.keys) == Set(StorageError.Code.allCases))
    }

    @Test(arguments: StorageError.Code.allCases)
    func everyEngineCodeMapsAsBefore(_ engineCode: StorageError.Code) throws {
        let expected = try #require(Self.expectedCodes[engineCode], "no expected public code for \(engineCode)")
        let engineError = StorageError(engineCode, "It failed.", offset: FileOffset(UInt64(77)), errno: 5)
        let error = RealmError(engineError)
        #expect(error.code == expected)
        #expect(error.message == "It failed.")
        #expect(error.errno == 5)
        #expect(error.fileOffset == 77)
        #expect((error.underlyingError as? StorageError)?.code == engineCode)
    }

    @Test func aCorruptedFileCarriesTheOffsetOfTheDamage() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        for id in 1...3 {
            try await realm.write { $0.create(Book.self, value: ["id": id, "title": "Book \(id)"]) }
        }
        let url = temporaryRealmURL("copy.realm")
        try await realm.writeCopy(toFile: url)
        var bytes = try Data(contentsOf: url)
        let damaged = (FileHeader.size + bytes.count) / 2  // inside the records, before the last footer
        bytes[damaged] ^= 0x10
        try bytes.write(to: url)
        var config = Realm.Configuration(fileURL: url)
        config.objectTypes = [Book.self]
        let thrown = await #expect(throws: RealmError.self) { _ = try await Realm(configuration: config) }
        let error = try #require(thrown)
        #expect(error.code == .corrupted, "\(error)")
        let offset = try #require(error.fileOffset, "\(error.debugDescription)")
        #expect(offset >= UInt64(FileHeader.size) && offset <= UInt64(damaged), "damage at \(damaged), \(offset)")
        #expect(error.errno == nil)
        #expect(error.debugDescription.contains("fileOffset \(offset)"))
    }

    @Test func aMissingDirectoryCarriesENOENT() async throws {
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: "/nonexistent-\(UUID())/x/test.realm"))
        config.objectTypes = [Book.self]
        let thrown = await #expect(throws: RealmError.self) { _ = try await Realm(configuration: config) }
        let error = try #require(thrown)
        #expect([.fileNotFound, .fileAccess].contains(error.code), "\(error)")
        #expect(error.errno == ENOENT, "\(error.debugDescription)")
        #expect(error.fileOffset == nil)
        #expect(error.debugDescription.contains("errno \(ENOENT)"))
    }

    @Test func theSourceLocationIsWhereActorStoreCreatedTheError() async throws {
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: "/nonexistent-\(UUID())/x/test.realm"))
        config.objectTypes = [Book.self]
        let thrown = await #expect(throws: RealmError.self) { _ = try await Realm(configuration: config) }
        let error = try #require(thrown)
        let parts = error.sourceFileID.split(separator: "/")
        #expect(parts.count == 2 && parts.first == "ActorStore", "\(error.sourceFileID)")
        #expect(error.sourceFileID != "ActorStore/RealmError.swift", "the converting caller's location, not the init's")
        // The file is one of ActorStore's sources, and the line there creates a RealmError.
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/ActorStore")
        let files =
            FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.lastPathComponent == parts.last.map(String.init) } ?? []
        let file = try #require(files.first, "\(error.sourceFileID) is not in \(sources.path)")
        let lines = try String(contentsOf: file, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        try #require(error.sourceLine >= 1 && error.sourceLine <= lines.count)
        #expect(lines[error.sourceLine - 1].contains("RealmError("), "\(file.path):\(error.sourceLine)")
        // Shown for debugging, kept out of the user-facing message.
        #expect(error.debugDescription.hasSuffix("(at \(error.sourceFileID):\(error.sourceLine))"))
        #expect(!error.message.contains(error.sourceFileID) && !error.description.contains(error.sourceFileID))
    }

    @Test func aUserCreatedErrorRecordsTheCallersLocation() {
        let line = #line + 1
        let error = RealmError(.invalidValue, "Nope.")
        #expect(error.sourceFileID == #fileID && error.sourceLine == line)
        #expect(error.errno == nil && error.fileOffset == nil && error.underlyingError == nil)
        #expect(error.debugDescription == "RealmError.invalidValue: Nope. (at \(#fileID):\(line))")
    }
}
