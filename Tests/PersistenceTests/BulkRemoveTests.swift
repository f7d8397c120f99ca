import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

private typealias IntTree = PersistentBTree<Int64, Int64>

/// Which keys of a tree a removal takes.
private enum Pattern: CaseIterable, CustomStringConvertible {
    case everything, denseRange, prefix, suffix, scattered, mostly, runsOf50, single, someMissing, allButFew,
        allButRange

    var description: String { "\(self as Any)".components(separatedBy: ".").last ?? "" }

    /// The keys to remove from `keys` (sorted), sorted and unique; may include keys the tree lacks.
    func keys(of keys: [Int64], _ rng: inout SplitMix64) -> [Int64] {
        guard !keys.isEmpty else { return [] }
        let n = keys.count
        switch self {
        case .everything:
            return keys
        case .denseRange:
            let start = Int(rng.next() % UInt64(n))
            let length = Int(rng.next() % UInt64(n - start)) + 1
            return Array(keys[start..<(start + length)])
        case .prefix:
            return Array(keys.prefix(Int(rng.next() % UInt64(n)) + 1))
        case .suffix:
            return Array(keys.suffix(Int(rng.next() % UInt64(n)) + 1))
        case .scattered:
            return keys.filter { _ in rng.next() % 10 == 0 }
        case .mostly:
            return keys.filter { _ in rng.next() % 20 != 0 }
        case .runsOf50:
            return keys.filter { $0 % 100 < 50 }
        case .single:
            return [keys[Int(rng.next() % UInt64(n))]]
        case .allButFew:
            // Keeps a few keys far apart: the nodes above each are left with one child, an underfull leaf,
            // which only merges one level up can fix.
            let kept = Set((0..<3).map { _ in keys[Int(rng.next() % UInt64(n))] })
            return keys.filter { !kept.contains($0) }
        case .allButRange:
            let start = Int(rng.next() % UInt64(n))
            let kept = start..<min(n, start + Int(rng.next() % 200) + 1)
            return keys.indices.filter { !kept.contains($0) }.map { keys[$0] }
        case .someMissing:
            // Present keys mixed with keys the tree does not hold (odd keys beyond every stored one, and
            // below the first).
            let present = keys.filter { _ in rng.next() % 3 == 0 }
            let missing = [keys[0] - 1, keys[n - 1] + 1, keys[n - 1] + 1_000]
            return Array(Set(present + missing)).sorted()
        }
    }
}

@Suite("Bulk removal from the B+tree")
struct BulkRemoveTests {
    /// A tree of `n` keys (even numbers with gaps, or dense) built by random inserts or by bulk load.
    private static func makeTree(
        _ n: Int, bulk: Bool, _ rng: inout SplitMix64
    ) -> (IntTree, [Int64: Int64]) {
        var model: [Int64: Int64] = [:]
        var key: Int64 = 0
        for _ in 0..<n {
            key += rng.next() % 4 == 0 ? Int64(rng.next() % 5 + 1) : 1
            model[key] = Int64(bitPattern: rng.next())
        }
        let token = MutationToken.next()
        if bulk {
            let tree = IntTree(sortedUniqueElements: model.sorted { $0.key < $1.key }, token: token)
            return (tree, model)
        }
        var tree = IntTree()
        for (key, value) in model.shuffled(using: &rng) { tree.updateValue(value, forKey: key, token: token) }
        return (tree, model)
    }

    @Test(
        "Removing a batch of keys agrees with a dictionary, for every pattern and size; the copy taken before is unchanged"
    )
    func agreesWithModel() {
        var rng = SplitMix64(seed: testSeed("bulkRemoveAgreesWithModel"))
        for n in [0, 1, 2, 64, 128, 129, 300, 5_000, 40_000] {
            for bulk in [false, true] {
                for pattern in Pattern.allCases {
                    let (original, model) = Self.makeTree(n, bulk: bulk, &rng)
                    var tree = original
                    let keys = pattern.keys(of: model.keys.sorted(), &rng)
                    let removed = tree.removeValues(sortedKeys: keys, token: MutationToken.next())
                    var expected = model
                    for key in keys { expected[key] = nil }
                    #expect(removed == model.count - expected.count, "n \(n) bulk \(bulk) \(pattern)")
                    let problem = treeDifference(tree, expected, removed: keys)
                    #expect(problem == nil, "n \(n) bulk \(bulk) \(pattern)")
                    #expect(treeDifference(original, model) == nil, "the copy changed: n \(n) bulk \(bulk) \(pattern)")
                }
            }
        }
    }

    @Test("A node left with one underfull child is evened out with a full sibling, and the child it keeps is fixed too")
    func evenOutANodeWithOneUnderfullChild() {
        // Bulk-loaded: full leaves under full internal nodes (128 × 128 entries each), three of them.
        let n = Int64(3 * 128 * 128)
        let tree = IntTree(sortedUniqueElements: (0..<n).map { ($0, $0) }, token: MutationToken.next())
        let choices: [Int64] = [0, 5_000, 128 * 128 - 1]
        for kept in choices {
            var changed = tree
            // Everything under the first internal node but one key: it keeps one leaf of one entry, and
            // takes children from its full neighbour, one of which must then fill up that leaf.
            let keys = (0..<Int64(128 * 128)).filter { $0 != kept }
            #expect(changed.removeValues(sortedKeys: keys, token: MutationToken.next()) == keys.count)
            var model: [Int64: Int64] = [:]
            for key in Int64(128 * 128)..<n { model[key] = key }
            model[kept] = kept
            #expect(treeDifference(changed, model, removed: Array(keys.prefix(100))) == nil, "kept \(kept)")
        }
    }

    @Test("Repeated batches under one token (nodes changed in place) and under new ones, with inserts between")
    func repeatedBatchesAndInserts() {
        var rng = SplitMix64(seed: testSeed("bulkRemoveRepeated"))
        var (tree, model) = Self.makeTree(20_000, bulk: false, &rng)
        var token = MutationToken.next()
        var snapshots: [(IntTree, [Int64: Int64])] = []
        for round in 0..<40 {
            if round % 4 == 0 {
                snapshots.append((tree, model))
                token = MutationToken.next()
            }
            let pattern = Pattern.allCases[Int(rng.next() % UInt64(Pattern.allCases.count))]
            let keys = pattern == .everything ? [] : pattern.keys(of: model.keys.sorted(), &rng)
            let removed = tree.removeValues(sortedKeys: keys, token: token)
            var count = 0
            for key in keys where model.removeValue(forKey: key) != nil { count += 1 }
            #expect(removed == count, "round \(round) \(pattern)")
            for _ in 0..<Int(rng.next() % 3_000) {
                let key = Int64(rng.next() % 40_000)
                tree.updateValue(Int64(round), forKey: key, token: token)
                model[key] = Int64(round)
            }
            let problem = treeDifference(tree, model)
            #expect(problem == nil, "round \(round) \(pattern)")
        }
        for (i, snapshot) in snapshots.enumerated() {
            let problem = treeDifference(snapshot.0, snapshot.1)
            #expect(problem == nil, "snapshot \(i) changed")
        }
        // Down to empty, then grows again.
        tree.removeValues(sortedKeys: model.keys.sorted(), token: token)
        #expect(tree.isEmpty && tree.first == nil)
        tree.updateValue(1, forKey: 1, token: token)
        #expect(treeDifference(tree, [1: 1]) == nil)
    }

    @Test(
        "Removing from a tree loaded lazily from the file copies what it touches and leaves the loaded tree as it was")
    func fromLoadedTree() throws {
        var rng = SplitMix64(seed: testSeed("bulkRemoveLoaded"))
        for pattern in Pattern.allCases {
            let (tree, model) = Self.makeTree(30_000, bulk: rng.next() % 2 == 0, &rng)
            let file = FakeFile()
            let root = try #require(file.write(tree))
            let loaded = IntTree(
                fileRoot: root.offset, count: tree.count, bytes: root.bytes, store: file.store(),
                decoder: IntTree.makeDecoder())
            var changed = loaded
            let keys = pattern.keys(of: model.keys.sorted(), &rng)
            changed.removeValues(sortedKeys: keys, token: MutationToken.next())
            var expected = model
            for key in keys { expected[key] = nil }
            let problem = treeDifference(changed, expected, removed: keys)
            #expect(problem == nil, "\(pattern)")
            #expect(treeDifference(loaded, model) == nil, "the loaded tree changed: \(pattern)")
            // The changed tree written and read back is still the model.
            if let second = file.write(changed) {
                let reloaded = IntTree(
                    fileRoot: second.offset, count: changed.count, bytes: second.bytes, store: file.store(),
                    decoder: IntTree.makeDecoder())
                #expect(treeDifference(reloaded, expected) == nil, "reloaded: \(pattern)")
            } else {
                #expect(expected.isEmpty)
            }
        }
    }

    @Test("String keys (a primary-key index of strings) and primary-key indexes of mixed keys")
    func stringAndPrimaryIndexKeys() {
        var rng = SplitMix64(seed: testSeed("bulkRemoveStrings"))
        var tree = PersistentBTree<IndexKey, Int>()
        var model: [String: Int] = [:]
        let token = MutationToken.next()
        for i in 0..<3_000 {
            let key = "key-\(rng.next() % 100_000)"
            tree.updateValue(i, forKey: .string(key), token: token)
            model[key] = i
        }
        let doomed = model.keys.filter { _ in rng.next() % 3 != 0 }
        let removed = tree.removeValues(
            sortedKeys: doomed.map { IndexKey.string($0) }.sorted(), token: MutationToken.next())
        #expect(removed == doomed.count)
        for key in doomed { model[key] = nil }
        tree.checkInvariants()
        #expect(tree.count == model.count)
        #expect(tree.map(\.key) == model.keys.map { IndexKey.string($0) }.sorted())

        var index = PrimaryIndex()
        var keys: [IndexKey] = [.null]
        for i in 0..<2_000 { keys.append(i % 2 == 0 ? .int(Int64(i)) : .string("s\(i)")) }
        for (i, key) in keys.enumerated() {
            index.updateValue(
                PrimaryKeyEntry(object: ObjectKey(Int64(i)), location: RowLocation(offset: 0, length: 1)),
                forKey: key, token: token)
        }
        // Unsorted, with a repeat and a key it lacks.
        let chosen = keys.filter { _ in rng.next() % 2 == 0 }.shuffled(using: &rng)
        let gone = index.removeValues(forKeys: chosen + chosen.prefix(1) + [.int(-5)], token: MutationToken.next())
        #expect(gone == chosen.count)
        #expect(index.count == keys.count - chosen.count)
        let chosenSet = Set(chosen)
        for key in keys { #expect((index.value(forKey: key) == nil) == chosenSet.contains(key), "\(key)") }
    }
}

@Suite("Batch deletes in the engine")
struct BatchDeleteTests {
    private static let owner = TableSchema(
        "Owner",
        columns: [
            ColumnSchema("id", ColumnType(.int64), primaryKey: true),
            ColumnSchema("best", ColumnType(.link, optional: true), linkTarget: "Item"),
        ])
    private static let item = TableSchema(
        "Item",
        columns: [
            ColumnSchema("id", ColumnType(.int64), primaryKey: true),
            ColumnSchema("tag", ColumnType(.int64), indexed: true),
            ColumnSchema("owner", ColumnType(.link, optional: true), linkTarget: "Owner"),
        ])

    @Test(
        "Batch deletes of ranges and scattered keys agree with a model (rows, primary keys, the index, backlinks, the change set), also when rows are linked to, and after reopening",
        arguments: StorageKind.allCases)
    func agreesWithModel(_ kind: StorageKind) async throws {
        try await kind.run {
            var rng = SplitMix64(seed: testSeed("batchDeleteAgreesWithModel"))
            let fs = MemoryFileSystem()
            var engine = try await memoryEngine(fs, durability: .none)
            let n = 6_000
            var model: [ObjectKey: [Value]] = [:]
            let (tables, _) = try await engine.write { txn in
                let ids = try txn.setSchema([Self.owner, Self.item])
                let (owners, items) = (ids[0], ids[1])
                for i in 0..<5 { try txn.insert(owners, [.int(Int64(i)), .null]) }
                for i in 0..<n {
                    let row: [Value] = [
                        .int(Int64(i * 3)), .int(Int64(i % 7)), i % 4 == 0 ? .null : .link(ObjectKey(Int64(i % 5))),
                    ]
                    model[try txn.insert(items, row)] = row
                }
                return (owners, items)
            }
            let (owners, items) = tables
            for round in 0..<12 {
                if round == 6 {
                    // Reopened: the trees' nodes are loaded from the checkpoint as the deletes reach them.
                    await engine.close()
                    engine = try await memoryEngine(fs, durability: .none)
                }
                let txn = try await engine.beginWrite()
                var working = model
                let keys = working.keys.sorted()
                var linked: ObjectKey? = nil
                if round % 4 == 3, let target = keys.randomElement(using: &rng) {
                    // A row linked to: the batch goes row by row, and the owner's link is cleared.
                    try txn.update(owners, ObjectKey(0), [(1, .link(target))])
                    linked = target
                }
                var chosen: [ObjectKey]
                switch round % 3 {
                case 0:
                    let start = Int(rng.next() % UInt64(max(keys.count, 1)))
                    chosen = Array(keys[start..<min(keys.count, start + Int(rng.next() % 2_500) + 1)])
                case 1: chosen = keys.filter { _ in rng.next() % 4 == 0 }
                default: chosen = keys.filter { ($0.rawValue + Int64(round) * 17) % 100 < 50 }
                }
                if let linked, !chosen.contains(linked) { chosen.append(linked) }
                let given = chosen.shuffled(using: &rng) + chosen.prefix(3) + [ObjectKey(Int64(n + 10))]
                #expect(try txn.delete(items, keys: given) == chosen.count, "round \(round)")
                for key in chosen { working[key] = nil }
                let recorded = txn.changes.tables[items]
                #expect(Array(recorded?.deleted ?? KeyRangeSet()) == chosen.sorted(), "round \(round): deleted rows")
                #expect(recorded?.modified.isEmpty ?? true, "round \(round)")
                if linked != nil {
                    #expect(try txn.values(owners, ObjectKey(0))?[1] == .null, "round \(round): the link was cleared")
                }
                try checkItems(txn, items, owners: owners, tags: 7, linkColumn: 2, working)
                if round % 5 == 4 {
                    txn.rollback()
                } else {
                    try await txn.commit()
                    model = working
                }
                try checkItems(try engine.snapshot(), items, owners: owners, tags: 7, linkColumn: 2, model)
            }
            await engine.close()
            engine = try await memoryEngine(fs, durability: .none)
            try checkItems(try engine.snapshot(), items, owners: owners, tags: 7, linkColumn: 2, model)
            await engine.close()
        }
    }
}
