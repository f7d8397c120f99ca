extension PersistentBTree {
    /// Removes the entries of `keys` (sorted, strictly ascending) in one pass over the leaves they are in,
    /// and returns how many it removed. A key the tree does not hold is skipped.
    ///
    /// Each node on the way is entered once for all the keys under it (as in
    /// ``replaceExistingValues(_:token:)``): a leaf is compacted once, however many of its entries go; a leaf
    /// all of whose entries go is dropped without being copied; a node left with no children is dropped.
    /// Then, bottom-up, every underfull child is merged with or evened out with a neighbour (a merge can
    /// leave the merged node with an underfull child that came from the other side, which is fixed on the
    /// way down again), and a root with one child is replaced by it. Nodes are copied as
    /// ``removeValue(forKey:token:)`` copies them, so a copy of the tree taken before is unchanged.
    ///
    /// What a delete of many rows needs: removing a contiguous range of k keys out of n costs O(k) moves
    /// plus O(log n) node visits at its ends, instead of k root-to-leaf walks each shifting up to a leaf
    /// of entries.
    ///
    /// - Complexity: O(k + L · fanout) for k keys in L leaves, plus O(fanout) per internal node on the way;
    ///   comparisons O(k log fanout) at worst.
    @discardableResult
    package mutating func removeValues(sortedKeys keys: UnsafeBufferPointer<Key>, token: MutationToken) -> Int {
        guard root != nil, !keys.isEmpty else { return 0 }
        let node = mutableRoot(token: token.rawValue)
        let removed = Self.removeRun(keys, under: node, token: token.rawValue)
        count &-= removed
        if !node.isLeaf { Self.fixChildren(of: node, token: token.rawValue) }
        // Collapse: a root with one child is replaced by it (possibly over several levels); an empty root goes.
        // (The node a root slot is left holding may be a stub: look at what it stands for.)
        while let top = root.map(Self.resolved) {
            if top.count == 0 {
                root = nil
            } else if !top.isLeaf && top.count == 1 {
                root = top.children[0]
                continue
            }
            break
        }
        return removed
    }

    /// ``removeValues(sortedKeys:token:)`` for an array of keys.
    @discardableResult
    package mutating func removeValues(sortedKeys keys: [Key], token: MutationToken) -> Int {
        keys.withUnsafeBufferPointer { removeValues(sortedKeys: $0, token: token) }
    }

    /// Removes the keys `keys` (all within `node`'s key range, strictly ascending) from under `node`, which
    /// is mutable under `token`; returns how many it removed. Children of `node` may be left empty (dropped
    /// here) or underfull (fixed by ``fixChildren(of:token:)``, called here for each internal child).
    private static func removeRun(_ keys: UnsafeBufferPointer<Key>, under node: Node, token: UInt64) -> Int {
        if node.isLeaf { return compactLeaf(node, removing: keys) }
        var removed = 0
        var i = 0
        var child = 0
        while i < keys.count {
            child = node.childIndex(for: keys[i])
            // The run of keys in this child's range: below its upper separator, if it has one.
            var end = keys.count
            if child < node.count &- 1 {
                let separator = node.keys[child]
                end = i &+ 1
                while end < keys.count && keys[end] < separator { end &+= 1 }
            }
            let run = UnsafeBufferPointer(rebasing: keys[i..<end])
            i = end
            let entries = node.subtreeCounts[child]
            if run.count >= entries, wholeLeafMatches(node.child(at: child), run) {
                // Every entry of a leaf goes: drop it without copying it (marked by a count of 0 below).
                node.subtreeCounts[child] = 0
                removed &+= entries
                continue
            }
            let slot = node.children + child
            if slot.pointee.owner != token || !isKnownUniquelyReferenced(&slot.pointee) {
                let source = resolved(slot.pointee)
                if source.isLeaf {
                    // A leaf that must be copied anyway: copy only the entries that stay.
                    let copy = Node.make(isLeaf: true, owner: token)
                    let gone = copyKept(from: source, into: copy, removing: run)
                    slot.pointee = copy
                    node.subtreeCounts[child] &-= gone
                    removed &+= gone
                    continue
                }
            }
            let mutable = node.mutableChild(at: child, token: token)
            let gone = removeRun(run, under: mutable, token: token)
            node.subtreeCounts[child] &-= gone
            removed &+= gone
            if !mutable.isLeaf { fixChildren(of: mutable, token: token) }
        }
        dropEmptyChildren(of: node)
        return removed
    }

    /// Whether `node` is a leaf whose keys are exactly `keys`. Reads only (a stub is loaded, not copied).
    @inline(__always)
    private static func wholeLeafMatches(_ node: Node, _ keys: UnsafeBufferPointer<Key>) -> Bool {
        guard node.isLeaf, node.count == keys.count else { return false }
        for index in 0..<keys.count where node.keys[index] != keys[index] { return false }
        return true
    }

    /// Removes the entries of `keys` (ascending) from `leaf` (mutable) in one pass, moving each kept entry
    /// once; returns how many it removed.
    private static func compactLeaf(_ leaf: Node, removing keys: UnsafeBufferPointer<Key>) -> Int {
        let count = leaf.count
        // The first entry that goes: everything before it stays where it is.
        var read = lowerBound(keys[0], in: leaf.keys, count: count)
        var write = read
        var next = 0
        while read < count {
            // Skip keys below the current entry (keys the leaf does not hold).
            while next < keys.count && keys[next] < leaf.keys[read] { next &+= 1 }
            if next < keys.count && keys[next] == leaf.keys[read] {
                (leaf.keys + read).deinitialize(count: 1)
                (leaf.values + read).deinitialize(count: 1)
                next &+= 1
            } else {
                if write != read {
                    (leaf.keys + write).moveInitialize(from: leaf.keys + read, count: 1)
                    (leaf.values + write).moveInitialize(from: leaf.values + read, count: 1)
                }
                write &+= 1
                if next == keys.count {
                    // No key left to remove: the rest of the leaf moves down in one go.
                    read &+= 1
                    let rest = count &- read
                    if write != read && rest > 0 {
                        (leaf.keys + write).moveInitialize(from: leaf.keys + read, count: rest)
                        (leaf.values + write).moveInitialize(from: leaf.values + read, count: rest)
                    }
                    write &+= rest
                    break
                }
            }
            read &+= 1
        }
        leaf.count = write
        return count &- write
    }

    /// Initializes the empty leaf `copy` with the entries of `source` whose keys are not in `keys`
    /// (ascending), copying each run of kept entries at once; returns how many it left out.
    private static func copyKept(from source: Node, into copy: Node, removing keys: UnsafeBufferPointer<Key>) -> Int {
        let count = source.count
        var read = 0
        var write = 0
        var next = 0
        while read < count {
            let key = source.keys[read]
            while next < keys.count && keys[next] < key { next &+= 1 }
            var end = count
            if next < keys.count {
                if keys[next] == key {
                    read &+= 1
                    next &+= 1
                    continue
                }
                // The kept entries below the next key to remove.
                let bound = keys[next]
                end = read &+ 1
                while end < count && source.keys[end] < bound { end &+= 1 }
            }
            (copy.keys + write).initialize(from: source.keys + read, count: end &- read)
            (copy.values + write).initialize(from: source.values + read, count: end &- read)
            write &+= end &- read
            read = end
        }
        copy.count = write
        return count &- write
    }

    /// Removes the children whose subtree count is 0 from `node` (internal, mutable). Between two kept
    /// children `a < b` the separator left of `b` stays: every key under `a` is below separator `a`, which
    /// is at most separator `b - 1`, and every key under `b` is at least separator `b - 1`. The other
    /// separators go (the first kept child's lower bound becomes the node's own).
    private static func dropEmptyChildren(of node: Node) {
        let count = node.count
        var write = 0
        for read in 0..<count {
            let keep = node.subtreeCounts[read] != 0
            if read > 0 {
                // Every slot below `read - 1` was moved from or deinitialized already, so `write - 1` is free.
                if keep && write > 0 {
                    if write != read {
                        (node.keys + (write &- 1)).moveInitialize(from: node.keys + (read &- 1), count: 1)
                    }
                } else {
                    (node.keys + (read &- 1)).deinitialize(count: 1)
                }
            }
            if keep {
                if write != read {
                    (node.children + write).moveInitialize(from: node.children + read, count: 1)
                    node.subtreeCounts[write] = node.subtreeCounts[read]
                }
                write &+= 1
            } else {
                (node.children + read).deinitialize(count: 1)
            }
        }
        node.count = write
    }

    /// Brings every child of `node` (internal, mutable under `token`) to at least ``minFill`` elements, when
    /// `node` has two children or more: an underfull child is merged with a neighbour when the two fit in
    /// one node, else evened out with it (then both hold at least `(maxFill + 1) / 2`). The nodes that
    /// result are fixed the same way, since a child that came from an underfull node may itself be
    /// underfull (a node left with one child cannot fix that child; its parent's merge can).
    ///
    /// A child still a stub (a node of the file not loaded) was not touched, so it is not underfull: only
    /// nodes in memory are inspected, and nothing is loaded to find out.
    ///
    /// - Complexity: O(fanout) per node inspected, plus O(fanout) per merge or move.
    static func fixChildren(of node: Node, token: UInt64) {
        var i = 0
        while i < node.count && node.count > 1 {
            let slot = node.children[i]
            if slot.stubSource != nil || slot.count >= minFill {
                i &+= 1
                continue
            }
            let leftIndex = i &+ 1 < node.count ? i : i &- 1
            let left = node.mutableChild(at: leftIndex, token: token)
            let right = node.child(at: leftIndex &+ 1)
            if left.count &+ right.count <= maxFill {
                merge(right, into: left, parent: node, at: leftIndex)
                if !left.isLeaf { fixChildren(of: left, token: token) }
                // The merged node may still be underfull: look at it again.
                i = leftIndex
            } else {
                let right = node.mutableChild(at: leftIndex &+ 1, token: token)
                if left.count < right.count {
                    shiftLeft(
                        from: right, to: left, count: (right.count &- left.count) / 2, parent: node, at: leftIndex)
                } else {
                    shiftRight(
                        from: left, to: right, count: (left.count &- right.count) / 2, parent: node, at: leftIndex)
                }
                if !left.isLeaf {
                    fixChildren(of: left, token: token)
                    fixChildren(of: right, token: token)
                }
                i = leftIndex &+ 1
            }
        }
    }
}
