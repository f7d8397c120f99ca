import ActorStoreTestSupport
import Testing

@testable import ActorStorePersistence

private typealias IntTree = PersistentBTree<Int64, Int64>

@Suite("Appending at the B+tree's right edge")
struct BTreeAppendTests {
    /// A tree of `n` entries (keys 0, 2, 4, …), built by inserts in random order or by bulk load.
    private func tree(_ n: Int, bulk: Bool, _ rng: inout SplitMix64, token: MutationToken) -> IntTree {
        let keys = (0..<Int64(n)).map { $0 * 2 }
        if bulk { return IntTree(sortedUniqueElements: keys.map { ($0, -$0) }, token: token) }
        var tree = IntTree()
        var order = keys
        for i in order.indices.reversed() { order.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        for key in order { tree.updateValue(-key, forKey: key, token: token) }
        return tree
    }

    /// Appending runs of every length that matters (empty, one, around a leaf, around an internal node,
    /// thousands) to trees of every shape gives the tree's entries plus the run's, in order, with every
    /// invariant holding (node fill, separators, subtree counts); a copy taken before is unchanged.
    @Test func appendMatchesTheEntriesAndKeepsInvariants() {
        var rng = SplitMix64(seed: 24)
        let sizes = [0, 1, 2, 63, 64, 127, 128, 129, 200, 8_192, 8_193, 16_500]
        let runs = [0, 1, 2, 63, 64, 65, 127, 128, 129, 300, 8_192, 8_320, 17_000]
        for size in sizes {
            for run in runs {
                for bulk in [false, true] {
                    let token = MutationToken.next()
                    var tree = tree(size, bulk: bulk, &rng, token: token)
                    let before = tree
                    let beforeEntries = Array(before)
                    let start = Int64(size) * 2 + Int64(rng.next() % 3)
                    let added = (0..<Int64(run)).map { (key: start + $0 * 3, value: $0) }
                    // A second token half of the time: every spine node must then be copied, not changed.
                    tree.append(sortedElements: added, token: rng.next() % 2 == 0 ? token : MutationToken.next())
                    tree.checkInvariants()
                    let entries = Array(tree)
                    #expect(entries.count == size + run, "size \(size) run \(run) bulk \(bulk)")
                    #expect(entries.map(\.key) == beforeEntries.map(\.key) + added.map(\.key))
                    #expect(entries.map(\.value) == beforeEntries.map(\.value) + added.map(\.value))
                    #expect(tree.count == size + run)
                    before.checkInvariants()
                    #expect(Array(before).map(\.key) == beforeEntries.map(\.key), "the copy taken before changed")
                    if let last = added.last { #expect(tree.value(forKey: last.key) == last.value) }
                }
            }
        }
    }

    /// Appending many short runs, one after another, with the tree shared in between, stays equal to
    /// inserting the same keys one by one, and the tree keeps working for inserts and removals after.
    @Test func repeatedAppendsThenOrdinaryMutations() {
        var rng = SplitMix64(seed: 7)
        let token = MutationToken.next()
        var tree = IntTree()
        var model: [Int64] = []
        var next: Int64 = 0
        var snapshots: [(IntTree, Int)] = []
        for round in 0..<400 {
            let run = Int(rng.next() % 300)
            let added = (0..<run).map { i -> IntTree.Element in
                next += Int64(rng.next() % 4) + 1
                return (next, Int64(i))
            }
            tree.append(sortedElements: added, token: round % 3 == 0 ? MutationToken.next() : token)
            model += added.map(\.key)
            if round % 50 == 0 { snapshots.append((tree, model.count)) }
        }
        tree.checkInvariants()
        #expect(Array(tree).map(\.key) == model)
        for (snapshot, count) in snapshots {
            snapshot.checkInvariants()
            #expect(Array(snapshot).map(\.key) == Array(model.prefix(count)))
        }
        // Ordinary mutations after the appends.
        for _ in 0..<2_000 {
            let key = model.remove(at: Int(rng.next() % UInt64(model.count)))
            tree.removeValue(forKey: key, token: token)
        }
        let present = Set(model)
        for key in stride(from: Int64(1), to: 3_000, by: 7) where !present.contains(key) {
            tree.updateValue(0, forKey: key, token: token)
            model.append(key)
        }
        tree.checkInvariants()
        #expect(Array(tree).map(\.key) == model.sorted())
    }
}
