import ActorStore
import ActorStorePersistence
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `RealmError`'s readable cause (`systemCall`, `errno`, `fileOffset`), its source location, and the mapping from engine
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
        let line = #line + 1
        let engineError = StorageError(
            engineCode, "It failed.", offset: FileOffset(UInt64(77)), errno: 5, systemCall: "pwrite")
        let error = RealmError(engineError)
        #expect(error.code == expected)
        #expect(error.message == "It failed.")
        #expect(error.errno == 5)
        #expect(error.fileOffset == 77)
        #expect(error.systemCall == "pwrite")
        // The location is where the engine error was made, and nothing is left in a type users cannot read.
        #expect(error.sourceFileID == #fileID && error.sourceLine == line)
        #expect(error.underlyingError == nil)
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
        #expect(error.systemCall == "open", "\(error.debugDescription)")
        #expect(error.fileOffset == nil)
        #expect(error.debugDescription.contains("[systemCall open, errno \(ENOENT)]"), "\(error.debugDescription)")
    }

    @Test func aFailedWriteCarriesItsSystemCallAndOffset() throws {
        let url = temporaryRealmURL("readonly.bin")
        try Data([1, 2, 3]).write(to: url)
        let files = PosixFileSystem()
        let file = try files.open(url.path, create: false, readOnly: true)
        defer { files.close(file) }
        let thrown = #expect(throws: StorageError.self) {
            _ = try [UInt8](repeating: 7, count: 8).withUnsafeBytes { try files.write(file, $0, at: 4096) }
        }
        let error = RealmError(try #require(thrown))
        #expect(
            error.systemCall == "pwrite" && error.errno == EBADF && error.fileOffset == 4096,
            "\(error.debugDescription)")
        #expect(error.debugDescription.contains("[systemCall pwrite, errno \(EBADF), fileOffset 4096]"))
        #expect(error.sourceFileID == "ActorStorePersistence/PosixFileSystem.swift", "\(error.sourceFileID)")
        #expect(try Self.sourceLine(of: error).contains("throw StorageError("), "line \(error.sourceLine)")
    }

    @Test func aFileFailureIsLocatedWhereTheEngineDetectedIt() async throws {
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: "/nonexistent-\(UUID())/x/test.realm"))
        config.objectTypes = [Book.self]
        let thrown = await #expect(throws: RealmError.self) { _ = try await Realm(configuration: config) }
        let error = try #require(thrown)
        // The engine's wrapper of the failed call: a line of Sources/Persistence that makes the error.
        let line = try Self.sourceLine(of: error)
        #expect(error.sourceFileID.hasPrefix("ActorStorePersistence/"), "\(error.sourceFileID)")
        #expect(line.contains("StorageError(") && line.contains("systemCall: \"open\""), "\(line)")
        // Shown for debugging, kept out of the user-facing message.
        #expect(error.debugDescription.hasSuffix("(at \(error.sourceFileID):\(error.sourceLine))"))
        #expect(!error.message.contains(error.sourceFileID) && !error.description.contains(error.sourceFileID))
    }

    @Test func anObjectLayerFailureIsLocatedWhereActorStoreCreatedIt() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        let thrown = await realm.read { realm in
            #expect(throws: RealmError.self) { _ = try realm.objects(Book.self).filter("noSuchProperty == 1") }
        }
        let error = try #require(thrown)
        #expect(error.code == .invalidQuery, "\(error)")
        #expect(error.sourceFileID.hasPrefix("ActorStore/"), "\(error.sourceFileID)")
        #expect(error.sourceFileID != "ActorStore/RealmError.swift", "the creating caller's location, not the init's")
        #expect(try Self.sourceLine(of: error).contains("RealmError("), "\(error.sourceFileID):\(error.sourceLine)")
        #expect(error.systemCall == nil && error.errno == nil && error.fileOffset == nil)
    }

    /// The text of the line an error's location names, found in `Sources/ActorStore` or `Sources/Persistence`
    /// by the module name `#fileID` starts with.
    static func sourceLine(of error: RealmError) throws -> String {
        let parts = error.sourceFileID.split(separator: "/")
        try #require(parts.count == 2, "\(error.sourceFileID)")
        let folder = parts[0] == "ActorStorePersistence" ? "Persistence" : String(parts[0])
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/\(folder)")
        let files =
            FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.lastPathComponent == String(parts[1]) } ?? []
        let file = try #require(files.first, "\(error.sourceFileID) is not in \(sources.path)")
        let lines = try String(contentsOf: file, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        try #require(error.sourceLine >= 1 && error.sourceLine <= lines.count)
        return String(lines[error.sourceLine - 1])
    }

    @Test func aUserCreatedErrorRecordsTheCallersLocation() {
        let line = #line + 1
        let error = RealmError(.invalidValue, "Nope.")
        #expect(error.sourceFileID == #fileID && error.sourceLine == line)
        #expect(
            error.errno == nil && error.fileOffset == nil && error.underlyingError == nil && error.systemCall == nil)
        #expect(error.debugDescription == "RealmError.invalidValue: Nope. (at \(#fileID):\(line))")
    }
}
