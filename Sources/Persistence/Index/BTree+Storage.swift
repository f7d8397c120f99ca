import Synchronization

/// A key or value type that ``PersistentBTree`` nodes can store in the file (format 2, see
/// ``BTreeNodeFormat``). Encodings are little-endian and self-delimiting; a decoder never reads past the
/// node's bytes (``ByteReader`` records an overrun instead), and a malformed value is an error, not a trap.
package protocol NodeCodable {
    /// Appends the encoding of `self`.
    func encode(to writer: inout ByteWriter)
    /// Reads one value; `nil` when the bytes do not hold one (the node is then damaged).
    static func decode(from reader: inout ByteReader) -> Self?
}

/// The bytes of one ``PersistentBTree`` node in a store file (format 2): written by checkpoints inside
/// node records (``Record/Kind/nodes``), read lazily, once, when a reader or writer first reaches the node.
///
/// ```text
///  node     := kind: u8 (1 leaf, 2 internal) | 0: u8 | count: u16 | bodyLength: u32 | crc: u32
///              | position: u64 | body
///  leaf     := key[count] | value[count]
///  internal := child[count] (u64, see below) | entries[count] (u64: entries under each child)
///              | bytes[count] (u64: bytes of the nodes under each child, its own included)
///              | separator[count - 1]
///  child    := the child's file offset, or, with bit 63 set, its position in this node's nodes record
/// ```
/// `position` is where the node starts counting from the first node of its nodes record, so that a record
/// of nodes can be encoded before it is known where it will be appended (without the write lock): a
/// child written by the same checkpoint is referenced by its position, one written earlier by its offset.
/// `crc` is the CRC-32C of the header's other fields and the body: a node is checked when it is loaded,
/// since open does not read the nodes of a checkpoint. A child always lies before its parent in the file
/// (checkpoints write children first), which bounds every walk and rules out cycles in a crafted file.
package enum BTreeNodeFormat {
    package static let headerSize = 20
    /// Marks a child reference as a position in the parent's nodes record (see above).
    package static let relative: UInt64 = 1 << 63
    package static let leafKind: UInt8 = 1
    package static let internalKind: UInt8 = 2

    /// In an encrypted store, a node's body is a sealed unit (``StoreCipher``) whose associated data holds,
    /// besides the unit's offset (given as 0: nodes are encoded before their place is known), the node's
    /// position and its header's kind, count and body length.
    static func sealContext(position: UInt64, header: UnsafeRawBufferPointer) -> [UInt8] {
        var context = withUnsafeBytes(of: position.littleEndian) { Array($0) }
        context.append(contentsOf: header.prefix(8))
        return context
    }
}

/// Where a store's checkpoint nodes are read from: the engine's current file mapping and the end of the
/// bytes known to be in the file. Shared by every not-yet-loaded node of the engine's trees.
package final class NodeStore: Sendable {
    private struct State {
        var region: MappedRegion
        var end: UInt64
        /// The first damaged node found, if any (see ``PersistentBTree/NodeSource``).
        var damage: StorageError?
        /// The file's pages that nodes loaded for scans alone have passed (checkpoints write a tree's leaves
        /// in key order, so a scan reads them in file order): without it a scan of a held version keeps the
        /// whole tree's pages of the mapping resident (about 20 MiB for 1M rows). Shared by the scans of
        /// the store: concurrent scans interleave, which starts the window again (only fewer drops).
        var scanPages = PageWindow()
    }
    /// `Locked` (a pthread mutex), not `Mutex`: the thread sanitizer cannot see `Mutex`'s ordering on Linux,
    /// and concurrent scans update `scanPages` under this lock (it reported them as races).
    private let state: Locked<State>
    /// An encrypted store's cipher: node bodies are then sealed units (see ``BTreeNodeFormat``).
    package let cipher: StoreCipher?
    /// Nodes loaded from the file, and their bytes (statistics).
    private let loads = Atomic<Int>(0)
    private let loadedBytes = Atomic<Int>(0)
    /// Bytes loaded since the engine last dropped the loaded nodes (see ``takeLoadedSinceEviction()``).
    private let sinceEviction = Atomic<Int>(0)
    /// How much of the node cache (estimated as ``cachedBytes`` counts) scans may fill: an eighth of the
    /// cache's limit. Past it, a scan reads the nodes it has to load for itself alone (see
    /// ``PersistentBTree/NodeSource/nodeForScan()``).
    package let scanShare: Int
    package let path: String

    /// - Parameter cacheLimit: The engine's node cache limit (``StorageEngine/Configuration/nodeCacheLimit``),
    ///   which sets ``scanShare``.
    package init(region: MappedRegion, end: UInt64, path: String, cacheLimit: Int = 64 << 20) {
        state = Locked(State(region: region, end: end, damage: nil))
        cipher = region.cipher
        self.path = path
        scanShare = max(cacheLimit, 0) / 8
    }

    /// A larger mapping or a longer file (after appends): nodes written since can be read.
    package func update(region: MappedRegion, end: UInt64) {
        state.withLock {
            $0.region = region
            $0.end = max($0.end, end)
        }
    }

    /// The first damaged node found since open, if any.
    package var damage: StorageError? { state.withLock { $0.damage } }

    /// How many nodes were loaded from the file, and their encoded size.
    package var loadStatistics: (nodes: Int, bytes: Int) {
        (loads.load(ordering: .relaxed), loadedBytes.load(ordering: .relaxed))
    }

    /// A node's checksum: its header but the checksum field itself, then its body.
    static func checksum(_ header: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer) -> UInt32 {
        var crc = CRC32C()
        crc.update(UnsafeRawBufferPointer(rebasing: header[0..<8]))
        crc.update(UnsafeRawBufferPointer(rebasing: header[12..<BTreeNodeFormat.headerSize]))
        crc.update(body)
        return crc.value
    }

    /// The memory a loaded node takes, roughly: its encoded bytes and the object around them, and for an
    /// internal node a stub (two small objects) per child.
    private static func memoryEstimate(kind: UInt8, count: Int, bytes: Int) -> Int {
        bytes + 64 + (kind == BTreeNodeFormat.internalKind ? count * 96 : 0)
    }

    /// The memory (estimated) of the nodes loaded since the engine last dropped them: about what the node
    /// cache holds.
    package var cachedBytes: Int { sinceEviction.load(ordering: .relaxed) }

    /// Whether a scan may keep the nodes it loads: the nodes loaded since the last eviction are under the
    /// scans' share of the cache (``scanShare``). A hint: other threads load meanwhile.
    var scanMayCache: Bool { sinceEviction.load(ordering: .relaxed) < scanShare }

    /// The memory (estimated) of the nodes loaded since the last call, which starts the count again.
    package func takeLoadedSinceEviction(ifOver limit: Int) -> Bool {
        guard sinceEviction.load(ordering: .relaxed) > limit else { return false }
        sinceEviction.store(0, ordering: .relaxed)
        return true
    }

    /// Calls `body` with the node at `offset` (its body checked against its CRC), or records and returns the
    /// damage.
    /// `base` is the file offset that the positions of the node's nodes record count from. `caching`: the
    /// node will be published in the tree (and counts towards ``cachedBytes``), not read by a scan alone.
    func withNode<R>(
        at offset: UInt64, caching: Bool = true,
        _ body: (_ kind: UInt8, _ count: Int, _ base: UInt64, _ body: UnsafeRawBufferPointer) -> R?
    ) -> Result<R, StorageError> {
        let (region, end) = state.withLock { ($0.region, $0.end) }
        let damaged = { (what: String) -> Result<R, StorageError> in
            let error = StorageError(
                .corrupted,
                "The index node at byte \(offset) of '\(self.path)' is damaged (\(what)). Open the file with "
                    + "verifiesWholeFileAtOpen to rebuild its indexes from the log, or restore it from a backup.",
                offset: FileOffset(offset))
            self.state.withLock { if $0.damage == nil { $0.damage = error } }
            return .failure(error)
        }
        let headerSize = UInt64(BTreeNodeFormat.headerSize)
        guard offset >= UInt64(FileHeader.size), offset <= end, end - offset >= headerSize,
            end <= UInt64(region.length)
        else { return damaged("it lies outside the file") }
        var header = ByteReader(region.bytes(at: Int(offset), count: BTreeNodeFormat.headerSize))
        let kind = header.uint8()
        let zero = header.uint8()
        let count = Int(header.uint16())
        let length = UInt64(header.uint32())
        let crc = header.uint32()
        let position = header.uint64()
        guard kind == BTreeNodeFormat.leafKind || kind == BTreeNodeFormat.internalKind, zero == 0, count > 0,
            count <= BTreeLayout.fanout, length <= end - offset - headerSize,
            position <= offset - UInt64(FileHeader.size)
        else { return damaged("its header is not a node's") }
        let bytes = region.bytes(at: Int(offset + headerSize), count: Int(length))
        let headerBytes = region.bytes(at: Int(offset), count: BTreeNodeFormat.headerSize)
        guard Self.checksum(headerBytes, bytes) == crc else {
            return damaged("checksum mismatch")
        }
        let decoded: R?
        if let cipher {
            // The body is a unit bound to the node's position and the header's kind, count and length.
            guard let size = StoreCipher.unitSize(at: bytes), size == bytes.count,
                let opened = try? cipher.withOpenedUnit(
                    in: bytes, at: 0, path: path, what: "index node",
                    context: BTreeNodeFormat.sealContext(position: position, header: headerBytes),
                    { (plain) throws(StorageError) in body(kind, count, offset - position, plain) })
            else { return damaged("it does not authenticate") }
            decoded = opened
        } else {
            decoded = body(kind, count, offset - position, bytes)
        }
        guard let result = decoded else {
            return damaged("its entries cannot be read")
        }
        loads.add(1, ordering: .relaxed)
        loadedBytes.add(Int(length) + BTreeNodeFormat.headerSize, ordering: .relaxed)
        if caching {
            sinceEviction.add(Self.memoryEstimate(kind: kind, count: count, bytes: Int(length)), ordering: .relaxed)
        } else if kind == BTreeNodeFormat.leafKind,
            let passed = state.withLock({ $0.scanPages.read(at: offset, length: headerSize + length) })
        {
            // Leaves only: a parent lies after its children in the file, and a scan loads it first.
            region.dropResidentPages(passed)
        }
        return .success(result)
    }
}

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

extension PersistentBTree where Key: NodeCodable, Value: NodeCodable {
    /// The decoder of this tree type's nodes.
    static func makeDecoder() -> NodeDecoder {
        NodeDecoder { kind, count, base, body, source in
            var reader = ByteReader(body)
            // Its size in the file: an encrypted node's body is a unit, `body` the plaintext.
            let sealed = source.store.cipher == nil ? 0 : StoreCipher.unitOverhead
            let ownBytes = UInt64(BTreeNodeFormat.headerSize + body.count + sealed)
            if kind == BTreeNodeFormat.leafKind {
                guard count == source.entries, ownBytes == source.bytes else { return nil }
                let node = Node.make(isLeaf: true, owner: 0)
                var keys: [Key] = []
                keys.reserveCapacity(count)
                for _ in 0..<count {
                    guard let key = Key.decode(from: &reader), keys.last.map({ $0 < key }) ?? true else { return nil }
                    keys.append(key)
                }
                node.keys.initialize(from: keys, count: count)
                var values = 0
                defer { node.count = values }
                // On a bad value the keys must still be released: the node's count covers the values read.
                for _ in 0..<count {
                    guard let value = Value.decode(from: &reader), !reader.overrun else {
                        node.keys.advanced(by: values).deinitialize(count: count - values)
                        return nil
                    }
                    (node.values + values).initialize(to: value)
                    values += 1
                }
                guard reader.isAtEnd else { return nil }
                return node
            }
            var offsets: [UInt64] = []
            var counts: [Int] = []
            var total = 0
            for _ in 0..<count {
                // Children come before their parent: no walk can loop.
                let reference = reader.uint64()
                let position = reference & ~BTreeNodeFormat.relative
                let offset = reference & BTreeNodeFormat.relative != 0 ? base &+ position : reference
                guard offset < source.offset,
                    reference & BTreeNodeFormat.relative == 0 || position < source.offset - base
                else { return nil }
                offsets.append(offset)
            }
            for _ in 0..<count {
                let entries = reader.uint64()
                guard entries > 0, entries <= UInt64(source.entries - total) else { return nil }
                counts.append(Int(entries))
                total += Int(entries)
            }
            guard total == source.entries, count >= 2 else { return nil }
            var sizes: [UInt64] = []
            var totalBytes = ownBytes
            for _ in 0..<count {
                let size = reader.uint64()
                guard size >= UInt64(BTreeNodeFormat.headerSize), size <= source.bytes - totalBytes else { return nil }
                sizes.append(size)
                totalBytes += size
            }
            guard totalBytes == source.bytes else { return nil }
            var separators: [Key] = []
            for _ in 0..<(count - 1) {
                guard let key = Key.decode(from: &reader), separators.last.map({ $0 < key }) ?? true else {
                    return nil
                }
                separators.append(key)
            }
            guard !reader.overrun, reader.isAtEnd else { return nil }
            let node = Node.make(isLeaf: false, owner: 0)
            node.keys.initialize(from: separators, count: count - 1)
            node.subtreeCounts.initialize(from: counts, count: count)
            for (index, offset) in offsets.enumerated() {
                let child = NodeSource(
                    offset: offset, entries: counts[index], minimum: minFill, bytes: sizes[index],
                    store: source.store, decoder: source.decoder)
                (node.children + index).initialize(to: Node.makeStub(child))
            }
            node.count = count
            return node
        }
    }

    /// Appends every node of the tree that `store`'s file does not hold yet to `out` (children before
    /// parents), as ``BTreeNodeFormat`` describes, and returns a reference to the root: its file offset if
    /// it is in the file already, else its position in `out` with ``BTreeNodeFormat/relative`` set (nil for
    /// an empty tree). `out` will be the nodes of one nodes record; nothing in it depends on where that is
    /// appended. A node of another store (the file before a compaction) is loaded and written again.
    ///
    /// `written` gains the position and subtree size of every node written (by node identity), for
    /// ``rebased(onto:store:decoder:)`` once the record is appended. The result's `bytes` is the size of
    /// all the tree's nodes in the file (those written before included).
    ///
    /// - Complexity: O(nodes changed since the last checkpoint).
    func writeNodes(
        to out: inout ByteWriter, store: NodeStore, written: inout [ObjectIdentifier: WrittenNode]
    ) throws(StorageError) -> (reference: UInt64, bytes: UInt64)? {
        guard let root else { return nil }
        return try Self.write(root, to: &out, store: store, written: &written)
    }

    private static func write(
        _ node: Node, to out: inout ByteWriter, store: NodeStore, written: inout [ObjectIdentifier: WrittenNode]
    ) throws(StorageError) -> (reference: UInt64, bytes: UInt64) {
        if let source = node.stubSource {
            let (offset, bytes, inFile) = Unmanaged<NodeSource>.fromOpaque(source.toOpaque())
                ._withUnsafeGuaranteedRef { ($0.offset, $0.bytes, $0.store === store) }
            if inFile { return (offset, bytes) }
            return try write(resolved(node), to: &out, store: store, written: &written)
        }
        var body = ByteWriter(capacity: 4096)
        if store.cipher != nil { body.append([UInt8](repeating: 0, count: StoreCipher.unitHeaderSize)) }
        var subtreeBytes: UInt64 = 0
        if node.isLeaf {
            for index in 0..<node.count { node.keys[index].encode(to: &body) }
            for index in 0..<node.count { node.values[index].encode(to: &body) }
        } else {
            var children: [(reference: UInt64, bytes: UInt64)] = []
            children.reserveCapacity(node.count)
            for index in 0..<node.count {
                children.append(try write(node.children[index], to: &out, store: store, written: &written))
            }
            for child in children { body.append(child.reference) }
            for index in 0..<node.count { body.append(UInt64(node.subtreeCounts[index])) }
            for child in children {
                body.append(child.bytes)
                subtreeBytes += child.bytes
            }
            for index in 0..<(node.count - 1) { node.keys[index].encode(to: &body) }
        }
        let position = UInt64(out.count)
        if store.cipher != nil { body.append([UInt8](repeating: 0, count: PlatformCrypto.tagSize)) }
        var header = ByteWriter(capacity: BTreeNodeFormat.headerSize)
        header.append(node.isLeaf ? BTreeNodeFormat.leafKind : BTreeNodeFormat.internalKind)
        header.append(UInt8(0))
        header.append(UInt16(node.count))
        header.append(UInt32(body.count))
        header.append(UInt32(0))
        header.append(position)
        if let cipher = store.cipher {
            let context = header.bytes.withUnsafeBytes {
                BTreeNodeFormat.sealContext(position: position, header: $0)
            }
            var failure: StorageError?
            body.bytes.withUnsafeMutableBytes { unit in
                do throws(StorageError) { try cipher.seal(unit, at: 0, context: context) } catch { failure = error }
            }
            if let failure { throw failure }
        }
        let crc = header.bytes.withUnsafeBytes { header in
            body.bytes.withUnsafeBytes { NodeStore.checksum(header, $0) }
        }
        withUnsafeBytes(of: crc.littleEndian) { header.bytes.replaceSubrange(8..<12, with: $0) }
        out.append(header.bytes)
        out.append(body.bytes)
        subtreeBytes += UInt64(BTreeNodeFormat.headerSize + body.count)
        written[ObjectIdentifier(node)] = WrittenNode(offset: position, bytes: subtreeBytes)
        return (position | BTreeNodeFormat.relative, subtreeBytes)
    }

    /// The same entries, with every node a checkpoint wrote (`written`: node identity → file offset and
    /// subtree size, from ``writeNodes(to:store:written:)``) replaced by a stub of `store`, so that its
    /// memory goes once no snapshot uses it. The tree may have changed since the checkpoint took it: nodes
    /// changed since are kept (and copied where a child below them is replaced).
    ///
    /// Sound because nodes never change once their version is published: a node the checkpoint wrote holds
    /// what it wrote, in whatever version it is still found (`written` holds only nodes alive for the call).
    ///
    /// - Complexity: O(nodes in memory).
    func rebased(
        onto written: [ObjectIdentifier: WrittenNode], store: NodeStore, decoder: NodeDecoder
    )
        -> PersistentBTree
    {
        guard let root, root.stubSource == nil else { return self }
        var tree = self
        if let node = written[ObjectIdentifier(root)] {
            tree.root = Node.makeStub(
                NodeSource(
                    offset: node.offset, entries: count, minimum: 1, bytes: node.bytes, store: store,
                    decoder: decoder))
        } else {
            tree.root = Self.rebased(root, written, store, decoder)
        }
        return tree
    }

    private static func rebased(
        _ node: Node, _ written: [ObjectIdentifier: WrittenNode], _ store: NodeStore, _ decoder: NodeDecoder
    ) -> Node {
        if node.isLeaf { return node }
        var copy: Node?
        for index in 0..<node.count {
            let child = node.children[index]
            guard child.stubSource == nil else { continue }
            let fresh: Node
            if let writtenChild = written[ObjectIdentifier(child)] {
                fresh = Node.makeStub(
                    NodeSource(
                        offset: writtenChild.offset, entries: node.subtreeCounts[index], minimum: minFill,
                        bytes: writtenChild.bytes, store: store, decoder: decoder))
            } else {
                fresh = rebased(child, written, store, decoder)
                if fresh === child { continue }
            }
            if copy == nil { copy = node.copy(owner: 0) }
            copy.unsafelyUnwrapped.children[index] = fresh
        }
        return copy ?? node
    }
}

/// A node a checkpoint wrote: its position in the nodes record (its file offset once the record is
/// appended) and the bytes of its subtree in the file.
package struct WrittenNode: Sendable {
    package var offset: UInt64
    package var bytes: UInt64
}

// MARK: Encodings of the engine's keys and values

extension Int64: NodeCodable {
    package func encode(to writer: inout ByteWriter) { writer.append(self) }
    package static func decode(from reader: inout ByteReader) -> Int64? { reader.int64() }
}

extension UInt32: NodeCodable {
    package func encode(to writer: inout ByteWriter) { writer.append(self) }
    package static func decode(from reader: inout ByteReader) -> UInt32? { reader.uint32() }
}

extension ObjectKey: NodeCodable {
    package func encode(to writer: inout ByteWriter) { writer.append(rawValue) }
    package static func decode(from reader: inout ByteReader) -> ObjectKey? { ObjectKey(reader.int64()) }
}

extension TableID: NodeCodable {
    package func encode(to writer: inout ByteWriter) { writer.append(rawValue) }
    package static func decode(from reader: inout ByteReader) -> TableID? { TableID(reader.uint32()) }
}

extension Present: NodeCodable {
    package func encode(to writer: inout ByteWriter) {}
    package static func decode(from reader: inout ByteReader) -> Present? { Present() }
}

extension RowLocation: NodeCodable {
    package func encode(to writer: inout ByteWriter) {
        writer.append(offset)
        writer.append(length)
    }
    package static func decode(from reader: inout ByteReader) -> RowLocation? {
        RowLocation(offset: reader.uint64(), length: reader.uint32())
    }
}

extension PrimaryKeyEntry: NodeCodable {
    package func encode(to writer: inout ByteWriter) {
        object.encode(to: &writer)
        location.encode(to: &writer)
    }
    package static func decode(from reader: inout ByteReader) -> PrimaryKeyEntry? {
        guard let object = ObjectKey.decode(from: &reader), let location = RowLocation.decode(from: &reader) else {
            return nil
        }
        return PrimaryKeyEntry(object: object, location: location)
    }
}

extension IndexKey: NodeCodable {
    /// `case: u8` (0 null, 1 int, 2 double, 3 string, 4 uuid, 5 objectId), then the payload.
    package func encode(to writer: inout ByteWriter) {
        switch self {
        case .null: writer.append(UInt8(0))
        case .int(let value):
            writer.append(UInt8(1))
            writer.append(value)
        case .double(let value):
            writer.append(UInt8(2))
            writer.append(value.bitPattern)
        case .string(let value):
            writer.append(UInt8(3))
            writer.appendString(value)
        case .uuid(let high, let low):
            writer.append(UInt8(4))
            writer.append(high)
            writer.append(low)
        case .objectId(let high, let low):
            writer.append(UInt8(5))
            writer.append(high)
            writer.append(low)
        }
    }

    package static func decode(from reader: inout ByteReader) -> IndexKey? {
        switch reader.uint8() {
        case 0: .null
        case 1: .int(reader.int64())
        case 2: .double(Double(bitPattern: reader.uint64()))
        case 3: .string(reader.string())
        case 4: .uuid(reader.uint64(), reader.uint64())
        case 5: .objectId(reader.uint64(), reader.uint32())
        default: nil
        }
    }
}

extension IndexEntry: NodeCodable {
    package func encode(to writer: inout ByteWriter) {
        key.encode(to: &writer)
        object.encode(to: &writer)
    }
    package static func decode(from reader: inout ByteReader) -> IndexEntry? {
        guard let key = IndexKey.decode(from: &reader), let object = ObjectKey.decode(from: &reader) else {
            return nil
        }
        return IndexEntry(key, object)
    }
}

extension BacklinkKey: NodeCodable {
    package func encode(to writer: inout ByteWriter) {
        target.encode(to: &writer)
        targetKey.encode(to: &writer)
        source.encode(to: &writer)
        writer.append(column)
        sourceKey.encode(to: &writer)
    }
    package static func decode(from reader: inout ByteReader) -> BacklinkKey? {
        guard let target = TableID.decode(from: &reader), let targetKey = ObjectKey.decode(from: &reader),
            let source = TableID.decode(from: &reader)
        else { return nil }
        let column = Int32(bitPattern: reader.uint32())
        guard let sourceKey = ObjectKey.decode(from: &reader) else { return nil }
        return BacklinkKey(target: target, targetKey: targetKey, source: source, column: column, sourceKey: sourceKey)
    }
}
