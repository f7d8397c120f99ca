extension PersistentBTree {
    /// Stores `value` for `key`, replacing any value already stored; returns the replaced value, or
    /// `nil` if the key is new.
    ///
    /// Nodes on the path that `token` does not own (or that another tree value, node or iterator also
    /// refers to) are copied once and the copies owned by `token`; nodes `token` owns are changed in
    /// place. A node that overflows passes elements to a neighbour with room, or else splits in two,
    /// which adds a child to its parent and may overflow it in turn, up to the root.
    ///
    /// - Complexity: O(log n); plus O(fanout) per node that had to be copied, shifted or split.
    @discardableResult
    package mutating func updateValue(_ value: Value, forKey key: Key, token: MutationToken) -> Value? {
        guard root != nil else {
            let leaf = Node.make(isLeaf: true, owner: token.rawValue)
            leaf.keys.initialize(to: key)
            leaf.values.initialize(to: value)
            leaf.count = 1
            root = leaf
            count = 1
            return nil
        }
        let node = mutableRoot(token: token.rawValue)
        let old = Self.insert(value, forKey: key, into: node, token: token.rawValue)
        if old == nil { count &+= 1 }
        if node.count > Self.maxFill {
            // Grow by one level: a new root over the two halves of the old one.
            let newRoot = Node.make(isLeaf: false, owner: token.rawValue)
            newRoot.children.initialize(to: node)
            newRoot.subtreeCounts.initialize(to: count)
            newRoot.count = 1
            Self.splitChild(at: 0, of: newRoot, token: token.rawValue)
            root = newRoot
        }
        return old
    }

    /// The root, made safe to mutate in place under `token` (copied first unless `token` owns it and
    /// this tree value is its only referrer). The tree must not be empty.
    ///
    /// - Complexity: O(1), or O(fanout) when it copies.
    mutating func mutableRoot(token: UInt64) -> Node {
        if root.unsafelyUnwrapped.owner != token || !isKnownUniquelyReferenced(&root) {
            root = root.unsafelyUnwrapped.copy(owner: token)
        }
        return root.unsafelyUnwrapped
    }

    /// Inserts or replaces the entry for `key` under `node`, which is mutable under `token`. Leaves
    /// `node` holding up to `maxFill + 1` elements; the caller splits it. Returns the replaced value.
    ///
    /// - Complexity: O(log n) plus copies, as ``updateValue(_:forKey:token:)``.
    private static func insert(_ value: Value, forKey key: Key, into node: Node, token: UInt64) -> Value? {
        if node.isLeaf {
            // Keys arriving in ascending order (object keys, a counter's primary keys) go past the leaf's last
            // key: one comparison instead of a search (which would return `count` too).
            let last = node.count &- 1
            let index =
                last >= 0 && node.keys[last] < key ? node.count : lowerBound(key, in: node.keys, count: node.count)
            if index < node.count && node.keys[index] == key {
                let old = (node.values + index).move()
                (node.values + index).initialize(to: value)
                return old
            }
            insertElement(key, at: index, in: node.keys, count: node.count)
            insertElement(value, at: index, in: node.values, count: node.count)
            node.count &+= 1
            return nil
        }
        let index = appendIndex(for: key, in: node) ?? node.childIndex(for: key)
        let child = node.mutableChild(at: index, token: token)
        let old = insert(value, forKey: key, into: child, token: token)
        if old == nil { node.subtreeCounts[index] &+= 1 }
        if child.count > maxFill { relieveOverflow(ofChild: index, of: node, token: token) }
        return old
    }

    /// The last child of internal node `node` if `key` is at or past its last separator (where keys arriving
    /// in ascending order go), which is then what ``Node/childIndex(for:)`` returns too; otherwise nil.
    ///
    /// - Complexity: O(1): one comparison.
    @inline(__always)
    private static func appendIndex(for key: Key, in node: Node) -> Int? {
        let last = node.count &- 1
        return last == 0 || !(key < node.keys[last &- 1]) ? last : nil
    }

    /// Brings child `index` of `parent` (both mutable under `token`), which has `maxFill + 1` elements,
    /// back within bounds: moves elements to a sibling with room if there is one (B*-tree style), and
    /// only splits the child when both neighbours are full. Prefers the left sibling, which is where
    /// room is when keys arrive in increasing order (the primary index), so sequentially built trees
    /// end up with full nodes instead of half-full ones. `parent` may overflow by one.
    ///
    /// - Complexity: O(fanout).
    private static func relieveOverflow(ofChild index: Int, of parent: Node, token: UInt64) {
        let child = parent.child(at: index)
        if index > 0 && parent.child(at: index &- 1).count < maxFill {
            let left = parent.mutableChild(at: index &- 1, token: token)
            let moved = (child.count &- left.count &+ 1) / 2
            shiftLeft(from: child, to: left, count: moved, parent: parent, at: index &- 1)
        } else if index &+ 1 < parent.count && parent.child(at: index &+ 1).count < maxFill {
            let right = parent.mutableChild(at: index &+ 1, token: token)
            let moved = (child.count &- right.count &+ 1) / 2
            shiftRight(from: child, to: right, count: moved, parent: parent, at: index)
        } else {
            splitChild(at: index, of: parent, token: token)
        }
    }
}
