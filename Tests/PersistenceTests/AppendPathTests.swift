import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// The insert path's shortcuts for keys that arrive in ascending order (B+tree inserts past the last key,
/// which skip the searches of each node on the way down) and for rows whose size validation measured
/// (encoded without adding up the column sizes again): each must give what the general path gives.
@Suite("Ascending insert path")
struct AppendPathTests {
    /// Mostly ascending keys (appends with gaps), mixed with replacements of the last key, inserts and
    /// replacements below it, and removals (which leave separators above the remaining keys): the tree must
    /// agree with a dictionary throughout, and every value taken before later mutations must keep its
    /// contents, whether those mutations ran under the same token or a new one.
    @Test("Mostly ascending inserts mixed with other operations agree with a model; earlier values stay as they were")
    func mostlyAscendingAgreesWithModel() {
        var rng = SplitMix64(seed: testSeed("mostlyAscendingAgreesWithModel"))
        for round in 0..<6 {
            var tree = PersistentBTree<Int64, Int64>()
            var model: [Int64: Int64] = [:]
            var token = MutationToken.next()
            var held: [(tree: PersistentBTree<Int64, Int64>, model: [Int64: Int64])] = []
            var next = Int64.random(in: -1_000...1_000, using: &rng)
            // Round 0 is strictly ascending; later rounds mix in more and more other operations.
            let otherPercent = round * 4
            for step in 0..<12_000 {
                let value = Int64(step)
                let roll = Int.random(in: 0..<100, using: &rng)
                if roll >= otherPercent || model.isEmpty {
                    let key = next
                    next += Int64.random(in: 1...3, using: &rng)
                    #expect(
                        tree.updateValue(value, forKey: key, token: token) == model[key], "round \(round) step \(step)")
                    model[key] = value
                } else {
                    let maximum = next - 1
                    switch roll % 4 {
                    case 0:
                        // The largest key so far, present or removed.
                        #expect(tree.updateValue(value, forKey: maximum, token: token) == model[maximum])
                        model[maximum] = value
                    case 1:
                        let key = Int64.random(in: (maximum - 5_000)...maximum, using: &rng)
                        #expect(tree.updateValue(value, forKey: key, token: token) == model[key])
                        model[key] = value
                    default:
                        // Often the largest keys: the next appends go past separators above the remaining keys.
                        let key =
                            Bool.random(using: &rng)
                            ? model.keys.max()! : Int64.random(in: (maximum - 3_000)...maximum, using: &rng)
                        #expect(tree.removeValue(forKey: key, token: token) == model.removeValue(forKey: key))
                    }
                }
                if step % 1_500 == 0 {
                    held.append((tree, model))
                    // Sometimes a new transaction, sometimes the same token mutating past a shared value.
                    if Bool.random(using: &rng) { token = MutationToken.next() }
                }
            }
            if let difference = treeDifference(tree, model) { Issue.record("round \(round): \(difference)") }
            for (i, version) in held.enumerated() {
                if let difference = treeDifference(version.tree, version.model) {
                    Issue.record("round \(round), value held at \(i): \(difference)")
                }
            }
        }
    }

    /// Appends fill the nodes on the right edge as before: each leaf except the last is nearly full, and the
    /// tree has the depth a bulk load of the same keys has.
    @Test("Ascending inserts keep nodes full and the tree as shallow as a bulk load")
    func ascendingInsertsKeepNodesFull() {
        var tree = PersistentBTree<Int64, Int64>()
        let token = MutationToken.next()
        let n: Int64 = 50_000
        for key in 0..<n { tree.updateValue(key * 2, forKey: key, token: token) }
        var model: [Int64: Int64] = [:]
        for key in 0..<n { model[key] = key * 2 }
        #expect(treeDifference(tree, model) == nil)
        func depth(_ node: PersistentBTree<Int64, Int64>.Node) -> Int {
            node.isLeaf ? 1 : 1 + depth(node.children[node.count - 1])
        }
        var leaves = 0
        func countLeaves(_ node: PersistentBTree<Int64, Int64>.Node) {
            if node.isLeaf {
                leaves += 1
            } else {
                for index in 0..<node.count { countLeaves(node.children[index]) }
            }
        }
        countLeaves(tree.root!)
        #expect(leaves < Int(n) / (BTreeLayout.fanout * 3 / 4))
        let loaded = PersistentBTree<Int64, Int64>(
            sortedUniqueElements: (0..<n).map { ($0, $0 * 2) }, token: MutationToken.next())
        #expect(depth(tree.root!) == depth(loaded.root!))
    }

    /// The primary-key index over ascending integer keys (what inserts with a counter's primary keys do),
    /// with other kinds of keys and non-ascending integers mixed in.
    @Test("The primary-key index under mostly ascending integer keys agrees with a model")
    func primaryIndexAscending() {
        var rng = SplitMix64(seed: testSeed("primaryIndexAscending"))
        var index = PrimaryIndex()
        var model: [IndexKey: PrimaryKeyEntry] = [:]
        let token = MutationToken.next()
        var held: [(PrimaryIndex, [IndexKey: PrimaryKeyEntry])] = []
        var next: Int64 = -50
        for step in 0..<8_000 {
            let key: IndexKey
            if Int.random(in: 0..<10, using: &rng) == 0 {
                key = PrimaryIndexTests.randomKey(&rng)
            } else {
                key = .int(next)
                next += 1
            }
            let entry = PrimaryIndexTests.entry(Int64(step))
            #expect(index.updateValue(entry, forKey: key, token: token) == model[key], "step \(step)")
            model[key] = entry
            if step % 1_000 == 0 { held.append((index, model)) }
        }
        held.append((index, model))
        for (i, (version, expected)) in held.enumerated() {
            #expect(version.count == expected.count, "value \(i)")
            #expect(
                PrimaryIndexTests.visited(version, from: nil, inclusive: true) == expected.keys.sorted(), "value \(i)")
            for (key, entry) in expected where version.value(forKey: key) != entry {
                Issue.record("value \(i): \(key)")
            }
        }
    }
}

extension RowEncodingTests {
    @Test("Encoding with the data length validation measured writes the same bytes, on random rows")
    func encodeWithMeasuredLengthMatches() throws {
        var rng = SplitMix64(seed: testSeed("encodeWithMeasuredLengthMatches"))
        let buffer = RecordBuffer(capacity: 64)
        for iteration in 0..<5_000 {
            let (types, values) = try randomRow(&rng)
            let columns = types.enumerated().map { ColumnSchema("c\($0.offset)", $0.element) }
            let (row, dataSize) = try RowEncoder.validateRowMeasuring(values, columns: columns)
            #expect(dataSize == RowEncoder.dataSize(row, types: types), "iteration \(iteration)")
            #expect(try RowEncoder.validateRow(values, columns: columns).elementsEqual(row, by: sameBits))
            let start = buffer.count
            let length = RowEncoder.encode(row, types: types, dataLength: dataSize, into: buffer)
            let bytes = encodeRow(row, types)
            if length != bytes.count || Array(buffer.bytes(at: start, count: length)) != bytes {
                Issue.record("iteration \(iteration) (\(types)): different bytes")
            }
        }
    }

    @Test("The plain single values validation accepts without a check of its own are ones validate accepts unchanged")
    func plainSinglesAreValid() throws {
        var rng = SplitMix64(seed: testSeed("plainSinglesAreValid"))
        let singles = allColumnTypes.filter { $0.collection == .single }
        var accepted = 0
        for _ in 0..<20_000 {
            // A value of the column's type, or of another type (a mismatch), including nulls.
            let type = singles.randomElement(using: &rng)!
            let valueType = Bool.random(using: &rng) ? type : singles.randomElement(using: &rng)!
            let value = randomValue(valueType, &rng)
            guard RowEncoder.isPlainSingle(value, type) else { continue }
            accepted += 1
            let validated = try RowEncoder.validate(value, for: type, column: "c")
            #expect(sameBits(validated, value), "\(value) for \(type)")
        }
        #expect(accepted > 1_000)
        // Never a value validate refuses or that needs its own checks.
        #expect(!RowEncoder.isPlainSingle(.null, ColumnType(.string, optional: true)))
        #expect(!RowEncoder.isPlainSingle(.int(1), ColumnType(.int8)))
        #expect(!RowEncoder.isPlainSingle(.int(1), ColumnType(.double)))
        #expect(!RowEncoder.isPlainSingle(.int(1), ColumnType(.mixed)))
        #expect(
            !RowEncoder.isPlainSingle(
                .string(String(repeating: "x", count: RowFormat.maxStringBytes + 1)), ColumnType(.string)))
    }

    @Test("validateRowMeasuring throws what validateRow throws")
    func validateRowMeasuringErrors() {
        let columns = [ColumnSchema("a", ColumnType(.int64)), ColumnSchema("b", ColumnType(.string))]
        let rows: [[Value]] = [
            [.int(1)], [.string("x"), .string("y")], [.int(1), .null],
            [.int(1), .string(String(repeating: "x", count: RowFormat.maxStringBytes + 1))],
        ]
        for values in rows {
            let expected = thrownError { _ = try RowEncoder.validateRow(values, columns: columns) }
            let measured = thrownError { _ = try RowEncoder.validateRowMeasuring(values, columns: columns) }
            #expect(expected != nil)
            #expect(measured?.code == expected?.code && measured?.message == expected?.message)
        }
    }
}

/// The engine's insert path end to end: many ascending inserts with an integer primary key, a snapshot taken
/// before them, a refused duplicate key in between, and the store reopened (replayed from its log).
@Suite("Bulk inserts in the engine")
struct BulkInsertEngineTests {
    static let item = TableSchema(
        "Item",
        columns: [
            ColumnSchema("id", ColumnType(.int64), primaryKey: true),
            ColumnSchema("name", ColumnType(.string)),
            ColumnSchema("age", ColumnType(.int64), indexed: true),
            ColumnSchema("score", ColumnType(.double)),
        ])

    static func row(_ i: Int) -> [Value] {
        [.int(Int64(i)), .string("name-\(i)"), .int(Int64(i % 100)), .double(Double(i) * 0.5)]
    }

    @Test("A snapshot taken before a bulk insert keeps its rows; the inserted rows read back, also after reopening")
    func snapshotIsolationAndReplay() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        var engine = try await memoryEngine(fs)
        let first = try await engine.beginWrite()
        let table = try first.setSchema([Self.item], version: 1)[0]
        var model: [ObjectKey: [Value]] = [:]
        for i in 0..<3_000 { model[try first.insert(table, Self.row(i))] = Self.row(i) }
        try await first.commit()
        let before = try engine.snapshot()
        let beforeModel = model

        let second = try await engine.beginWrite()
        for i in 3_000..<9_000 {
            model[try second.insert(table, Self.row(i))] = Self.row(i)
            if i == 6_000 {
                // A taken primary key is refused and changes nothing; the transaction goes on.
                let error = try #require(throws: StorageError.self) { try second.insert(table, Self.row(42)) }
                #expect(error.code == .primaryKeyExists)
            }
        }
        #expect(second.count(table) == 9_000)
        #expect(before.count(table) == 3_000 && before.object(table, primaryKey: .int(5_000)) == nil)
        try await second.commit()

        let after = try engine.snapshot()
        try checkRows(after, table, model)
        try checkRows(before, table, beforeModel)
        #expect(primaryIndexLocationProblems(after.state).isEmpty)
        await engine.close()
        engine = try await memoryEngine(fs)
        try checkRows(try engine.snapshot(), table, model)
        await engine.close()
    }

    /// Every row of `model` is stored with its values and found by its primary key; nothing else is stored.
    func checkRows(_ store: some ReadableStore, _ table: TableID, _ model: [ObjectKey: [Value]]) throws {
        #expect(store.count(table) == model.count)
        for (key, row) in model {
            if try store.values(table, key) != row { Issue.record("object \(key)") }
            if store.object(table, primaryKey: row[0]) != key { Issue.record("primary key \(row[0])") }
        }
        #expect(store.objects(table, column: 2, equalTo: .int(7))?.count == model.values.count { $0[2] == .int(7) })
    }
}
