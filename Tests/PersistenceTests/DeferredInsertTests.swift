import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// Inserts into a table without secondary indexes or links, in key order and with ascending primary keys,
/// wait in the transaction and reach the trees a chunk at a time, at each tree's right edge
/// (`WriteTransaction.deferredInserts`). Checked against a plain-Swift model at every read, with the
/// inserts that cannot wait (a primary key below the largest, a taken one, a table with an index) mixed in,
/// and after reopening.
@Suite("Deferred inserts")
struct DeferredInsertTests {
    private static let ints = TableSchema(
        "Ints",
        columns: [
            ColumnSchema("id", ColumnType(.int64), primaryKey: true),
            ColumnSchema("v", ColumnType(.string)),
        ])
    private static let strings = TableSchema(
        "Strings",
        columns: [
            ColumnSchema("s", ColumnType(.string, optional: true), primaryKey: true),
            ColumnSchema("n", ColumnType(.int64)),
        ])
    private static let plain = TableSchema(
        "Plain", columns: [ColumnSchema("x", ColumnType(.int64)), ColumnSchema("y", ColumnType(.string))])
    private static let indexed = TableSchema(
        "Indexed",
        columns: [
            ColumnSchema("id", ColumnType(.int64), primaryKey: true),
            ColumnSchema("tag", ColumnType(.int64), indexed: true),
        ])

    /// One table's rows, with what the script picks from in O(1): a random key, whether a primary key is
    /// taken.
    private struct TableModel {
        private(set) var rows: [ObjectKey: [Value]] = [:]
        private var keys: [ObjectKey] = []
        private var positions: [ObjectKey: Int] = [:]
        private(set) var primaryKeys: Set<Value> = []
        let primaryKeyColumn: Int?

        init(primaryKeyColumn: Int?) { self.primaryKeyColumn = primaryKeyColumn }

        mutating func insert(_ key: ObjectKey, _ row: [Value]) {
            rows[key] = row
            positions[key] = keys.count
            keys.append(key)
            if let column = primaryKeyColumn { primaryKeys.insert(row[column]) }
        }

        mutating func remove(_ key: ObjectKey) {
            guard let row = rows.removeValue(forKey: key), let position = positions.removeValue(forKey: key) else {
                return
            }
            let last = keys.removeLast()
            if last != key {
                keys[position] = last
                positions[last] = position
            }
            if let column = primaryKeyColumn { primaryKeys.remove(row[column]) }
        }

        mutating func set(_ key: ObjectKey, _ column: Int, _ value: Value) { rows[key]?[column] = value }

        func randomKey(_ rng: inout SplitMix64) -> ObjectKey? {
            keys.isEmpty ? nil : keys[Int(rng.next() % UInt64(keys.count))]
        }
    }

    private typealias Model = [String: TableModel]

    /// The transaction agrees with `model`: every row, every primary-key lookup, the counts, and the
    /// primary index's locations.
    private static func check(_ store: some ReadableStore, _ model: Model, _ context: String) throws {
        for (name, table) in model {
            let rows = table.rows
            let id = try #require(store.tableID(named: name))
            #expect(store.count(id) == rows.count, "\(context): \(name) count")
            #expect(try store.contents(name) == rows, "\(context): \(name) rows")
            let schema = try #require(store.tableSchema(id))
            if let pk = schema.primaryKeyColumn {
                for (key, row) in rows { #expect(store.object(id, primaryKey: row[pk]) == key, "\(context): pk") }
            }
        }
    }

    @Test(
        "Inserts that wait agree with a model at every read, report exact changes, and replay after reopening",
        arguments: StorageKind.allCases)
    func deferredInsertsAgreeWithAModel(_ kind: StorageKind) async throws {
        try await kind.run {
            var rng = SplitMix64(seed: testSeed("deferredInsertsAgreeWithAModel"))
            let fs = MemoryFileSystem()
            var engine = try await memoryEngine(fs, durability: .none)
            let ids = try await engine.write { txn in
                try txn.setSchema([Self.ints, Self.strings, Self.plain, Self.indexed])
            }.0
            let names = ["Ints", "Strings", "Plain", "Indexed"]
            var committed: Model = Dictionary(
                uniqueKeysWithValues: names.map { ($0, TableModel(primaryKeyColumn: $0 == "Plain" ? nil : 0)) })
            var nextInt: Int64 = 1_000
            var nextString = 1_000
            for round in 0..<(TestDepth.long ? 40 : 12) {
                let txn = try await engine.beginWrite()
                var working = committed
                var inserted: [String: Set<ObjectKey>] = [:]
                // Some rounds insert more than a chunk in a row.
                let operations = round % 4 == 0 ? WriteTransaction.insertChunk + 700 : 400
                // A streak: in-order inserts into one table, one after another (more than a chunk in the
                // rounds that insert more than a chunk), so that runs long enough to be appended at the trees'
                // right edge form; between streaks, operations of every kind on random tables.
                var streak = (table: 0, remaining: round % 4 == 0 ? WriteTransaction.insertChunk + 300 : 0)
                for step in 0..<operations {
                    if streak.remaining == 0 && rng.next() % 50 == 0 {
                        streak = (Int(rng.next() % 3), Int(rng.next() % 300) + 8)
                    }
                    let inStreak = streak.remaining > 0
                    if inStreak { streak.remaining -= 1 }
                    let table = inStreak ? [0, 7, 8][streak.table] : Int(rng.next() % 10)
                    let name = names[table < 6 ? 0 : table - 6]
                    let id = ids[names.firstIndex(of: name)!]
                    let roll = inStreak ? rng.next() % 74 : rng.next() % 100
                    switch roll {
                    case 0..<80:
                        // An insert: in order mostly; a lower free key, a taken key, or a null key now and then.
                        var row: [Value]
                        switch name {
                        case "Ints", "Indexed":
                            var pk: Int64
                            if roll < 74 {
                                nextInt += Int64(rng.next() % 3) + 1
                                pk = nextInt
                            } else if roll < 77 {
                                pk = Int64(rng.next() % 1_000)  // below every key inserted in order
                            } else {
                                if let key = working[name]!.randomKey(&rng),
                                    case .int(let taken) = working[name]!.rows[key]![0]
                                {
                                    pk = taken
                                } else {
                                    pk = 0
                                }
                            }
                            row = name == "Ints" ? [.int(pk), .string("v\(pk)")] : [.int(pk), .int(pk % 7)]
                        case "Strings":
                            var pk: Value
                            if roll < 74 {
                                nextString += Int(rng.next() % 3) + 1
                                pk = .string("k\(100_000_000 + nextString)")  // same length: in order
                            } else if roll < 76 {
                                pk = .string("a\(rng.next() % 1_000)")  // sorts below "k…"
                            } else if roll < 78 {
                                pk = .null
                            } else {
                                pk = working[name]!.randomKey(&rng).map { working[name]!.rows[$0]![0] } ?? .string("k0")
                            }
                            row = [pk, .int(Int64(step))]
                        default:
                            row = [.int(Int64(step)), .string("p\(step)")]
                        }
                        let taken = name != "Plain" && working[name]!.primaryKeys.contains(row[0])
                        do {
                            let key = try txn.insert(id, row)
                            #expect(!taken, "a taken primary key was inserted")
                            working[name]!.insert(key, row)
                            inserted[name, default: []].insert(key)
                        } catch let error as StorageError {
                            #expect(taken && error.code == .primaryKeyExists, "\(error)")
                        }
                    case 80..<86:
                        // A read between inserts (the waiting ones must show).
                        if let key = working[name]!.randomKey(&rng) {
                            #expect(try txn.values(id, key) == working[name]!.rows[key])
                        }
                        #expect(txn.count(id) == working[name]!.rows.count)
                    case 86..<92:
                        if let key = working[name]!.randomKey(&rng), name != "Indexed" {
                            let column = 1
                            let value: Value =
                                name == "Strings" ? .int(-1) : (name == "Ints" ? .string("u") : .string("w"))
                            try txn.update(id, key, [(column, value)])
                            working[name]!.set(key, column, value)
                        }
                    default:
                        if let key = working[name]!.randomKey(&rng) {
                            try txn.delete(id, key)
                            working[name]!.remove(key)
                            inserted[name]?.remove(key)
                        }
                    }
                }
                try Self.check(txn, working, "round \(round)")
                #expect(primaryIndexLocationProblems(txn.state).isEmpty)
                for (i, name) in names.enumerated() {
                    let reported = Set(txn.changes.tables[ids[i]]?.inserted ?? KeyRangeSet())
                    let wrong = reported.symmetricDifference(inserted[name, default: []]).sorted { $0 < $1 }
                    #expect(
                        wrong.isEmpty, "round \(round): \(name): inserted keys reported wrongly: \(wrong.prefix(10))")
                }
                if rng.next() % 4 == 0 {
                    txn.rollback()
                } else {
                    try await txn.commit()
                    committed = working
                }
                try Self.check(try engine.snapshot(), committed, "after round \(round)")
            }
            await engine.close()
            engine = try await memoryEngine(fs, durability: .none)
            try Self.check(try engine.snapshot(), committed, "reopened")
            #expect(primaryIndexLocationProblems(try engine.snapshot().state).isEmpty)
            await engine.close()
        }
    }

    @Test("A taken primary key is refused while inserts wait, and nothing of the refused insert remains")
    func takenKeyWhileInsertsWait() async throws {
        let engine = try await memoryEngine(MemoryFileSystem(), durability: .none)
        let id = try await engine.write { txn in try txn.createTable(Self.ints) }.0
        let txn = try await engine.beginWrite()
        for i in 0..<100 { try txn.insert(id, [.int(Int64(i)), .string("a")]) }
        // Taken by a waiting insert: the check reads the trees, so the waiting ones are applied first.
        #expect(throws: StorageError.self) { try txn.insert(id, [.int(50), .string("b")]) }
        // The last waiting key itself.
        #expect(throws: StorageError.self) { try txn.insert(id, [.int(99), .string("b")]) }
        try txn.insert(id, [.int(100), .string("c")])
        try txn.insert(id, [.int(-5), .string("d")])  // below the largest: inserted the usual way
        try await txn.commit()
        let snapshot = try engine.snapshot()
        #expect(snapshot.count(id) == 102)
        #expect(
            try snapshot.values(id, try #require(snapshot.object(id, primaryKey: .int(50)))) == [
                .int(50), .string("a"),
            ])
        #expect(
            try snapshot.values(id, try #require(snapshot.object(id, primaryKey: .int(-5)))) == [
                .int(-5), .string("d"),
            ])
        await engine.close()
    }

    /// Waiting inserts mixed with updates of old and waiting rows and deletes of both: the change set is
    /// exact in inserted, modified and deleted keys (a row inserted and then changed is only inserted).
    @Test func insertedModifiedAndDeletedAreExact() async throws {
        let engine = try await memoryEngine(MemoryFileSystem(), durability: .none)
        let id = try await engine.write { txn in try txn.createTable(Self.ints) }.0
        let (before, gone) = try await engine.write { txn in
            (try txn.insert(id, [.int(1), .string("a")]), try txn.insert(id, [.int(2), .string("a")]))
        }.0
        let txn = try await engine.beginWrite()
        var keys: [ObjectKey] = []
        for i in 10..<20 { keys.append(try txn.insert(id, [.int(Int64(i)), .string("x")])) }
        try txn.update(id, before, [(1, .string("b"))])  // an existing row, while inserts wait
        try txn.update(id, keys[3], [(1, .string("y"))])  // a waiting one
        keys.append(try txn.insert(id, [.int(30), .string("z")]))
        try txn.delete(id, keys[5])
        try txn.delete(id, gone)
        keys.append(try txn.insert(id, [.int(31), .string("z")]))
        try txn.update(id, keys.last!, [(1, .string("w"))])
        let changes = try #require(txn.changes.tables[id])
        #expect(Set(changes.inserted) == Set(keys).subtracting([keys[5]]))
        #expect(changes.modified == [before: ColumnSet([1])])
        #expect(Set(changes.deleted) == [gone])
        try await txn.commit()
        await engine.close()
    }

    /// Inserts, updates and deletes of two tables in a random order, with the change set read at random
    /// points: every insert, modification and delete that waits to be recorded (`pendingInserted`,
    /// `pendingModified`, `pendingDeleted`) ends up as recording each change at once, in order, would
    /// record it: a row inserted then deleted is nowhere, one modified then deleted is only deleted.
    @Test func waitingChangesAreRecordedAsRecordedAtOnce() async throws {
        let engine = try await memoryEngine(MemoryFileSystem(), durability: .none)
        let (a, b) = try await engine.write { txn in
            (try txn.createTable(Self.ints), try txn.createTable(Self.plain))
        }.0
        // Rows committed before: deleting and updating them is recorded against rows that exist.
        _ = try await engine.write { txn in
            for i in 0..<300 { _ = try txn.insert(i % 2 == 0 ? a : b, [.int(Int64(i)), .string("c")]) }
        }
        var random = SplitMix64(seed: 0xDE1E7E)
        for round in 0..<4 {
            let txn = try await engine.beginWrite()
            var expected: [TableID: TableChanges] = [:]
            var live: [(TableID, ObjectKey)] = []
            for table in [a, b] {
                for entry in txn.keys(table) { live.append((table, entry.key)) }
            }
            var counter: Int64 = 1_000_000 * Int64(round + 1)
            // Long streaks of one kind of change (deletes longer than a chunk), and single changes mixed.
            for _ in 0..<60 {
                let kind = random.next() % 4
                let streak = random.next() % 3 == 0 ? Int(random.next() % 5000) : Int(random.next() % 4)
                for _ in 0..<streak {
                    switch kind {
                    case 0:
                        let table = random.next() % 2 == 0 ? a : b
                        counter += 1
                        let key = try txn.insert(table, [.int(counter), .string("n")])
                        expected[table, default: TableChanges()].recordInsert(key)
                        live.append((table, key))
                    case 1 where !live.isEmpty:
                        let (table, key) = live[Int(random.next() % UInt64(live.count))]
                        counter += 1
                        try txn.update(table, key, [(1, .string("u\(counter)"))])
                        expected[table, default: TableChanges()].recordModify(key, ColumnSet([1]))
                    case 2, 3:
                        guard !live.isEmpty else { break }
                        let i = Int(random.next() % UInt64(live.count))
                        let (table, key) = live[i]
                        live.swapAt(i, live.count - 1)
                        live.removeLast()
                        try txn.delete(table, key)
                        expected[table, default: TableChanges()].recordDelete(key)
                    default:
                        break
                    }
                }
                if random.next() % 8 == 0 {
                    #expect(txn.changes.tables.filter { !$0.value.isEmpty } == expected.filter { !$0.value.isEmpty })
                }
            }
            #expect(
                txn.changes.tables.filter { !$0.value.isEmpty } == expected.filter { !$0.value.isEmpty },
                "round \(round)")
            try await txn.commit()
        }
        await engine.close()
    }
}
