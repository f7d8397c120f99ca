import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// Turning an index or a primary key on for a table with rows builds that index in bulk from the rows and
/// leaves everything else (rows, other indexes, backlinks) as it was; the result must equal what inserting
/// the rows into an indexed table gives, in the transaction, after commit and after reopening (replay).
@Suite("Index builds")
struct IndexBuildTests {
    static let owner = TableSchema("Owner", columns: [ColumnSchema("name", ColumnType(.string))])
    static func item(indexedAge: Bool, indexedName: Bool, primaryKey: Bool) -> TableSchema {
        TableSchema(
            "Item",
            columns: [
                ColumnSchema("id", ColumnType(.int64), primaryKey: primaryKey),
                ColumnSchema("age", ColumnType(.int64, optional: true), indexed: indexedAge),
                ColumnSchema("name", ColumnType(.string), indexed: indexedName),
                ColumnSchema("owner", ColumnType(.link, optional: true), linkTarget: "Owner"),
            ])
    }

    /// The entries of a secondary index, in order.
    static func entries(_ state: DatabaseState, _ table: TableID, _ column: Int) -> [IndexEntry]? {
        state.tables[table]?.indexes[column].map { index in index.map(\.key) }
    }

    static func primaryEntries(_ state: DatabaseState, _ table: TableID) -> [IndexKey: PrimaryKeyEntry] {
        var result: [IndexKey: PrimaryKeyEntry] = [:]
        state.tables[table]?.primaryIndex.forEach(from: nil, inclusive: true) { key, entry in
            result[key] = entry
            return true
        }
        return result
    }

    @Test("indexes turned on are built from the rows, equal to an indexed table's, and survive reopening")
    func builtIndexesEqualIncrementalOnes() async throws {
        let seed = testSeed("index build")
        var rng = SplitMix64(seed: seed)
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        var rows: [[Value]] = []
        for i in 0..<3_000 {
            let age: Value =
                Int.random(in: 0..<8, using: &rng) == 0 ? .null : .int(Int64.random(in: -50...50, using: &rng))
            rows.append([.int(Int64(i * 7 % 3_001)), age, .string("n\(Int.random(in: 0..<200, using: &rng))"), .null])
        }
        // The reference: the same rows inserted into tables indexed from the start.
        let reference = try await StorageEngine.open(.inMemory())
        let indexed = try await reference.write { txn -> TableID in
            let ids = try txn.setSchema([Self.owner, Self.item(indexedAge: true, indexedName: true, primaryKey: true)])
            let owner = try txn.insert(ids[0], [.string("o")])
            for row in rows {
                try txn.insert(ids[1], row.enumerated().map { $0 == 3 && $1 == .null ? .link(owner) : $1 })
            }
            return ids[1]
        }.0
        let expected = try reference.snapshot().state

        let engine = try await StorageEngine.open(.init(path: dir.file()))
        let table = try await engine.write { txn -> TableID in
            let ids = try txn.setSchema([
                Self.owner, Self.item(indexedAge: false, indexedName: true, primaryKey: false),
            ])
            let owner = try txn.insert(ids[0], [.string("o")])
            for row in rows {
                try txn.insert(ids[1], row.enumerated().map { $0 == 3 && $1 == .null ? .link(owner) : $1 })
            }
            return ids[1]
        }.0
        let before = try engine.snapshot().state
        _ = try await engine.write { txn in
            _ = try txn.setSchema([Self.owner, Self.item(indexedAge: true, indexedName: true, primaryKey: true)])
        }
        do {
            let state = try engine.snapshot().state
            #expect(Self.entries(state, table, 1) == Self.entries(expected, indexed, 1))
            #expect(Self.entries(state, table, 2) == Self.entries(expected, indexed, 2))
            // The primary key entries point at the same objects (locations differ between the two stores).
            #expect(
                Self.primaryEntries(state, table).mapValues(\.object)
                    == Self.primaryEntries(expected, indexed).mapValues(\.object))
            #expect(
                Self.primaryEntries(state, table).allSatisfy {
                    state.tables.rowLocation(table, $0.value.object) == $0.value.location
                })
            // Rows, the index kept and the backlinks are the same trees as before.
            #expect(state.tables[table]!.rows.map(\.key) == before.tables[table]!.rows.map(\.key))
            #expect(state.tables[table]!.rows.map(\.value) == before.tables[table]!.rows.map(\.value))
            #expect(Array(state.backlinks).map(\.0) == Array(before.backlinks).map(\.0))
            #expect(state.liveBytes == before.liveBytes)
            #expect(
                try engine.snapshot().objects(table, column: 1, equalTo: .int(7))
                    == reference.snapshot().objects(indexed, column: 1, equalTo: .int(7)))
        }
        await engine.close()
        // Reopening replays the schema change the same way.
        let reopened = try await StorageEngine.open(.init(path: dir.file()))
        let state = try reopened.snapshot().state
        #expect(Self.entries(state, table, 1) == Self.entries(expected, indexed, 1))
        #expect(
            Self.primaryEntries(state, table).mapValues(\.object)
                == Self.primaryEntries(expected, indexed).mapValues(\.object))
        await reopened.close()
    }

    @Test("a primary key turned on over duplicate values fails and the store keeps its schema")
    func duplicatePrimaryKeyFails() async throws {
        let engine = try await StorageEngine.open(.inMemory())
        let table = try await engine.write { txn -> TableID in
            let ids = try txn.setSchema([
                Self.owner, Self.item(indexedAge: false, indexedName: false, primaryKey: false),
            ])
            for i in [1, 2, 3, 2] { try txn.insert(ids[1], [.int(Int64(i)), .null, .string(""), .null]) }
            return ids[1]
        }.0
        await #expect(throws: StorageError.self) {
            _ = try await engine.write { txn in
                _ = try txn.setSchema([Self.owner, Self.item(indexedAge: false, indexedName: false, primaryKey: true)])
            }
        }
        let state = try engine.snapshot().state
        #expect(state.tables[table]?.schema.primaryKeyColumn == nil)
        #expect(state.tables[table]?.rows.count == 4)
    }

    @Test("an index turned off is dropped, the others kept")
    func indexTurnedOffIsDropped() async throws {
        let engine = try await StorageEngine.open(.inMemory())
        let table = try await engine.write { txn -> TableID in
            let ids = try txn.setSchema([Self.owner, Self.item(indexedAge: true, indexedName: true, primaryKey: true)])
            for i in 0..<100 {
                try txn.insert(ids[1], [.int(Int64(i)), .int(Int64(i % 5)), .string("n\(i % 3)"), .null])
            }
            return ids[1]
        }.0
        let before = try engine.snapshot().state
        _ = try await engine.write { txn in
            _ = try txn.setSchema([Self.owner, Self.item(indexedAge: false, indexedName: true, primaryKey: false)])
        }
        let state = try engine.snapshot().state
        #expect(state.tables[table]?.indexes[1] == nil)
        #expect(state.tables[table]?.primaryIndex.isEmpty == true)
        #expect(Self.entries(state, table, 2) == Self.entries(before, table, 2))
        #expect(try engine.snapshot().objects(table, column: 2, equalTo: .string("n1"))?.count == 33)
    }
}
