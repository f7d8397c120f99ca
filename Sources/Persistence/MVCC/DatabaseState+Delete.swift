/// The entries that deleting a batch of rows of one table removes from its trees, gathered row by row
/// (``DatabaseState/collectDelete(_:at:oldRow:into:token:)``) and removed in one pass per tree
/// (``DatabaseState/applyDeletes(_:token:)``). The state is the same as after one ``DatabaseState/applyDelete``
/// per row, which is what replaying the batch's delete operations does.
package struct RowDeletions {
    /// The table.
    let table: TableID
    /// The primary-key column and its type, if the table has one.
    let primaryKey: (column: Int, type: ColumnType)?
    /// The indexed columns (other than the primary key) and their types.
    let indexed: [(column: Int, type: ColumnType)]
    /// The link columns (whose targets' backlinks go with the row) and the table each links to.
    let links: [(column: Int, type: ColumnType, target: TableID)]
    /// The deleted rows, in the order collected.
    var keys: [ObjectKey] = []
    /// Their primary keys.
    var primaryKeys: [IndexKey] = []
    /// Their entries in each index of ``indexed``, in the same order.
    var indexEntries: [[IndexEntry]]
    /// The bytes their rows counted in ``DatabaseState/liveBytes``.
    var bytes: UInt64 = 0

    /// Whether a row was collected.
    package var isEmpty: Bool { keys.isEmpty }
}

extension DatabaseState {
    /// An empty batch of deletions of rows of `tableID`; nil if there is no such table.
    package func deletions(of tableID: TableID, capacity: Int) -> RowDeletions? {
        guard let schema = tables[tableID]?.schema, let indexColumns = tables[tableID]?.indexes.keys.sorted() else {
            return nil
        }
        let columns = schema.columns
        var links: [(column: Int, type: ColumnType, target: TableID)] = []
        for (column, info) in columns.enumerated() {
            if let name = info.linkTarget, let target = tableIDs[name] { links.append((column, info.type, target)) }
        }
        var batch = RowDeletions(
            table: tableID, primaryKey: schema.primaryKeyColumn.map { ($0, columns[$0].type) },
            indexed: indexColumns.map { ($0, columns[$0].type) }, links: links,
            indexEntries: Array(repeating: [], count: indexColumns.count))
        batch.keys.reserveCapacity(capacity)
        if batch.primaryKey != nil { batch.primaryKeys.reserveCapacity(capacity) }
        for i in batch.indexEntries.indices { batch.indexEntries[i].reserveCapacity(capacity) }
        return batch
    }

    /// Adds row `key` (at `location`, whose bytes are `oldRow`) to `batch`: its index entries are noted for
    /// ``applyDeletes(_:token:)``; the backlinks of the rows it links to go now (the backlink index is not
    /// the table's). Links *to* the row must already be gone (see `WriteTransaction.delete(_:keys:)`).
    package mutating func collectDelete(
        _ key: ObjectKey, at location: RowLocation, oldRow: RowView, into batch: inout RowDeletions,
        token: MutationToken
    ) throws(StorageError) {
        if let (column, type) = batch.primaryKey {
            batch.primaryKeys.append(try Self.indexKey(oldRow, column, type))
        }
        for (i, index) in batch.indexed.enumerated() {
            batch.indexEntries[i].append(IndexEntry(try Self.indexKey(oldRow, index.column, index.type), key))
        }
        for link in batch.links {
            for targetKey in try oldRow.links(at: link.column, type: link.type) {
                let entry = BacklinkKey(
                    target: link.target, targetKey: targetKey, source: batch.table, column: Int32(link.column),
                    sourceKey: key)
                let count = backlinks.value(forKey: entry) ?? 0
                if count > 1 {
                    backlinks.updateValue(count - 1, forKey: entry, token: token)
                } else {
                    backlinks.removeValue(forKey: entry, token: token)
                }
            }
        }
        batch.keys.append(key)
        batch.bytes += UInt64(location.length) + Self.rowOverhead
    }

    /// Removes the rows of `batch` from their table's rows tree, primary-key index and indexes, one pass
    /// per tree (``PersistentBTree/removeValues(sortedKeys:token:)``).
    package mutating func applyDeletes(_ batch: RowDeletions, token: MutationToken) throws(StorageError) {
        guard !batch.keys.isEmpty else { return }
        guard var table = tables.removeValue(forKey: batch.table) else {
            throw StorageError(.invalidObject, "There is no table \(batch.table) in this version.")
        }
        // Taken out and put back with one move, as in ``applyDelete``, so that its trees are uniquely owned.
        let keys = PrimaryIndex.sortedUnique(batch.keys)
        table.rows.removeValues(sortedKeys: keys, token: token)
        if batch.primaryKey != nil { table.primaryIndex.removeValues(forKeys: batch.primaryKeys, token: token) }
        for (i, index) in batch.indexed.enumerated() {
            table.indexes[index.column]?.removeValues(
                sortedKeys: PrimaryIndex.sortedUnique(batch.indexEntries[i]), token: token)
        }
        liveBytes -= batch.bytes
        tables.put(batch.table, consume table)
    }
}
