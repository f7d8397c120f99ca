extension PersistentBTree {
    /// A tree holding `elements`, whose keys must be strictly increasing, built bottom-up in one pass:
    /// leaves are filled completely (except that the last two of a level share their elements evenly when
    /// the last would be underfull), then each level of internal nodes is built over the one below.
    /// All nodes are owned by `token`, so the caller may keep mutating the tree in place with it.
    ///
    /// Used by compaction to rebuild a table's row index in one ordered pass. Full nodes make the tree as
    /// shallow and compact as possible; the first insert into a full leaf splits it.
    ///
    /// - Precondition: keys strictly increasing (checked; a violation traps).
    /// - Complexity: O(n), one comparison per element, about n / fanout node allocations.
    package init<S: Sequence>(sortedUniqueElements elements: S, token: MutationToken)
    where S.Element == (Key, Value) {
        self.init()
        let owner = token.rawValue
        var leaves: ContiguousArray<Node> = []
        var leaf = Node.make(isLeaf: true, owner: owner)
        var previousKey: Key? = nil
        var total = 0
        for (key, value) in elements {
            if let previousKey, !(previousKey < key) {
                fatalError(
                    "PersistentBTree(sortedUniqueElements:): keys are not strictly increasing at element \(total)")
            }
            if leaf.count == Self.maxFill {
                leaves.append(leaf)
                leaf = Node.make(isLeaf: true, owner: owner)
            }
            (leaf.keys + leaf.count).initialize(to: key)
            (leaf.values + leaf.count).initialize(to: value)
            leaf.count &+= 1
            previousKey = key
            total &+= 1
        }
        guard total > 0 else { return }
        if let previous = leaves.last, leaf.count < Self.minFill {
            // Even out the last two leaves: the previous one is full, so both end up >= minFill.
            let moved = (previous.count &- leaf.count) / 2
            let start = previous.count &- moved
            (leaf.keys + moved).moveInitialize(from: leaf.keys, count: leaf.count)
            (leaf.values + moved).moveInitialize(from: leaf.values, count: leaf.count)
            leaf.keys.moveInitialize(from: previous.keys + start, count: moved)
            leaf.values.moveInitialize(from: previous.values + start, count: moved)
            previous.count = start
            leaf.count &+= moved
        }
        leaves.append(leaf)
        count = total

        var level = leaves
        var minimums = ContiguousArray(level.map { $0.keys[0] })
        var entryCounts = ContiguousArray(level.map { $0.count })
        while level.count > 1 {
            var parents: ContiguousArray<Node> = []
            var parentMinimums: ContiguousArray<Key> = []
            var parentCounts: ContiguousArray<Int> = []
            var start = 0
            for size in Self.groupSizes(level.count) {
                let parent = Node.make(isLeaf: false, owner: owner)
                var entries = 0
                for offset in 0..<size {
                    let child = start &+ offset
                    (parent.children + offset).initialize(to: level[child])
                    (parent.subtreeCounts + offset).initialize(to: entryCounts[child])
                    if offset > 0 { (parent.keys + (offset &- 1)).initialize(to: minimums[child]) }
                    entries &+= entryCounts[child]
                }
                parent.count = size
                parents.append(parent)
                parentMinimums.append(minimums[start])
                parentCounts.append(entries)
                start &+= size
            }
            level = parents
            minimums = parentMinimums
            entryCounts = parentCounts
        }
        root = level[0]
    }

    /// How to group `children` nodes (more than one) under parents: as many full parents as possible,
    /// then the rest, with the last two evened out when the rest would be below ``minFill``.
    ///
    /// - Complexity: O(children / fanout).
    private static func groupSizes(_ children: Int) -> [Int] {
        let groups = (children &+ maxFill &- 1) / maxFill
        var sizes = [Int](repeating: maxFill, count: groups)
        let rest = children &- (groups &- 1) &* maxFill
        sizes[groups &- 1] = rest
        if groups > 1 && rest < minFill {
            let pair = maxFill &+ rest
            sizes[groups &- 2] = pair &- pair / 2
            sizes[groups &- 1] = pair / 2
        }
        return sizes
    }
}
