/// The read API shared by ``Snapshot`` (a published version) and ``WriteTransaction`` (a version being
/// built, which reads its own writes).
package protocol ReadableStore {
    /// The version's roots.
    var state: DatabaseState { get }
    /// Calls `body` with the bytes of the row at `location`, which are valid only during the call.
    func withRowBytes<R>(
        at location: RowLocation, _ body: (RowView) throws(StorageError) -> R
    ) throws(StorageError) -> R
}

extension ReadableStore {
    package var version: Version { state.version }
    package var schemaVersion: UInt64 { state.schemaVersion }

    package func tableID(named name: String) -> TableID? { state.tableIDs[name] }
    package func tableSchema(_ table: TableID) -> TableSchema? { state.tables[table]?.schema }

    /// The number of rows of `table` (0 if there is no such table). O(1); the table's state is read in
    /// place (`state.tables[table]` would copy it, retaining each of its trees).
    package func count(_ table: TableID) -> Int { state.tables.rowCount(table) }

    /// Whether `table` has a row `key`. O(log n), in place as ``count(_:)``.
    package func contains(_ table: TableID, _ key: ObjectKey) -> Bool {
        state.tables.rowLocation(table, key) != nil
    }

    /// The object keys of `table` in key (insertion) order.
    package func keys(_ table: TableID) -> PersistentBTree<ObjectKey, RowLocation> {
        state.tables[table]?.rows ?? PersistentBTree()
    }

    /// Calls `body` with the row `key` of `table`; nil if there is no such row.
    package func withRow<R>(
        _ table: TableID, _ key: ObjectKey, _ body: (RowView) throws(StorageError) -> R
    ) throws(StorageError) -> R? {
        guard let location = state.rowLocation(table, key) else { return nil }
        return try withRowBytes(at: location, body)
    }

    /// One column of one row, decoded; nil if there is no such row.
    package func value(_ table: TableID, _ key: ObjectKey, column: Int) throws(StorageError) -> Value? {
        guard let type = state.tables[table]?.schema.columns[safe: column]?.type else { return nil }
        return try withRow(table, key) { (row) throws(StorageError) in try row.value(at: column, type: type) }
    }

    /// All columns of one row, decoded; nil if there is no such row.
    package func values(_ table: TableID, _ key: ObjectKey) throws(StorageError) -> [Value]? {
        guard let columns = state.tables[table]?.schema.columns else { return nil }
        return try withRow(table, key) { (row) throws(StorageError) in
            var values: [Value] = []
            values.reserveCapacity(columns.count)
            for (i, column) in columns.enumerated() { values.append(try row.value(at: i, type: column.type)) }
            return values
        }
    }

    /// The object whose primary key is `value`, through the primary-key index. O(log n).
    package func object(_ table: TableID, primaryKey value: Value) -> ObjectKey? {
        state.object(table, primaryKey: value)
    }

    /// The objects whose indexed `column` equals `value`, in key order, through the index; nil if the
    /// column has no index. O(log n + matches).
    package func objects(_ table: TableID, column: Int, equalTo value: Value) -> [ObjectKey]? {
        guard let tableState = state.tables[table], let key = IndexKey(value) else { return nil }
        if tableState.schema.primaryKeyColumn == column {
            return tableState.primaryIndex.value(forKey: key).map { [$0.object] } ?? []
        }
        guard let index = tableState.indexes[column] else { return nil }
        var result: [ObjectKey] = []
        index.forEach(from: IndexEntry(key, ObjectKey(Int64.min)), inclusive: true) { entry, _ in
            guard entry.key == key else { return false }
            result.append(entry.object)
            return true
        }
        return result
    }

    /// The objects whose indexed `column` is any of `values` (an `IN` lookup), sorted by key, no duplicates.
    package func objects(_ table: TableID, column: Int, in values: [Value]) -> [ObjectKey]? {
        var all = Set<ObjectKey>()
        for value in values {
            guard let matches = objects(table, column: column, equalTo: value) else { return nil }
            all.formUnion(matches)
        }
        return all.sorted()
    }

    /// Every link to object `key` of `table`: which table, column and object it comes from, and how many
    /// times (a list can hold the same object more than once).
    package func backlinks(
        to table: TableID, _ key: ObjectKey
    ) -> [(source: TableID, column: Int, key: ObjectKey, count: Int)] {
        var result: [(TableID, Int, ObjectKey, Int)] = []
        state.backlinks.forEach(from: BacklinkKey.lowerBound(table, key), inclusive: true) { entry, count in
            guard entry.target == table, entry.targetKey == key else { return false }
            result.append((entry.source, Int(entry.column), entry.sourceKey, Int(count)))
            return true
        }
        return result
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

/// An immutable, `Sendable` view of one committed version. Taking one is O(1).
///
/// A snapshot pins its version (see ``StorageEngine/pinnedVersions``) and keeps the file region it reads
/// alive — through remapping and compaction — until the last copy of it is released.
package struct Snapshot: ReadableStore, Sendable {
    package let state: DatabaseState
    /// The file region the snapshot's rows are in. The snapshot keeps it alive; so does a reference to it.
    package let region: MappedRegion
    var pin: VersionPin?

    /// ``ReadableStore/withRow(_:_:_:)``, for a snapshot: the protocol extension's version reads `state`
    /// through the protocol (a copy of the whole ``DatabaseState``, retaining and releasing its roots on
    /// every call) and, called from another module, runs unspecialised.
    package func withRow<R>(
        _ table: TableID, _ key: ObjectKey, _ body: (RowView) throws(StorageError) -> R
    ) throws(StorageError) -> R? {
        guard let location = state.rowLocation(table, key) else { return nil }
        return try withRowBytes(at: location, body)
    }

    package func withRowBytes<R>(
        at location: RowLocation, _ body: (RowView) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        try Self.withRowBytes(in: region, at: location, body)
    }

    /// ``withRowBytes(at:_:)`` given only the snapshot's ``region``: for a caller that keeps its snapshot
    /// in a class property, where reading a row through the snapshot copies the whole snapshot (its
    /// `DatabaseState` and pin: several retains and releases) for each row read.
    package static func withRowBytes<R>(
        in region: MappedRegion, at location: RowLocation, _ body: (RowView) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        if let cipher = region.cipher {
            return try EncryptedRecord.withRow(
                at: location, in: region.bytes(at: 0, count: region.length), cipher: cipher, path: cipher.path, body)
        }
        guard Int(location.offset) + Int(location.length) <= region.length else {
            throw StorageError(.corrupted, "A row location lies outside the mapped file.")
        }
        return try body(try RowView(region.bytes(at: Int(location.offset), count: Int(location.length))))
    }
}
