extension PersistentBTree {
    /// Verifies the tree's structure and traps with a description of the first violation found:
    /// - keys strictly increasing within each node, and every key under child j of an internal node is
    ///   `>= separator j-1` and `< separator j`;
    /// - every subtree count equals the number of entries under that child, and ``count`` equals the total;
    /// - every node holds at most ``maxFill`` elements and, except the root, at least ``minFill``; a root
    ///   leaf holds at least one entry and a root internal node at least two children;
    /// - all leaves are at the same depth.
    ///
    /// For tests; it is far too slow for production paths.
    ///
    /// - Complexity: O(n).
    package func checkInvariants() {
        guard let root else {
            if count != 0 { invariantFailure("the tree has no root but count is \(count)") }
            return
        }
        var leafDepth: Int? = nil
        let total = Self.check(Self.resolved(root), depth: 0, lower: nil, upper: nil, leafDepth: &leafDepth)
        if total != count { invariantFailure("count is \(count) but the nodes hold \(total) entries") }
    }

    /// Checks the subtree under `node` at `depth` whose keys must lie in `lower..<upper` (each bound
    /// absent when `nil`); returns the number of entries under it.
    private static func check(
        _ node: Node, depth: Int, lower: Key?, upper: Key?, leafDepth: inout Int?
    ) -> Int {
        let isRoot = depth == 0
        let kind = node.isLeaf ? "leaf" : "internal node"
        let minimum = isRoot ? (node.isLeaf ? 1 : 2) : minFill
        if node.count < minimum || node.count > maxFill {
            invariantFailure("\(kind) at depth \(depth) holds \(node.count) elements, allowed \(minimum)...\(maxFill)")
        }
        let keyCount = node.isLeaf ? node.count : node.count - 1
        for index in 0..<keyCount {
            let key = node.keys[index]
            if index > 0 && !(node.keys[index - 1] < key) {
                invariantFailure("\(kind) at depth \(depth): keys \(index - 1) and \(index) are not increasing")
            }
            if let lower, key < lower {
                invariantFailure("\(kind) at depth \(depth): key \(index) is below its separator")
            }
            if let upper, !(key < upper) {
                invariantFailure("\(kind) at depth \(depth): key \(index) is not below the next separator")
            }
        }
        if node.isLeaf {
            if let leafDepth, leafDepth != depth {
                invariantFailure("leaves at depths \(leafDepth) and \(depth)")
            }
            leafDepth = depth
            return node.count
        }
        var total = 0
        for index in 0..<node.count {
            let entries = check(
                node.child(at: index), depth: depth + 1,
                lower: index == 0 ? lower : node.keys[index - 1],
                upper: index == node.count - 1 ? upper : node.keys[index],
                leafDepth: &leafDepth)
            if entries != node.subtreeCounts[index] {
                invariantFailure(
                    "internal node at depth \(depth): child \(index) holds \(entries) entries, "
                        + "its subtree count says \(node.subtreeCounts[index])")
            }
            total += entries
        }
        return total
    }

    /// Traps with `message`, in every build configuration.
    private static func invariantFailure(_ message: String) -> Never {
        fatalError("PersistentBTree invariant violated: \(message)")
    }

    /// Instance spelling of ``invariantFailure(_:)`` for ``checkInvariants()``.
    private func invariantFailure(_ message: String) -> Never { Self.invariantFailure(message) }
}
