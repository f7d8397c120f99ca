extension PersistentBTree {
    /// The number of entries whose key is less than `key`: the rank `key` has or would have. The entries
    /// between two keys are counted with two calls, without visiting them (an indexed range count).
    ///
    /// - Complexity: O(log n) node visits, each summing up to `fanout` subtree counts; no allocation.
    package func countBelow(_ key: Key) -> Int {
        guard let root else { return 0 }
        var node = Self.resolve(Unmanaged.passUnretained(root))
        var rank = 0
        // Every entry of a child left of the one `key` would be in is below that child's separator, so
        // below `key`; every entry right of it is at or above the next separator, so above `key`.
        while let child = node._withUnsafeGuaranteedRef({ node -> Unmanaged<Node>? in
            if node.isLeaf { return nil }
            let child = node.childIndex(for: key)
            for index in 0..<child { rank &+= node.subtreeCounts[index] }
            return node.unretainedChild(at: child)
        }) {
            node = child
        }
        return node._withUnsafeGuaranteedRef { leaf in rank &+ Self.lowerBound(key, in: leaf.keys, count: leaf.count) }
    }
}
