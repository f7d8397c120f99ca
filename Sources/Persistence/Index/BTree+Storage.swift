import Synchronization

extension PersistentBTree {
    /// A node that is in the file and is loaded on first use: what a not-yet-loaded child slot holds (inside
    /// a stub ``Node``, see ``Node/stubSource``).
    ///
    /// ## Thread safety (why `@unchecked Sendable` is sound)
    /// `offset`, `store` and `decoder` never change. `loaded` goes once from 0 to a retained node, by a
    /// compare-and-exchange, and never back; the node it publishes is fully built before the exchange
    /// (release ordering) and read after an acquiring load, and nobody writes it afterwards (its owner
    /// token is 0, which no transaction holds, so every mutation copies it). Two threads that load at once
    /// both decode; the loser releases its copy.
    final class NodeSource: @unchecked Sendable {
        let offset: UInt64
        /// The number of entries under the node (its parent's subtree count, or the tree's count for a
        /// root), and the fewest elements it may hold (1 or 2 for a root, else half the fanout): checked
        /// when it is loaded, so that a crafted file cannot make rank, select or rebalancing go wrong.
        let entries: Int
        let minimum: Int
        /// The bytes of the nodes of the subtree in the file (this node's included): what the subtree adds
        /// to the store's live bytes. Checked when the node is loaded, as `entries` is.
        let bytes: UInt64
        let store: NodeStore
        let decoder: NodeDecoder
        /// 0, or the bits of a retained ``Node``: the loaded node.
        private let loaded = Atomic<UInt>(0)

        init(
            offset: UInt64, entries: Int, minimum: Int, bytes: UInt64, store: NodeStore, decoder: NodeDecoder
        ) {
            self.offset = offset
            self.entries = entries
            self.minimum = minimum
            self.bytes = bytes
            self.store = store
            self.decoder = decoder
        }

        deinit {
            let bits = loaded.load(ordering: .acquiring)
            if bits != 0 { Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
        }

        /// The node, loaded on first use; alive as long as this source is. Not retained.
        @inline(__always)
        func node() -> Unmanaged<Node> {
            let bits = loaded.load(ordering: .acquiring)
            if bits != 0 { return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: bits)!) }
            return load()
        }

        /// The node as a scan (``PersistentBTree/Iterator``, ``PersistentBTree/forEach(from:inclusive:_:)``)
        /// reads it, retained: as ``node()`` while the store's scans may still fill the cache
        /// (``NodeStore/scanMayCache``). Past that, a node not loaded yet is decoded for the caller alone and
        /// not published, so its memory goes as soon as the scan moves past it instead of staying with every
        /// version that shares this source (a snapshot held for a whole scan would otherwise keep every
        /// node of the tree). Its children are stubs of its own, so nothing under it is published either.
        ///
        /// Nothing published is ever taken back: readers that walk unretained pointers (``node()``) stay
        /// valid for as long as they hold the tree.
        func nodeForScan() -> Node {
            let bits = loaded.load(ordering: .acquiring)
            if bits != 0 {
                return Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
            }
            if store.scanMayCache { return load().takeUnretainedValue() }
            return decoder.load(self, caching: false)
        }

        /// The node if it was loaded (published) already; loads nothing.
        var loadedNode: Node? {
            let bits = loaded.load(ordering: .acquiring)
            guard bits != 0 else { return nil }
            return Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
        }

        private func load() -> Unmanaged<Node> {
            let node = Unmanaged.passRetained(decoder.load(self))
            let bits = UInt(bitPattern: node.toOpaque())
            let (exchanged, current) = loaded.compareExchange(
                expected: 0, desired: bits, successOrdering: .acquiringAndReleasing, failureOrdering: .acquiring)
            if exchanged { return node }
            node.release()
            return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: current)!)
        }
    }

    /// Decodes the nodes of one kind of tree (a class so that every stub of a tree shares one).
    ///
    /// A node that cannot be loaded (damaged bytes, see ``NodeStore/withNode(at:_:)``) reads as the node
    /// `repair` builds for it, or, when there is no repair, as an empty leaf, and the damage is recorded
    /// in the store: the engine then refuses writes (`corrupted`, with the offset).
    final class NodeDecoder: Sendable {
        /// Decodes the body of the node of a source (kind, count, the file offset its record's positions
        /// count from, body bytes), children as stubs.
        let decode: @Sendable (UInt8, Int, UInt64, UnsafeRawBufferPointer, NodeSource) -> Node?

        init(decode: @escaping @Sendable (UInt8, Int, UInt64, UnsafeRawBufferPointer, NodeSource) -> Node?) {
            self.decode = decode
        }

        /// `caching`: see ``NodeStore/withNode(at:caching:_:)``.
        func load(_ source: NodeSource, caching: Bool = true) -> Node {
            let result = source.store.withNode(at: source.offset, caching: caching) {
                kind, count, base, body -> Node? in
                guard count >= source.minimum else { return nil }
                return decode(kind, count, base, body, source)
            }
            switch result {
            case .success(let node): return node
            case .failure: return Node.make(isLeaf: true, owner: 0)
            }
        }
    }
}

extension PersistentBTree.Node {
    /// A node of the file, not loaded yet: a placeholder whose ``stubSource`` loads it on first use.
    static func makeStub(_ source: PersistentBTree.NodeSource) -> PersistentBTree.Node {
        unsafeDowncast(
            create(minimumCapacity: 0) { _ in
                BTreeNodeHeader(
                    owner: 0, count: 0, isLeaf: false, source: Unmanaged<AnyObject>.passRetained(source))
            },
            to: PersistentBTree.Node.self)
    }
}

extension PersistentBTree {
    /// `node`, or for a stub the node it stands for (loaded on first use). Not retained: the stub keeps the
    /// loaded node alive, and the caller keeps the stub alive.
    @inline(__always)
    static func resolve(_ node: Unmanaged<Node>) -> Unmanaged<Node> {
        node._withUnsafeGuaranteedRef { node in
            guard let source = node.stubSource else { return nil }
            return Unmanaged<NodeSource>.fromOpaque(source.toOpaque())._withUnsafeGuaranteedRef { $0.node() }
        } ?? node
    }

    /// `node` resolved (see ``resolve(_:)``), retained.
    @inline(__always)
    static func resolved(_ node: Node) -> Node {
        guard node.stubSource != nil else { return node }
        return resolve(Unmanaged.passUnretained(node)).takeUnretainedValue()
    }

    /// `node`, or for a stub the node it stands for as a scan reads it (see
    /// ``NodeSource/nodeForScan()``), retained.
    @inline(__always)
    static func resolvedForScan(_ node: Node) -> Node {
        guard let source = node.stubSource else { return node }
        return Unmanaged<NodeSource>.fromOpaque(source.toOpaque())._withUnsafeGuaranteedRef { $0.nodeForScan() }
    }

    /// A tree whose root is the node at `offset` in the file, with `count` entries; nothing is read
    /// until the tree is used.
    /// `bytes` is the size of the tree's nodes in the file.
    init(fileRoot offset: UInt64, count: Int, bytes: UInt64, store: NodeStore, decoder: NodeDecoder) {
        self.init()
        guard count > 0 else { return }
        root = Node.makeStub(
            NodeSource(offset: offset, entries: count, minimum: 1, bytes: bytes, store: store, decoder: decoder))
        self.count = count
    }

    /// The number of nodes the tree holds in memory: nodes not from the file, and nodes of the file loaded
    /// and published into it (what the tree keeps alive, see ``NodeSource/nodeForScan()``). Loads nothing.
    ///
    /// - Complexity: O(nodes in memory).
    package var nodesInMemory: Int {
        guard let root else { return 0 }
        return Self.nodesInMemory(under: root)
    }

    private static func nodesInMemory(under node: Node) -> Int {
        if let source = node.stubSource {
            let loaded = Unmanaged<NodeSource>.fromOpaque(source.toOpaque())._withUnsafeGuaranteedRef { $0.loadedNode }
            return loaded.map { nodesInMemory(under: $0) } ?? 0
        }
        guard !node.isLeaf else { return 1 }
        var total = 1
        for index in 0..<node.count { total += nodesInMemory(under: node.children[index]) }
        return total
    }

    /// The same entries, with every node that came from the file replaced by a fresh stub: the nodes
    /// loaded so far are released once no older copy of the tree uses them (the engine's node cache
    /// eviction). Nodes not in the file (changed since the last checkpoint) are kept, and copied when a
    /// child below them changes.
    ///
    /// - Complexity: O(nodes changed since the last checkpoint).
    func unloaded() -> PersistentBTree {
        guard let root else { return self }
        var tree = self
        tree.root = Self.unloaded(root)
        return tree
    }

    private static func unloaded(_ node: Node) -> Node {
        if let source = node.stubSource {
            let old = Unmanaged<NodeSource>.fromOpaque(source.toOpaque()).takeUnretainedValue()
            return Node.makeStub(
                NodeSource(
                    offset: old.offset, entries: old.entries, minimum: old.minimum, bytes: old.bytes,
                    store: old.store, decoder: old.decoder))
        }
        if node.isLeaf { return node }
        var copy: Node?
        for index in 0..<node.count {
            let child = node.children[index]
            let fresh = unloaded(child)
            if fresh === child { continue }
            if copy == nil { copy = node.copy(owner: 0) }
            copy.unsafelyUnwrapped.children[index] = fresh
        }
        return copy ?? node
    }
}
