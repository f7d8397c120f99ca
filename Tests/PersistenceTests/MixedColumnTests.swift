import Foundation
import Testing

@testable import ActorStorePersistence

/// The `mixed` column type (AnyRealmValue): its documented bytes, its validation, malformed bytes, a file
/// round trip, and how an engine that does not know a column type refuses the file.
@Suite("Mixed columns")
struct MixedColumnTests {
    private func encode(_ values: [Value], _ types: [ColumnType]) -> [UInt8] {
        var buffer: [UInt8] = []
        RowEncoder.encode(values, types: types, into: &buffer)
        return buffer
    }

    private func decode(_ bytes: [UInt8], _ type: ColumnType) throws(StorageError) -> Value {
        let result: Result<Value, StorageError> = bytes.withUnsafeBytes { raw in
            do throws(StorageError) {
                return .success(try RowView(raw).value(at: 0, type: type))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    @Test("a mixed column is always optional, whatever the schema says")
    func alwaysOptional() {
        #expect(ColumnType(.mixed).isOptional)
        #expect(ColumnType(.mixed, .list).isOptional)
        #expect(ColumnType(.mixed).defaultValue == .null)
    }

    @Test("exact bytes: tag then payload, a typed link names its table, null is an empty slot or tag 0")
    func documentedBytes() throws {
        let single = ColumnType(.mixed)
        // header: 1 column, offset width 1, end 9; data: tag 5 (int64) then 8 bytes.
        #expect(encode([.int(5)], [single]) == [1, 0, 1, 9, 5, 5, 0, 0, 0, 0, 0, 0, 0])
        #expect(encode([.null], [single]) == [1, 0, 1, 0])
        #expect(encode([.string("hi")], [single]) == [1, 0, 1, 7, 8, 2, 0, 0, 0, 0x68, 0x69])
        #expect(
            encode([.typedLink(table: "Dog", key: ObjectKey(2))], [single])
                == [1, 0, 1, 13, 14, 3, 0x44, 0x6F, 0x67, 2, 0, 0, 0, 0, 0, 0, 0])
        let list = ColumnType(.mixed, .list)
        #expect(encode([.list([.null, .bool(true)])], [list]) == [1, 0, 1, 7, 2, 0, 0, 0, 0, 1, 1])
        for value: Value in [.int(5), .null, .string("hi"), .typedLink(table: "Dog", key: ObjectKey(2))] {
            #expect(try decode(encode([value], [single]), single) == value)
        }
    }

    @Test("malformed mixed bytes throw .corrupted: unknown or narrow tags, truncated payloads, trailing bytes")
    func malformed() {
        let single = ColumnType(.mixed)
        let bad: [[UInt8]] = [
            [1, 0, 1, 2, 99, 0],  // unknown tag
            [1, 0, 1, 2, 2, 7],  // int8 tag: mixed integers are int64
            [1, 0, 1, 2, 15, 0],  // a mixed inside a mixed
            [1, 0, 1, 3, 5, 1, 0],  // int64 cut short
            [1, 0, 1, 3, 1, 1, 0],  // a bool followed by a stray byte
            [1, 0, 1, 4, 14, 9, 0x44, 0x6F],  // a link whose table name runs past the end
            [1, 0, 1, 6, 8, 9, 0, 0, 0, 0x68],  // a string longer than its bytes
        ]
        for bytes in bad {
            let error = #expect(throws: StorageError.self, "\(bytes)") { try decode(bytes, single) }
            #expect(error?.code == .corrupted, "\(bytes)")
        }
    }

    @Test("validation: any single value or typed link fits a mixed column; untyped links and collections do not")
    func validation() throws {
        let single = ColumnType(.mixed)
        for value: Value in [
            .null, .bool(false), .int(.min), .float(1), .double(2), .string("s"), .data(Data([1])),
            .date(Date(timeIntervalSinceReferenceDate: 3)), .uuid(UUID()), .objectId(ObjectIDBytes(high: 1, low: 2)),
            .decimal128(RowFormat.decimalZero), .typedLink(table: "T", key: ObjectKey(1)),
        ] {
            #expect(try RowEncoder.validate(value, for: single, column: "m") == value)
        }
        for value: Value in [.link(ObjectKey(1)), .list([]), .typedLink(table: "", key: ObjectKey(1))] {
            let error = #expect(throws: StorageError.self) { try RowEncoder.validate(value, for: single, column: "m") }
            #expect(error?.code == .invalidValue)
            #expect(error?.message.contains("'m'") == true)
        }
        let error = #expect(throws: StorageError.self) {
            try RowEncoder.validate(.typedLink(table: "T", key: ObjectKey(1)), for: ColumnType(.int64), column: "i")
        }
        #expect(error?.code == .invalidValue)
        // A set de-duplicates by type and value: 1 and 1.0 are two elements.
        let set = try RowEncoder.validate(
            .set([.int(1), .double(1), .int(1), .null, .null]), for: ColumnType(.mixed, .set), column: "s")
        #expect(set == .set([.int(1), .double(1), .null]))
    }

    @Test("a table with mixed columns commits, reopens from the log and reads back every value")
    func fileRoundTrip() async throws {
        let fs = MemoryFileSystem()
        let schema = TableSchema(
            "Box",
            columns: [
                ColumnSchema("value", ColumnType(.mixed)), ColumnSchema("items", ColumnType(.mixed, .list)),
                ColumnSchema("fields", ColumnType(.mixed, .map)),
            ])
        let row: [Value] = [
            .typedLink(table: "Box", key: ObjectKey(0)),
            .list([.int(1), .string("two"), .null, .double(3)]),
            .map([.init("a", .bool(true)), .init("b", .data(Data([9])))]),
        ]
        let engine = try await memoryEngine(fs, checkpoints: false)
        let txn = try await engine.beginWrite()
        let id = try txn.createTable(schema)
        let key = try txn.insert(id, row)
        _ = try await txn.commit()
        await engine.close()
        let reopened = try await memoryEngine(fs, checkpoints: false)
        #expect(try reopened.snapshot().values(id, key) == row)
        await reopened.close()
    }

    @Test("a schema with a column type code this engine does not know is refused, naming a newer version")
    func unknownColumnTypeIsRefused() async throws {
        let (file, version, _) = try await MalformedFileTests.kvFile(MemoryFileSystem())
        let future = TableSchema("Future", columns: [ColumnSchema("zzfuturecol", ColumnType(.mixed))])
        var w = ByteWriter()
        w.append(version + 1)
        CommitPayload.appendSchema(
            [
                .init(id: TableID(1), schema: Fixtures.kv, nextKey: 2),
                .init(id: TableID(2), schema: future, nextKey: 0),
            ], version: 0, to: &w)
        // Turn the column's type code (the byte after its name) into one no engine knows yet.
        var bytes = w.bytes
        let name = Array("zzfuturecol".utf8)
        let at = try #require(
            (0...(bytes.count - name.count)).first { Array(bytes[$0..<($0 + name.count)]) == name })
        #expect(bytes[at + name.count] == ScalarType.mixed.rawValue)
        bytes[at + name.count] = 200
        var patched: [UInt8] = file
        bytes.withUnsafeBytes { Record.frame(kind: .commit, payload: $0, into: &patched) }
        let fs = MemoryFileSystem(files: [MalformedFileTests.path: patched])
        let error = await #expect(throws: StorageError.self) {
            try await memoryEngine(fs, path: MalformedFileTests.path)
        }
        #expect(error?.code == .corrupted)
        #expect(error?.message.contains("type code 200") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("newer version") == true, "\(error?.message ?? "")")
        #expect(fs.contents(of: MalformedFileTests.path) == patched)
    }
}
