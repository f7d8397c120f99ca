import Foundation
import Testing

@testable import ActorStorePersistence

/// Dates in an index: a NaN date must be found again (to move or remove its entry) like any other.
@Suite("NaN in an index")
struct NaNIndexTests {
    static let event = TableSchema(
        "Event",
        columns: [
            ColumnSchema("name", ColumnType(.string)),
            ColumnSchema("when", ColumnType(.date), indexed: true),
        ])

    /// The `when` index agrees with the rows: one entry per row, under the row's date, and a valid tree.
    static func checkIndex(_ engine: StorageEngine, _ table: TableID) throws {
        let state = try engine.snapshot().state
        let tableState = try #require(state.tables[table])
        let index = try #require(tableState.indexes[1])
        index.checkInvariants()
        #expect(index.count == tableState.rows.count)
        for (key, _) in tableState.rows {
            guard case .date(let date) = try engine.snapshot().value(table, key, column: 1) else {
                Issue.record("no date in \(key)")
                continue
            }
            #expect(index.contains(IndexEntry(.double(date.timeIntervalSinceReferenceDate), key)))
        }
    }

    @Test("a NaN date is found, moved and removed like any other: the index keeps one entry per row")
    func nanDate() async throws {
        let fs = MemoryFileSystem()
        let engine = try await memoryEngine(fs)
        let (table, _) = try await engine.write { txn in try txn.createTable(Self.event) }
        let nan = Date(timeIntervalSinceReferenceDate: .nan)
        let otherNaN = Date(timeIntervalSinceReferenceDate: Double(nan: 7, signaling: false))
        let day = Date(timeIntervalSinceReferenceDate: 86_400)
        let (keys, _) = try await engine.write { txn in
            try [nan, day, nan, Date(timeIntervalSinceReferenceDate: -.infinity)].map {
                try txn.insert(table, [.string("e"), .date($0)])
            }
        }
        try Self.checkIndex(engine, table)
        #expect(try engine.snapshot().objects(table, column: 1, equalTo: .date(otherNaN)) == [keys[0], keys[2]])

        // NaN to another NaN, to a date, and back; then deletes.
        _ = try await engine.write { txn in try txn.update(table, keys[0], [(column: 1, value: .date(otherNaN))]) }
        try Self.checkIndex(engine, table)
        _ = try await engine.write { txn in try txn.update(table, keys[0], [(column: 1, value: .date(day))]) }
        try Self.checkIndex(engine, table)
        #expect(try engine.snapshot().objects(table, column: 1, equalTo: .date(nan)) == [keys[2]])
        #expect(try engine.snapshot().objects(table, column: 1, equalTo: .date(day)) == [keys[0], keys[1]])
        _ = try await engine.write { txn in try txn.update(table, keys[1], [(column: 1, value: .date(nan))]) }
        try Self.checkIndex(engine, table)
        _ = try await engine.write { txn in try txn.delete(table, keys[2]) }
        try Self.checkIndex(engine, table)
        #expect(try engine.snapshot().objects(table, column: 1, equalTo: .date(nan)) == [keys[1]])
        _ = try await engine.write { txn in try txn.delete(table, keys[1]) }
        try Self.checkIndex(engine, table)
        #expect(try engine.snapshot().objects(table, column: 1, equalTo: .date(nan)) == [])

        // Replay and compaction rebuild the same index.
        _ = try await engine.write { txn in try txn.insert(table, [.string("e"), .date(nan)]) }
        await engine.close()
        let reopened = try await memoryEngine(fs)
        try Self.checkIndex(reopened, table)
        try await reopened.compact()
        try Self.checkIndex(reopened, table)
        #expect(try reopened.snapshot().objects(table, column: 1, equalTo: .date(nan))?.count == 1)
        await reopened.close()
    }

    @Test("index keys are totally ordered: NaN first, -0 equal to 0, equal keys hash alike")
    func indexKeyOrder() {
        let nan = IndexKey.double(.nan)
        let otherNaN = IndexKey.double(Double(nan: 7, signaling: false))
        #expect(nan == nan && nan == otherNaN && !(nan < otherNaN) && !(otherNaN < nan))
        #expect(nan < .double(-.infinity) && !(IndexKey.double(-.infinity) < nan))
        #expect(IndexKey.int(.max) < nan && nan < .string(""))
        #expect(IndexKey.double(-0.0) == .double(0.0) && !(IndexKey.double(-0.0) < .double(0.0)))
        #expect(Set([nan, otherNaN, .double(-0.0), .double(0.0)]).count == 2)
        #expect(nan.hashValue == otherNaN.hashValue)
    }
}
