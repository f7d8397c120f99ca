/// The mutations of a version's state, shared by live write transactions and by replay (open and
/// compaction catch-up), so that the two can never disagree about what an operation means.
///
/// Row bytes are provided by the caller; these functions decode only the columns that feed the
/// primary-key index, secondary indexes and the backlink index.
extension DatabaseState {
    /// Per-row bytes charged to live data besides the row itself: the upsert op header.
    package static let rowOverhead = UInt64(CommitPayload.upsertHeaderSize)

    /// Makes `newRow` (stored at `location`) the current row `key` of `table`, replacing the current row
    /// if there is one, and updates the indexes.
    /// - Parameters:
    ///   - changed: when the caller knows it, every column in which `newRow` differs from the current row
    ///     (an update of an existing row; never its primary key): only the indexes and backlinks of these
    ///     columns are touched, and the current row is read only if one of them needs it. `nil` (an insert,
    ///     replay): the two rows are compared column by column.
    ///   - readRow: the bytes at a location (to read the row being replaced).
    /// - Throws: `.primaryKeyExists` if another object has the new row's primary key; `.corrupted` if a row
    ///   cannot be decoded.
    package mutating func applyUpsert(
        table tableID: TableID, key: ObjectKey, location: RowLocation, newRow: RowView, changed: ColumnSet? = nil,
        token: MutationToken, readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        guard var table = tables.removeValue(forKey: tableID) else {
            throw StorageError(.invalidObject, "There is no table \(tableID) in this version.")
        }
        // One `put` after the `do`, the table's last use, so it is moved back: a `put` in each path made the
        // compiler copy the table (retaining each of its trees and arrays) on every upsert.
        var failure: StorageError?
        do throws(StorageError) {
            try upsert(into: &table, tableID, key, location, newRow, changed, token, readRow)
        } catch {
            failure = error
        }
        tables.put(tableID, consume table)
        if let failure { throw failure }
    }

    /// Adds new rows, as ``applyUpsert`` of each would, in one pass per tree: `rows` are new keys of
    /// table `tableID` (strictly ascending, at or past its next key). When the table has a primary key, each
    /// row's is in `integerKeys` (all integers) or `otherKeys` (none), strictly ascending and above every key
    /// of their tree of the primary index (``PrimaryIndex/isAboveItsTree(_:)``), so none is taken. The table
    /// has no secondary index and no link column. What a write transaction's inserts in key order become
    /// (see `WriteTransaction.deferredInserts`).
    package mutating func applyAppends(
        table tableID: TableID, _ rows: [(key: ObjectKey, value: RowLocation)], integerKeys: [Int64],
        otherKeys: [IndexKey], token: MutationToken
    ) throws(StorageError) {
        guard let last = rows.last else { return }
        guard var table = tables.removeValue(forKey: tableID) else {
            throw StorageError(.invalidObject, "There is no table \(tableID) in this version.")
        }
        // Checked as `upsert` checks: no path may trap below on a damaged key.
        guard last.key.rawValue < Int64.max, rows[0].key.rawValue >= table.nextKey else {
            tables.put(tableID, consume table)
            throw StorageError(
                .corrupted,
                "'\(tableID)' was given object keys that are not new. The transaction cannot continue; roll it back.")
        }
        if rows.count < 8 {
            // A few rows (a transaction that adds one object): a walk each costs less than setting up the
            // right edge.
            for (i, row) in rows.enumerated() {
                table.rows.updateValue(row.value, forKey: row.key, token: token)
                let entry = PrimaryKeyEntry(object: row.key, location: row.value)
                if !integerKeys.isEmpty {
                    table.primaryIndex.updateValue(entry, forKey: .int(integerKeys[i]), token: token)
                } else if !otherKeys.isEmpty {
                    table.primaryIndex.updateValue(entry, forKey: otherKeys[i], token: token)
                }
            }
        } else {
            table.rows.append(sortedElements: rows, token: token)
            table.primaryIndex.append(integerKeys: integerKeys, otherKeys: otherKeys, of: rows, token: token)
        }
        var bytes: UInt64 = 0
        for row in rows { bytes &+= UInt64(row.value.length) &+ Self.rowOverhead }
        liveBytes += bytes
        table.nextKey = last.key.rawValue + 1
        tables.put(tableID, consume table)
    }

    /// The body of ``applyUpsert``, on a table taken out of the store (so that its trees are uniquely owned).
    private mutating func upsert(
        into table: inout TableState, _ tableID: TableID, _ key: ObjectKey, _ location: RowLocation,
        _ newRow: RowView, _ changed: ColumnSet?, _ token: MutationToken,
        _ readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        // The table's next key is one past its largest key. Replay rejects a key of Int64.max and inserts
        // stop before it; checked here too, before anything changes, so that no path can trap below.
        guard key.rawValue < Int64.max else {
            throw StorageError(
                .corrupted,
                "'\(table.schema.name)' has an object with key \(key), which leaves no room for the table's next "
                    + "key. The file is damaged; restore it from a backup.")
        }
        // Keys at or past nextKey were never used: nothing to replace (the common case of an insert).
        if let changed, key.rawValue < table.nextKey {
            // An update of known columns: the row's entry is replaced in one walk that returns the old
            // location, the primary key is unchanged, and only the changed columns' entries move.
            let oldLocation = table.rows.updateValue(location, forKey: key, token: token)
            if let oldLocation {
                liveBytes -= UInt64(oldLocation.length) + Self.rowOverhead
                try updateEntries(of: &table, tableID, key, location, newRow, changed, oldLocation, token, readRow)
            } else {
                try replaceEntries(of: &table, tableID, key, location, newRow, nil, token, readRow)
            }
        } else {
            let oldLocation = key.rawValue < table.nextKey ? table.rows.value(forKey: key) : nil
            try replaceEntries(of: &table, tableID, key, location, newRow, oldLocation, token, readRow)
            if let index = table.rows.updateValue(location, forKey: key, token: token) {
                liveBytes -= UInt64(index.length) + Self.rowOverhead
            }
        }
        liveBytes += UInt64(location.length) + Self.rowOverhead
        if key.rawValue >= table.nextKey { table.nextKey = key.rawValue + 1 }
    }

    /// The index and backlink entries of an upsert that replaces the row at `oldLocation` (if any), comparing
    /// every indexed and link column of the two rows.
    private mutating func replaceEntries(
        of table: inout TableState, _ tableID: TableID, _ key: ObjectKey, _ location: RowLocation,
        _ newRow: RowView, _ oldLocation: RowLocation?, _ token: MutationToken,
        _ readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        let oldRow = try oldLocation.map(readRow)
        let columns = table.schema.columns
        if let pk = table.schema.primaryKeyColumn {
            let newKey = try Self.indexKey(newRow, pk, columns[pk].type)
            let oldKey = try oldRow.map { (row) throws(StorageError) in try Self.indexKey(row, pk, columns[pk].type) }
            // The entry carries the row's location, so it changes with every upsert, not only when the
            // primary key does.
            let entry = PrimaryKeyEntry(object: key, location: location)
            if newKey != oldKey {
                // One walk: insert, and put the displaced owner back if there was one.
                if let displaced = table.primaryIndex.updateValue(entry, forKey: newKey, token: token),
                    displaced.object != key
                {
                    table.primaryIndex.updateValue(displaced, forKey: newKey, token: token)
                    throw StorageError(
                        .primaryKeyExists,
                        "An object of type '\(table.schema.name)' with primary key \(newKey) already exists. "
                            + "Use update: .modified or .all to update it.")
                }
                if let oldKey { table.primaryIndex.removeValue(forKey: oldKey, token: token) }
            } else {
                table.primaryIndex.updateValue(entry, forKey: newKey, token: token)
            }
        }
        for column in table.indexes.keys {
            try Self.moveIndexEntry(of: key, in: &table, column: column, from: oldRow, to: newRow, token: token)
        }
        for column in table.linkColumns {
            try updateBacklinks(
                from: tableID, key: key, column: column, table: table, old: oldRow, new: newRow, token: token)
        }
    }

    /// The index and backlink entries of an update whose changed columns are known: the primary-key entry
    /// takes the new location; the secondary index and backlink entries of the changed columns move, and
    /// the old row is read only for those.
    private mutating func updateEntries(
        of table: inout TableState, _ tableID: TableID, _ key: ObjectKey, _ location: RowLocation,
        _ newRow: RowView, _ changed: ColumnSet, _ oldLocation: RowLocation, _ token: MutationToken,
        _ readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        let columns = table.schema.columns
        if let pk = table.schema.primaryKeyColumn {
            let entry = PrimaryKeyEntry(object: key, location: location)
            table.primaryIndex.updateValue(entry, forKey: try Self.indexKey(newRow, pk, columns[pk].type), token: token)
        }
        try moveEntries(
            of: key, in: &table, tableID, indexed: table.indexes.keys.filter { changed.contains($0) },
            links: table.linkColumns.filter { changed.contains($0) }, from: oldLocation, to: newRow, token: token,
            readRow)
    }

    /// Moves row `key`'s entries in the secondary indexes of `indexed` and the backlinks of `links` from the
    /// row at `oldLocation` (read only if there is a column to move) to `newRow`.
    private mutating func moveEntries(
        of key: ObjectKey, in table: inout TableState, _ tableID: TableID, indexed: [Int], links: [Int],
        from oldLocation: RowLocation, to newRow: RowView, token: MutationToken,
        _ readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        guard !indexed.isEmpty || !links.isEmpty else { return }
        let oldRow = try readRow(oldLocation)
        for column in indexed {
            try Self.moveIndexEntry(of: key, in: &table, column: column, from: oldRow, to: newRow, token: token)
        }
        for column in links {
            try updateBacklinks(
                from: tableID, key: key, column: column, table: table, old: oldRow, new: newRow, token: token)
        }
    }

    /// Moves row `key`'s entry in the secondary index of `column` from its value in `oldRow` (none: a new
    /// row) to its value in `newRow`; nothing if the value is the same.
    private static func moveIndexEntry(
        of key: ObjectKey, in table: inout TableState, column: Int, from oldRow: RowView?, to newRow: RowView,
        token: MutationToken
    ) throws(StorageError) {
        let type = table.schema.columns[column].type
        let newKey = try indexKey(newRow, column, type)
        let oldKey = try oldRow.map { (row) throws(StorageError) in try indexKey(row, column, type) }
        guard newKey != oldKey else { return }
        if let oldKey { table.indexes[column]!.removeValue(forKey: IndexEntry(oldKey, key), token: token) }
        table.indexes[column]!.updateValue(Present(), forKey: IndexEntry(newKey, key), token: token)
    }

    /// Makes each `updates` location the current row of its key in `table`: rows that exist, each differing
    /// from its current row in `changed` columns only (never the primary key). `updates` is sorted by key,
    /// strictly ascending. The rows tree and the primary-key index are updated in one pass each (see
    /// ``PersistentBTree/replaceExistingValues(_:token:)``), the indexes and backlinks of changed columns
    /// row by row, as ``applyUpsert(table:key:location:newRow:changed:token:readRow:)`` would.
    /// - Parameter readRow: the bytes at a location (the new rows, and the old rows when an index or a
    ///   backlink needs them).
    /// - Throws: `.invalidObject` if a key has no row; `.corrupted` if a row cannot be decoded.
    package mutating func applyUpdates(
        table tableID: TableID, _ updates: [(key: ObjectKey, value: RowLocation)], changed: ColumnSet,
        token: MutationToken, readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        guard var table = tables.removeValue(forKey: tableID) else {
            throw StorageError(.invalidObject, "There is no table \(tableID) in this version.")
        }
        var failure: StorageError?
        do throws(StorageError) {
            try update(&table, tableID, updates, changed, token, readRow)
        } catch {
            failure = error
        }
        tables.put(tableID, consume table)
        if let failure { throw failure }
    }

    /// The body of ``applyUpdates``, on a table taken out of the store.
    private mutating func update(
        _ table: inout TableState, _ tableID: TableID, _ updates: [(key: ObjectKey, value: RowLocation)],
        _ changed: ColumnSet, _ token: MutationToken, _ readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        let old = table.rows.replaceExistingValues(updates, token: token)
        let columns = table.schema.columns
        if let pk = table.schema.primaryKeyColumn {
            var entries: [(key: IndexKey, value: PrimaryKeyEntry)] = []
            entries.reserveCapacity(updates.count)
            for update in updates {
                let key = try Self.indexKey(readRow(update.value), pk, columns[pk].type)
                entries.append((key, PrimaryKeyEntry(object: update.key, location: update.value)))
            }
            // Object keys and primary keys usually ascend together; sort only when they do not.
            if !zip(entries, entries.dropFirst()).allSatisfy({ $0.key < $1.key }) { entries.sort { $0.key < $1.key } }
            table.primaryIndex.replaceEntries(entries, token: token)
        }
        let indexed = table.indexes.keys.filter { changed.contains($0) }
        let links = table.linkColumns.filter { changed.contains($0) }
        for (i, update) in updates.enumerated() {
            guard let oldLocation = old[i] else {
                throw StorageError(.invalidObject, "The \(table.schema.name) object \(update.key) does not exist.")
            }
            liveBytes -= UInt64(oldLocation.length) + Self.rowOverhead
            liveBytes += UInt64(update.value.length) + Self.rowOverhead
            guard !indexed.isEmpty || !links.isEmpty else { continue }
            try moveEntries(
                of: update.key, in: &table, tableID, indexed: indexed, links: links, from: oldLocation,
                to: try readRow(update.value), token: token, readRow)
        }
    }

    /// Removes row `key` (whose current bytes are `oldRow`) from `table` and from every index.
    /// Links *to* the row must already have been removed by the caller (see `WriteTransaction.delete`).
    package mutating func applyDelete(
        table tableID: TableID, key: ObjectKey, oldRow: RowView, token: MutationToken
    ) throws(StorageError) {
        guard var table = tables.removeValue(forKey: tableID) else {
            throw StorageError(.invalidObject, "There is no table \(tableID) in this version.")
        }
        // Put back with one move after the `do`, as in ``applyUpsert``: assigning it back in a `defer`
        // copied the table (retaining and releasing each of its trees and arrays) on every delete.
        var failure: StorageError?
        do throws(StorageError) {
            try delete(from: &table, tableID, key, oldRow, token)
        } catch {
            failure = error
        }
        tables.put(tableID, consume table)
        if let failure { throw failure }
    }

    /// The body of ``applyDelete``, on a table taken out of the store (so that its trees are uniquely owned).
    private mutating func delete(
        from table: inout TableState, _ tableID: TableID, _ key: ObjectKey, _ oldRow: RowView,
        _ token: MutationToken
    ) throws(StorageError) {
        let columns = table.schema.columns
        if let pk = table.schema.primaryKeyColumn {
            table.primaryIndex.removeExistingValue(
                forKey: try Self.indexKey(oldRow, pk, columns[pk].type), token: token)
        }
        for column in table.indexes.keys {
            let old = try Self.indexKey(oldRow, column, columns[column].type)
            table.indexes[column]!.removeExistingValue(forKey: IndexEntry(old, key), token: token)
        }
        for column in table.linkColumns {
            try updateBacklinks(
                from: tableID, key: key, column: column, table: table, old: oldRow, new: nil, token: token)
        }
        if let location = table.rows.removeExistingValue(forKey: key, token: token) {
            liveBytes -= UInt64(location.length) + Self.rowOverhead
        }
    }

    static func indexKey(_ row: RowView, _ column: Int, _ type: ColumnType) throws(StorageError) -> IndexKey {
        let value = try row.value(at: column, type: type)
        guard let key = IndexKey(value) else {
            throw StorageError(.corrupted, "An indexed column holds a value of a kind that cannot be indexed.")
        }
        return key
    }

    /// Adjusts the backlink counts of the targets of `column` from the links in `old` to those in `new`.
    private mutating func updateBacklinks(
        from source: TableID, key: ObjectKey, column: Int, table: TableState, old: RowView?, new: RowView?,
        token: MutationToken
    ) throws(StorageError) {
        let schema = table.schema.columns[column]
        guard let targetName = schema.linkTarget, let target = tableIDs[targetName] else { return }
        let oldLinks = try old?.links(at: column, type: schema.type) ?? []
        let newLinks = try new?.links(at: column, type: schema.type) ?? []
        if oldLinks == newLinks { return }
        var delta: [ObjectKey: Int] = [:]
        for k in oldLinks { delta[k, default: 0] -= 1 }
        for k in newLinks { delta[k, default: 0] += 1 }
        for (targetKey, change) in delta where change != 0 {
            let entry = BacklinkKey(
                target: target, targetKey: targetKey, source: source, column: Int32(column), sourceKey: key)
            let count = Int(backlinks.value(forKey: entry) ?? 0) + change
            if count > 0 {
                backlinks.updateValue(UInt32(count), forKey: entry, token: token)
            } else {
                backlinks.removeValue(forKey: entry, token: token)
            }
        }
    }

    /// Replaces the schema. Tables keep their rows when their id survives; dropped tables lose theirs;
    /// indexes are (re)built from the rows for columns that became indexed.
    /// - Parameter readRow: the bytes of a row at a location (to build new indexes).
    package mutating func applySchema(
        _ entries: [CommitPayload.TableEntry], version: UInt64, token: MutationToken,
        readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        schemaVersion = version
        var newTables: [TableID: TableState] = [:]
        var newIDs: [String: TableID] = [:]
        // Tables whose change only turns indexes (or the primary key) on or off: those indexes are built in
        // bulk below, and nothing else of the store is touched.
        var reindexed = Set<TableID>()
        for entry in entries {
            var table = tables[entry.id] ?? TableState(id: entry.id, schema: entry.schema)
            var rebuild = !Self.indexesSurvive(table.schema, entry.schema) && !table.rows.isEmpty
            if rebuild, Self.onlyIndexesChange(table.schema, entry.schema) {
                try Self.rebuildIndexes(
                    of: &table, from: table.schema, to: entry.schema, token: token, readRow: readRow)
                reindexed.insert(entry.id)
                rebuild = false
            }
            table.schema = entry.schema
            table.nextKey = max(table.nextKey, entry.nextKey)
            if rebuild || tables[entry.id] == nil {
                table.primaryIndex = PrimaryIndex()
                table.indexes = [:]
                for (i, column) in entry.schema.columns.enumerated() where column.isIndexed && !column.isPrimaryKey {
                    table.indexes[i] = PersistentBTree()
                }
            }
            newTables[entry.id] = table
            newIDs[entry.schema.name] = entry.id
        }
        let dropped = Set(tables.keys).subtracting(newTables.keys)
        let changed = newTables.filter { id, table in
            guard !reindexed.contains(id) else { return false }
            return tables[id].map { !Self.indexesSurvive($0.schema, table.schema) && !$0.rows.isEmpty } ?? false
        }
        tables = TableStore(newTables)
        tableIDs = newIDs
        if !dropped.isEmpty || !changed.isEmpty {
            try rebuildDerivedIndexes(token: token, readRow: readRow)
        }
    }

    /// Whether the indexes built for a table under `old` stay valid under `new`: every existing column keeps
    /// its position, type, link target, index and primary-key flags (only names or the embedded flag may
    /// change), and appended columns are not indexed (rows written before read them as defaults, and links
    /// absent from a row need no backlink). A migration's renames and added properties then cost no rebuild.
    static func indexesSurvive(_ old: TableSchema, _ new: TableSchema) -> Bool {
        guard new.columns.count >= old.columns.count else { return false }
        for (a, b) in zip(old.columns, new.columns)
        where a.type != b.type || a.linkTarget != b.linkTarget || a.isIndexed != b.isIndexed
            || a.isPrimaryKey != b.isPrimaryKey
        {
            return false
        }
        return !new.columns[old.columns.count...].contains { $0.isIndexed || $0.isPrimaryKey }
    }

    /// Whether going from `old` to `new` changes nothing but which columns are indexed or the primary key:
    /// every existing column keeps its position, type and link target, and appended columns are not links
    /// (rows written before read them as defaults). Then the rows, the backlinks and the unchanged indexes
    /// stay as they are, and only the indexes that appear are built (``rebuildIndexes(of:from:to:token:readRow:)``).
    static func onlyIndexesChange(_ old: TableSchema, _ new: TableSchema) -> Bool {
        guard new.columns.count >= old.columns.count else { return false }
        for (a, b) in zip(old.columns, new.columns) where a.type != b.type || a.linkTarget != b.linkTarget {
            return false
        }
        return !new.columns[old.columns.count...].contains { $0.type.scalar == .link }
    }

    /// Gives `table` (whose rows follow `old`) the indexes `new` declares: an index whose column was
    /// already indexed the same way is kept; one that appears is built from the rows in one sorted bulk load
    /// (``PersistentBTree/init(sortedUniqueElements:token:)``); one that disappears is dropped.
    /// - Throws: `.primaryKeyExists` when the new primary key has a value twice; `.corrupted` for an
    ///   unreadable row. `table` is unchanged then.
    /// - Complexity: O(n log n) per index built (reading each row once per index, then one sort), O(1) for
    ///   the others.
    static func rebuildIndexes(
        of table: inout TableState, from old: TableSchema, to new: TableSchema, token: MutationToken,
        readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        let oldPrimary = old.primaryKeyColumn
        var primaryIndex = table.primaryIndex
        if let pk = new.primaryKeyColumn {
            if pk != oldPrimary {
                primaryIndex = try buildPrimaryIndex(
                    table.rows, column: pk, schema: new, token: token, readRow: readRow)
            }
        } else {
            primaryIndex = PrimaryIndex()
        }
        var indexes: [Int: PersistentBTree<IndexEntry, Present>] = [:]
        for (column, schema) in new.columns.enumerated() where schema.isIndexed && !schema.isPrimaryKey {
            let kept =
                column < old.columns.count && old.columns[column].isIndexed && !old.columns[column].isPrimaryKey
            if kept, let index = table.indexes[column] {
                indexes[column] = index
                continue
            }
            indexes[column] = try buildSecondaryIndex(
                table.rows, column: column, type: schema.type, token: token, readRow: readRow)
        }
        table.primaryIndex = primaryIndex
        table.indexes = indexes
    }

    /// A secondary index over `column` of `rows`, built in one sorted bulk load.
    private static func buildSecondaryIndex(
        _ rows: PersistentBTree<ObjectKey, RowLocation>, column: Int, type: ColumnType, token: MutationToken,
        readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) -> PersistentBTree<IndexEntry, Present> {
        // Integer keys (the common case) are sorted as plain pairs of integers, much faster than `IndexEntry`s.
        var integers: [(Int64, Int64)] = []
        var others: [IndexEntry] = []
        integers.reserveCapacity(rows.count)
        for (key, location) in rows {
            let indexKey = try Self.indexKey(try readRow(location), column, type)
            if case .int(let value) = indexKey {
                integers.append((value, key.rawValue))
            } else {
                others.append(IndexEntry(indexKey, key))
            }
        }
        integers.sort { $0 < $1 }
        others.sort()
        // Key order is `IndexKey`'s: null first, then the integers, then the other kinds.
        let nulls = others.prefix { $0.key == .null }
        let rest = others[nulls.count...]
        var entries: [(IndexEntry, Present)] = []
        entries.reserveCapacity(rows.count)
        for entry in nulls { entries.append((entry, Present())) }
        for (value, key) in integers { entries.append((IndexEntry(.int(value), ObjectKey(key)), Present())) }
        for entry in rest { entries.append((entry, Present())) }
        return PersistentBTree(sortedUniqueElements: entries, token: token)
    }

    /// A primary-key index over `column` of `rows`, built in one sorted bulk load per kind of key.
    /// - Throws: `.primaryKeyExists` naming the first value found twice.
    private static func buildPrimaryIndex(
        _ rows: PersistentBTree<ObjectKey, RowLocation>, column: Int, schema: TableSchema, token: MutationToken,
        readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) -> PrimaryIndex {
        var integers: [(Int64, PrimaryKeyEntry)] = []
        var others: [(IndexKey, PrimaryKeyEntry)] = []
        integers.reserveCapacity(rows.count)
        for (key, location) in rows {
            let indexKey = try Self.indexKey(try readRow(location), column, schema.columns[column].type)
            let entry = PrimaryKeyEntry(object: key, location: location)
            if case .int(let value) = indexKey {
                integers.append((value, entry))
            } else {
                others.append((indexKey, entry))
            }
        }
        integers.sort { $0.0 < $1.0 }
        others.sort { $0.0 < $1.0 }
        func duplicate(_ key: IndexKey) -> StorageError {
            StorageError(
                .primaryKeyExists,
                "An object of type '\(schema.name)' with primary key \(key) already exists. "
                    + "Use update: .modified or .all to update it.")
        }
        for i in integers.indices.dropFirst() where integers[i - 1].0 == integers[i].0 {
            throw duplicate(.int(integers[i].0))
        }
        for i in others.indices.dropFirst() where others[i - 1].0 == others[i].0 { throw duplicate(others[i].0) }
        var index = PrimaryIndex()
        index.integers = PersistentBTree(sortedUniqueElements: integers, token: token)
        index.others = PersistentBTree(sortedUniqueElements: others, token: token)
        return index
    }

    /// Rebuilds primary, secondary and backlink indexes and live bytes from the rows (after a schema change).
    private mutating func rebuildDerivedIndexes(
        token: MutationToken, readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        backlinks = PersistentBTree()
        liveBytes = UInt64(FileHeader.size)
        for id in tables.keys {
            var table = tables[id]!
            let rows = table.rows
            table.rows = PersistentBTree()
            table.primaryIndex = PrimaryIndex()
            for column in table.indexes.keys { table.indexes[column] = PersistentBTree() }
            tables[id] = table
            for (key, location) in rows {
                try applyUpsert(table: id, key: key, location: location, newRow: try readRow(location), token: token) {
                    (location) throws(StorageError) in try readRow(location)
                }
            }
        }
    }
}
