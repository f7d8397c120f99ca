import Foundation
import Testing

@testable import ActorStorePersistence

@Suite("Engine basics")
struct EngineBasicsTests {
    enum Storage: String, CaseIterable, CustomTestStringConvertible {
        case inMemory, memoryFile, diskFile
        var testDescription: String { rawValue }
    }

    /// Opens an engine of the given kind; the returned closure reopens the same store.
    func open(_ kind: Storage) async throws -> (StorageEngine, () async throws -> StorageEngine, () -> Void) {
        switch kind {
        case .inMemory:
            let engine = try await StorageEngine.open(.inMemory())
            return (engine, { engine }, {})
        case .memoryFile:
            let fs = MemoryFileSystem(tracksDurability: true)
            let engine = try await memoryEngine(fs)
            return (engine, { try await memoryEngine(fs) }, {})
        case .diskFile:
            let dir = TemporaryDirectory()
            let engine = try await StorageEngine.open(.init(path: dir.file()))
            return (engine, { try await StorageEngine.open(.init(path: dir.file())) }, { dir.cleanup() })
        }
    }

    @Test("insert, read, update, delete and reopen", arguments: Storage.allCases)
    func crudAndReopen(_ kind: Storage) async throws {
        var (engine, reopen, cleanup) = try await open(kind)
        defer { cleanup() }
        let txn = try await engine.beginWrite()
        let ids = try txn.setSchema([Fixtures.person, Fixtures.dog], version: 1)
        let (person, dog) = (ids[0], ids[1])
        let alice = try txn.insert(person, [.string("Alice"), .list([])])
        let rex = try txn.insert(dog, [.int(1), .string("Rex"), .int(3), .link(alice)])
        let fido = try txn.insert(dog, [.int(2), .string("Fido"), .int(1), .null])
        try txn.update(person, alice, [(1, .list([.link(rex), .link(fido), .link(rex)]))])
        #expect(try txn.value(dog, rex, column: 1) == .string("Rex"))  // reads its own writes
        let result = try await txn.commit()
        #expect(result.version == Version(1))
        #expect(result.changes.tables[dog]?.inserted == [rex, fido])
        #expect(result.changes.tables[person]?.inserted == [alice])
        #expect(result.changes.tables[person]?.modified.isEmpty == true)  // inserted, then modified: inserted only

        let before = try engine.snapshot()
        let (_, second) = try await engine.write { txn in
            try txn.update(dog, rex, [(2, .int(4)), (1, .string("Rex"))])
            try txn.delete(dog, fido)
        }
        #expect(second.changes.tables[dog]?.modified[rex] == ColumnSet([2]))
        #expect(second.changes.tables[dog]?.deleted == [fido])
        #expect(second.changes.tables[person]?.modified[alice] == ColumnSet([1]))  // unlinked from the list

        let after = try engine.snapshot()
        #expect(after.version == Version(2))
        #expect(try after.value(person, alice, column: 1) == .list([.link(rex), .link(rex)]))
        #expect(try after.value(dog, rex, column: 2) == .int(4))
        #expect(after.contains(dog, fido) == false)
        // The old snapshot still sees version 1.
        #expect(before.version == Version(1))
        #expect(try before.value(dog, rex, column: 2) == .int(3))
        #expect(before.contains(dog, fido))

        if kind != .inMemory {
            await engine.close()
            engine = try await reopen()
            let reopened = try engine.snapshot()
            #expect(reopened.version == Version(2))
            #expect(try reopened.contents("Dog") == (try after.contents("Dog")))
            #expect(try reopened.contents("Person") == (try after.contents("Person")))
            #expect(reopened.object(dog, primaryKey: .int(1)) == rex)
            #expect(reopened.objects(dog, column: 1, equalTo: .string("Rex")) == [rex])
        }
    }

    @Test("indexes, primary keys and backlinks follow every change")
    func indexesAndBacklinks() async throws {
        let engine = try await StorageEngine.open(.inMemory())
        let ((person, dog), _) = try await engine.write { txn in
            let ids = try txn.setSchema([Fixtures.person, Fixtures.dog])
            return (ids[0], ids[1])
        }
        let ((a, b, r1, r2), _) = try await engine.write { txn in
            let a = try txn.insert(person, [.string("A"), .list([])])
            let b = try txn.insert(person, [.string("B"), .list([])])
            let r1 = try txn.insert(dog, [.int(10), .string("Rex"), .int(1), .link(a)])
            let r2 = try txn.insert(dog, [.int(11), .string("Rex"), .int(2), .link(a)])
            return (a, b, r1, r2)
        }
        var s = try engine.snapshot()
        #expect(s.objects(dog, column: 1, equalTo: .string("Rex")) == [r1, r2])
        #expect(s.objects(dog, column: 1, in: [.string("Rex"), .string("Nope")]) == [r1, r2])
        #expect(s.backlinks(to: person, a).map(\.key) == [r1, r2])
        #expect(s.backlinks(to: person, b).isEmpty)

        _ = try await engine.write { txn in
            try txn.update(dog, r2, [(1, .string("Max")), (3, .link(b))])
        }
        s = try engine.snapshot()
        #expect(s.objects(dog, column: 1, equalTo: .string("Rex")) == [r1])
        #expect(s.objects(dog, column: 1, equalTo: .string("Max")) == [r2])
        #expect(s.backlinks(to: person, a).map(\.key) == [r1])
        #expect(s.backlinks(to: person, b).map(\.key) == [r2])

        // Deleting a person nils the dogs' links to it.
        let (_, result) = try await engine.write { txn in try txn.delete(person, a) }
        s = try engine.snapshot()
        #expect(try s.value(dog, r1, column: 3) == .null)
        #expect(result.changes.tables[dog]?.modified[r1] == ColumnSet([3]))

        // Primary keys are unique and cannot change.
        let txn = try await engine.beginWrite()
        #expect(throws: StorageError.self) { try txn.insert(dog, [.int(10), .string("Dup"), .int(0), .null]) }
        let error = #expect(throws: StorageError.self) { try txn.update(dog, r1, [(0, .int(99))]) }
        #expect(error?.code == .invalidValue)
        // A rejected primary key leaves the transaction usable.
        let r3 = try txn.insert(dog, [.int(12), .string("New"), .int(0), .null])
        try await txn.commit()
        #expect(try engine.snapshot().object(dog, primaryKey: .int(12)) == r3)
    }

    @Test("bad values and schemas are clear errors, never traps")
    func badInput() async throws {
        let engine = try await StorageEngine.open(.inMemory())
        let txn = try await engine.beginWrite()
        #expect((try? txn.setSchema([TableSchema("", columns: [])])) == nil)
        let twoKeys = TableSchema(
            "T",
            columns: [
                ColumnSchema("a", ColumnType(.int64), primaryKey: true),
                ColumnSchema("b", ColumnType(.string), primaryKey: true),
            ])
        #expect(throws: StorageError.self) { try txn.setSchema([twoKeys]) }
        let badLink = TableSchema("T", columns: [ColumnSchema("a", ColumnType(.link), linkTarget: "Missing")])
        #expect(throws: StorageError.self) { try txn.setSchema([badLink]) }
        let badIndex = TableSchema("T", columns: [ColumnSchema("a", ColumnType(.double), indexed: true)])
        #expect(throws: StorageError.self) { try txn.setSchema([badIndex]) }
        let ids = try txn.setSchema([Fixtures.person, Fixtures.dog])
        let dog = ids[1]
        #expect(throws: StorageError.self) { try txn.insert(dog, [.int(1)]) }  // wrong column count
        #expect(throws: StorageError.self) { try txn.insert(dog, [.string("x"), .string("R"), .int(1), .null]) }
        #expect(throws: StorageError.self) {
            try txn.insert(dog, [.int(1), .string("R"), .int(1), .link(ObjectKey(42))])
        }
        let huge = String(repeating: "x", count: 16 * 1024 * 1024 + 1)
        let error = #expect(throws: StorageError.self) {
            try txn.insert(dog, [.int(1), .string(huge), .int(1), .null])
        }
        #expect(error?.code == .limitExceeded)
        #expect(throws: StorageError.self) { try txn.delete(dog, ObjectKey(7)) }
        #expect(throws: StorageError.self) { try txn.update(dog, ObjectKey(7), [(2, .int(1))]) }
        try txn.insert(dog, [.int(1), .string("ok"), .int(1), .null])
        let result = try await txn.commit()
        #expect(result.changes.tables[dog]?.inserted.count == 1)
    }

    @Test("rollback leaves no trace; an empty write commits nothing")
    func rollback() async throws {
        let engine = try await StorageEngine.open(.inMemory())
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        let txn = try await engine.beginWrite()
        try txn.insert(table, [.int(1), .string("gone")])
        txn.rollback()
        #expect(try engine.snapshot().count(table) == 0)
        let (_, empty) = try await engine.write { _ in }
        #expect(empty.version == Version(1))
        // A transaction dropped without commit also rolls back and frees the writer.
        do {
            let dropped = try await engine.beginWrite()
            try dropped.insert(table, [.int(2), .string("dropped")])
        }
        let (_, next) = try await engine.write { txn in try txn.insert(table, [.int(3), .string("kept")]) }
        #expect(next.version == Version(2))
        #expect(try engine.snapshot().count(table) == 1)
    }

    @Test("a second engine on the same file is refused; files are created 0600")
    func exclusiveLockAndMode() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try await StorageEngine.open(.init(path: dir.file()))
        let error = await #expect(throws: StorageError.self) { try await StorageEngine.open(.init(path: dir.file())) }
        #expect(error?.code == .alreadyOpen)
        let attributes = try FileManager.default.attributesOfItem(atPath: dir.file())
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        await engine.close()
        let again = try await StorageEngine.open(.init(path: dir.file()))
        await again.close()
    }

    @Test("garbage files and wrong formats are refused with a clear error")
    func notAStore() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        fs.setContents(
            of: "/db/test.store",
            to: Array("hello, this is not a database at all".utf8) + [UInt8](repeating: 7, count: 100))
        let error = await #expect(throws: StorageError.self) { try await memoryEngine(fs) }
        #expect(error?.code == .corrupted)
        var header = FileHeader().encoded()
        header[8] = 9  // format version 9
        header.replaceSubrange(
            60..<64, with: withUnsafeBytes(of: CRC32C.checksum(Array(header[..<60])).littleEndian, Array.init))
        fs.setContents(of: "/db/test.store", to: header)
        let format = await #expect(throws: StorageError.self) { try await memoryEngine(fs) }
        #expect(format?.code == .unsupportedFormat)
    }

    @Test("pinned versions are counted and limited")
    func pins() async throws {
        let engine = try await StorageEngine.open(
            .init(path: nil, fileSystem: MemoryFileSystem(), durability: .none, maximumNumberOfActiveVersions: 2))
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        var held: [Snapshot] = [try engine.snapshot()]
        _ = try await engine.write { txn in try txn.insert(table, [.int(1), .string("a")]) }
        held.append(try engine.snapshot())
        held.append(try engine.snapshot())  // same version: no new pin
        #expect(engine.statistics.pinnedVersions == 2)
        #expect(engine.statistics.oldestPinnedVersion == Version(1))
        _ = try await engine.write { txn in try txn.insert(table, [.int(2), .string("b")]) }
        let error = #expect(throws: StorageError.self) { try engine.snapshot() }
        #expect(error?.code == .tooManyVersions)
        held.removeFirst()
        _ = try engine.snapshot()
        held.removeAll()
        #expect(engine.statistics.pinnedVersions == 0)
    }
}

@Suite("Format evolution")
struct FormatEvolutionTests {
    @Test("a record with reserved flags set (a newer format) is refused, not misread")
    func reservedRecordFlags() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs)
        _ = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        await engine.close()
        var file = try #require(fs.contents(of: "/db/test.store"))
        // Set the last record's flags byte (the checkpoint close wrote: the one open reads first) and fix its
        // header CRC, as a newer writer would.
        let footer = file.count - Record.footerSize
        let length = file[footer..<(footer + 8)].withUnsafeBytes {
            Int(UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)))
        }
        let record = footer - length - Record.headerSize
        #expect(file[record + 4] == Record.Kind.checkpoint.rawValue)
        // Bits 0 (encrypted) and 1 (watermark) are known; bit 7 is not.
        file[record + 5] |= 0x80
        let crc = CRC32C.checksum(Array(file[record..<(record + 20)]))
        file.replaceSubrange((record + 20)..<(record + 24), with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        fs.setContents(of: "/db/test.store", to: file)
        let error = await #expect(throws: StorageError.self) { try await memoryEngine(fs) }
        #expect(error?.code == .unsupportedFormat)
        #expect(fs.contents(of: "/db/test.store") == file)
    }
}

extension FormatEvolutionTests {
    @Test("a schema op with a huge table id (valid checksums) is refused as corrupted, without allocating")
    func hugeTableID() async throws {
        var payload = ByteWriter()
        payload.append(UInt64(1))  // version 1
        let entry = CommitPayload.TableEntry(
            id: TableID(UInt32.max - 1), schema: Fixtures.kv, nextKey: 0)
        CommitPayload.appendSchema([entry], version: 1, to: &payload)
        var file = FileHeader().encoded()
        payload.bytes.withUnsafeBytes { Record.frame(kind: .commit, payload: $0, into: &file) }
        let fs = MemoryFileSystem(files: ["/db/test.store": file])
        let error = await #expect(throws: StorageError.self) { try await memoryEngine(fs) }
        #expect(error?.code == .corrupted)
        #expect(fs.contents(of: "/db/test.store") == file)
    }
}

extension EngineBasicsTests {
    @Test("durable commits reserve zeros after the last record; close cuts them off; 0 turns it off")
    func reservedSpace() async throws {
        for reserved in [4096, 0] {
            let fs = MemoryFileSystem(tracksDurability: true)
            let engine = try await memoryEngine(fs, reservedSpace: reserved)
            let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
            for i in 0..<20 {
                _ = try await engine.write { txn in try txn.insert(table, [.int(Int64(i)), .string("row \(i)")]) }
            }
            let end = Int(engine.statistics.totalBytes)
            let open = try #require(fs.contents(of: "/db/test.store"))
            if reserved > 0 {
                // Twenty small commits fit in one reservation: the file did not grow with each.
                #expect(open.count > end && open.count <= end + reserved)
                #expect(open[end...].allSatisfy { $0 == 0 })
                // A crash now leaves the zeros: open discards them, keeping every commit.
                let image = fs.powerLossImage()
                let imageSize = try #require(image.contents(of: "/db/test.store")).count
                #expect(imageSize > end, "the reservation is durable")
                let crashed = try await memoryEngine(image)
                #expect(try crashed.snapshot().count(table) == 20)
                #expect(crashed.recoveryReport.truncatedBytes == UInt64(imageSize - end))
                await crashed.close()
            } else {
                #expect(open.count == end)
            }
            await engine.close()
            // Close wrote a checkpoint after the last commit, and then no zeros.
            #expect(engine.statistics.totalBytes > UInt64(end))
            #expect(
                fs.contents(of: "/db/test.store")?.count == Int(engine.statistics.totalBytes),
                "close cuts the reservation off")
            let reopened = try await memoryEngine(fs)
            #expect(reopened.recoveryReport.truncatedBytes == 0)
            #expect(try reopened.snapshot().count(table) == 20)
            await reopened.close()
        }
    }
}
