// Deleting rows: one by key, many by key (a batch: its index entries removed in one pass per tree), or every
// row that passes a test in one pass over the table (`realm.delete(results)` of a scanning query).
extension WriteTransaction {
    /// Deletes a row. Links to it become null, and it leaves every list, set and map that held it.
    /// - Throws: `.invalidObject` if there is no such row.
    package func delete(_ tableID: TableID, _ key: ObjectKey) throws(StorageError) {
        guard try deleteIfPresent(tableID, key) else {
            let name = try table(tableID).schema.name
            throw StorageError(
                .invalidObject, "The \(name) object \(key) does not exist: it was deleted or never added.")
        }
    }

    /// Deletes row `key` as ``delete(_:_:)`` does, or returns `false` (changing nothing) if there is no such
    /// row: for deleting a set of rows of which some may already be gone (embedded objects whose parent
    /// was deleted first).
    /// - Throws: `.invalidObject` if there is no such table; what ``delete(_:_:)`` throws otherwise.
    /// `knownLocation`, if the caller has it, is where the row is in the transaction's current state (it saves
    /// a lookup).
    @discardableResult
    package func deleteIfPresent(
        _ tableID: TableID, _ key: ObjectKey, knownLocation: RowLocation? = nil
    ) throws(StorageError) -> Bool {
        try checkUsable()
        guard try removeRow(tableID, key, knownLocation: knownLocation) else { return false }
        recordDelete(tableID, key)
        return true
    }

    /// Deletes the rows `keys` of a table as ``deleteIfPresent(_:_:)`` does, skipping keys with no row.
    ///
    /// When no row of the table is linked to (so no other row has to be rewritten), the rows' delete
    /// operations are appended one by one, and their entries are removed from each tree of the table in one
    /// pass (``DatabaseState/applyDeletes(_:token:)``): a contiguous range of keys costs a pass over the leaves
    /// it covers, not a root-to-leaf walk per key in each tree. The record holds the same delete operations
    /// as deleting the rows one by one (largest key first, which replay removes fastest), so replaying it
    /// gives the same state. Otherwise the rows go one by one, largest key first.
    ///
    /// The deleted keys are recorded in ascending order (a change set's key ranges grow at their end).
    /// - Parameters:
    ///   - keys: the rows to delete, in any order, repeats allowed.
    ///   - locations: where each row of `keys` is in the transaction's current state, when the caller has
    ///     just read them (a query that scanned the rows): then the rows are not looked up. Used only when
    ///     `keys` is strictly ascending and as long; else, and when nil, every row is looked up.
    /// - Returns: the number of rows deleted.
    @discardableResult
    package func delete(
        _ tableID: TableID, keys: [ObjectKey], locations known: [RowLocation]? = nil
    ) throws(StorageError) -> Int {
        try checkUsable()
        guard !keys.isEmpty else { return 0 }
        guard state.tables.contains(tableID) else { throw Self.missingTable(tableID) }
        let ascending = PrimaryIndex.sortedUnique(keys)
        var deleted: [ObjectKey] = []
        deleted.reserveCapacity(ascending.count)
        defer {
            if !deleted.isEmpty {
                var tableChanges = changes.tables.removeValue(forKey: tableID) ?? TableChanges()
                for key in deleted.reversed() { tableChanges.recordDelete(key) }
                changes.tables[tableID] = tableChanges
            }
        }
        guard !isLinkedTo(tableID) else {
            for key in ascending.reversed() where try removeRow(tableID, key) { deleted.append(key) }
            return deleted.count
        }
        // `known` is in the order of `keys`: usable when sorting returned `keys` as it was (strictly ascending).
        let given = ascending.count == keys.count ? checkedLocations(known, count: keys.count, of: tableID, keys) : nil
        let lookedUp = given == nil ? rowLocations(tableID, ascending[...]) : []
        guard var batch = state.deletions(of: tableID, capacity: ascending.count) else {
            throw Self.missingTable(tableID)
        }
        let mark = buffer.count
        do throws(StorageError) {
            // By index: reversing a `zip` would copy the pairs into a new array first.
            for i in ascending.indices.reversed() {
                guard let location = given?[i] ?? lookedUp[i] else { continue }
                let key = ascending[i]
                appendDeleteOp(tableID, key)
                try withRowBytes(at: location) { (old) throws(StorageError) in
                    try state.collectDelete(key, at: location, oldRow: old, into: &batch, token: token)
                }
            }
            try state.applyDeletes(batch, token: token)
        } catch {
            buffer.truncate(to: mark)
            failure = error
            throw error
        }
        deleted = batch.keys
        return deleted.count
    }

    /// Deletes every row of `tableID` whose bytes pass `test`, in one pass over the table's rows: a matching
    /// row's index entries are gathered while its bytes are at hand (``delete(_:keys:locations:)`` reads each
    /// row a second time, after the query that found it). Then, as there, the delete operations are appended
    /// largest key first and the entries are removed from each tree in one pass. Only for a table no row
    /// links to: otherwise it returns nil and deletes nothing (delete by key).
    ///
    /// A row whose bytes cannot be read (a damaged file) fails the transaction, which can then only roll back.
    /// - Parameter test: whether to delete a row; it must not use the transaction.
    /// - Returns: the number of rows deleted, or nil if rows link to this table.
    package func deleteRows(_ tableID: TableID, where test: (RowView) -> Bool) throws(StorageError) -> Int? {
        try checkUsable()
        guard state.tables.contains(tableID) else { throw Self.missingTable(tableID) }
        guard !isLinkedTo(tableID) else { return nil }
        // Room for every row: only the pages the matches fill are touched, and the arrays never grow by copying.
        guard var batch = state.deletions(of: tableID, capacity: state.rowCount(tableID)) else {
            throw Self.missingTable(tableID)
        }
        do throws(StorageError) {
            // In a scope of its own: the cursor refers to the rows tree's nodes, which the removal below then
            // changes in place instead of copying.
            var cursor = state.rowCursor(tableID)
            while let row = cursor.next() {
                try withRowBytes(at: row.location) { (view) throws(StorageError) in
                    guard test(view) else { return }
                    // The backlinks of the row's links go now (a tree the cursor does not read).
                    try state.collectDelete(row.key, at: row.location, oldRow: view, into: &batch, token: token)
                }
            }
        } catch {
            failure = error
            throw error
        }
        guard !batch.isEmpty else { return 0 }
        let mark = buffer.count
        for key in batch.keys.reversed() { appendDeleteOp(tableID, key) }
        do throws(StorageError) {
            try state.applyDeletes(batch, token: token)
        } catch {
            buffer.truncate(to: mark)
            failure = error
            throw error
        }
        var tableChanges = changes.tables.removeValue(forKey: tableID) ?? TableChanges()
        for key in batch.keys { tableChanges.recordDelete(key) }
        changes.tables[tableID] = tableChanges
        return batch.keys.count
    }

    /// Removes row `key` and the links to it (recording the linking rows modified), without recording the
    /// row deleted; returns false if there is no such row.
    private func removeRow(
        _ tableID: TableID, _ key: ObjectKey, knownLocation: RowLocation? = nil
    ) throws(StorageError) -> Bool {
        if let row = deferrableRow, row.table == tableID, row.key == key,
            let deleted = try deferDelete(tableID, key, knownLocation: knownLocation)
        {
            return deleted
        }
        // In place: going through `state.tables[tableID]` would copy the table state for each deleted row.
        guard state.tables.contains(tableID) else { throw Self.missingTable(tableID) }
        guard let current = state.tables.rowLocation(tableID, key) else { return false }
        // Rewriting the rows that link here moves those rows, not this one: `current` stays valid.
        for link in backlinks(to: tableID, key) where !(link.source == tableID && link.key == key) {
            guard let types = state.tables[link.source]?.columnTypes, var row = try values(link.source, link.key) else {
                continue
            }
            row[link.column] = Self.removingLinks(to: key, from: row[link.column])
            try appendUpsert(link.source, link.key, row, types)
            var columns = ColumnSet()
            columns.insert(link.column)
            changes.tables[link.source, default: TableChanges()].recordModify(link.key, columns)
        }
        let mark = buffer.count
        appendDeleteOp(tableID, key)
        do throws(StorageError) {
            try withRowBytes(at: current) { (old) throws(StorageError) in
                try state.applyDelete(table: tableID, key: key, oldRow: old, token: token)
            }
        } catch {
            buffer.truncate(to: mark)
            failure = error
            throw error
        }
        return true
    }

    /// Appends the delete operation of row `key` of `tableID` to the record (its own unit, encrypted).
    func appendDeleteOp(_ tableID: TableID, _ key: ObjectKey) {
        streamIfDue()
        let unit = EncryptedRecord.beginUnit(in: buffer, encrypted: cipher != nil)
        buffer.append(CommitPayload.Op.delete.rawValue)
        buffer.append(tableID.rawValue)
        buffer.append(key.rawValue)
        EncryptedRecord.endUnit(unit, in: buffer)
    }

    /// Deletes every row of a table (unlinking each, as ``delete(_:_:)``).
    package func deleteAll(_ tableID: TableID) throws(StorageError) {
        let keys = try table(tableID).rows.map(\.key)
        for key in keys where state.tables[tableID]?.rows.contains(key) == true { try delete(tableID, key) }
    }
}
