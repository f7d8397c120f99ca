/// The engine's persistent ordered map: a B+tree with path copying, in-place mutation under a
/// ``MutationToken``, and per-child entry counts for rank and select.
///
/// It is the primary index (object key → row location), every secondary index (a composite key such as
/// `(value, objectKey)` → `Void`) and the backlink index.
///
/// ## Why a B+tree and not a hash trie (HAMT)
/// A HAMT would give somewhat cheaper point lookups, but the engine needs order:
/// - **Ordered iteration.** Object keys come from a counter, so key order is insertion order, which is
///   the order an unsorted query returns. A HAMT iterates in hash order.
/// - **Rank and select.** Query results are addressed by position (`results[i]`, `results.count`);
///   subtree counts give ``element(at:)`` and ``offset(of:)`` in O(log n).
/// - **Range scans.** A secondary index keyed by `(value, objectKey)` answers "all objects whose value is
///   v" (or lies in a range) by visiting from `(v, .min)` with ``forEach(from:inclusive:_:)``; prefix and
///   range lookups use ``floor(_:)``.
///
/// Wide nodes (``BTreeLayout/fanout`` entries or children) keep the tree shallow (a million entries are
/// three levels) and each level is one search over a contiguous key array. Only leaves hold values.
///
/// ## Path copying and owner tokens
/// A published tree value never changes. A mutation copies the nodes on the path from the root to the
/// leaf it changes, links the copies together, and shares every other node with the old value:
///
/// ```
///        old root              new root  (copy, owner = T)
///        /      \              /      ///       A        B   <--------+        B'  (copy, owner = T)
///               / \                   / ///              C   D  <--------------C   D'  (copy of the changed leaf, owner = T)
/// ```
///
/// Copying the path on every call would make a bulk insert of a million keys allocate millions of nodes.
/// So every node records the token of the write transaction that created it (`owner`). A mutation under
/// token T walks down from the root; a node that T owns *and* that is referenced only from the (already
/// mutable) place the walk came from is changed in place; any other node is copied, the copy is owned by
/// T, and it replaces the original in its parent. So a transaction copies each node at most once however
/// many mutations it makes (Clojure's "transients"), and when it ends its token is retired, which
/// freezes all of its nodes. The reference check (`isKnownUniquelyReferenced`) makes plain Swift value
/// semantics hold even within a transaction: a copy of the tree value, or an iterator, taken mid-
/// transaction keeps seeing its version, because a node referenced from two places is never written.
///
/// ## Thread safety (why `@unchecked Sendable` is sound)
/// Nodes are mutable class instances, so the compiler cannot check this; the argument:
/// 1. A node is written only by a mutation under a token equal to its `owner` (fixed at creation), after
///    the check above found it referenced only from the mutated tree value's own path.
/// 2. A token is issued once (``MutationToken/next()`` is an atomic counter) to one write transaction,
///    which uses it from one thread at a time and never again after it ends.
/// 3. A tree value is shared with other threads (published) only after the transaction that built it
///    ended. Every node reachable from it is then owned by a retired token, so by 1 and 2 no mutation
///    can ever write it again: published nodes are immutable, and concurrent reads of immutable memory
///    are safe. Point reads (lookup, rank, select, floor) do not even touch reference counts, so
///    concurrent readers do not contend on shared nodes.
/// Mutating a copy that another thread holds, under a new token, copies the shared nodes (1).
///
/// **Contract for callers:** once a tree value has been shared with another thread, do not keep mutating
/// any copy of it with the token that built it; take a new token for the next transaction. (The
/// reference check, the same one `Array`'s copy-on-write relies on, would copy nodes shared with another
/// thread anyway; the token rule is the design's guarantee, the check is its safety net.)
///
/// - Complexity: lookups, rank and select O(log n); updates and removals O(log n), plus O(fanout) per
///   node that the token does not own yet; bulk load O(n); iteration O(1) amortized per entry.
package struct PersistentBTree<Key: Comparable & Sendable, Value: Sendable>: @unchecked Sendable, Sequence {
    /// The element type of iteration, ``first``, ``last``, ``floor(_:)`` and ``element(at:)``.
    package typealias Element = (key: Key, value: Value)

    /// The root node; `nil` exactly when the tree is empty (a root leaf is never empty).
    var root: Node?

    /// The number of entries.
    ///
    /// - Complexity: O(1).
    package internal(set) var count: Int

    /// An empty tree. Allocates nothing.
    ///
    /// - Complexity: O(1).
    package init() {
        root = nil
        count = 0
    }

    /// Whether the tree has no entries.
    ///
    /// - Complexity: O(1).
    package var isEmpty: Bool { count == 0 }

    /// The root, not retained: every read path walks the tree through unretained references, since the
    /// tree value (`self`) keeps all of its nodes alive for the duration of the call. This keeps lookups
    /// free of reference counting, which would otherwise also make concurrent readers of one published
    /// tree contend on the root's reference count.
    @inline(__always) private var unretainedRoot: Unmanaged<Node>? {
        guard let root else { return nil }
        return Self.resolve(Unmanaged.passUnretained(root))
    }

    /// The value stored for `key`, or `nil`.
    ///
    /// - Complexity: O(log n); no allocation, no reference counting.
    package func value(forKey key: Key) -> Value? {
        guard var node = unretainedRoot else { return nil }
        // For object keys, the separator left of the path taken: a lower bound of the leaf's keys, usually
        // its first key, known before the leaf is loaded (see `denseGuess`). Other keys (strings) are not
        // copied: the walk stays free of reference counting. (`Key.self == ObjectKey.self` is a constant in
        // every specialisation.)
        var floor: Key? = nil
        while let (child, separator) = node._withUnsafeGuaranteedRef({ node -> (Unmanaged<Node>, Key?)? in
            if node.isLeaf { return nil }
            let index = node.childIndex(for: key)
            let separator = Key.self == ObjectKey.self && index > 0 ? node.keys[index &- 1] : nil
            return (node.unretainedChild(at: index), separator)
        }) {
            node = child
            if let separator { floor = separator }
        }
        return node._withUnsafeGuaranteedRef { leaf in
            if let floor, let guess = Self.denseGuess(key, from: floor), guess < leaf.count, leaf.keys[guess] == key {
                return leaf.values[guess]
            }
            if let guess = Self.denseGuess(key, from: leaf.keys[0]), guess < leaf.count, leaf.keys[guess] == key {
                return leaf.values[guess]
            }
            let index = Self.lowerBound(key, in: leaf.keys, count: leaf.count)
            return index < leaf.count && leaf.keys[index] == key ? leaf.values[index] : nil
        }
    }

    /// Where `key` sits in a leaf whose first key is `first`, if the leaf's object keys are consecutive
    /// (no key was removed in between), which is what bulk and ordinary inserts produce: object keys come
    /// from a counter. `nil` for other key types or a key below `first`; the caller checks the guess against
    /// the leaf's count and key.
    ///
    /// Why: the guess lets a lookup load the key and its value at once instead of searching the key array
    /// first, and when `first` is the separator above the leaf (already in cache), those loads need not
    /// wait for the leaf's header either: a leaf that is not in cache costs one memory round trip instead
    /// of three. A separator is only a lower bound once the leaf's first key was removed; the guess from
    /// the leaf's own first key, then a search, cover that.
    @inline(__always)
    static func denseGuess(_ key: Key, from first: Key) -> Int? {
        guard Key.self == ObjectKey.self else { return nil }
        let target = unsafeBitCast(key, to: ObjectKey.self).rawValue
        let offset = target &- unsafeBitCast(first, to: ObjectKey.self).rawValue
        return offset >= 0 && offset < Int64(Node.capacity) ? Int(offset) : nil
    }

    /// Whether the tree has an entry for `key`.
    ///
    /// - Complexity: O(log n); no allocation, no reference counting.
    package func contains(_ key: Key) -> Bool {
        guard var node = unretainedRoot else { return false }
        while let child = node._withUnsafeGuaranteedRef({ $0.childForLookup(key) }) {
            node = child
        }
        return node._withUnsafeGuaranteedRef { leaf in
            let index = Self.lowerBound(key, in: leaf.keys, count: leaf.count)
            return index < leaf.count && leaf.keys[index] == key
        }
    }

    /// The entry at `offset` in key order (select).
    ///
    /// - Precondition: `0 <= offset < count`; anything else is a programming error and traps.
    /// - Complexity: O(log n) node visits, each summing up to `fanout` subtree counts.
    package func element(at offset: Int) -> Element {
        guard offset >= 0, offset < count, var node = unretainedRoot else {
            fatalError("PersistentBTree.element(at:): offset \(offset) is out of bounds 0..<\(count)")
        }
        var remaining = offset
        while let child = node._withUnsafeGuaranteedRef({ node -> Unmanaged<Node>? in
            if node.isLeaf { return nil }
            var index = 0
            while remaining >= node.subtreeCounts[index] {
                remaining &-= node.subtreeCounts[index]
                index &+= 1
            }
            return node.unretainedChild(at: index)
        }) {
            node = child
        }
        return node._withUnsafeGuaranteedRef { ($0.keys[remaining], $0.values[remaining]) }
    }

    /// The position of `key` in key order (rank), or `nil` if the tree has no entry for it.
    ///
    /// - Complexity: O(log n) node visits, each summing up to `fanout` subtree counts.
    package func offset(of key: Key) -> Int? {
        guard var node = unretainedRoot else { return nil }
        var rank = 0
        while let child = node._withUnsafeGuaranteedRef({ node -> Unmanaged<Node>? in
            if node.isLeaf { return nil }
            let child = node.childIndex(for: key)
            for index in 0..<child { rank &+= node.subtreeCounts[index] }
            return node.unretainedChild(at: child)
        }) {
            node = child
        }
        return node._withUnsafeGuaranteedRef { leaf in
            let index = Self.lowerBound(key, in: leaf.keys, count: leaf.count)
            return index < leaf.count && leaf.keys[index] == key ? rank &+ index : nil
        }
    }

    /// The entry with the smallest key, or `nil` when empty.
    ///
    /// - Complexity: O(log n).
    package var first: Element? {
        guard var node = unretainedRoot else { return nil }
        while let child = node._withUnsafeGuaranteedRef({ $0.isLeaf ? nil : $0.unretainedChild(at: 0) }) {
            node = child
        }
        return node._withUnsafeGuaranteedRef { ($0.keys[0], $0.values[0]) }
    }

    /// The entry with the largest key, or `nil` when empty.
    ///
    /// - Complexity: O(log n).
    package var last: Element? {
        guard let node = unretainedRoot else { return nil }
        return Self.lastEntry(under: node)
    }

    /// The entry with the largest key `<= key` (the floor of `key`), or `nil` if every key is larger.
    ///
    /// - Complexity: O(log n).
    package func floor(_ key: Key) -> Element? {
        guard var node = unretainedRoot else { return nil }
        // The left sibling of the deepest child entered other than a first child: separators are only
        // lower bounds, so when the leaf holds nothing <= key, the floor is the largest entry under it.
        var fallback: Unmanaged<Node>? = nil
        while let child = node._withUnsafeGuaranteedRef({ node -> Unmanaged<Node>? in
            if node.isLeaf { return nil }
            let child = node.childIndex(for: key)
            if child > 0 { fallback = node.unretainedChild(at: child &- 1) }
            return node.unretainedChild(at: child)
        }) {
            node = child
        }
        let found = node._withUnsafeGuaranteedRef { leaf -> Element? in
            let index = Self.upperBound(key, in: leaf.keys, count: leaf.count)
            return index > 0 ? (leaf.keys[index &- 1], leaf.values[index &- 1]) : nil
        }
        if let found { return found }
        guard let fallback else { return nil }
        return Self.lastEntry(under: fallback)
    }

    /// The largest entry under `start`, which must not be an empty leaf. The caller keeps it alive.
    ///
    /// - Complexity: O(depth of `start`).
    private static func lastEntry(under start: Unmanaged<Node>) -> Element {
        var node = start
        while let child = node._withUnsafeGuaranteedRef({
            $0.isLeaf ? nil : $0.unretainedChild(at: $0.count &- 1)
        }) {
            node = child
        }
        return node._withUnsafeGuaranteedRef { ($0.keys[$0.count &- 1], $0.values[$0.count &- 1]) }
    }

    /// Calls `body` with each entry in key order, starting at the first key `>= lowerBound` (`>` when
    /// `inclusive` is false) or at the first entry when `lowerBound` is `nil`, until `body` returns
    /// `false` or the entries run out.
    ///
    /// A secondary index keyed by `(value, objectKey)` visits all objects with value `v` by starting at
    /// `(v, .min)` and returning `false` at the first key whose value differs.
    ///
    /// Nodes of the file it loads are kept as ``Iterator`` keeps them (past the scans' share of the node
    /// cache, only while it visits them).
    ///
    /// - Complexity: O(log n + k) for k visited entries; no allocation but the nodes it loads.
    package func forEach(
        from lowerBound: Key?, inclusive: Bool, _ body: (Key, Value) throws -> Bool
    ) rethrows {
        guard let root else { return }
        _ = try Self.visit(Self.resolvedForScan(root), from: lowerBound, inclusive: inclusive, body)
    }

    /// The recursive step of ``forEach(from:inclusive:_:)``; returns `false` once `body` asked to stop.
    private static func visit(
        _ node: Node, from lowerBound: Key?, inclusive: Bool, _ body: (Key, Value) throws -> Bool
    ) rethrows -> Bool {
        if node.isLeaf {
            var index = 0
            if let lowerBound {
                index =
                    inclusive
                    ? Self.lowerBound(lowerBound, in: node.keys, count: node.count)
                    : Self.upperBound(lowerBound, in: node.keys, count: node.count)
            }
            while index < node.count {
                guard try body(node.keys[index], node.values[index]) else { return false }
                index &+= 1
            }
            return true
        }
        var child = 0
        if let lowerBound {
            child = node.childIndex(for: lowerBound)
            guard try visit(node.scanChild(at: child), from: lowerBound, inclusive: inclusive, body) else {
                return false
            }
            child &+= 1
        }
        while child < node.count {
            guard try visit(node.scanChild(at: child), from: nil, inclusive: inclusive, body) else { return false }
            child &+= 1
        }
        return true
    }

    /// An iterator over all entries in key order.
    ///
    /// The iterator holds the nodes of its current path, so it keeps seeing the tree as it was when the
    /// iterator was made even if the tree value is mutated meanwhile (mutations copy shared nodes).
    ///
    /// - Complexity: O(log n) to create (one allocation for the path); `next()` amortized O(1).
    package func makeIterator() -> Iterator { Iterator(root: root) }

    /// A lower bound for `for`-loops and `Array.init`: the exact count.
    package var underestimatedCount: Int { count }

    /// Iterates a tree's entries in key order; see ``PersistentBTree/makeIterator()``.
    ///
    /// It holds strong references to every node on its current path. A node referenced from two places
    /// is never mutated in place, so the nodes it walks stay exactly as they were when it was created,
    /// whatever happens to the tree value meanwhile.
    ///
    /// Nodes of the file that it loads stay with the tree (the node cache) only while scans have not filled
    /// their share of it; past that they are loaded for the iterator alone and released as it moves on
    /// (``NodeSource/nodeForScan()``), so a scan of a held version needs about one path of nodes, not the
    /// whole tree.
    package struct Iterator: IteratorProtocol {
        /// The internal nodes above the current leaf, root first, each with the index of the child
        /// being visited.
        private var path: ContiguousArray<(node: Node, child: Int)>
        /// The leaf being visited (a strong reference), `nil` when the iteration is over.
        private var leaf: Node?
        /// ``leaf`` again, unretained, so that `next()` does no reference counting per element.
        private var leafReference: Unmanaged<Node>?
        /// The next entry of the leaf to return.
        private var index: Int
        /// The number of entries in the leaf (which cannot change: see the type's comment).
        private var leafCount: Int

        /// Positions the iterator before the first entry under `root`.
        init(root: Node?) {
            path = []
            leaf = nil
            leafReference = nil
            index = 0
            leafCount = 0
            guard let root else { return }
            var node = PersistentBTree.resolvedForScan(root)
            path.reserveCapacity(8)
            while !node.isLeaf {
                path.append((node, 0))
                node = node.scanChild(at: 0)
            }
            enter(node)
        }

        /// Makes `node` the current leaf, positioned at its first entry.
        private mutating func enter(_ node: Node) {
            leaf = node
            leafReference = Unmanaged.passUnretained(node)
            index = 0
            leafCount = node.count
        }

        /// The next entry in key order, or `nil` at the end.
        ///
        /// - Complexity: O(1) within a leaf; O(log n) when crossing to the next leaf (once per
        ///   `fanout / 2` entries at least). No allocation.
        @inline(__always)
        package mutating func next() -> Element? {
            if index < leafCount {
                let position = index
                index = position &+ 1
                return leafReference.unsafelyUnwrapped._withUnsafeGuaranteedRef {
                    ($0.keys[position], $0.values[position])
                }
            }
            return nextLeaf()
        }

        /// Climbs to the nearest ancestor with a next child, descends to that child's leftmost leaf and
        /// returns its first entry; `nil` (and the iteration ends) when there is none.
        private mutating func nextLeaf() -> Element? {
            guard leaf != nil else { return nil }
            while var top = path.popLast() {
                top.child &+= 1
                if top.child < top.node.count {
                    var node = top.node.scanChild(at: top.child)
                    path.append(top)
                    while !node.isLeaf {
                        path.append((node, 0))
                        node = node.scanChild(at: 0)
                    }
                    enter(node)
                    index = 1
                    return (node.keys[0], node.values[0])
                }
            }
            leaf = nil
            leafReference = nil
            leafCount = 0
            return nil
        }
    }
}
