import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

// `SplitMix64` (a seedable PRNG) comes from the TestSupport target; `testSeed(_:)` (reads `ACTORSTORE_SEED`,
// else picks and prints a seed) from this target's support file.

private typealias Tree = PersistentBTree<Int64, Int>

/// A committed tree value together with the dictionary it must keep equalling.
private struct CommittedVersion {
    var tree: Tree
    var model: [Int64: Int]
}

/// Compares `tree` with `model` completely and returns a description of the first difference, or `nil`:
/// count, every entry (iterated in strictly increasing key order, each present in `model` with the same
/// value), select and rank for every `stride`-th position, first and last. Also checks the tree's
/// structural invariants (which trap). Needs no sorting, so it stays fast in debug builds.
private func fullDifference(_ tree: Tree, _ model: [Int64: Int], stride: Int = 1) -> String? {
    tree.checkInvariants()
    if tree.count != model.count { return "count \(tree.count), expected \(model.count)" }
    var position = 0
    var previous: Int64? = nil
    for (key, value) in tree {
        if let previous, previous >= key { return "keys \(previous) and \(key) out of order at \(position)" }
        if model[key] != value {
            return "entry (\(key), \(value)) at \(position), expected \(String(describing: model[key]))"
        }
        if position % stride == 0 {
            let element = tree.element(at: position)
            if element.key != key || element.value != value { return "element(at: \(position)) is \(element)" }
            let offset = tree.offset(of: key)
            if offset != position { return "offset(of: \(key)) is \(String(describing: offset)), expected \(position)" }
        }
        previous = key
        position += 1
    }
    if position != model.count { return "iteration yields \(position) entries, expected \(model.count)" }
    let minimum = model.keys.min()
    let maximum = model.keys.max()
    if tree.first?.key != minimum || tree.first.map({ model[$0.key] == $0.value }) == false {
        return "first is \(String(describing: tree.first)), expected key \(String(describing: minimum))"
    }
    if tree.last?.key != maximum || tree.last.map({ model[$0.key] == $0.value }) == false {
        return "last is \(String(describing: tree.last)), expected key \(String(describing: maximum))"
    }
    return nil
}

extension Array {
    /// The first index whose element satisfies `belongs`, which must hold for a suffix of the array.
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

@Suite("PersistentBTree")
struct BTreeTests {
    /// Random inserts, overwrites, removes, commits and rollbacks, checked against a `Dictionary` after
    /// every step and in full periodically, while older committed tree values (snapshots) must stay
    /// exactly as they were: the proof that mutations copy shared paths instead of writing them.
    @Test func modelBasedRandomOperations() {
        let seed = testSeed("modelBasedRandomOperations")
        var random = SplitMix64(seed: seed)
        let keySpace: UInt64 = 40_000
        var tree = Tree()
        var model: [Int64: Int] = [:]
        var token = MutationToken.next()
        var snapshots: [CommittedVersion] = [CommittedVersion(tree: tree, model: model)]
        var commits = 0
        var rollbacks = 0
        var maxCount = 0
        let steps = 220_000
        for step in 0..<steps {
            // Alternate growing and shrinking phases so the tree passes through every depth repeatedly.
            let insertPercent: UInt64 = (step / 25_000) % 2 == 0 ? 72 : 28
            let key = Int64(random.next() % keySpace)
            let roll = random.next() % 1000
            if roll < 2 {
                snapshots.append(CommittedVersion(tree: tree, model: model))
                if snapshots.count > 4 { snapshots.removeFirst() }
                token = MutationToken.next()
                commits += 1
            } else if roll < 3 {
                tree = snapshots[snapshots.count - 1].tree
                model = snapshots[snapshots.count - 1].model
                token = MutationToken.next()
                rollbacks += 1
            } else if random.next() % 100 < insertPercent {
                let value = Int(truncatingIfNeeded: random.next())
                let old = tree.updateValue(value, forKey: key, token: token)
                let expectedOld = model.updateValue(value, forKey: key)
                if old != expectedOld {
                    Issue.record(
                        "seed \(seed) step \(step): updateValue(\(key)) returned \(String(describing: old)), expected \(String(describing: expectedOld))"
                    )
                    return
                }
            } else {
                // Both removals, each also with keys that are not there (removeExistingValue may then copy
                // the path, but must change no entry, here or in a snapshot).
                let old =
                    roll % 2 == 0
                    ? tree.removeValue(forKey: key, token: token) : tree.removeExistingValue(forKey: key, token: token)
                let expectedOld = model.removeValue(forKey: key)
                if old != expectedOld {
                    Issue.record(
                        "seed \(seed) step \(step): removeValue(\(key)) returned \(String(describing: old)), expected \(String(describing: expectedOld))"
                    )
                    return
                }
            }
            if tree.count != model.count || tree.value(forKey: key) != model[key] {
                Issue.record(
                    "seed \(seed) step \(step): count \(tree.count) vs \(model.count), key \(key): \(String(describing: tree.value(forKey: key))) vs \(String(describing: model[key]))"
                )
                return
            }
            maxCount = max(maxCount, tree.count)
            if step % 4_000 == 3_999 {
                if let difference = fullDifference(tree, model, stride: 29) {
                    Issue.record("seed \(seed) step \(step): \(difference)")
                    return
                }
            }
            if step % 20_000 == 19_999 {
                for (number, snapshot) in snapshots.enumerated() {
                    if let difference = fullDifference(snapshot.tree, snapshot.model, stride: 1_009) {
                        Issue.record("seed \(seed) step \(step): snapshot \(number) changed: \(difference)")
                        return
                    }
                }
            }
        }
        #expect(snapshots.count >= 3)
        #expect(commits > 100 && rollbacks > 50)
        #expect(maxCount > 10_000, "the tree should grow to three levels")
        let final = fullDifference(tree, model)
        #expect(final == nil, "seed \(seed): \(final ?? "")")
        for snapshot in snapshots {
            let difference = fullDifference(snapshot.tree, snapshot.model, stride: 7)
            #expect(difference == nil, "seed \(seed): \(difference ?? "")")
        }
    }

    /// The same model check with `String` keys, which take the binary-search path (not bitwise-copyable)
    /// and exercise reference-counted keys through splits, shifts and merges.
    @Test func modelBasedStringKeys() {
        let seed = testSeed("modelBasedStringKeys")
        var random = SplitMix64(seed: seed)
        var tree = PersistentBTree<String, String>()
        var model: [String: String] = [:]
        var token = MutationToken.next()
        var snapshot = (tree: tree, model: model)
        for step in 0..<40_000 {
            let key = "key-\(random.next() % 6_000)"
            let insert = random.next() % 100 < ((step / 10_000) % 2 == 0 ? 75 : 30)
            if random.next() % 1000 == 0 {
                snapshot = (tree, model)
                token = MutationToken.next()
            }
            if insert {
                let value = "value-\(step)"
                #expect(tree.updateValue(value, forKey: key, token: token) == model.updateValue(value, forKey: key))
            } else {
                #expect(tree.removeValue(forKey: key, token: token) == model.removeValue(forKey: key))
            }
            if step % 5_000 == 4_999 {
                tree.checkInvariants()
                #expect(tree.map(\.key) == model.keys.sorted(), "seed \(seed)")
                #expect(tree.map(\.value) == model.sorted { $0.key < $1.key }.map(\.value), "seed \(seed)")
                #expect(snapshot.tree.map(\.key) == snapshot.model.keys.sorted(), "seed \(seed)")
                for (key, value) in model.prefix(200) {
                    #expect(tree.value(forKey: key) == value)
                    #expect(tree.element(at: tree.offset(of: key) ?? -1).key == key)
                }
            }
        }
    }

    /// `IndexKey` trees search `.int` keys by case and integer in place (not through `<`): lookups, rank,
    /// floor and range scans must agree with a sorted array under `<`, with `.null` before and other cases
    /// after the integers, and for keys of every case, present or not.
    @Test func indexKeyIntegerSearchMatchesComparable() {
        let seed = testSeed("indexKeyIntegerSearchMatchesComparable")
        var random = SplitMix64(seed: seed)
        var tree = PersistentBTree<IndexKey, Int>()
        var model: [IndexKey: Int] = [:]
        let token = MutationToken.next()
        func randomKey() -> IndexKey {
            switch random.next() % 10 {
            case 0: .null
            case 1: .double(Double(Int64(bitPattern: random.next() % 2000) - 1000) / 4)
            case 2: .string("s\(random.next() % 500)")
            case 3: .uuid(random.next() % 50, random.next())
            case 4: .objectId(random.next() % 50, UInt32(truncatingIfNeeded: random.next()))
            default:
                // Around zero and at the extremes, so that negative keys and overflow-free comparisons count.
                switch random.next() % 20 {
                case 0: .int(.min + Int64(random.next() % 3))
                case 1: .int(.max - Int64(random.next() % 3))
                default: .int(Int64(random.next() % 6_000) - 3_000)
                }
            }
        }
        for step in 0..<12_000 {
            let key = randomKey()
            if random.next() % 4 == 0 {
                #expect(tree.removeValue(forKey: key, token: token) == model.removeValue(forKey: key))
            } else {
                #expect(tree.updateValue(step, forKey: key, token: token) == model.updateValue(step, forKey: key))
            }
        }
        tree.checkInvariants()
        let sorted = model.keys.sorted()
        #expect(tree.map(\.key) == sorted, "seed \(seed)")
        for _ in 0..<4_000 {
            let probe = randomKey()
            #expect(tree.value(forKey: probe) == model[probe], "seed \(seed), \(probe)")
            #expect(tree.contains(probe) == (model[probe] != nil), "seed \(seed), \(probe)")
            let below = sorted.partitioningIndex { !($0 < probe) }
            #expect(tree.offset(of: probe) == (model[probe] != nil ? below : nil), "seed \(seed), \(probe)")
            let atOrBelow = sorted.partitioningIndex { probe < $0 }
            #expect(tree.floor(probe)?.key == (atOrBelow > 0 ? sorted[atOrBelow - 1] : nil), "seed \(seed)")
            var first: IndexKey?
            tree.forEach(from: probe, inclusive: true) { key, _ in
                first = key
                return false
            }
            #expect(first == (below < sorted.count ? sorted[below] : nil), "seed \(seed), \(probe)")
        }
        for key in [IndexKey.int(.min), .int(.max), .int(0), .null] {
            #expect(tree.value(forKey: key) == model[key])
        }
    }

    /// Object-key lookups guess a key's slot in its leaf from the leaf's first key (object keys are
    /// consecutive unless some were removed): checked with dense keys, with gaps that shift every later key
    /// of a leaf, and with keys far apart and at the extremes (where the guess's subtraction wraps).
    @Test func objectKeyLookupsWithDenseAndSparseKeys() {
        let seed = testSeed("objectKeyLookupsWithDenseAndSparseKeys")
        var random = SplitMix64(seed: seed)
        var tree = PersistentBTree<ObjectKey, Int>()
        var model: [Int64: Int] = [:]
        let token = MutationToken.next()
        for key in Int64(0)..<20_000 {
            tree.updateValue(Int(key) * 3, forKey: ObjectKey(key), token: token)
            model[key] = Int(key) * 3
        }
        func check(_ probes: [Int64], _ stage: String) {
            for probe in probes {
                #expect(tree.value(forKey: ObjectKey(probe)) == model[probe], "seed \(seed), \(stage), key \(probe)")
            }
        }
        let extremes: [Int64] = [.min, .min + 1, -1, 20_000, 1 << 40, .max - 1, .max]
        check(Array(-10..<20_010) + extremes, "dense")
        // Gaps: every later key of a leaf now sits before the slot its distance from the first key names.
        for _ in 0..<3_000 {
            let key = Int64(random.next() % 20_000)
            #expect(tree.removeValue(forKey: ObjectKey(key), token: token) == model.removeValue(forKey: key))
        }
        check(Array(-10..<20_010) + extremes, "with gaps")
        // Keys far apart, negative and at the extremes.
        for key in extremes + [-5_000, 1 << 20, 1 << 50] {
            tree.updateValue(7, forKey: ObjectKey(key), token: token)
            model[key] = 7
        }
        tree.checkInvariants()
        check(Array(-10..<20_010) + extremes + [-5_000, 1 << 20, 1 << 50, -4_999, (1 << 50) + 1], "sparse")
    }

    @Test func emptyTree() {
        var tree = Tree()
        #expect(tree.isEmpty && tree.count == 0)
        #expect(tree.value(forKey: 1) == nil && !tree.contains(1))
        #expect(tree.first == nil && tree.last == nil && tree.floor(5) == nil && tree.offset(of: 5) == nil)
        #expect(Array(tree).isEmpty)
        var visited = 0
        tree.forEach(from: nil, inclusive: true) { _, _ in
            visited += 1
            return true
        }
        tree.forEach(from: 3, inclusive: false) { _, _ in
            visited += 1
            return true
        }
        #expect(visited == 0)
        #expect(tree.removeValue(forKey: 1, token: MutationToken.next()) == nil)
        tree.checkInvariants()
        let bulk = Tree(sortedUniqueElements: [(Int64, Int)](), token: MutationToken.next())
        #expect(bulk.isEmpty && bulk.root == nil)
        bulk.checkInvariants()
    }

    @Test func bulkLoadMatchesIncrementalInsert() {
        for size in [1, 2, 31, 32, 33, 63, 64, 65, 96, 97, 129, 2_047, 2_048, 2_049, 4_096 + 7, 70_000] {
            let elements = (0..<size).map { (Int64($0) * 3, $0) }
            let bulk = Tree(sortedUniqueElements: elements, token: MutationToken.next())
            var incremental = Tree()
            let token = MutationToken.next()
            for (key, value) in elements.reversed() { incremental.updateValue(value, forKey: key, token: token) }
            bulk.checkInvariants()
            incremental.checkInvariants()
            #expect(bulk.count == size)
            #expect(bulk.elementsEqual(incremental) { $0 == $1 }, "size \(size)")
            #expect(bulk.element(at: size - 1).key == Int64(size - 1) * 3)
            #expect(bulk.offset(of: Int64(size / 2) * 3) == size / 2)
            #expect(bulk.value(forKey: 1) == nil)
            // The bulk-loaded tree is owned by its token and keeps working under new ones.
            var grown = bulk
            grown.updateValue(-1, forKey: 1, token: MutationToken.next())
            grown.checkInvariants()
            #expect(grown.count == size + 1 && bulk.count == size && bulk.value(forKey: 1) == nil)
        }
        // A lazy sequence of tuples works too.
        let lazy = Tree(sortedUniqueElements: (0..<1_000).lazy.map { (Int64($0), $0) }, token: MutationToken.next())
        #expect(lazy.count == 1_000 && lazy.last?.key == 999)
    }

    @Test func forEachFromBounds() {
        let tree = Tree(sortedUniqueElements: (0..<5_000).map { (Int64($0) * 2, $0) }, token: MutationToken.next())
        func keys(from bound: Int64?, inclusive: Bool, limit: Int = .max) -> [Int64] {
            var result: [Int64] = []
            tree.forEach(from: bound, inclusive: inclusive) { key, value in
                #expect(Int64(value) * 2 == key)
                result.append(key)
                return result.count < limit
            }
            return result
        }
        #expect(keys(from: nil, inclusive: true) == (0..<5_000).map { Int64($0) * 2 })
        #expect(keys(from: 100, inclusive: true, limit: 3) == [100, 102, 104])
        #expect(keys(from: 100, inclusive: false, limit: 3) == [102, 104, 106])
        #expect(keys(from: 101, inclusive: true, limit: 2) == [102, 104])
        #expect(keys(from: 101, inclusive: false, limit: 2) == [102, 104])
        #expect(keys(from: -50, inclusive: true, limit: 2) == [0, 2])
        #expect(keys(from: 9_998, inclusive: true) == [9_998])
        #expect(keys(from: 9_998, inclusive: false).isEmpty)
        #expect(keys(from: 20_000, inclusive: true).isEmpty)
        #expect(keys(from: 0, inclusive: false).count == 4_999)
        // Every start position, including those at separators between nodes.
        for start in Swift.stride(from: Int64(-1), through: 10_000, by: 37) {
            let atOrAbove = start <= 0 ? 0 : start + start % 2
            let above = start < 0 ? 0 : (start % 2 == 0 ? start + 2 : start + 1)
            #expect(keys(from: start, inclusive: true, limit: 1).first == (atOrAbove <= 9_998 ? atOrAbove : nil))
            #expect(keys(from: start, inclusive: false, limit: 1).first == (above <= 9_998 ? above : nil))
        }
        // Early stop after exactly one call, and errors propagate.
        var calls = 0
        tree.forEach(from: nil, inclusive: true) { _, _ in
            calls += 1
            return false
        }
        #expect(calls == 1)
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try tree.forEach(from: 10, inclusive: true) { key, _ in
                if key == 20 { throw Stop() }
                return true
            }
        }
    }

    @Test func floorAndFirstLast() {
        var tree = Tree(sortedUniqueElements: (1...3_000).map { (Int64($0) * 10, $0) }, token: MutationToken.next())
        #expect(tree.floor(5) == nil)
        #expect(tree.floor(10)?.key == 10)
        #expect(tree.floor(19)?.key == 10)
        #expect(tree.floor(29_999)?.key == 29_990)
        #expect(tree.floor(1_000_000)?.key == 30_000)
        #expect(tree.first?.key == 10 && tree.last?.key == 30_000)
        // Remove the smallest keys of many leaves: separators become stale lower bounds, and the floor
        // of a key just above a separator must come from the left neighbour.
        let token = MutationToken.next()
        var model = Set((1...3_000).map { Int64($0) * 10 })
        for key in Swift.stride(from: Int64(10), through: 30_000, by: 10) where key % 640 < 320 {
            tree.removeValue(forKey: key, token: token)
            model.remove(key)
        }
        tree.checkInvariants()
        let sorted = model.sorted()
        for probe in Swift.stride(from: Int64(0), through: 30_010, by: 7) {
            #expect(tree.floor(probe)?.key == sorted.last { $0 <= probe }, "floor(\(probe))")
        }
        #expect(tree.first?.key == sorted.first && tree.last?.key == sorted.last)
    }

    @Test func iteratorAndValueSemantics() {
        var tree = Tree()
        let token = MutationToken.next()
        for key in 0..<10_000 { tree.updateValue(key, forKey: Int64(key), token: token) }
        // An iterator keeps seeing the tree as it was, even when the tree is mutated in place with the
        // same token while it runs.
        var iterator = tree.makeIterator()
        var seen: [Int64] = []
        while let (key, _) = iterator.next() {
            seen.append(key)
            if key % 3 == 0 { tree.removeValue(forKey: key, token: token) }
            tree.updateValue(-1, forKey: key + 20_000, token: token)
        }
        #expect(seen == (0..<10_000).map(Int64.init))
        #expect(iterator.next() == nil)
        tree.checkInvariants()
        #expect(tree.count == 10_000 - 3_334 + 10_000)
        // A copy taken mid-transaction is a value: later mutations under the same token do not leak in.
        let copy = tree
        for key in 0..<5_000 { tree.removeValue(forKey: Int64(key), token: token) }
        tree.updateValue(42, forKey: 20_001, token: token)
        copy.checkInvariants()
        #expect(copy.count == 16_666 && copy.value(forKey: 1) == 1 && copy.value(forKey: 20_001) == -1)
        #expect(tree.value(forKey: 1) == nil && tree.value(forKey: 20_001) == 42)
        #expect(Array(copy).count == 16_666 && copy.underestimatedCount == 16_666)
    }

    /// Nodes owned by the token are changed in place; others are copied once and then owned. Node
    /// identities are compared through `ObjectIdentifier` so the test holds no extra references (a held
    /// reference would itself force a copy, by design). A copy is always allocated while the original is
    /// alive, so a copied node never has the original's identifier.
    @Test func ownerTokensControlCopying() throws {
        var tree = Tree()
        let first = MutationToken.next()
        for key in 0..<5_000 { tree.updateValue(key, forKey: Int64(key), token: first) }
        func identity(_ node: Tree.Node?) -> ObjectIdentifier? { node.map(ObjectIdentifier.init) }
        func leafIdentity(_ tree: Tree, _ key: Int64) -> ObjectIdentifier {
            var node = tree.root!
            while !node.isLeaf { node = node.children[node.childIndex(for: key)] }
            return ObjectIdentifier(node)
        }
        let rootID = identity(tree.root)
        let leafID = leafIdentity(tree, 10)
        // Same token, nothing else referring to the nodes: the same objects are mutated.
        #expect(tree.updateValue(-10, forKey: 10, token: first) == 10)
        #expect(identity(tree.root) == rootID && leafIdentity(tree, 10) == leafID)
        #expect(tree.removeValue(forKey: 11, token: first) == 11)
        #expect(identity(tree.root) == rootID && leafIdentity(tree, 10) == leafID)

        // A second tree value shares the nodes: the same token now copies the path instead.
        let committed = tree
        #expect(tree.updateValue(-20, forKey: 20, token: first) == 20)
        #expect(identity(tree.root) != rootID && leafIdentity(tree, 20) != leafID)
        #expect(committed.value(forKey: 20) == 20 && identity(committed.root) == rootID)

        // A new token copies the path once, then mutates its copies in place.
        let second = MutationToken.next()
        tree.updateValue(1, forKey: 4_000, token: second)
        let copiedRootID = identity(tree.root)
        let copiedLeafID = leafIdentity(tree, 4_000)
        #expect(tree.root?.owner == second.rawValue && committed.root?.owner == first.rawValue)
        tree.updateValue(2, forKey: 4_001, token: second)
        #expect(identity(tree.root) == copiedRootID && leafIdentity(tree, 4_000) == copiedLeafID)
        // Untouched subtrees stay shared between the versions.
        #expect(leafIdentity(tree, 2_000) == leafIdentity(committed, 2_000))
        #expect(committed.count == 4_999 && committed.value(forKey: 4_000) == 4_000)
        committed.checkInvariants()
        tree.checkInvariants()
        // Removing a missing key copies nothing.
        var other = committed
        #expect(other.removeValue(forKey: -5, token: MutationToken.next()) == nil)
        #expect(identity(other.root) == rootID)
    }

    @Test func removalDownToEmptyAndRegrow() {
        for order in ["ascending", "descending", "random"] {
            var random = SplitMix64(seed: 99)
            var keys = (0..<6_000).map(Int64.init)
            var tree = Tree(sortedUniqueElements: keys.map { ($0, Int($0)) }, token: MutationToken.next())
            switch order {
            case "descending": keys.reverse()
            case "random": keys.shuffle(using: &random)
            default: break
            }
            var token = MutationToken.next()
            for (number, key) in keys.enumerated() {
                #expect(tree.removeValue(forKey: key, token: token) == Int(key))
                if number % 1_000 == 0 {
                    tree.checkInvariants()
                    token = MutationToken.next()
                }
            }
            #expect(tree.isEmpty && tree.root == nil && tree.first == nil, "\(order)")
            tree.checkInvariants()
            for key in keys.reversed() { tree.updateValue(Int(key), forKey: key, token: token) }
            tree.checkInvariants()
            #expect(tree.count == 6_000 && tree.map(\.key) == (0..<6_000).map(Int64.init), "\(order)")
        }
    }

    @Test func sequentialInsertsFillNodes() {
        var tree = Tree()
        let token = MutationToken.next()
        for key in 0..<100_000 { tree.updateValue(key, forKey: Int64(key), token: token) }
        tree.checkInvariants()
        var leaves = 0
        func countLeaves(_ node: Tree.Node) {
            if node.isLeaf {
                leaves += 1
            } else {
                for index in 0..<node.count { countLeaves(node.children[index]) }
            }
        }
        countLeaves(tree.root!)
        // Appends shift into the left neighbour before splitting, so leaves end up nearly full.
        #expect(leaves < 100_000 / (BTreeLayout.fanout * 3 / 4))
    }

    /// A secondary index: composite keys (value, objectKey), visited by value with a range scan.
    @Test func compositeKeyRangeScan() {
        struct IndexKey: Comparable, Sendable {
            var value: Int
            var objectKey: Int64
            static func < (lhs: Self, rhs: Self) -> Bool { (lhs.value, lhs.objectKey) < (rhs.value, rhs.objectKey) }
        }
        var index = PersistentBTree<IndexKey, Void>()
        let token = MutationToken.next()
        var random = SplitMix64(seed: 7)
        var expected: [Int: [Int64]] = [:]
        for objectKey in Int64(0)..<20_000 {
            let value = Int(random.next() % 50)
            index.updateValue((), forKey: IndexKey(value: value, objectKey: objectKey), token: token)
            expected[value, default: []].append(objectKey)
        }
        index.checkInvariants()
        func objects(withValue value: Int) -> [Int64] {
            var result: [Int64] = []
            index.forEach(from: IndexKey(value: value, objectKey: .min), inclusive: true) { key, _ in
                guard key.value == value else { return false }
                result.append(key.objectKey)
                return true
            }
            return result
        }
        for value in 0..<50 { #expect(objects(withValue: value) == expected[value, default: []]) }
        #expect(objects(withValue: 50).isEmpty && objects(withValue: -1).isEmpty)
        // Rank of the first entry with a value = number of entries with smaller values.
        let smaller = (0..<10).reduce(0) { $0 + expected[$1, default: []].count }
        let firstOfTen = IndexKey(value: 10, objectKey: expected[10]![0])
        #expect(index.offset(of: firstOfTen) == smaller)
        #expect(index.floor(IndexKey(value: 10, objectKey: .min))?.key.value == 9)
        // Moving an object to another value: remove the old composite key, insert the new one.
        index.removeValue(forKey: firstOfTen, token: token)
        index.updateValue((), forKey: IndexKey(value: 49, objectKey: firstOfTen.objectKey), token: token)
        #expect(objects(withValue: 10) == Array(expected[10]!.dropFirst()))
        #expect(objects(withValue: 49).contains(firstOfTen.objectKey))
    }

    /// A published tree value is read from several tasks while the writer keeps mutating its own copy
    /// under a new token: the readers must see the published version only (run under TSan to check for
    /// races). Also checks that dropping every tree value frees the nodes.
    @Test func concurrentReadersOfPublishedTree() async {
        var writer = Tree(sortedUniqueElements: (0..<20_000).map { (Int64($0), $0) }, token: MutationToken.next())
        let published = writer
        weak let publishedRoot = published.root
        let readers = Task {
            await withTaskGroup(of: Bool.self) { group in
                for reader in 0..<3 {
                    group.addTask {
                        var consistent = true
                        for round in 0..<3 {
                            var expected = 0
                            for (key, value) in published {
                                consistent = consistent && key == Int64(expected) && value == expected
                                expected += 1
                            }
                            consistent = consistent && expected == 20_000
                            for key in Swift.stride(from: reader + round, to: 20_000, by: 7) {
                                consistent = consistent && published.value(forKey: Int64(key)) == key
                                consistent = consistent && published.element(at: key).key == Int64(key)
                            }
                        }
                        return consistent
                    }
                }
                var all = true
                for await consistent in group { all = all && consistent }
                return all
            }
        }
        let token = MutationToken.next()
        for key in 0..<20_000 where key % 2 == 0 {
            writer.removeValue(forKey: Int64(key), token: token)
            writer.updateValue(-key, forKey: Int64(key + 1), token: token)
        }
        writer.checkInvariants()
        #expect(await readers.value)
        #expect(writer.count == 10_000 && writer.first?.value == -0 && published.count == 20_000)
        #expect(publishedRoot != nil)
        _ = consume published
        writer = Tree()
        #expect(publishedRoot == nil, "nodes must be freed once no tree value refers to them")
    }

    @Test func tokensAreUniqueAndNonZero() async {
        let tokens = await withTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<1_000).map { _ in MutationToken.next().rawValue } }
            }
            var all: [UInt64] = []
            for await batch in group { all += batch }
            return all
        }
        #expect(Set(tokens).count == 4_000)
        #expect(!tokens.contains(0))
    }
}
