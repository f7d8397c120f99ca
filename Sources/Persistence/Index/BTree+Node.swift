/// The tuning constant of ``PersistentBTree``, outside the generic type because generic types cannot have
/// stored static properties.
enum BTreeLayout {
    /// The most entries a leaf holds and the most children an internal node has; every node except the
    /// root holds at least half as many. With 128, a million entries are three levels deep (root, ~62
    /// internal nodes that stay in cache, ~7,800 leaves), a leaf of `Int64` keys and 16-byte values is about
    /// 3 KB, and a lookup probes 16 + 8 keys per internal node. A random point read of a 1M-row table
    /// misses the cache on the leaf and the row only; with 64 it was four levels, and the 244 nodes of the
    /// third level missed as well: engine-bench point-read, interleaved, 1.90-2.06 M reads/s with 64 ->
    /// 2.11-2.34 M with 128. Bulk insert, open, compaction, commits, primary-key lookups and sorts
    /// measured the same within noise.
    static let fanout = 128
}

/// The fixed part of a ``PersistentBTree`` node, stored in the node object right before its arrays.
struct BTreeNodeHeader {
    /// The raw value of the ``MutationToken`` that may mutate the node in place; fixed at creation.
    let owner: UInt64
    /// Leaf: number of entries. Internal node: number of children.
    var count: Int
    /// Leaf or internal node; fixed at creation.
    let isLeaf: Bool
    /// For a stub (a node of the file that is loaded on first use), its retained
    /// ``PersistentBTree/NodeSource``; nil for every other node. Fixed at creation.
    var source: Unmanaged<AnyObject>? = nil
}

/// The unit of a node's tail allocation: 16 bytes, 16-byte aligned, so that keys and values of any
/// alignment up to 16 can be placed in it.
typealias BTreeNodeWord = SIMD2<UInt64>

extension PersistentBTree {
    /// Most entries in a leaf, most children of an internal node.
    @inline(__always) static var maxFill: Int { BTreeLayout.fanout }
    /// Fewest entries in a non-root leaf, fewest children of a non-root internal node.
    @inline(__always) static var minFill: Int { BTreeLayout.fanout / 2 }

    /// One node of a ``PersistentBTree``: a leaf of sorted entries, or an internal node of sorted
    /// separators, children and the number of entries under each child.
    ///
    /// ```
    ///  internal node (count = n children)            leaf (count = n entries)
    ///  +--------+-------+-------+                    +--------+-------+-------+
    ///  | object | owner | count |                    | object | owner | count |
    ///  +--------+-------+-------+--+------+          +--------+-------+-------+--+------+
    ///  keys     |  s0  |  s1  | .. | s(n-2)          keys     |  k0  |  k1  | .. | k(n-1)
    ///  children |  c0  |  c1  | .. | c(n-1)          values   |  v0  |  v1  | .. | v(n-1)
    ///  counts   |  #0  |  #1  | .. | #(n-1)
    ///
    ///  every key under c(j) is >= s(j-1) and < s(j);  #j = number of entries under c(j)
    /// ```
    ///
    /// The header and all arrays are tail-allocated in the node object itself (a `ManagedBuffer`), so a
    /// node is one allocation and a lookup's first touch of a node also brings in its first keys: one
    /// memory round trip per node instead of two. Each array has room for `fanout + 1` elements, so a
    /// node may overflow by one before its parent splits it. Only the first `count` elements
    /// (`count - 1` separators) are initialized.
    ///
    /// A separator is a lower bound of its right subtree, not necessarily its minimum: removing the
    /// smallest key of a leaf leaves the separator above it unchanged, which keeps removal to one path.
    ///
    /// ## Mutation and thread safety
    /// A node is written in place only by ``mutableChild(at:token:)`` and the tree's `mutableRoot`
    /// callers, that is, only when the mutation's token equals ``owner`` *and* the node is referenced
    /// from exactly one place, which is itself mutable. See ``PersistentBTree`` for why that makes
    /// sharing tree values across threads safe. (The node class cannot itself be declared
    /// `@unchecked Sendable`: `ManagedBuffer` explicitly marks `Sendable` unavailable. The tree struct
    /// carries the `@unchecked Sendable` and the proof instead; nodes never escape the module.)
    final class Node: ManagedBuffer<BTreeNodeHeader, BTreeNodeWord> {
        /// The raw value of the ``MutationToken`` that may mutate this node in place. Fixed at creation:
        /// a node changes owner only by being copied.
        @inline(__always) var owner: UInt64 { headerPointer.pointee.owner }
        /// Leaf: number of entries. Internal node: number of children (one more than separators).
        @inline(__always) var count: Int {
            get { headerPointer.pointee.count }
            set { headerPointer.pointee.count = newValue }
        }
        /// Whether this node holds entries (`true`) or children (`false`). Fixed at creation.
        @inline(__always) var isLeaf: Bool { headerPointer.pointee.isLeaf }
        /// For a stub, the source that loads the node it stands for (see ``PersistentBTree/resolve(_:)``);
        /// nil for a node that holds its elements. A stub holds nothing itself: every read goes through
        /// the loaded node, every mutation copies it.
        @inline(__always) var stubSource: Unmanaged<AnyObject>? { headerPointer.pointee.source }

        /// The header, right after the object's own header. Valid while the node is alive.
        @inline(__always) private var headerPointer: UnsafeMutablePointer<BTreeNodeHeader> {
            withUnsafeMutablePointerToHeader { $0 }
        }
        /// The start of the tail-allocated element block. Valid while the node is alive, which every
        /// caller guarantees by holding the node (or the tree value that holds it).
        @inline(__always) private var block: UnsafeMutableRawPointer {
            withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
        }

        /// Leaf: the entries' keys, strictly increasing. Internal: the `count - 1` separators.
        @inline(__always) var keys: UnsafeMutablePointer<Key> {
            block.assumingMemoryBound(to: Key.self)
        }
        /// The values of a leaf, parallel to `keys`. Meaningless in an internal node.
        @inline(__always) var values: UnsafeMutablePointer<Value> {
            (block + Self.valuesOffset).assumingMemoryBound(to: Value.self)
        }
        /// The children of an internal node. Meaningless in a leaf.
        @inline(__always) var children: UnsafeMutablePointer<Node> {
            (block + Self.childrenOffset).assumingMemoryBound(to: Node.self)
        }
        /// The number of entries under each child of an internal node. Meaningless in a leaf.
        @inline(__always) var subtreeCounts: UnsafeMutablePointer<Int> {
            (block + Self.countsOffset).assumingMemoryBound(to: Int.self)
        }

        /// Room for one element more than the fanout, so inserts can overflow before the split.
        @inline(__always) static var capacity: Int { BTreeLayout.fanout + 1 }
        /// `offset` rounded up to a multiple of `alignment` (a power of two).
        @inline(__always) private static func align(_ offset: Int, _ alignment: Int) -> Int {
            (offset + alignment - 1) & ~(alignment - 1)
        }
        /// Byte offset of the values of a leaf: after the keys.
        @inline(__always) private static var valuesOffset: Int {
            align(capacity * MemoryLayout<Key>.stride, MemoryLayout<Value>.alignment)
        }
        /// Byte offset of the children of an internal node: after the separators.
        @inline(__always) private static var childrenOffset: Int {
            align(capacity * MemoryLayout<Key>.stride, MemoryLayout<Node>.alignment)
        }
        /// Byte offset of the subtree counts of an internal node: after the children (8-byte aligned).
        @inline(__always) private static var countsOffset: Int {
            childrenOffset + capacity * MemoryLayout<Node>.stride
        }

        /// An empty node of the given kind, owned by `owner`: one allocation holding the object, the
        /// header and all arrays, so a lookup's first touch of a node brings in its first keys too.
        ///
        /// - Complexity: O(1).
        static func make(isLeaf: Bool, owner: UInt64) -> Node {
            precondition(
                MemoryLayout<Key>.alignment <= MemoryLayout<BTreeNodeWord>.alignment
                    && MemoryLayout<Value>.alignment <= MemoryLayout<BTreeNodeWord>.alignment,
                "PersistentBTree supports keys and values aligned to at most 16 bytes")
            let bytes =
                isLeaf
                ? valuesOffset + capacity * MemoryLayout<Value>.stride
                : countsOffset + capacity * MemoryLayout<Int>.stride
            let words = (bytes + MemoryLayout<BTreeNodeWord>.stride - 1) / MemoryLayout<BTreeNodeWord>.stride
            let node = unsafeDowncast(
                create(minimumCapacity: words) { _ in BTreeNodeHeader(owner: owner, count: 0, isLeaf: isLeaf) },
                to: Node.self)
            // The words are never initialized; binding trivial, uninitialized memory to other types is allowed.
            let block = node.block
            block.bindMemory(to: Key.self, capacity: capacity)
            if isLeaf {
                (block + valuesOffset).bindMemory(to: Value.self, capacity: capacity)
            } else {
                (block + childrenOffset).bindMemory(to: Node.self, capacity: capacity)
                (block + countsOffset).bindMemory(to: Int.self, capacity: capacity)
            }
            return node
        }

        /// Releases the initialized elements (`ManagedBuffer` itself only destroys the header).
        deinit {
            if let source = stubSource {
                source.release()
                return
            }
            if isLeaf {
                keys.deinitialize(count: count)
                values.deinitialize(count: count)
            } else {
                keys.deinitialize(count: Swift.max(count - 1, 0))
                children.deinitialize(count: count)
            }
        }

        /// A copy of this node owned by `owner`. Children are shared, not copied (path copying).
        ///
        /// - Complexity: O(count).
        func copy(owner: UInt64) -> Node {
            if stubSource != nil { return PersistentBTree.resolved(self).copy(owner: owner) }
            let copy = Node.make(isLeaf: isLeaf, owner: owner)
            if isLeaf {
                copy.keys.initialize(from: keys, count: count)
                copy.values.initialize(from: values, count: count)
            } else {
                copy.keys.initialize(from: keys, count: Swift.max(count - 1, 0))
                copy.children.initialize(from: children, count: count)
                copy.subtreeCounts.initialize(from: subtreeCounts, count: count)
            }
            copy.count = count
            return copy
        }

        /// The index of the child of this internal node whose key range contains `key`: the number of
        /// separators `<= key`.
        ///
        /// - Complexity: O(log fanout).
        @inline(__always) func childIndex(for key: Key) -> Int {
            PersistentBTree.upperBound(key, in: keys, count: count &- 1)
        }

        /// Child `index` of an internal node (loaded if it is a stub), read without retaining it. The
        /// caller must keep this node (and so the child) alive while it uses the result.
        @inline(__always) func unretainedChild(at index: Int) -> Unmanaged<Node> {
            PersistentBTree.resolve(
                UnsafeRawPointer(children).load(
                    fromByteOffset: index &* MemoryLayout<Node>.stride, as: Unmanaged<Node>.self))
        }

        /// Child `index`, loaded if it is a stub, for reading (a mutation uses ``mutableChild(at:token:)``).
        @inline(__always) func child(at index: Int) -> Node {
            PersistentBTree.resolved(children[index])
        }

        /// Child `index`, as a scan reads it: loaded for the scan alone when scans have filled their share
        /// of the node cache (see ``PersistentBTree/NodeSource/nodeForScan()``). Retained.
        @inline(__always) func scanChild(at index: Int) -> Node {
            PersistentBTree.resolvedForScan(children[index])
        }

        /// For an internal node, the child whose key range contains `key`, unretained; `nil` for a leaf.
        @inline(__always) func childForLookup(_ key: Key) -> Unmanaged<Node>? {
            isLeaf ? nil : unretainedChild(at: childIndex(for: key))
        }

        /// Child `index`, made safe to mutate in place under `token`: kept if this node's slot holds the
        /// only reference to it and `token` owns it, otherwise replaced in the slot by a copy owned by
        /// `token`. Must only be called on a node that is itself mutable under `token`.
        ///
        /// - Complexity: O(1), or O(fanout) when it copies.
        @inline(__always) func mutableChild(at index: Int, token: UInt64) -> Node {
            let slot = children + index
            if slot.pointee.owner != token || !isKnownUniquelyReferenced(&slot.pointee) {
                slot.pointee = slot.pointee.copy(owner: token)
            }
            return slot.pointee
        }
    }

    /// The first index in `keys[0..<count]` whose key is `>= key` (`count` if none).
    ///
    /// - Complexity: O(log count) comparisons, or O(count / 8 + 8) branch-free ones for bitwise-copyable
    ///   keys (see ``rank(of:in:count:countingEqual:)``); no allocation.
    @inline(__always)
    static func lowerBound(_ key: Key, in keys: UnsafeMutablePointer<Key>, count: Int) -> Int {
        rank(of: key, in: keys, count: count, countingEqual: false)
    }

    /// The first index in `keys[0..<count]` whose key is `> key` (`count` if none).
    ///
    /// - Complexity: as ``lowerBound(_:in:count:)``.
    @inline(__always)
    static func upperBound(_ key: Key, in keys: UnsafeMutablePointer<Key>, count: Int) -> Int {
        rank(of: key, in: keys, count: count, countingEqual: true)
    }

    /// The number of keys in the sorted `keys[0..<count]` that are `< key` (or `<= key` when
    /// `countingEqual`). `countingEqual` is a constant at every call site, so the branch on it folds away.
    ///
    /// Bitwise-copyable keys (integers, object keys, composite index keys of integers) compare in a
    /// couple of instructions, so they use a branch-free two-level count (``twoLevelRank(count:_:)``).
    /// So does an integer ``IndexKey`` (the primary-key index of an `Int` primary key): it is not
    /// bitwise-copyable (other cases hold strings), but against an `.int` key each element is classified
    /// by its case and compared as an integer, without copying it. Other keys (strings) use a plain
    /// binary search, which minimizes the number of comparisons.
    ///
    /// - Complexity: O(count / 8 + 8) or O(log count) comparisons; no allocation.
    @inline(__always)
    static func rank(
        of key: Key, in keys: UnsafeMutablePointer<Key>, count: Int, countingEqual: Bool
    ) -> Int {
        if _isPOD(Key.self) {
            return twoLevelRank(count: count) { isCounted(keys[$0], key, countingEqual) }
        }
        // `Key.self == IndexKey.self` is a constant in every specialisation, so this folds away for other
        // keys. Both casts are identities when it holds: `key` is an `IndexKey`, and `keys` points to
        // memory bound to `Key`, that is to `IndexKey`.
        if Key.self == IndexKey.self, case .int(let target) = unsafeBitCast(key, to: IndexKey.self) {
            let indexKeys = UnsafeMutableRawPointer(keys).assumingMemoryBound(to: IndexKey.self)
            return twoLevelRank(count: count) { IndexKey.isCounted(indexKeys + $0, target, countingEqual) }
        }
        var low = 0
        var high = count
        while low < high {
            let middle = (low &+ high) &>> 1
            if isCounted(keys[middle], key, countingEqual) { low = middle &+ 1 } else { high = middle }
        }
        return low
    }

    /// The number of indices in `0..<count` for which `counted` holds, when it holds exactly for a prefix
    /// of them (the keys are sorted). Every 8th index first, which picks a block of 8, then the indices of
    /// that block. The 8 sample loads do not depend on each other, so when the node is not in cache their
    /// misses overlap (one memory round trip for the node instead of the ~4 dependent ones of binary
    /// search), and there are no mispredicted branches.
    ///
    /// - Complexity: O(count / 8 + 8) calls of `counted`.
    @inline(__always)
    private static func twoLevelRank(count: Int, _ counted: (Int) -> Bool) -> Int {
        var block = 0
        var sample = 7
        while sample < count {
            block &+= counted(sample) ? 1 : 0
            sample &+= 8
        }
        let start = block &<< 3
        let end = Swift.min(start &+ 8, count)
        var result = start
        var index = start
        while index < end {
            result &+= counted(index) ? 1 : 0
            index &+= 1
        }
        return result
    }

    /// Whether `element` counts towards the rank of `key`: `element < key`, or `element <= key` when
    /// `countingEqual`.
    @inline(__always)
    private static func isCounted(_ element: Key, _ key: Key, _ countingEqual: Bool) -> Bool {
        countingEqual ? !(key < element) : element < key
    }
}

extension PersistentBTree {
    /// Opens a gap at `index` among the `count` initialized elements at `base` and initializes it with
    /// `element`. Room for `count + 1` elements must exist. (`moveInitialize` handles the overlap.)
    ///
    /// - Complexity: O(count - index).
    @inline(__always)
    static func insertElement<T>(_ element: T, at index: Int, in base: UnsafeMutablePointer<T>, count: Int) {
        (base + index + 1).moveInitialize(from: base + index, count: count - index)
        (base + index).initialize(to: element)
    }

    /// Removes and returns the element at `index` among the `count` initialized elements at `base`,
    /// closing the gap.
    ///
    /// - Complexity: O(count - index).
    @inline(__always)
    static func removeElement<T>(at index: Int, in base: UnsafeMutablePointer<T>, count: Int) -> T {
        let element = (base + index).move()
        (base + index).moveInitialize(from: base + index + 1, count: count - index - 1)
        return element
    }
}
