import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// Encrypted stores: the platform's primitives, keys at open, what the file's bytes reveal, copies,
/// compaction and tampering. Crash images, bit flips and injected faults run over encrypted storage too
/// (CrashRecoveryTests, FaultInjectionTests: `StorageKind`).
@Suite("Encryption")
struct EncryptionTests {
    static func hex(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = string.startIndex
        while index < string.endIndex {
            let next = string.index(index, offsetBy: 2)
            bytes.append(UInt8(string[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    @Test("AES-256-GCM and HKDF-SHA-256 give their published test vectors")
    func knownAnswers() throws {
        // The GCM specification's test case 14: zero key, zero nonce, one zero block.
        let key = try AESGCMKey([UInt8](repeating: 0, count: 32))
        var text = [UInt8](repeating: 0, count: 16)
        var tag = [UInt8](repeating: 0, count: 16)
        let nonce = [UInt8](repeating: 0, count: 12)
        try text.withUnsafeMutableBytes { text in
            try tag.withUnsafeMutableBytes { tag in
                try nonce.withUnsafeBytes { nonce in
                    try key.seal(text, nonce: nonce, aad: UnsafeRawBufferPointer(start: nil, count: 0), tag: tag)
                }
            }
        }
        #expect(text == Self.hex("cea7403d4d606b6e074ec5d3baf39d18"))
        #expect(tag == Self.hex("d0d1c8a799996bf0265b98b5d48ab919"))
        // Opens back, and a changed byte does not authenticate.
        var opened = text
        let ok = try opened.withUnsafeMutableBytes { text in
            try tag.withUnsafeBytes { tag in
                try nonce.withUnsafeBytes { nonce in
                    try key.open(text, nonce: nonce, aad: UnsafeRawBufferPointer(start: nil, count: 0), tag: tag)
                }
            }
        }
        #expect(ok && opened == [UInt8](repeating: 0, count: 16))
        var changed = text
        changed[3] ^= 1
        let rejected = try changed.withUnsafeMutableBytes { text in
            try tag.withUnsafeBytes { tag in
                try nonce.withUnsafeBytes { nonce in
                    try key.open(text, nonce: nonce, aad: UnsafeRawBufferPointer(start: nil, count: 0), tag: tag)
                }
            }
        }
        #expect(!rejected)
        #expect(changed == [UInt8](repeating: 0, count: 16), "plaintext of a unit that fails is not handed out")

        // RFC 5869, test case 1 (the first 32 bytes of its 42-byte output).
        let okm = try PlatformCrypto.hkdf(
            secret: [UInt8](repeating: 0x0b, count: 22), salt: Self.hex("000102030405060708090a0b0c"),
            info: Self.hex("f0f1f2f3f4f5f6f7f8f9"))
        #expect(okm == Self.hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"))
    }

    static let canaryString = "CANARY-7f3a9c-secret-diary-entry"
    static let canaryBlob = [UInt8]("BLOB-CANARY-0xDEADBEEF-payload".utf8)
    static let canaryKey = "PK-CANARY-48151623"
    /// Tables whose names, and a column's, are canaries too (schemas are in the log).
    static let secrets = TableSchema(
        "SecretDiaryTable",
        columns: [
            ColumnSchema("secretKeyColumn", ColumnType(.string), primaryKey: true),
            ColumnSchema("secretTextColumn", ColumnType(.string), indexed: true),
            ColumnSchema("secretBlobColumn", ColumnType(.data)),
        ])

    static func canaries(key: [UInt8]) -> [[UInt8]] {
        [
            Array(canaryString.utf8), canaryBlob, Array(canaryKey.utf8), Array("SecretDiaryTable".utf8),
            Array("secretTextColumn".utf8), Array(key[0..<16]), Array(key[48..<64]),
        ]
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        let first = needle[0]
        var index = haystack.startIndex
        while let found = haystack[index...].firstIndex(of: first), found + needle.count <= haystack.count {
            if haystack[found..<found + needle.count].elementsEqual(needle) { return true }
            index = found + 1
        }
        return false
    }

    /// Every file under `directory`, with its bytes.
    static func files(in directory: String) -> [(String, [UInt8])] {
        // Lock files beside the stores are empty (see PresenceLock).
        let names = ((try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? [])
            .filter { !$0.hasSuffix(".lock") }
        return names.compactMap { name in
            let path = directory + "/" + name
            return FileManager.default.contents(atPath: path).map { (path, [UInt8]($0)) }
        }
    }

    @Test(
        "no canary (values, keys, blobs, schema names, the key) reaches the file through commits, checkpoints, compaction or copies"
    )
    func canaries() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let key = StorageKind.testKey
        var configuration = StorageEngine.Configuration(path: directory.file(), durability: .full, autoCompaction: nil)
        configuration.encryptionKey = key
        var engine: StorageEngine? = try await StorageEngine.open(configuration)
        let (table, _) = try await engine!.write { txn in try txn.createTable(Self.secrets) }
        for round in 0..<3 {
            _ = try await engine!.write { txn in
                for i in 0..<50 {
                    try txn.insert(
                        table,
                        [
                            .string("\(Self.canaryKey)-\(round)-\(i)"), .string("\(Self.canaryString) \(i)"),
                            .data(Data(Self.canaryBlob + [UInt8(i)])),
                        ])
                }
            }
        }
        try await engine!.checkpoint()
        // An update (a new row unit) and a delete after the checkpoint.
        _ = try await engine!.write { txn in
            let object = try #require(txn.object(table, primaryKey: .string("\(Self.canaryKey)-0-0")))
            try txn.update(table, object, [(1, .string(Self.canaryString + " updated"))])
            try txn.delete(table, try #require(txn.object(table, primaryKey: .string("\(Self.canaryKey)-0-1"))))
        }
        try await engine!.compact()
        _ = try await engine!.write { txn in
            try txn.insert(
                table, [.string(Self.canaryKey + "-late"), .string(Self.canaryString), .data(Data(Self.canaryBlob))])
        }
        try await engine!.writeCopy(to: directory.file("rekeyed.store"), encryptionKey: key.reversed())
        let expected = try engine!.snapshot().contents("SecretDiaryTable")
        await engine!.close()
        engine = nil

        let files = Self.files(in: directory.path)
        #expect(files.count == 2, "\(files.map(\.0))")
        for (path, bytes) in files {
            for canary in Self.canaries(key: key) {
                #expect(!Self.contains(bytes, canary), "\(String(decoding: canary, as: UTF8.self)) in \(path)")
            }
        }
        // Both open with their keys and hold the same rows; the original reopens from its checkpoint.
        let reopened = try await StorageEngine.open(configuration)
        #expect(try reopened.snapshot().contents("SecretDiaryTable") == expected)
        try reopened.verify()
        await reopened.close()
        var copy = StorageEngine.Configuration(path: directory.file("rekeyed.store"), autoCompaction: nil)
        copy.encryptionKey = key.reversed()
        let copied = try await StorageEngine.open(copy)
        #expect(try copied.snapshot().contents("SecretDiaryTable").count == expected.count)
        try copied.verify()
        await copied.close()
        // The plaintext check itself works: an unencrypted copy shows the canaries.
        let plain = try await StorageEngine.open(configuration)
        try await plain.writeCopy(to: directory.file("plain.store"))
        await plain.close()
        let plainBytes = try #require(FileManager.default.contents(atPath: directory.file("plain.store")))
        #expect(Self.contains([UInt8](plainBytes), Array(Self.canaryString.utf8)))
    }

    @Test("a large encrypted commit is sealed on several threads and reads back exactly")
    func largeCommit() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await StorageKind.encrypted.run { try await memoryEngine(fs) }
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        // Over EncryptedRecord.parallelSealThreshold: one record of ~3 MB.
        _ = try await engine.write { txn in
            for i in 0..<20_000 {
                try txn.insert(table, [.int(Int64(i)), .string(String(repeating: "v\(i % 10)", count: 70))])
            }
        }
        let expected = try engine.snapshot().contents("KV")
        #expect(expected.count == 20_000)
        await engine.close()
        let reopened = try await StorageKind.encrypted.run {
            try await memoryEngine(fs.powerLossImage(), checkpoints: false)
        }
        #expect(try reopened.snapshot().contents("KV") == expected)
        try reopened.verify()
        await reopened.close()
    }

    @Test("keys are checked at open from the header alone: wrong, missing, unexpected and short keys")
    func keysAtOpen() async throws {
        let fs = MemoryFileSystem()
        let key = StorageKind.testKey
        var configuration = StorageEngine.Configuration(path: "/db/secret.store", fileSystem: fs, autoCompaction: nil)
        configuration.encryptionKey = key
        let engine = try await StorageEngine.open(configuration)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await engine.write { txn in try txn.insert(table, [.int(1), .string("one")]) }
        await engine.close()

        func code(_ key: [UInt8]?, path: String = "/db/secret.store") async -> StorageError.Code? {
            var other = configuration
            other.path = path
            other.encryptionKey = key
            do {
                let opened = try await StorageEngine.open(other)
                await opened.close()
                return nil
            } catch { return error.code }
        }
        var wrong = key
        wrong[63] ^= 1
        #expect(await code(wrong) == .wrongKey)
        #expect(await code(nil) == .wrongKey)
        #expect(await code(Array(key.prefix(32))) == .invalidValue)
        #expect(await code(key + [0]) == .invalidValue)
        #expect(await code(key) == nil)
        // A key for a store that is not encrypted.
        var plain = configuration
        plain.path = "/db/plain.store"
        plain.encryptionKey = nil
        await (try await StorageEngine.open(plain)).close()
        #expect(await code(key, path: "/db/plain.store") == .wrongKey)
        // A short key never creates a file.
        #expect(await code([1, 2, 3], path: "/db/new.store") == .invalidValue)
        #expect(!fs.fileExists("/db/new.store"))
        // The file is unchanged by the refusals.
        let reopened = try await StorageEngine.open(configuration)
        #expect(try reopened.snapshot().contents("KV").count == 1)
        await reopened.close()
    }

    @Test("writeCopy encrypts a plain store, decrypts an encrypted one, and re-keys")
    func copies() async throws {
        let fs = MemoryFileSystem()
        let key = StorageKind.testKey
        let plainConfiguration = StorageEngine.Configuration(path: "/db/a.store", fileSystem: fs, autoCompaction: nil)
        let engine = try await StorageEngine.open(plainConfiguration)
        let world = try await FaultInjectionTests.seed(engine)
        let before = try CompactionTests.Dump(engine.snapshot())
        try await engine.writeCopy(to: "/db/encrypted.store", encryptionKey: key)
        await engine.close()

        func open(_ path: String, _ key: [UInt8]?) async throws -> StorageEngine {
            var configuration = StorageEngine.Configuration(path: path, fileSystem: fs, autoCompaction: nil)
            configuration.encryptionKey = key
            return try await StorageEngine.open(configuration)
        }
        let encrypted = try await open("/db/encrypted.store", key)
        #expect(try CompactionTests.Dump(encrypted.snapshot()).rows == before.rows)
        // Writes, compaction and a checkpoint in the encrypted copy, then copies out of it.
        _ = try await encrypted.write { txn in try txn.insert(world.kv, [.int(99), .string("in the copy")]) }
        try await encrypted.compact()
        try await encrypted.checkpoint()
        let after = try CompactionTests.Dump(encrypted.snapshot())
        let rekey = [UInt8](repeating: 7, count: 64)
        try await encrypted.writeCopy(to: "/db/rekeyed.store", encryptionKey: rekey)
        try await encrypted.writeCopy(to: "/db/decrypted.store")
        await encrypted.close()

        let rekeyed = try await open("/db/rekeyed.store", rekey)
        #expect(try CompactionTests.Dump(rekeyed.snapshot()).rows == after.rows)
        await rekeyed.close()
        await #expect(throws: StorageError.self) { _ = try await open("/db/rekeyed.store", key) }
        let decrypted = try await open("/db/decrypted.store", nil)
        #expect(try CompactionTests.Dump(decrypted.snapshot()).rows == after.rows)
        await decrypted.close()
        let reopened = try await open("/db/encrypted.store", key)
        #expect(try CompactionTests.Dump(reopened.snapshot()) == after)
        #expect(reopened.recoveryReport.recordsReplayed == 0, "opened from its checkpoint")
        await reopened.close()
    }

    @Test(
        "random byte changes in an encrypted store: an error naming the offset, or the committed prefix; never other data"
    )
    func tampering() async throws {
        let seed = testSeed("encrypted tampering")
        let workload = try await StorageKind.encrypted.run {
            try await RecordedWorkload.make(commits: 30, maxValue: 80, seed: seed, checkpointEvery: 9)
        }
        var rng = SplitMix64(seed: seed)
        let count = TestDepth.long ? 5_000 : 1_000
        var detected = 0
        var prefixes = 0
        for _ in 0..<count {
            var image = workload.file
            let byte = Int.random(in: FileHeader.size..<image.count, using: &rng)
            image[byte] ^= UInt8.random(in: 1...255, using: &rng)
            let fs = MemoryFileSystem(files: ["/db/test.store": image])
            do {
                let engine = try await StorageKind.encrypted.run { try await memoryEngine(fs) }
                // Opened: it holds exactly some committed version, and reading all of it either works or fails
                // with an error (a damaged row that open did not need).
                let contents: [Int64: String]
                do {
                    try engine.verify()
                    contents = try CrashRecoveryTests.kvContents(engine)
                } catch let error as StorageError {
                    #expect(error.code == .corrupted && error.offset != nil, "change at \(byte): \(error)")
                    detected += 1
                    continue
                }
                let version = Int(engine.latestVersion.rawValue)
                #expect(contents == workload.expected[version], "change at \(byte) gave other data")
                prefixes += 1
            } catch let error as StorageError {
                #expect(error.code == .corrupted, "change at \(byte): \(error)")
                #expect(error.offset != nil, "change at \(byte): \(error) has no offset")
                detected += 1
            }
        }
        print("[encrypted tampering] \(detected) detected, \(prefixes) opened at a committed version, of \(count)")
        #expect(detected + prefixes == count)
    }
}
