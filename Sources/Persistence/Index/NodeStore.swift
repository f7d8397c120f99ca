import Synchronization

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
