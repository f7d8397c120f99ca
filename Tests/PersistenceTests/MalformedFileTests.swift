import Foundation
import Testing

@testable import ActorStorePersistence

/// Files whose checksums are all valid but whose contents no ActorStore would write (a faulty or hostile
/// writer): each must be refused with a clear `.corrupted` error, or open and then refuse the operation
/// that cannot be done (`.limitExceeded`), and never stop the process.
@Suite("Malformed files")
struct MalformedFileTests {
    static let path = "/db/test.store"

    /// The store file of an engine on `fs` holding the KV table and one row: (its bytes, version, table id).
    static func kvFile(_ fs: MemoryFileSystem) async throws -> ([UInt8], UInt64, TableID) {
        let engine = try await memoryEngine(fs, path: path)
        let txn = try await engine.beginWrite()
        let id = try txn.createTable(Fixtures.kv)
        try txn.insert(id, [.int(1), .string("one")])
        let result = try await txn.commit()
        await engine.close()
        return (try #require(fs.contents(of: path)), result.version.rawValue, id)
    }

    /// `file` with one more commit record (valid header, payload and footer checksums) holding `payload`.
    static func appending(_ payload: ByteWriter, to file: [UInt8]) -> [UInt8] {
        var file = file
        payload.bytes.withUnsafeBytes { Record.frame(kind: .commit, payload: $0, into: &file) }
        return file
    }

    /// An upsert op of `values` (encoded for `types`) as row `key` of `table`.
    static func appendUpsert(
        _ w: inout ByteWriter, _ table: TableID, _ key: Int64, _ values: [Value], _ types: [ColumnType]
    ) {
        w.append(CommitPayload.Op.upsert.rawValue)
        w.append(table.rawValue)
        w.append(key)
        var row: [UInt8] = []
        RowEncoder.encode(values, types: types, into: &row)
        w.append(UInt32(row.count))
        w.append(row)
    }

    /// Opening `file` throws `code`, and leaves the file as it was.
    static func expectOpenFails(_ file: [UInt8], _ code: StorageError.Code, mentioning text: String) async {
        let fs = MemoryFileSystem(files: [path: file])
        let error = await #expect(throws: StorageError.self) { try await memoryEngine(fs, path: path) }
        #expect(error?.code == code)
        #expect(error?.message.contains(text) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("backup") == true, "\(error?.message ?? "")")
        #expect(fs.contents(of: path) == file)
    }

    @Test("an upsert of object key Int64.max is refused as corrupted (the next key would overflow)")
    func upsertKeyInt64Max() async throws {
        let (file, version, id) = try await Self.kvFile(MemoryFileSystem())
        var w = ByteWriter()
        w.append(version + 1)
        Self.appendUpsert(&w, id, Int64.max, [.int(2), .string("two")], Fixtures.kv.columns.map(\.type))
        await Self.expectOpenFails(Self.appending(w, to: file), .corrupted, mentioning: "object key")
    }

    @Test("a table whose keys are used up refuses inserts with limitExceeded; one key short, the last insert works")
    func exhaustedKeySpace() async throws {
        let (file, version, id) = try await Self.kvFile(MemoryFileSystem())
        for nextKey in [Int64.max, Int64.max - 1] {
            var w = ByteWriter()
            w.append(version + 1)
            CommitPayload.appendSchema([.init(id: id, schema: Fixtures.kv, nextKey: nextKey)], version: 0, to: &w)
            let fs = MemoryFileSystem(files: [Self.path: Self.appending(w, to: file)])
            var engine = try await memoryEngine(fs, path: Self.path)
            if nextKey == Int64.max - 1 {
                // The last key is handed out, written, and replayed.
                let (key, _) = try await engine.write { txn in try txn.insert(id, [.int(2), .string("two")]) }
                #expect(key == ObjectKey(Int64.max - 1))
                await engine.close()
                engine = try await memoryEngine(fs, path: Self.path)
                #expect(try engine.snapshot().values(id, key) == [.int(2), .string("two")])
            }
            let txn = try await engine.beginWrite()
            let error = #expect(throws: StorageError.self) { try txn.insert(id, [.int(3), .string("three")]) }
            #expect(error?.code == .limitExceeded)
            #expect(error?.message.contains("used every object key") == true, "\(error?.message ?? "")")
            // The refused insert changed nothing: the transaction goes on.
            try txn.update(id, ObjectKey(0), [(column: 1, value: .string("uno"))])
            try await txn.commit()
            #expect(try engine.snapshot().value(id, ObjectKey(0), column: 1) == .string("uno"))
            await engine.close()
        }
    }

    @Test("a version of UInt64.max is refused as corrupted, in a base record or after one")
    func versionAtTheLimit() async throws {
        let empty = FileHeader().encoded()
        let kvSchema = { (w: inout ByteWriter) in
            CommitPayload.appendSchema([.init(id: TableID(1), schema: Fixtures.kv, nextKey: 0)], version: 0, to: &w)
        }
        var base = ByteWriter()
        base.append(UInt64.max)
        kvSchema(&base)
        await Self.expectOpenFails(Self.appending(base, to: empty), .corrupted, mentioning: "largest version")

        var last = ByteWriter()
        last.append(Version.max.rawValue)
        kvSchema(&last)
        var after = ByteWriter()
        after.append(UInt64.max)
        Self.appendUpsert(&after, TableID(1), 0, [.int(2), .string("two")], Fixtures.kv.columns.map(\.type))
        await Self.expectOpenFails(
            Self.appending(after, to: Self.appending(last, to: empty)), .corrupted, mentioning: "largest version")
        #expect(Version(UInt64.max).next == Version(UInt64.max))
    }

    @Test("a store at the last version opens and refuses writes with limitExceeded")
    func lastVersion() async throws {
        var base = ByteWriter()
        base.append(Version.max.rawValue)
        CommitPayload.appendSchema([.init(id: TableID(1), schema: Fixtures.kv, nextKey: 0)], version: 0, to: &base)
        let fs = MemoryFileSystem(files: [Self.path: Self.appending(base, to: FileHeader().encoded())])
        let engine = try await memoryEngine(fs, path: Self.path)
        #expect(engine.latestVersion == Version.max)
        let error = await #expect(throws: StorageError.self) { try await engine.beginWrite() }
        #expect(error?.code == .limitExceeded)
        // The refusal released the writer lock: the next attempt is refused too, not stuck.
        await #expect(throws: StorageError.self) { try await engine.beginWrite() }
        #expect(try engine.snapshot().tableID(named: "KV") == TableID(1))
        await engine.close()
    }

    @Test("a stored schema is validated as a live one: too many columns, a dangling link, a shared id")
    func invalidStoredSchema() async throws {
        let (file, version, _) = try await Self.kvFile(MemoryFileSystem())
        let wide = TableSchema("Wide", columns: (0..<5000).map { ColumnSchema("c\($0)", ColumnType(.int64)) })
        let dangling = TableSchema(
            "Dangling", columns: [ColumnSchema("to", ColumnType(.link), linkTarget: "Nowhere")])
        let kv = CommitPayload.TableEntry(id: TableID(1), schema: Fixtures.kv, nextKey: 2)
        let cases: [([CommitPayload.TableEntry], String)] = [
            ([kv, .init(id: TableID(2), schema: wide, nextKey: 0)], "5000 properties"),
            ([kv, .init(id: TableID(2), schema: dangling, nextKey: 0)], "Nowhere"),
            ([kv, .init(id: TableID(1), schema: Fixtures.dog, nextKey: 0)], "two tables have the id"),
        ]
        for (tables, problem) in cases {
            var w = ByteWriter()
            w.append(version + 1)
            CommitPayload.appendSchema(tables, version: 0, to: &w)
            // The audit's case: a short row in the wide table, which an update would re-encode with 5000 columns.
            Self.appendUpsert(&w, TableID(2), 0, [.null], [ColumnType(.int64, optional: true)])
            await Self.expectOpenFails(Self.appending(w, to: file), .corrupted, mentioning: problem)
        }
    }

    @Test("a file too large to map is refused with limitExceeded, never an overflow")
    func regionLengthLimit() throws {
        #expect(try StorageEngine.regionLength(for: 64) == 1 << 20)
        #expect(try StorageEngine.regionLength(for: 3 << 20) == 8 << 20)
        #expect(try StorageEngine.regionLength(for: (1 << 61) + 1) == 1 << 62)
        #expect(try StorageEngine.regionLength(for: 1 << 62) == 1 << 62)
        for size in [(UInt64(1) << 62) + 1, UInt64(1) << 63, UInt64.max] {
            let error = #expect(throws: StorageError.self) { try StorageEngine.regionLength(for: size) }
            #expect(error?.code == .limitExceeded)
        }
    }

    @Test("a row whose header takes it past 4 GiB is refused with limitExceeded before it is encoded")
    func rowSizeIncludesHeader() throws {
        let max = Int(UInt32.max)
        // One column: a 4-byte offset table and 3 fixed bytes on top of the data.
        try RowEncoder.checkRowSize(dataSize: max - 7, columnCount: 1)
        try RowEncoder.checkRowSize(dataSize: 0, columnCount: RowFormat.maxColumns)
        for (dataSize, columns) in [(max - 6, 1), (max, 1), (max - 4096 * 4, RowFormat.maxColumns), (max + 1, 1)] {
            let error = #expect(throws: StorageError.self) {
                try RowEncoder.checkRowSize(dataSize: dataSize, columnCount: columns)
            }
            #expect(error?.code == .limitExceeded)
        }
    }

    @Test("a header whose generation is at the limit makes compaction fail cleanly; the store stays usable")
    func generationAtTheLimit() async throws {
        let fs = MemoryFileSystem()
        let (file, _, id) = try await Self.kvFile(fs)
        fs.setContents(of: Self.path, to: FileHeader(generation: UInt64.max).encoded() + file[FileHeader.size...])
        let engine = try await memoryEngine(fs, path: Self.path)
        let error = await #expect(throws: StorageError.self) { try await engine.compact() }
        #expect(error?.code == .corrupted)
        _ = try await engine.write { txn in try txn.insert(id, [.int(2), .string("two")]) }
        #expect(try engine.snapshot().keys(id).count == 2)
        await engine.close()
    }
}
