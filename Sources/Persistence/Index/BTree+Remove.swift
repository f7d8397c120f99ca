extension PersistentBTree {
    /// Removes the entry for `key` and returns its value, or returns `nil` (changing nothing) if there
    /// is none.
    ///
    /// Path nodes are made mutable as in ``updateValue(_:forKey:token:)``. A node left with fewer than
    /// ``minFill`` elements takes elements from a sibling that can spare some (evening out the two), or
    /// else merges with a sibling; that may underfill its parent, up to the root. A root with a single
    /// child is replaced by that child, and a tree whose last entry is removed has no root.
    ///
    /// - Complexity: O(log n); plus O(fanout) per node that had to be copied or rebalanced. Looking for a
    ///   missing key copies nothing.
    @discardableResult
    package mutating func removeValue(forKey key: Key, token: MutationToken) -> Value? {
        // Check first, so that removing a missing key does not copy the path.
        guard contains(key) else { return nil }
        return removeExistingValue(forKey: key, token: token)
    }

    /// ``removeValue(forKey:token:)`` for a key the caller knows is there (an index entry of a row being
    /// deleted): one walk down instead of two. A key that is not there after all is still handled, by
    /// returning `nil` with the entries unchanged, but the nodes on its path may have been copied.
    ///
    /// - Complexity: O(log n); plus O(fanout) per node that had to be copied or rebalanced.
    @discardableResult
    package mutating func removeExistingValue(forKey key: Key, token: MutationToken) -> Value? {
        guard root != nil else { return nil }
        let node = mutableRoot(token: token.rawValue)
        guard let old = Self.remove(key, from: node, token: token.rawValue) else { return nil }
        count &-= 1
        if node.isLeaf {
            if node.count == 0 { root = nil }
        } else if node.count == 1 {
            root = node.children[0]
        }
        return old
    }

    /// Removes the entry for `key` from under `node`, which is mutable under `token`, and returns its value;
    /// `nil` (no entry changed) if there is none. Leaves `node` with possibly `minFill - 1` elements; the
    /// caller rebalances it.
    ///
    /// - Complexity: O(log n) plus copies and rebalancing.
    private static func remove(_ key: Key, from node: Node, token: UInt64) -> Value? {
        if node.isLeaf {
            let index = lowerBound(key, in: node.keys, count: node.count)
            guard index < node.count && node.keys[index] == key else { return nil }
            _ = removeElement(at: index, in: node.keys, count: node.count)
            let old = removeElement(at: index, in: node.values, count: node.count)
            node.count &-= 1
            return old
        }
        let index = node.childIndex(for: key)
        let child = node.mutableChild(at: index, token: token)
        guard let old = remove(key, from: child, token: token) else { return nil }
        node.subtreeCounts[index] &-= 1
        if child.count < minFill { rebalanceChild(at: index, of: node, token: token) }
        return old
    }

    /// Restores the fill of child `index` of `parent` (both mutable under `token`), which has
    /// `minFill - 1` elements: evens it out with a sibling that has more than ``minFill``, or merges it
    /// with a sibling (`2 · minFill - 1 <= maxFill` elements), which removes one child from `parent`.
    ///
    /// - Complexity: O(fanout).
    private static func rebalanceChild(at index: Int, of parent: Node, token: UInt64) {
        let child = parent.child(at: index)
        if index > 0 && parent.child(at: index &- 1).count > minFill {
            let left = parent.mutableChild(at: index &- 1, token: token)
            shiftRight(from: left, to: child, count: (left.count &- child.count) / 2, parent: parent, at: index &- 1)
        } else if index &+ 1 < parent.count && parent.child(at: index &+ 1).count > minFill {
            let right = parent.mutableChild(at: index &+ 1, token: token)
            shiftLeft(from: right, to: child, count: (right.count &- child.count) / 2, parent: parent, at: index)
        } else if index > 0 {
            let left = parent.mutableChild(at: index &- 1, token: token)
            merge(child, into: left, parent: parent, at: index &- 1)
        } else {
            merge(parent.child(at: index &+ 1), into: child, parent: parent, at: index)
        }
    }
}
