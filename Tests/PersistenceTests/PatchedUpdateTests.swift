import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// Updates re-encode only the columns they change and copy the others' bytes (``RowEncoder/encode(patching:with:types:dataLength:into:)``),
/// and set-based updates write one column of many rows in one call. Checked against full re-encoding and
/// against a plain-Swift model of the rows, their indexes and backlinks.
@Suite("Patched updates")
struct PatchedUpdateTests {
    private let rows = RowEncodingTests()

    @Test("A patched row is byte for byte the row encoded whole, old rows with fewer columns included")
    func patchedEncodingMatchesFullEncoding() throws {
        var rng = SplitMix64(seed: testSeed("patchedEncodingMatchesFullEncoding"))
        let buffer = RecordBuffer(capacity: 64)
        for iteration in 0..<5_000 {
            let (types, values) = try rows.randomRow(&rng)
            // The stored row may predate some columns (added since): it stores a prefix of them.
            let stored = types.isEmpty ? 0 : Int(rng.next() % UInt64(types.count + 1))
            let oldBytes = rows.encodeRow(Array(values[..<stored]), Array(types[..<stored]))
            var expected = Array(values[..<stored]) + types[stored...].map(\.defaultValue)
            var patches: [RowEncoder.Patch] = []
            for column in types.indices where rng.next() % 3 == 0 {
                let value = try RowEncoder.validate(
                    rows.randomValue(types[column], &rng), for: types[column], column: "c")
                patches.append((column, value))
                expected[column] = value
            }
            patches.shuffle(using: &rng)
            try oldBytes.withUnsafeBytes { raw in
                let old = try RowView(raw)
                let dataLength = try #require(RowEncoder.patchedDataSize(old, patches, types: types))
                let start = buffer.count
                let length = RowEncoder.encode(
                    patching: old, with: patches, types: types, dataLength: dataLength, into: buffer)
                let whole = rows.encodeRow(expected, types)
                if Array(buffer.bytes(at: start, count: length)) != whole {
                    Issue.record("iteration \(iteration) (\(types), \(stored) stored): patched bytes differ")
                }
            }
        }
    }

    @Test("A patch of values as long as the ones they replace copies the row whole and writes over them")
    func sameSizePatchesMatchFullEncoding() throws {
        // Every column stored, and patches of the same width: the path that copies the old row in one piece.
        // Narrow rows (1-byte offsets) and wide ones (a long string: 2-byte offsets) both.
        var rng = SplitMix64(seed: testSeed("sameSizePatchesMatchFullEncoding"))
        let types = [
            ColumnType(.int64), ColumnType(.string), ColumnType(.double), ColumnType(.bool),
            ColumnType(.int64, optional: true), ColumnType(.date),
        ]
        let buffer = RecordBuffer(capacity: 64)
        for iteration in 0..<2_000 {
            let name = String(repeating: "n", count: iteration % 2 == 0 ? 5 : 400)
            let values: [Value] = [
                .int(Int64(bitPattern: rng.next())), .string(name), .double(Double(rng.next() % 1000) / 8),
                .bool(rng.next() % 2 == 0), .int(Int64(rng.next() % 100)),
                .date(Date(timeIntervalSinceReferenceDate: Double(rng.next() % 10_000))),
            ]
            var expected = values
            var patches: [RowEncoder.Patch] = []
            for column in [0, 2, 3, 4, 5] where rng.next() % 2 == 0 {
                let value: Value =
                    switch column {
                    case 0: .int(Int64(bitPattern: rng.next()))
                    case 2: .double(Double(rng.next() % 1000) / 8)
                    case 3: .bool(rng.next() % 2 == 0)
                    case 4: .int(Int64(rng.next() % 100))
                    default: .date(Date(timeIntervalSinceReferenceDate: Double(rng.next() % 10_000)))
                    }
                patches.append((column, value))
                expected[column] = value
            }
            // A string of the same length, other letters: same size, other bytes.
            if rng.next() % 2 == 0 {
                let renamed = Value.string(String(repeating: "m", count: name.utf8.count))
                patches.append((1, renamed))
                expected[1] = renamed
            }
            let oldBytes = rows.encodeRow(values, types)
            try oldBytes.withUnsafeBytes { raw in
                let old = try RowView(raw)
                let dataLength = try #require(RowEncoder.patchedDataSize(old, patches, types: types))
                #expect(dataLength == old.dataLength)
                let start = buffer.count
                let length = RowEncoder.encode(
                    patching: old, with: patches, types: types, dataLength: dataLength, into: buffer)
                let written = Array(buffer.bytes(at: start, count: length))
                #expect(written == rows.encodeRow(expected, types), "iteration \(iteration): \(patches)")
                #expect(try rows.decodeRow(written, types) == expected)
                // The copying path itself takes these patches, and writes the same bytes.
                let width = RowFormat.offsetWidth(forDataLength: dataLength)
                let copyStart = buffer.count
                let copied = RowEncoder.encodeInPlace(
                    patching: old, with: patches, types: types, width: width, into: buffer)
                #expect(copied == length)
                #expect(Array(buffer.bytes(at: copyStart, count: copied ?? 0)) == written)
                // A value of another size is not its case: nothing is appended.
                let longer = patches.filter { $0.column != 1 } + [(1, Value.string(name + "x"))]
                let before = buffer.count
                #expect(
                    RowEncoder.encodeInPlace(patching: old, with: longer, types: types, width: width, into: buffer)
                        == nil)
                #expect(buffer.count == before)
            }
        }
    }

    @Test("A stored row with more columns than the schema is not patched")
    func moreStoredColumnsThanTheSchema() throws {
        let types = [ColumnType(.int64), ColumnType(.string)]
        let bytes = rows.encodeRow([.int(1), .string("a")], types)
        try bytes.withUnsafeBytes { raw in
            let old = try RowView(raw)
            #expect(RowEncoder.patchedDataSize(old, [(0, .int(2))], types: [ColumnType(.int64)]) == nil)
            #expect(RowEncoder.patchedDataSize(old, [(0, .int(2))], types: types) == bytes.count - 3 - 2)
        }
    }

    @Test("replaceExistingValues replaces exactly the keys present, copies shared nodes, keeps the shape")
    func replaceExistingValuesAgreesWithAModel() {
        var rng = SplitMix64(seed: testSeed("replaceExistingValuesAgreesWithAModel"))
        for round in 0..<30 {
            var tree = PersistentBTree<Int64, Int>()
            var model: [Int64: Int] = [:]
            let token = MutationToken.next()
            for _ in 0..<Int(rng.next() % 20_000) {
                let key = Int64(rng.next() % 30_000)
                tree.updateValue(Int(key), forKey: key, token: token)
                model[key] = Int(key)
            }
            let shared = tree
            let sharedModel = model
            // Sorted, distinct keys: some present, some not; in runs (one leaf) and scattered.
            var keys = Set<Int64>()
            let dense = rng.next() % 2 == 0
            for _ in 0..<Int(rng.next() % 8_000) {
                keys.insert(dense ? Int64(rng.next() % 3_000) + 10_000 : Int64(rng.next() % 31_000))
            }
            let entries = keys.sorted().map { (key: $0, value: -Int($0) - 1) }
            let replaced = tree.replaceExistingValues(entries, token: MutationToken.next())
            for (i, entry) in entries.enumerated() {
                if replaced[i] != model[entry.key] {
                    Issue.record("round \(round), key \(entry.key): returned \(String(describing: replaced[i]))")
                }
                if model[entry.key] != nil { model[entry.key] = entry.value }
            }
            tree.checkInvariants()
            #expect(tree.count == model.count)
            var seen: [Int64: Int] = [:]
            tree.forEach { key, value in seen[key] = value }
            #expect(seen == model, "round \(round)")
            var before: [Int64: Int] = [:]
            shared.forEach { key, value in before[key] = value }
            #expect(before == sharedModel, "round \(round): the shared tree changed")
        }
    }

    static let owner = TableSchema("Owner", columns: [ColumnSchema("id", ColumnType(.int64), primaryKey: true)])
    static let item = TableSchema(
        "Item",
        columns: [
            ColumnSchema("id", ColumnType(.int64), primaryKey: true),
            ColumnSchema("tag", ColumnType(.int64), indexed: true),
            ColumnSchema("name", ColumnType(.string, optional: true)),
            ColumnSchema("score", ColumnType(.double)),
            ColumnSchema("owner", ColumnType(.link, optional: true), linkTarget: "Owner"),
            ColumnSchema("nums", ColumnType(.int64, .list)),
        ])
    /// The same with a column added at the end: rows written before it store one column less.
    private static let itemWithExtra: TableSchema = {
        var schema = item
        schema.columns.append(ColumnSchema("extra", ColumnType(.string)))
        return schema
    }()

    /// A random value for column `column` of Item (with 5 owners, keys 0..<5).
    static func randomValue(_ column: Int, _ rng: inout SplitMix64) -> Value {
        switch column {
        case 1: .int(Int64(rng.next() % 6))
        case 2: rng.next() % 4 == 0 ? .null : .string(String(repeating: "n", count: Int(rng.next() % 300)))
        case 3: .double(Double(rng.next() % 1000) / 4)
        case 4: rng.next() % 3 == 0 ? .null : .link(ObjectKey(Int64(rng.next() % 5)))
        case 5: .list((0..<Int(rng.next() % 5)).map { _ in .int(Int64(rng.next() % 100)) })
        default: .string(String(repeating: "e", count: Int(rng.next() % 20)))
        }
    }

    @Test(
        "Random inserts, updates of column subsets, set-based updates and deletes agree with a model: rows, the secondary index, backlinks, after reopening",
        arguments: StorageKind.allCases)
    func updatesAgreeWithAModel(_ kind: StorageKind) async throws {
        try await kind.run {
            var rng = SplitMix64(seed: testSeed("updatesAgreeWithAModel"))
            let fs = MemoryFileSystem()
            var engine = try await memoryEngine(fs, durability: .none)
            let (tables, _) = try await engine.write { txn in
                let owners = try txn.createTable(Self.owner)
                for i in 0..<5 { try txn.insert(owners, [.int(Int64(i))]) }
                return (owners, try txn.createTable(Self.item))
            }
            let (owners, items) = tables
            var columnCount = Self.item.columns.count
            var committed: [ObjectKey: [Value]] = [:]
            var nextID: Int64 = 0
            for round in 0..<120 {
                if round == 60 {
                    // Rows written from now on store a column more than the ones before.
                    let ids = try await engine.write { txn in try txn.setSchema([Self.owner, Self.itemWithExtra]) }.0
                    #expect(ids == [owners, items])
                    columnCount += 1
                    for key in committed.keys { committed[key]!.append(.string("")) }
                }
                if round == 90 {
                    // Reopened from the checkpoint close writes: the trees' nodes are loaded as the writes
                    // below reach them.
                    await engine.close()
                    engine = try await memoryEngine(fs, durability: .none)
                }
                let txn = try await engine.beginWrite()
                var working = committed
                for _ in 0..<Int(rng.next() % 30 + 1) {
                    let keys = working.keys.sorted()
                    switch rng.next() % 10 {
                    case _ where keys.isEmpty, 0...2:
                        var row: [Value] = [.int(nextID)] + (1..<columnCount).map { Self.randomValue($0, &rng) }
                        row = try row.enumerated().map { (i, v) in
                            try RowEncoder.validate(
                                v, for: (round >= 60 ? Self.itemWithExtra : Self.item).columns[i].type, column: "c")
                        }
                        nextID += 1
                        working[try txn.insert(items, row)] = row
                    case 3...6:
                        // Some columns, in any order; sometimes the primary key with its own value, sometimes a
                        // column twice (the last value wins).
                        let key = keys[Int(rng.next() % UInt64(keys.count))]
                        var given: [(column: Int, value: Value)] = []
                        for column in 1..<columnCount where rng.next() % 3 == 0 {
                            given.append((column, Self.randomValue(column, &rng)))
                        }
                        if rng.next() % 5 == 0 { given.append((0, working[key]![0])) }
                        if let first = given.first(where: { $0.column > 0 }), rng.next() % 6 == 0 {
                            given.append((first.column, Self.randomValue(first.column, &rng)))
                        }
                        given.shuffle(using: &rng)
                        try txn.update(items, key, given)
                        for (column, value) in given { working[key]![column] = value }
                    case 7:
                        let column = 1 + Int(rng.next() % UInt64(columnCount - 1))
                        let value = Self.randomValue(column, &rng)
                        // A key with no row now and then (which also makes the keys too sparse for one pass over the leaves).
                        let chosen =
                            keys.filter { _ in rng.next() % 3 == 0 }
                            + (rng.next() % 2 == 0 ? [ObjectKey(Int64.max - 1)] : [])
                        try txn.update(items, keys: chosen, column: column, to: value)
                        for key in chosen where working[key] != nil { working[key]![column] = value }
                    case 8:
                        // A batch delete, keys in any order, some twice, one that does not exist.
                        let chosen = keys.filter { _ in rng.next() % 8 == 0 }.shuffled(using: &rng)
                        let deleted = try txn.delete(
                            items, keys: chosen + chosen.prefix(2) + [ObjectKey(Int64.max - 1)])
                        #expect(deleted == chosen.count)
                        for key in chosen { working[key] = nil }
                    default:
                        let key = keys[Int(rng.next() % UInt64(keys.count))]
                        try txn.delete(items, key)
                        working[key] = nil
                    }
                }
                try checkItems(txn, items, owners: owners, tags: 6, linkColumn: 4, working)
                if rng.next() % 5 == 0 {
                    txn.rollback()
                } else {
                    try await txn.commit()
                    committed = working
                }
            }
            try checkItems(try engine.snapshot(), items, owners: owners, tags: 6, linkColumn: 4, committed)
            await engine.close()
            engine = try await memoryEngine(fs, durability: .none)
            try checkItems(try engine.snapshot(), items, owners: owners, tags: 6, linkColumn: 4, committed)
            await engine.close()
        }
    }

    @Test(
        "A set-based update of 10,000 rows (three chunks) writes each changed row once and reports exactly those",
        arguments: StorageKind.allCases)
    func setBasedUpdateAcrossChunks(_ kind: StorageKind) async throws {
        try await kind.run {
            let fs = MemoryFileSystem()
            let engine = try await memoryEngine(fs, durability: .none)
            let n = 10_000
            let (tables, _) = try await engine.write { txn in
                let owners = try txn.createTable(Self.owner)
                for i in 0..<5 { try txn.insert(owners, [.int(Int64(i))]) }
                let items = try txn.createTable(Self.item)
                for i in 0..<n {
                    try txn.insert(
                        items,
                        [.int(Int64(n - i)), .int(Int64(i % 6)), .null, .double(0), .link(ObjectKey(0)), .list([])])
                }
                return (owners, items)
            }
            let (owners, items) = tables
            var model: [ObjectKey: [Value]] = [:]
            for i in 0..<n {
                model[ObjectKey(Int64(i))] = [
                    .int(Int64(n - i)), .int(Int64(i % 6)), .null, .double(0), .link(ObjectKey(0)), .list([]),
                ]
            }
            let txn = try await engine.beginWrite()
            // Deleted first, and unsorted, repeated keys: the update skips the deleted and writes each once.
            for i in stride(from: 0, to: n, by: 7) {
                try txn.delete(items, ObjectKey(Int64(i)))
                model[ObjectKey(Int64(i))] = nil
            }
            let keys = (0..<n).map { ObjectKey(Int64($0)) }.reversed() + [ObjectKey(5)]
            try txn.update(items, keys: Array(keys), column: 1, to: .int(3))
            try txn.update(items, keys: Array(keys), column: 4, to: .link(ObjectKey(2)))
            let changed = model.filter { $0.value[1] != .int(3) }.keys
            for key in model.keys {
                model[key]![1] = .int(3)
                model[key]![4] = .link(ObjectKey(2))
            }
            try checkItems(txn, items, owners: owners, tags: 6, linkColumn: 4, model)
            let modified = try #require(txn.changes.tables[items]?.modified)
            #expect(modified.count == model.count)
            for key in model.keys {
                var columns = ColumnSet([4])
                if changed.contains(key) { columns.insert(1) }
                #expect(modified[key] == columns, "object \(key)")
            }
            // A batch delete of every third remaining row records exactly those keys deleted, none modified.
            let doomed = model.keys.sorted().enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
            #expect(try txn.delete(items, keys: doomed.shuffled()) == doomed.count)
            for key in doomed { model[key] = nil }
            let recorded = try #require(txn.changes.tables[items])
            let expected = Set(doomed).union(stride(from: 0, to: n, by: 7).map { ObjectKey(Int64($0)) }).sorted()
            let deletedAsRecorded = Array(recorded.deleted) == expected
            #expect(deletedAsRecorded, "the change set's deleted keys are the rows deleted")
            #expect(doomed.allSatisfy { recorded.modified[$0] == nil })
            try await txn.commit()
            try checkItems(try engine.snapshot(), items, owners: owners, tags: 6, linkColumn: 4, model)
            await engine.close()
        }
    }
}
