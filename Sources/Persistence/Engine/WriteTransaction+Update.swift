// Updates of existing rows: one row by some of its columns, or one column of many rows (a set-based update).
// Only the given columns are decoded and encoded; the others' bytes are copied (``RowEncoder/encode(patching:with:types:dataLength:into:)``).
extension WriteTransaction {
    /// Sets some columns of an existing row. Columns whose value does not change are not reported modified,
    /// unless `reportingUnchanged` (Realm's `update: .all`): then every given column is written and reported.
    /// `knownLocation`, if the caller has it, is where the row is in this transaction's current state (it
    /// saves the lookup; a location from before the transaction's last change is wrong).
    /// - Returns: where the row is after the call, or nil when the caller must look it up again (the rare
    ///   path that decodes the whole row). An update of ``deferrableRow`` may wait before it reaches the
    ///   trees (see ``deferred``): the location returned is then the only way to the new row without
    ///   applying it.
    /// - Throws: `.invalidObject` (no such row), `.invalidValue` (including changing a primary key), `.limitExceeded`.
    @discardableResult
    package func update(
        _ tableID: TableID, _ key: ObjectKey, _ columnValues: [(column: Int, value: Value)],
        reportingUnchanged: Bool = false, knownLocation: RowLocation? = nil
    )
        throws(StorageError) -> RowLocation?
    {
        try checkUsable()
        let cache = try tableCache(tableID)
        guard let location = knownLocation ?? state.tables.rowLocation(tableID, key) else {
            throw StorageError(
                .invalidObject,
                "The \(cache.name) object \(key) does not exist: it was deleted or never added.")
        }
        defer { scratch.empty() }
        // Only the given columns are decoded (to compare) and encoded; the others' bytes are copied.
        let old = try rowView(at: location)
        var patches = columnValues
        var changed = ColumnSet()
        var given = ColumnSet()
        var i = 0
        // The column's type and position, not its `ColumnSchema` (copying one retains its name and link
        // target): the schema is read for error messages and links only.
        while i < patches.count {
            let column = patches[i].column
            guard cache.types.indices.contains(column) else {
                throw StorageError(.invalidValue, "\(cache.name) has no column number \(column).")
            }
            guard !given.contains(column) else {
                // A column given twice: the last value wins, as in a decoded row.
                recordModify(
                    tableID, key, try updateDecoded(tableID, key, columnValues, reportingUnchanged: reportingUnchanged))
                return nil
            }
            given.insert(column)
            let type = cache.types[column]
            let isPrimaryKey = column == cache.primaryKeyColumn
            let plain = type.collection == .single && RowEncoder.isPlainSingle(patches[i].value, type)
            let normalized =
                plain
                ? patches[i].value
                : try RowEncoder.validate(patches[i].value, for: type, column: cache.columns[column].name)
            if try old.value(at: column, type: type) != normalized {
                if isPrimaryKey {
                    throw Self.primaryKeyChange(cache.columns[column], in: cache.name)
                }
                if type.scalar == .link { try checkLinks(normalized, cache.columns[column]) }
                if !plain && normalized != patches[i].value { patches[i].value = normalized }
                changed.insert(column)
                i += 1
            } else {
                if reportingUnchanged && !isPrimaryKey { changed.insert(column) }
                patches.remove(at: i)
            }
        }
        guard !changed.isEmpty else { return location }
        guard let written = try writePatched(tableID, key, at: location, old, patches, changed: changed, cache) else {
            recordModify(
                tableID, key, try updateDecoded(tableID, key, columnValues, reportingUnchanged: reportingUnchanged))
            return nil
        }
        return written
    }

    /// Sets column `column` of every row of `keys` to `value` (Realm's `Results.setValue(_:forKey:)`): the
    /// value is validated once, and each row is written with only that column re-encoded. Keys with no row
    /// (deleted earlier in the transaction) are skipped; rows that already hold the value are not written
    /// or reported modified.
    /// - Parameter locations: where each row of `keys` is in the transaction's current state, when the caller
    ///   has just read them (see ``delete(_:keys:locations:)``); used only when `keys` is strictly ascending
    ///   and as long.
    /// - Throws: `.invalidValue` (a bad value, changing a primary key), `.invalidObject` (a link to a missing
    ///   object), `.limitExceeded`; after a throw the transaction can only roll back.
    package func update(
        _ tableID: TableID, keys: [ObjectKey], column: Int, to value: Value, locations: [RowLocation]? = nil
    ) throws(StorageError) {
        try checkUsable()
        let cache = try tableCache(tableID)
        guard let schema = cache.columns[safe: column] else {
            throw StorageError(.invalidValue, "\(cache.name) has no column number \(column).")
        }
        let normalized = try RowEncoder.validate(value, for: schema.type, column: schema.name)
        try checkLinks(normalized, schema)
        let patches: [RowEncoder.Patch] = [(column, normalized)]
        var changed = ColumnSet()
        changed.insert(column)
        // Rows are appended a chunk at a time, then applied to the trees in one pass per tree.
        let ascending = zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }
        let sorted = ascending ? keys : Set(keys).sorted()
        // Appending rows moves only those rows: the locations of the ones after them hold to the end.
        let known = ascending ? checkedLocations(locations, count: keys.count, of: tableID, keys) : nil
        var written: [(key: ObjectKey, value: RowLocation)] = []
        written.reserveCapacity(min(sorted.count, Self.updateChunk))
        // Taken out of the change set while the rows are recorded, not looked up once per row.
        let hadChanges = changes.tables[tableID] != nil
        var tableChanges = changes.tables.removeValue(forKey: tableID) ?? TableChanges()
        defer { if hadChanges || !tableChanges.isEmpty { changes.tables[tableID] = tableChanges } }
        for chunkStart in stride(from: 0, to: sorted.count, by: Self.updateChunk) {
            let mark = buffer.count
            written.removeAll(keepingCapacity: true)
            defer { scratch.empty() }
            let chunk = chunkStart..<min(chunkStart + Self.updateChunk, sorted.count)
            do throws(StorageError) {
                try appendUpdates(
                    tableID, sorted[chunk], known: known?[chunk], schema, patches, cache, into: &written,
                    changes: &tableChanges)
                try state.applyUpdates(table: tableID, written, changed: changed, token: token) {
                    (location) throws(StorageError) in try rowView(at: location)
                }
            } catch {
                buffer.truncate(to: mark)
                failure = error
                throw error
            }
            for entry in written { tableChanges.recordModify(entry.key, changed) }
        }
    }

    /// Appends the rows `keys` of a set-based update with `patches` (one column) applied, without applying
    /// them; adds their new locations to `written`. Rows that are gone or already hold the value are
    /// skipped; a row the patch cannot be applied to is updated on its own, and recorded in `changes`.
    private func appendUpdates(
        _ tableID: TableID, _ keys: ArraySlice<ObjectKey>, known: ArraySlice<RowLocation>?, _ schema: ColumnSchema,
        _ patches: [RowEncoder.Patch], _ cache: TableCache, into written: inout [(key: ObjectKey, value: RowLocation)],
        changes: inout TableChanges
    ) throws(StorageError) {
        let (column, normalized) = patches[0]
        let lookedUp = known == nil ? rowLocations(tableID, keys) : []
        for (offset, key) in keys.enumerated() {
            guard let location = known.map({ $0[$0.startIndex &+ offset] }) ?? lookedUp[offset] else { continue }
            let old = try rowView(at: location)
            guard try old.value(at: column, type: schema.type) != normalized else { continue }
            if schema.isPrimaryKey {
                throw Self.primaryKeyChange(schema, in: cache.name)
            }
            guard let dataLength = RowEncoder.patchedDataSize(old, patches, types: cache.types) else {
                changes.recordModify(key, try updateDecoded(tableID, key, patches, reportingUnchanged: false))
                continue
            }
            try RowEncoder.checkRowSize(dataSize: dataLength, columnCount: cache.types.count)
            reserveRoom(rowData: dataLength, columns: cache.types.count)
            let current = location.offset >= recordStart ? try rowView(at: location) : old
            let (newLocation, _, _) = try appendUpsertOp(tableID, key) { buffer in
                RowEncoder.encode(
                    patching: current, with: patches, types: cache.types, dataLength: dataLength, into: buffer)
            }
            written.append((key, newLocation))
        }
    }

    /// `locations` as the locations of `count` keys, or nil if it has another length; debug builds check
    /// that each is its row's current location.
    func checkedLocations(
        _ locations: [RowLocation]?, count: Int, of tableID: TableID, _ keys: [ObjectKey]
    ) -> [RowLocation]? {
        guard let locations, locations.count == count else { return nil }
        assert(zip(keys, locations).allSatisfy { state.tables.rowLocation(tableID, $0) == $1 }, "a stale location")
        return locations
    }

    /// Where the rows `keys` of `tableID` are, nil for a key with no row. Ascending keys that are dense
    /// enough (a span under four times their number) are found in one pass over the rows tree's leaves;
    /// otherwise each is looked up.
    package func rowLocations(_ tableID: TableID, _ keys: ArraySlice<ObjectKey>) -> [RowLocation?] {
        guard let first = keys.first, let last = keys.last,
            zip(keys, keys.dropFirst()).allSatisfy({ $0 < $1 }),
            case let (span, overflow) = last.rawValue.subtractingReportingOverflow(first.rawValue),
            !overflow, span < 4 * Int64(keys.count)
        else { return keys.map { state.tables.rowLocation(tableID, $0) } }
        var locations = [RowLocation?](repeating: nil, count: keys.count)
        var i = keys.startIndex
        state.tables[tableID]?.rows.forEach(from: first, inclusive: true) { key, location in
            while keys[i] < key {
                i += 1
                if i == keys.endIndex { return false }
            }
            if keys[i] == key {
                locations[i - keys.startIndex] = location
                i += 1
            }
            return i < keys.endIndex
        }
        return locations
    }

    /// Sets column `column` of each row of `keys` to what `transform` makes of its current value (a computed
    /// set-based update: `score += 1` on every match), one row after another in key order, without
    /// decoding anything but that column or encoding anything but the new value. Returns false if
    /// `transform` stopped the update by returning nil (the rows before keep their new values).
    ///
    /// The rows reach the trees a chunk at a time (they wait in ``deferred``), and `transform` may do
    /// anything the transaction allows, reads and writes included: every read applies the waiting rows
    /// first, and a row another write moved is looked up again. Rows that are gone are skipped; a row
    /// whose value does not change is not written or reported modified.
    /// - Throws: `.invalidValue` (a value that does not fit the column; changing a primary key),
    ///   `.invalidObject` (a link to a missing object), `.limitExceeded`, and what `transform` throws; after
    ///   a throw the transaction can only roll back.
    /// - Parameter locations: where each row of `keys` is in the transaction's current state, when the caller
    ///   has just read them (see ``delete(_:keys:locations:)``); used only when `keys` is strictly ascending
    ///   and as long, and only while `transform` writes nothing that moves another row.
    @discardableResult
    package func update(
        _ tableID: TableID, keys: [ObjectKey], column: Int, locations: [RowLocation]? = nil,
        transform: (Value) throws(StorageError) -> Value?
    ) throws(StorageError) -> Bool {
        try checkUsable()
        let cache = try tableCache(tableID)
        guard let schema = cache.columns[safe: column] else {
            throw StorageError(.invalidValue, "\(cache.name) has no column number \(column).")
        }
        if schema.isPrimaryKey { throw Self.primaryKeyChange(schema, in: cache.name) }
        var changed = ColumnSet()
        changed.insert(column)
        let linkColumns = schema.type.scalar == .link ? [column] : []
        let types = cache.types
        let single = schema.type.collection == .single
        // One array for every row: its value is replaced in place.
        var patches: [RowEncoder.Patch] = [(column, .null)]
        // The caller's locations hold until `transform` moves a row that is not this loop's.
        let ascending = zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }
        var given = ascending ? checkedLocations(locations, count: keys.count, of: tableID, keys) : nil
        do throws(StorageError) {
            for chunkStart in stride(from: 0, to: keys.count, by: Self.updateChunk) {
                let range = chunkStart..<min(chunkStart + Self.updateChunk, keys.count)
                let chunk = keys[range]
                let known = given?[range]
                let lookedUp = known == nil ? rowLocations(tableID, chunk) : []
                // The locations hold while only this loop's own rows moved: once another write moved a
                // row (from `transform`), the rest of the chunk is looked up.
                var epoch = locationEpoch
                var holds = true
                for (offset, key) in chunk.enumerated() {
                    let location =
                        holds
                        ? known.map({ $0[$0.startIndex &+ offset] }) ?? lookedUp[offset]
                        : state.tables.rowLocation(tableID, key)
                    guard let location else { continue }
                    let view = try rowView(at: location)
                    let oldValue = try view.value(at: column, type: schema.type)
                    guard let new = try transform(oldValue) else { return false }
                    // `transform` may have written: the row may have moved, or be gone.
                    if locationEpoch != epoch {
                        holds = false
                        given = nil
                    }
                    let current = holds ? location : state.tables.rowLocation(tableID, key)
                    guard let current else { continue }
                    defer { scratch.empty() }
                    // Nothing moved: the row is as read. An unencrypted row's view is still valid (it is in
                    // the file or the record, which only an append moves); a decrypted one may have been
                    // dropped from `scratch` by what `transform` did.
                    let unmoved = holds && cipher == nil
                    let old = unmoved ? view : try rowView(at: current)
                    let normalized =
                        single && RowEncoder.isPlainSingle(new, schema.type)
                        ? new : try RowEncoder.validate(new, for: schema.type, column: schema.name)
                    guard try (unmoved ? oldValue : old.value(at: column, type: schema.type)) != normalized else {
                        continue
                    }
                    if !linkColumns.isEmpty { try checkLinks(normalized, schema) }
                    patches[0].value = normalized
                    guard let dataLength = RowEncoder.patchedDataSize(old, patches, types: types) else {
                        recordModify(
                            tableID, key, try updateDecoded(tableID, key, patches, reportingUnchanged: false))
                        if holds { epoch = locationEpoch }  // only this row moved
                        continue
                    }
                    try RowEncoder.checkRowSize(dataSize: dataLength, columnCount: types.count)
                    reserveRoom(rowData: dataLength, columns: types.count)
                    let source = current.offset >= recordStart ? try rowView(at: current) : old
                    let encode = { (buffer: RecordBuffer) in
                        RowEncoder.encode(
                            patching: source, with: patches, types: types, dataLength: dataLength, into: buffer)
                    }
                    if linkColumns.isEmpty {
                        let written = try appendUpsertOp(tableID, key, encode: encode).location
                        deferUpdate(tableID, key, at: written, changed: changed)
                    } else {
                        try appendUpsert(tableID, key, changed: changed, encode: encode)
                    }
                    recordModify(tableID, key, changed)
                    if holds { epoch = locationEpoch }  // only this row moved
                }
            }
        } catch {
            failure = failure ?? error
            throw error
        }
        return true
    }

    /// The error of an update that would change a primary key.
    private static func primaryKeyChange(_ schema: ColumnSchema, in table: String) -> StorageError {
        StorageError(
            .invalidValue,
            "The primary key '\(schema.name)' of a \(table) can't be changed after the object is added. Delete "
                + "the object and add a new one instead.")
    }

    /// Rows a set-based update appends before applying them to the trees.
    static let updateChunk = 4096

    /// Inserts that wait (``deferredInserts``) before they are applied to the trees: enough that a tree's
    /// right edge is walked once per 32 leaves, few enough that the waiting keys take 200 KB at most.
    static let insertChunk = 4096

    /// Reserves room in the record for one upsert of a row with `rowData` bytes of data in `columns` columns:
    /// the appends that follow move nothing, so a view of a row already in the record, taken after this
    /// call, stays valid while the new row is written.
    private func reserveRoom(rowData: Int, columns: Int) {
        let overhead = StoreCipher.unitHeaderSize + CommitPayload.upsertHeaderSize + 4
        buffer.reserveCapacity(
            forAppending: RowFormat.headerSize(columnCount: columns, offsetWidth: 4) + rowData + overhead)
    }

    /// Appends row `key` (now `old`, at `location`) with `patches` applied, records it modified in
    /// `changed`, and returns its new location; or returns nil, writing nothing, if the row stores more
    /// columns than the schema has. An update of ``deferrableRow`` waits in ``deferred`` unless it changes
    /// a link.
    private func writePatched(
        _ tableID: TableID, _ key: ObjectKey, at location: RowLocation, _ old: RowView,
        _ patches: [RowEncoder.Patch], changed: ColumnSet, _ cache: TableCache
    ) throws(StorageError) -> RowLocation? {
        guard let dataLength = RowEncoder.patchedDataSize(old, patches, types: cache.types) else { return nil }
        try RowEncoder.checkRowSize(dataSize: dataLength, columnCount: cache.types.count)
        reserveRoom(rowData: dataLength, columns: cache.types.count)
        let old = location.offset >= recordStart ? try rowView(at: location) : old
        let encode = { (buffer: RecordBuffer) in
            RowEncoder.encode(patching: old, with: patches, types: cache.types, dataLength: dataLength, into: buffer)
        }
        let written: RowLocation
        if mayDefer(tableID, key, changed: changed, linkColumns: cache.linkColumns) {
            written = try appendUpsertOp(tableID, key, encode: encode).location
            deferUpdate(tableID, key, at: written, changed: changed)
        } else {
            written = try appendUpsert(tableID, key, changed: changed, encode: encode)
        }
        recordModify(tableID, key, changed)
        return written
    }

    /// ``update(_:_:_:reportingUnchanged:)`` by decoding the whole row and encoding it again: for the rare
    /// calls the column-by-column path does not take (a column given twice, a row storing more columns
    /// than the schema has).
    /// Returns the columns it reports modified, which the caller records.
    private func updateDecoded(
        _ tableID: TableID, _ key: ObjectKey, _ columnValues: [(column: Int, value: Value)],
        reportingUnchanged: Bool
    ) throws(StorageError) -> ColumnSet {
        let (table, types) = try schemaAndTypes(tableID)
        guard var row = try values(tableID, key) else {
            throw StorageError(
                .invalidObject, "The \(table.name) object \(key) does not exist: it was deleted or never added.")
        }
        var changed = ColumnSet()
        for (column, value) in columnValues {
            guard let schema = table.columns[safe: column] else {
                throw StorageError(.invalidValue, "\(table.name) has no column number \(column).")
            }
            let normalized = try RowEncoder.validate(value, for: schema.type, column: schema.name)
            if row[column] != normalized {
                if schema.isPrimaryKey {
                    throw Self.primaryKeyChange(schema, in: table.name)
                }
                try checkLinks(normalized, schema)
                row[column] = normalized
                changed.insert(column)
            } else if reportingUnchanged && !schema.isPrimaryKey {
                changed.insert(column)
            }
        }
        guard !changed.isEmpty else { return changed }
        try RowEncoder.checkRowSize(dataSize: RowEncoder.dataSize(row, types: types), columnCount: types.count)
        try appendUpsert(tableID, key, row, types)
        return changed
    }
}
