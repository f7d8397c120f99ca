extension PersistentBTree {
    /// Replaces the values of keys already in the tree, in one pass: `entries` sorted by key, strictly
    /// ascending. Returns the replaced values in `entries`' order: nil for a key the tree does not hold,
    /// which is left out (nothing is inserted, so the tree's shape and counts do not change).
    ///
    /// Each node on the way is descended into once for all the keys under it, so a run of keys in one leaf
    /// costs one root-to-leaf path instead of one per key: what a set-based update of many rows needs.
    /// Nodes are copied as ``updateValue(_:forKey:token:)`` copies them.
    ///
    /// - Complexity: O(k log n) comparisons at worst for k entries; O(n + k) node visits at most.
    package mutating func replaceExistingValues(
        _ entries: [(key: Key, value: Value)], token: MutationToken
    ) -> [Value?] {
        var replaced = [Value?](repeating: nil, count: entries.count)
        guard root != nil, !entries.isEmpty else { return replaced }
        let node = mutableRoot(token: token.rawValue)
        entries.withUnsafeBufferPointer { entries in
            replaced.withUnsafeMutableBufferPointer { replaced in
                Self.replace(entries, 0..<entries.count, under: node, into: replaced, token: token.rawValue)
            }
        }
        return replaced
    }

    /// Replaces the values of `entries[range]` (all within `node`'s key range) under `node`, which is mutable
    /// under `token`, storing the old values at the same indexes of `replaced`.
    private static func replace(
        _ entries: UnsafeBufferPointer<(key: Key, value: Value)>, _ range: Range<Int>, under node: Node,
        into replaced: UnsafeMutableBufferPointer<Value?>, token: UInt64
    ) {
        if node.isLeaf {
            var start = 0
            for i in range {
                // Dense runs of keys (a loop over every row) find theirs at `start`, without a search.
                if start >= node.count || node.keys[start] != entries[i].key {
                    start += lowerBound(entries[i].key, in: node.keys + start, count: node.count &- start)
                }
                guard start < node.count, node.keys[start] == entries[i].key else { continue }
                replaced[i] = (node.values + start).move()
                (node.values + start).initialize(to: entries[i].value)
                start += 1
            }
            return
        }
        var i = range.lowerBound
        while i < range.upperBound {
            let child = node.childIndex(for: entries[i].key)
            // The run of keys in this child's range: below its upper separator, if it has one.
            var end = range.upperBound
            if child < node.count &- 1 {
                let separator = node.keys[child]
                end = i + 1
                while end < range.upperBound && entries[end].key < separator { end += 1 }
            }
            replace(entries, i..<end, under: node.mutableChild(at: child, token: token), into: replaced, token: token)
            i = end
        }
    }
}
