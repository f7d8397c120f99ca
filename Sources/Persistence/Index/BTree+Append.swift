extension PersistentBTree {
    /// Adds `elements`, whose keys must be strictly increasing and all greater than every key in the tree,
    /// at the tree's right edge, in one pass: the right spine (root to last leaf) is made mutable under
    /// `token` once; each element then goes to the end of the last leaf, and a full last node (leaf or
    /// internal) is followed by a new, empty one instead of being split, so the nodes left behind are full.
    /// At the end, each new node of the spine that holds fewer than ``minFill`` elements takes elements
    /// from its (full) left sibling, so every node is within bounds again.
    ///
    /// What a write transaction uses for rows inserted in key order (new object keys, ascending primary
    /// keys): the same tree as inserting them one by one (same entries, same invariants), without a
    /// root-to-leaf walk per element.
    ///
    /// - Precondition: keys strictly increasing and above ``last`` (checked; a violation traps, and callers
    ///   check first).
    /// - Complexity: O(n + log size), one node allocation per ``maxFill`` elements; O(fanout) per spine
    ///   node that had to be copied.
    package mutating func append<S: Sequence>(sortedElements elements: S, token: MutationToken)
    where S.Element == Element {
        var iterator = elements.makeIterator()
        guard let first = iterator.next() else { return }
        if let last, !(last.key < first.key) {
            fatalError("PersistentBTree.append(sortedElements:): the first key is not above the tree's last key")
        }
        let owner = token.rawValue
        guard root != nil else {
            var all: [(Key, Value)] = [(first.key, first.value)]
            while let element = iterator.next() { all.append((element.key, element.value)) }
            self = PersistentBTree(sortedUniqueElements: all, token: token)
            return
        }
        // The right spine, bottom up: spine[0] is the last leaf, spine[spine.count - 1] the root. Levels are
        // counted from the leaves so that a new root (appended at the top) leaves the others' levels alone.
        var spine: [Node] = [mutableRoot(token: owner)]
        while !spine[spine.count - 1].isLeaf {
            let node = spine[spine.count - 1]
            spine.append(node.mutableChild(at: node.count &- 1, token: owner))
        }
        spine.reverse()
        // Whether spine[level] was made by this append (it may hold fewer than minFill elements).
        var made = [Bool](repeating: false, count: spine.count)

        // The last leaf is held here rather than read from `spine` per element (a retain and a release
        // each), and the spine's subtree counts grow once per leaf rather than once per element and level:
        // about a tenth of a bulk insert's time went to those.
        var leaf = spine[0]
        /// Elements added to `leaf` not yet counted in its ancestors' `subtreeCounts`.
        var uncounted = 0
        var element = first
        while true {
            if leaf.count == Self.maxFill {
                Self.count(uncounted, intoAncestorsOf: spine)
                uncounted = 0
                leaf = Node.make(isLeaf: true, owner: owner)
                attach(leaf, at: 0, firstKey: element.key, spine: &spine, made: &made, owner: owner)
            }
            (leaf.keys + leaf.count).initialize(to: element.key)
            (leaf.values + leaf.count).initialize(to: element.value)
            leaf.count &+= 1
            uncounted &+= 1
            count &+= 1
            guard let next = iterator.next() else { break }
            if !(element.key < next.key) {
                fatalError("PersistentBTree.append(sortedElements:): keys are not strictly increasing")
            }
            element = next
        }
        Self.count(uncounted, intoAncestorsOf: spine)

        // Top down, so that a node's parent already has room for a left sibling to share with it: a new
        // node's left sibling is the spine node that was full when it was made, and nothing changed it since.
        for level in stride(from: spine.count &- 2, through: 0, by: -1) {
            let node = spine[level]
            guard made[level], node.count < Self.minFill else { continue }
            let parent = spine[level &+ 1]
            let leftIndex = parent.count &- 2
            let left = parent.mutableChild(at: leftIndex, token: owner)
            let moved = (left.count &- node.count &+ 1) / 2
            Self.shiftRight(from: left, to: node, count: moved, parent: parent, at: leftIndex)
        }
    }

    /// Adds `n` to the subtree count of the last child of every spine node above the leaf (`spine[0]`).
    private static func count(_ n: Int, intoAncestorsOf spine: [Node]) {
        guard n != 0 else { return }
        for level in 1..<spine.count {
            let node = spine[level]
            node.subtreeCounts[node.count &- 1] &+= n
        }
    }

    /// Links `node`, new and empty or holding one new child, into the spine at `level`, right of the current
    /// spine node there, whose parent gets it as its last child. A full parent is followed by a new one in
    /// turn; a new sibling of the root gets a new root over both.
    private mutating func attach(
        _ node: Node, at level: Int, firstKey: Key, spine: inout [Node], made: inout [Bool], owner: UInt64
    ) {
        if level == spine.count &- 1 {
            let newRoot = Node.make(isLeaf: false, owner: owner)
            newRoot.children.initialize(to: spine[level])
            newRoot.subtreeCounts.initialize(to: count)
            newRoot.keys.initialize(to: firstKey)
            (newRoot.children + 1).initialize(to: node)
            (newRoot.subtreeCounts + 1).initialize(to: 0)
            newRoot.count = 2
            spine.append(newRoot)
            made.append(true)
            root = newRoot
        } else {
            var parent = spine[level &+ 1]
            if parent.count == Self.maxFill {
                parent = Node.make(isLeaf: false, owner: owner)
                parent.children.initialize(to: node)
                parent.subtreeCounts.initialize(to: 0)
                parent.count = 1
                attach(parent, at: level &+ 1, firstKey: firstKey, spine: &spine, made: &made, owner: owner)
            } else {
                (parent.keys + (parent.count &- 1)).initialize(to: firstKey)
                (parent.children + parent.count).initialize(to: node)
                (parent.subtreeCounts + parent.count).initialize(to: 0)
                parent.count &+= 1
            }
        }
        spine[level] = node
        made[level] = true
    }
}
