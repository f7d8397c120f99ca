/// A checkpoint: where the indexes of one version are in the file, so that open reads a few hundred bytes
/// instead of replaying the whole log (format 2).
///
/// A checkpoint is two records, appended by ``StorageEngine``:
///
/// ```text
///  ... | commit v | nodes record (kind 2) | commit v+1 | ... | checkpoint record (kind 3) | ...
///                  ^ nodesStart            ^ commits may come in while the nodes are synced
/// ```
/// 1. a **nodes record** holding every B+tree node of version `v` that changed since the previous
///    checkpoint (``BTreeNodeFormat``; unchanged nodes are referenced where an earlier checkpoint wrote
///    them), appended under the write lock, then synced without it;
/// 2. a **checkpoint record** (this type) with the roots and counts of every tree of version `v`, the
///    schema and the table counters. Its durability watermark lies at or past the end of the nodes
///    record, which proves the nodes were durable before it was written: a power loss cannot leave a
///    checkpoint record whose nodes were lost.
///
/// ```text
///  checkpoint payload (after the record's watermark)
///   version u64 | schemaVersion u64 | replayFrom u64 | nodesStart u64 | nodesEnd u64 | recordOffset u64
///   | liveBytes u64 | flags u8 (bit 0: the log had links to missing objects) | backlinks tree
///   | schema (a schema operation, CommitPayload) | per table, in the schema's order:
///     rows tree | integer primary keys tree | other primary keys tree | indexCount u16 | (column u16 | tree)*
///  tree := root u64 (file offset of the root node; 0 when empty) | count u64 | bytes u64 (its nodes)
/// ```
/// `replayFrom` is the end of version `version`'s commit record: open replays the commits from there,
/// passing over node and checkpoint records (the nodes before this record without reading them).
/// `recordOffset` is where the record itself starts, so a checkpoint whose bytes moved is not used. Open
/// finds the newest checkpoint record by walking back from the end of the file through the record
/// footers, and builds the version from it without reading a node (see ``StorageEngine``). Nodes are read
/// when first used.
package struct Checkpoint: Sendable, Equatable {
    /// A tree's root node (0: empty), entry count, and the size of its nodes in the file.
    package struct TreeRoot: Sendable, Equatable {
        package var offset: UInt64
        package var count: Int
        package var bytes: UInt64
        package static let empty = TreeRoot(offset: 0, count: 0, bytes: 0)
    }

    /// The bytes of every node the checkpoint's trees use: live bytes of the store, beside the rows.
    package var nodeBytes: UInt64 {
        tables.reduce(backlinks.bytes) { total, table in
            table.indexes.values.reduce(total + table.rows.bytes + table.integerKeys.bytes + table.otherKeys.bytes) {
                $0 + $1.bytes
            }
        }
    }

    package struct Table: Sendable, Equatable {
        package var entry: CommitPayload.TableEntry
        package var rows: TreeRoot
        package var integerKeys: TreeRoot
        package var otherKeys: TreeRoot
        /// Secondary indexes by column, in column order.
        package var indexes: [Int: TreeRoot]
    }

    package var version: Version
    package var schemaVersion: UInt64
    package var replayFrom: UInt64
    package var nodesStart: UInt64
    package var nodesEnd: UInt64
    /// Where the checkpoint record itself starts: a file whose bytes moved (a splice) has no usable one.
    package var recordOffset: UInt64
    package var liveBytes: UInt64
    package var danglingLinks: Bool
    package var backlinks: TreeRoot
    package var tables: [Table]

    package init(
        version: Version, schemaVersion: UInt64, replayFrom: UInt64, nodesStart: UInt64, nodesEnd: UInt64,
        recordOffset: UInt64, liveBytes: UInt64, danglingLinks: Bool, backlinks: TreeRoot, tables: [Table]
    ) {
        self.recordOffset = recordOffset
        self.version = version
        self.schemaVersion = schemaVersion
        self.replayFrom = replayFrom
        self.nodesStart = nodesStart
        self.nodesEnd = nodesEnd
        self.liveBytes = liveBytes
        self.danglingLinks = danglingLinks
        self.backlinks = backlinks
        self.tables = tables
    }

    /// The checkpoint with every root that is a position in its nodes record (see
    /// ``BTreeNodeFormat``) turned into a file offset, the record's nodes starting at `base`.
    package func placed(at base: UInt64) -> Checkpoint {
        func place(_ tree: TreeRoot) -> TreeRoot {
            guard tree.offset & BTreeNodeFormat.relative != 0 else { return tree }
            return TreeRoot(
                offset: base + (tree.offset & ~BTreeNodeFormat.relative), count: tree.count, bytes: tree.bytes)
        }
        var placed = self
        placed.backlinks = place(backlinks)
        for index in placed.tables.indices {
            placed.tables[index].rows = place(tables[index].rows)
            placed.tables[index].integerKeys = place(tables[index].integerKeys)
            placed.tables[index].otherKeys = place(tables[index].otherKeys)
            placed.tables[index].indexes = tables[index].indexes.mapValues(place)
        }
        return placed
    }

    package func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 256)
        w.append(version.rawValue)
        w.append(schemaVersion)
        w.append(replayFrom)
        w.append(nodesStart)
        w.append(nodesEnd)
        w.append(recordOffset)
        w.append(liveBytes)
        w.append(UInt8(danglingLinks ? 1 : 0))
        Self.append(backlinks, to: &w)
        CommitPayload.appendSchema(tables.map(\.entry), version: schemaVersion, to: &w)
        for table in tables {
            Self.append(table.rows, to: &w)
            Self.append(table.integerKeys, to: &w)
            Self.append(table.otherKeys, to: &w)
            w.append(UInt16(table.indexes.count))
            for column in table.indexes.keys.sorted() {
                w.append(UInt16(column))
                Self.append(table.indexes[column]!, to: &w)
            }
        }
        return w.bytes
    }

    private static func append(_ tree: TreeRoot, to w: inout ByteWriter) {
        w.append(tree.offset)
        w.append(UInt64(tree.count))
        w.append(tree.bytes)
    }

    /// Parses a checkpoint record's body (after the watermark), found at `offset` in the file.
    /// - Throws: `.corrupted` if it is malformed or disagrees with itself.
    package init(decoding payload: UnsafeRawBufferPointer, at offset: Int, path: String) throws(StorageError) {
        let bad = { (what: String) in
            StorageError(
                .corrupted,
                "'\(path)' has a checkpoint at byte \(offset) whose checksum is valid but whose \(what) is malformed. "
                    + "The file was written by an incompatible or faulty program; restore it from a backup.",
                offset: FileOffset(offset))
        }
        var r = ByteReader(payload)
        let version = Version(r.uint64())
        let schemaVersion = r.uint64()
        let replayFrom = r.uint64()
        let nodesStart = r.uint64()
        let nodesEnd = r.uint64()
        let recordOffset = r.uint64()
        let liveBytes = r.uint64()
        let danglingLinks = r.uint8() & 1 == 1
        func tree() -> TreeRoot? {
            let root = r.uint64()
            let count = r.uint64()
            let bytes = r.uint64()
            // A root lies before the checkpoint's end of nodes; an empty tree has none.
            guard count <= UInt64(Int.max), (root == 0) == (count == 0), (root == 0) == (bytes == 0),
                root < nodesEnd, bytes <= nodesEnd
            else { return nil }
            return TreeRoot(offset: root, count: Int(count), bytes: bytes)
        }
        guard let backlinks = tree() else { throw bad("backlink index") }
        guard r.uint8() == CommitPayload.Op.schema.rawValue else { throw bad("schema") }
        let schema = try CommitPayload.readSchema(&r, at: offset, path: path)
        guard schema.version == schemaVersion else { throw bad("schema version") }
        try Replay.validate(schema.tables, path: path, at: offset)
        var tables: [Table] = []
        var ids = Set<TableID>()
        for entry in schema.tables {
            guard ids.insert(entry.id).inserted, let rows = tree(), let integers = tree(), let others = tree() else {
                throw bad("table roots")
            }
            let indexCount = Int(r.uint16())
            let indexed = Set(
                entry.schema.columns.indices.filter {
                    entry.schema.columns[$0].isIndexed && !entry.schema.columns[$0].isPrimaryKey
                })
            var indexes: [Int: TreeRoot] = [:]
            for _ in 0..<indexCount {
                let column = Int(r.uint16())
                guard indexed.contains(column), indexes[column] == nil, let root = tree() else {
                    throw bad("index roots")
                }
                indexes[column] = root
            }
            guard indexes.count == indexed.count,
                entry.schema.primaryKeyColumn != nil || integers.count + others.count == 0
            else { throw bad("index roots") }
            tables.append(Table(entry: entry, rows: rows, integerKeys: integers, otherKeys: others, indexes: indexes))
        }
        guard !r.overrun, r.isAtEnd, replayFrom <= nodesStart, nodesStart <= nodesEnd, nodesEnd <= recordOffset,
            recordOffset == UInt64(offset), replayFrom >= UInt64(FileHeader.size), version > .zero
        else { throw bad("layout") }
        self.init(
            version: version, schemaVersion: schemaVersion, replayFrom: replayFrom, nodesStart: nodesStart,
            nodesEnd: nodesEnd, recordOffset: recordOffset, liveBytes: liveBytes, danglingLinks: danglingLinks,
            backlinks: backlinks, tables: tables)
    }
}

extension DatabaseState {
    /// The version a checkpoint describes, its trees read from `store` when first used. O(tables).
    package init(checkpoint: Checkpoint, store: NodeStore) {
        self.init()
        version = checkpoint.version
        schemaVersion = checkpoint.schemaVersion
        liveBytes = checkpoint.liveBytes
        endOffset = checkpoint.replayFrom
        backlinks = Self.tree(checkpoint.backlinks, store, Self.backlinkDecoder)
        var tables: [TableID: TableState] = [:]
        for table in checkpoint.tables {
            var state = TableState(id: table.entry.id, schema: table.entry.schema)
            state.nextKey = table.entry.nextKey
            state.rows = Self.tree(table.rows, store, Self.rowDecoder)
            state.primaryIndex.integers = Self.tree(table.integerKeys, store, Self.integerKeyDecoder)
            state.primaryIndex.others = Self.tree(table.otherKeys, store, Self.otherKeyDecoder)
            for (column, root) in table.indexes { state.indexes[column] = Self.tree(root, store, Self.indexDecoder) }
            tables[table.entry.id] = state
            tableIDs[table.entry.schema.name] = table.entry.id
        }
        self.tables = TableStore(tables)
    }

    private static func tree<K, V>(
        _ root: Checkpoint.TreeRoot, _ store: NodeStore, _ decoder: PersistentBTree<K, V>.NodeDecoder
    ) -> PersistentBTree<K, V> {
        PersistentBTree(fileRoot: root.offset, count: root.count, bytes: root.bytes, store: store, decoder: decoder)
    }

    // One decoder per kind of tree, shared by all of them (decoders hold no state).
    private static let rowDecoder = PersistentBTree<ObjectKey, RowLocation>.makeDecoder()
    private static let integerKeyDecoder = PersistentBTree<Int64, PrimaryKeyEntry>.makeDecoder()
    private static let otherKeyDecoder = PersistentBTree<IndexKey, PrimaryKeyEntry>.makeDecoder()
    private static let indexDecoder = PersistentBTree<IndexEntry, Present>.makeDecoder()
    private static let backlinkDecoder = PersistentBTree<BacklinkKey, UInt32>.makeDecoder()

    /// Appends every node of this version's trees that `store` does not hold yet to `out` (the nodes of a
    /// nodes record) and returns the checkpoint that describes the version, its roots given as
    /// ``PersistentBTree/writeNodes(to:store:written:)`` gives them: ``Checkpoint/placed(at:)`` turns them
    /// into file offsets once the record is appended. `written` gains every node written, by position.
    package func writeCheckpointNodes(
        to out: inout ByteWriter, store: NodeStore, danglingLinks: Bool,
        written: inout [ObjectIdentifier: WrittenNode]
    ) throws(StorageError) -> Checkpoint {
        func root<K: NodeCodable, V: NodeCodable>(
            _ tree: PersistentBTree<K, V>
        ) throws(StorageError)
            -> Checkpoint.TreeRoot
        {
            guard let root = try tree.writeNodes(to: &out, store: store, written: &written) else { return .empty }
            return Checkpoint.TreeRoot(offset: root.reference, count: tree.count, bytes: root.bytes)
        }
        var tables: [Checkpoint.Table] = []
        for table in orderedTables {
            var indexes: [Int: Checkpoint.TreeRoot] = [:]
            for column in table.indexes.keys.sorted() { indexes[column] = try root(table.indexes[column]!) }
            tables.append(
                Checkpoint.Table(
                    entry: CommitPayload.TableEntry(id: table.id, schema: table.schema, nextKey: table.nextKey),
                    rows: try root(table.rows), integerKeys: try root(table.primaryIndex.integers),
                    otherKeys: try root(table.primaryIndex.others), indexes: indexes))
        }
        return Checkpoint(
            version: version, schemaVersion: schemaVersion, replayFrom: endOffset, nodesStart: 0, nodesEnd: 0,
            recordOffset: 0, liveBytes: liveBytes, danglingLinks: danglingLinks, backlinks: try root(backlinks),
            tables: tables)
    }

    /// The same version with every node a checkpoint wrote read from `store` again (see
    /// ``PersistentBTree/rebased(onto:store:decoder:)``).
    package func rebased(onto written: [ObjectIdentifier: WrittenNode], store: NodeStore) -> DatabaseState {
        var state = self
        state.backlinks = backlinks.rebased(onto: written, store: store, decoder: Self.backlinkDecoder)
        for id in tables.keys {
            guard var table = state.tables[id] else { continue }
            table.rows = table.rows.rebased(onto: written, store: store, decoder: Self.rowDecoder)
            table.primaryIndex.integers = table.primaryIndex.integers.rebased(
                onto: written, store: store, decoder: Self.integerKeyDecoder)
            table.primaryIndex.others = table.primaryIndex.others.rebased(
                onto: written, store: store, decoder: Self.otherKeyDecoder)
            for column in table.indexes.keys {
                table.indexes[column] = table.indexes[column]!.rebased(
                    onto: written, store: store, decoder: Self.indexDecoder)
            }
            state.tables[id] = table
        }
        return state
    }
}
