import Synchronization

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
