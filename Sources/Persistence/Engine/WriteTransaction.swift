/// One write transaction: the only way to change a store. Obtained from ``StorageEngine/beginWrite()``.
///
/// The transaction holds the engine's writer lock from `beginWrite` until its record is appended
/// (``commit()``), ``rollback()``, or until it is released, which rolls back; ``releaseWriteLock()`` is the
/// one place that lets it go. It starts from the newest appended version, reads its
/// own writes, and builds its commit record in memory as it goes: each operation is encoded once,
/// straight into the record, and the indexes point at the encoded rows.
///
/// - Important: Not `Sendable`. Use it from the task that began it.
package final class WriteTransaction: ReadableStore {
    let engine: StorageEngine
    /// The transaction's version of the trees, behind any ``deferred`` updates: read it through ``state``.
    private var storedState: DatabaseState
    /// The transaction's current version: every row it wrote is in the trees. Reading or changing it first
    /// applies the updates still waiting in ``deferred``, so no reader ever sees a tree behind its record;
    /// changing it also bumps ``locationEpoch``.
    package internal(set) var state: DatabaseState {
        _read {
            if hasDeferred { applyDeferred() }
            yield storedState
        }
        _modify {
            if hasDeferred { applyDeferred() }
            locationEpoch &+= 1
            yield &storedState
        }
    }
    /// Updates appended to the record but not applied to the trees yet, in the order written: all of the
    /// table ``deferredTable``, each of the row that was ``deferrableRow`` when it was written. A loop that
    /// changes one object after another (`results.update { }`, `for object in results`) then updates the
    /// trees once per chunk of rows (``DatabaseState/applyUpdates``) instead of walking them once per row.
    /// Every read of ``state`` applies them first.
    // `@exclusivity(unchecked)` on the fields a loop touches for every row (`deferred`, `pendingModified`,
    // `deferrableRow`, `locationEpoch`): a transaction is used from one task at a time, and every access
    // to them is a read, an assignment or a mutating call of their own type that calls nothing outside it,
    // so no access can overlap another; the dynamic checks were a tenth of an object-by-object update.
    @exclusivity(unchecked) private var deferred = DeferredRows()
    /// Deletes of rows that were ``deferrableRow`` when deleted, appended to the record but not yet removed
    /// from the trees: the entries each removes, gathered as it was deleted; keys strictly ascending, of a
    /// table no row links to (see ``deferDelete(_:_:)``). Never waiting beside ``deferred`` updates.
    @exclusivity(unchecked) private var deferredDeletes: RowDeletions?  // see `deferred`
    /// Inserts appended to the record but not applied to the trees yet (see ``DeferredInserts``): a loop of
    /// `add`s then updates each tree once per chunk of rows, at its right edge
    /// (``DatabaseState/applyAppends``), instead of walking it once per row. Never waiting beside
    /// ``deferred`` updates or ``deferredDeletes``.
    @exclusivity(unchecked) private var deferredInserts = DeferredInserts()  // see `deferred`
    /// Whether updates, deletes or inserts wait to be applied to the trees.
    @inline(__always) private var hasDeferred: Bool {
        !deferred.rows.isEmpty || deferredDeletes != nil || !deferredInserts.rows.isEmpty
    }
    /// The row a loop over objects is at: its updates may wait in ``deferred`` (unless they change a link
    /// column, whose backlinks must follow at once). Set by the loop (``LoopRow/loop``, from
    /// ``newLoop()``) before it hands out the row's object.
    @exclusivity(unchecked) package var deferrableRow: LoopRow?
    /// Bumped by every change that may move a row: each change of ``state`` and each deferred update.
    /// Locations a loop read up front stay valid while it moves only by the deferred updates of the rows
    /// the loop itself declared (``LoopRow/deferredWrites``), which it has passed.
    @exclusivity(unchecked) package private(set) var locationEpoch: UInt64 = 0
    private var loops: UInt64 = 0

    /// Makes row `key` of `table` the row loop `loop` is at (``deferrableRow``). Returns the location epoch,
    /// and the updates deferred for the row the same loop was at before (0 if another loop's row was the
    /// deferrable one, or none).
    ///
    /// One call instead of the loop reading and writing the fields itself: `@exclusivity(unchecked)` holds
    /// only for accesses inside this module, and the checks of the object layer's direct accesses were a
    /// share of every step of a loop.
    package func enterLoopRow(_ table: TableID, _ key: ObjectKey, loop: UInt64) -> (epoch: UInt64, passed: UInt64) {
        let passed = deferrableRow.map { $0.loop == loop ? $0.deferredWrites : 0 } ?? 0
        deferrableRow = LoopRow(table: table, key: key, loop: loop)
        return (locationEpoch, passed)
    }

    /// Ends loop `loop`'s claim on ``deferrableRow``, if it holds it; returns the location epoch.
    @discardableResult
    package func leaveLoopRow(loop: UInt64) -> UInt64 {
        if deferrableRow?.loop == loop { deferrableRow = nil }
        return locationEpoch
    }

    /// A row of a loop over objects (see ``deferrableRow``).
    package struct LoopRow {
        package let table: TableID
        package let key: ObjectKey
        /// Which loop declared it.
        package let loop: UInt64
        /// The updates of the row deferred since the loop declared it.
        package private(set) var deferredWrites: UInt64 = 0

        /// Counts a deferred update of row `key` of `table`, if it is this row.
        mutating func countWrite(_ table: TableID, _ key: ObjectKey) {
            if table == self.table, key == self.key { deferredWrites &+= 1 }
        }

        package init(table: TableID, key: ObjectKey, loop: UInt64) {
            self.table = table
            self.key = key
            self.loop = loop
        }
    }

    /// An identifier for a new loop over objects, unique in this transaction (see ``deferrableRow``).
    package func newLoop() -> UInt64 {
        loops &+= 1
        return loops
    }
    let baseVersion: Version
    /// The version the transaction started from.
    let baseState: DatabaseState
    /// Observers (``ChangeSubscription`` ids) this commit must not notify: `write(withoutNotifying:)`.
    package var silencedSubscriptions: Set<UInt64> = []
    let token: MutationToken
    /// File offset where this transaction's record will be written.
    let recordStart: UInt64
    let region: MappedRegion
    let buffer: RecordBuffer
    /// What the transaction changed so far. Reading or changing it first records the inserts,
    /// modifications and deletes still waiting (``pendingInserted``, ``pendingModified``,
    /// ``pendingDeleted``), so that every change is recorded in the order it was made.
    package internal(set) var changes: ChangeSet {
        _read {
            if hasPendingChanges { recordPendingChanges() }
            yield storedChanges
        }
        _modify {
            if hasPendingChanges { recordPendingChanges() }
            yield &storedChanges
        }
    }
    private var hasPendingChanges: Bool {
        !pendingModified.keys.isEmpty || pendingInserted.count > 0 || !pendingDeleted.keys.isEmpty
    }
    private var storedChanges = ChangeSet()
    /// Rows updated but not yet recorded in ``changes``. A loop that updates one row after another then
    /// looks its table's changes up once per chunk of rows, not once per row.
    @exclusivity(unchecked) private var pendingModified = PendingModifications()  // see `deferred`
    /// Rows inserted but not yet recorded in ``changes``: consecutive keys of one table. Recorded before
    /// ``pendingModified`` (a row is inserted before it can be modified).
    @exclusivity(unchecked) private var pendingInserted = PendingInserts()  // see `deferred`
    /// Rows deleted but not yet recorded in ``changes``: keys of one table. Recorded after the inserts and
    /// modifications waiting (a row is inserted and modified before it is deleted); an insert or a
    /// modification records them first, so no row's changes are ever recorded out of order.
    @exclusivity(unchecked) private var pendingDeleted = PendingDeletes()  // see `deferred`
    private(set) var isFinished = false
    /// Whether the transaction still holds the engine's write lock (see ``releaseWriteLock()``).
    private var holdsWriteLock = true
    /// Set when an operation failed half-way; the transaction can then only roll back.
    var failure: StorageError?
    /// What inserts and updates of the last table written need, read once instead of per row (reading a
    /// table's fields out of the state copies the table). Dropped on every schema change.
    private var tableCacheEntry: TableCache?

    /// A class, so that taking it out of the property for a write retains one object rather than copying
    /// three arrays (three retains and releases per row).
    final class TableCache {
        let table: TableID
        let name: String
        let columns: [ColumnSchema]
        let types: [ColumnType]
        let linkColumns: [Int]
        var nextKey: Int64
        /// The primary key's column, if the table has one.
        let primaryKeyColumn: Int?
        /// Whether inserts may wait in ``deferredInserts``: the table has no secondary index and no link
        /// column, so an insert changes the row tree and the primary index only.
        let insertsMayWait: Bool

        init(_ id: TableID, _ table: TableState) {
            self.table = id
            name = table.schema.name
            columns = table.schema.columns
            types = table.columnTypes
            linkColumns = table.linkColumns
            nextKey = table.nextKey
            primaryKeyColumn = table.schema.primaryKeyColumn
            insertsMayWait = table.indexes.isEmpty && table.linkColumns.isEmpty
        }
    }

    /// Where the commit body starts in ``buffer``: after the record header and the durability watermark
    /// (filled in at commit).
    static let bodyStart = Record.headerSize + Record.watermarkSize
    /// The encryption of an encrypted store: each operation of the record is then its own unit (see
    /// ``EncryptedRecord``), sealed at ``seal(watermark:)``; until then the buffer holds the plaintext.
    let cipher: StoreCipher?
    /// The record's length at which its finished part is next written to the file (see ``streamIfDue()``):
    /// `Int.max` where the record is written at commit only.
    private var streamAt: Int
    /// The end of the buffer once the version is written: more means the transaction did something.
    private let emptyCount: Int
    var hasOperations: Bool { buffer.count > emptyCount }
    /// Rows of the file decrypted for an operation (encrypted stores): the rows ``DatabaseState`` reads
    /// through a `readRow` closure must outlive the call. Emptied after each operation.
    let scratch = ScratchRows()

    /// - Parameter spare: a buffer of an earlier transaction to build the record in (emptied first).
    init(
        engine: StorageEngine, base: DatabaseState, recordStart: UInt64, region: MappedRegion,
        buffer spare: RecordBuffer? = nil
    ) {
        self.engine = engine
        self.storedState = base
        self.baseVersion = base.version
        self.baseState = base
        self.storedState.version = base.version.next
        self.token = MutationToken.next()
        self.recordStart = recordStart
        self.region = region
        self.cipher = region.cipher
        if let spare {
            spare.truncate(to: 0)
            self.buffer = spare
        } else {
            self.buffer = RecordBuffer(capacity: 4096)
        }
        buffer.append([UInt8](repeating: 0, count: Self.bodyStart))
        let unit = EncryptedRecord.beginUnit(in: buffer, encrypted: cipher != nil)
        buffer.append(storedState.version.rawValue)
        EncryptedRecord.endUnit(unit, in: buffer)
        emptyCount = buffer.count
        streamAt = cipher == nil ? (engine.configuration.recordStreamChunk ?? .max) : .max
    }

    deinit {
        abandonStream()
        releaseWriteLock()
        // Nothing else holds the buffer once the transaction is gone (rows read from it are copied or live
        // within an operation): the next transaction may build its record in it. Not one that streamed a
        // record that was not committed: chunk writes may still read it (it frees its memory through them).
        if buffer.recordStream == nil { engine.recycle(buffer) }
    }

    /// Lets the engine's write lock go, once: the only place a write transaction releases it. Called when the
    /// record is appended (before its sync: the next writer appends behind it, and one sync covers both),
    /// at rollback, and when a transaction is released unfinished.
    private func releaseWriteLock() {
        guard holdsWriteLock else { return }
        holdsWriteLock = false
        // And the writer lock of every process, if nothing of the engine needs it any more (a commit
        // waiting for its sync keeps it until the sync thread lets it go).
        engine.unlockWriter()
    }

    package func withRowBytes<R>(
        at location: RowLocation, _ body: (RowView) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        if let cipher, location.offset < recordStart {
            return try EncryptedRecord.withRow(
                at: location, in: region.bytes(at: 0, count: region.length), cipher: cipher, path: engine.path, body)
        }
        return try body(try rowView(at: location))
    }

    /// The row at `location`: in this transaction's record, or in the file. Valid until the next append
    /// (and, in an encrypted store, until the operation ends: see ``scratch``).
    func rowView(at location: RowLocation) throws(StorageError) -> RowView {
        if location.offset >= recordStart {
            let start = Int(location.offset - recordStart)
            if cipher != nil {
                // The unit is still plaintext: the row follows the unit's header and the upsert's fields.
                let skip = StoreCipher.unitHeaderSize + CommitPayload.upsertHeaderSize
                return try RowView(
                    buffer.bytes(at: start + skip, count: Int(location.length) - skip - PlatformCrypto.tagSize))
            }
            return try RowView(buffer.bytes(at: start, count: Int(location.length)))
        }
        if let cipher {
            return try scratch.keep(cipher: cipher, region: region, location: location, path: engine.path)
        }
        return try RowView(region.bytes(at: Int(location.offset), count: Int(location.length)))
    }

    func checkUsable() throws(StorageError) {
        precondition(!isFinished, "This write transaction was already committed or rolled back.")
        if let failure {
            throw StorageError(
                failure.code, "An earlier operation of this transaction failed (\(failure.message)); roll it back.")
        }
    }

    func table(_ id: TableID) throws(StorageError) -> TableState {
        guard let table = state.tables[id] else { throw Self.missingTable(id) }
        return table
    }

    static func missingTable(_ id: TableID) -> StorageError {
        StorageError(.invalidObject, "There is no table \(id) in this store; add it to the schema first.")
    }

    // MARK: Schema

    /// Replaces the schema with `tables` (tables keep their id and rows by name; tables not listed are dropped).
    /// - Returns: the id of each table, in the order given.
    /// - Throws: `.schemaMismatch` naming the problem (duplicate or empty names, two primary keys, an
    ///   unindexable primary key or index, a link to a missing table).
    @discardableResult
    package func setSchema(_ tables: [TableSchema], version: UInt64? = nil) throws(StorageError) -> [TableID] {
        try checkUsable()
        try SchemaValidation.validate(tables)
        var next = (state.tables.keys.map(\.rawValue).max() ?? 0) + 1
        guard next + UInt32(tables.count) <= CommitPayload.maxTableID else {
            throw StorageError(
                .limitExceeded, "A store holds at most \(CommitPayload.maxTableID) tables over its lifetime.")
        }
        var entries: [CommitPayload.TableEntry] = []
        for schema in tables {
            let id: TableID
            if let existing = state.tableIDs[schema.name] {
                id = existing
            } else {
                id = TableID(next)
                next += 1
            }
            entries.append(.init(id: id, schema: schema, nextKey: state.tables[id]?.nextKey ?? 0))
        }
        tableCacheEntry = nil
        var writer = ByteWriter()
        CommitPayload.appendSchema(entries, version: version ?? state.schemaVersion, to: &writer)
        let mark = buffer.count
        let unit = EncryptedRecord.beginUnit(in: buffer, encrypted: cipher != nil)
        buffer.append(writer.bytes)
        EncryptedRecord.endUnit(unit, in: buffer)
        defer { scratch.empty() }
        do throws(StorageError) {
            try state.applySchema(entries, version: version ?? state.schemaVersion, token: token) {
                (location) throws(StorageError) in try rowView(at: location)
            }
        } catch {
            buffer.truncate(to: mark)
            failure = error
            throw error
        }
        changes.schemaChanged = true
        return entries.map(\.id)
    }

    /// Adds one table to the schema (or returns the id of the existing table with that name and schema).
    @discardableResult
    package func createTable(_ schema: TableSchema) throws(StorageError) -> TableID {
        if let id = state.tableIDs[schema.name], state.tables[id]?.schema == schema { return id }
        let ids = try setSchema(state.schema.filter { $0.name != schema.name } + [schema])
        return ids[ids.count - 1]
    }

    // MARK: Rows

    /// Inserts a row and returns its new key.
    /// - Parameter values: one value per column, in column order.
    /// - Throws: `.invalidValue` / `.limitExceeded` for a value that does not fit its column,
    ///   `.primaryKeyExists`, `.invalidObject` for a link to a missing object.
    @discardableResult
    package func insert(_ tableID: TableID, _ values: [Value]) throws(StorageError) -> ObjectKey {
        try checkUsable()
        // No copy of the table state may stay alive across the mutation: the B+tree changes a node in place
        // only when nothing else refers to it, so a lingering copy would make every insert copy its paths.
        let cache = try tableCache(tableID)
        let (row, key, dataSize) = try prepareInsert(cache, values)
        // The data length validation measured: the encoder does not add up the column sizes again.
        try insert(tableID, cache, key, primaryKey: { row[$0] }) { buffer in
            RowEncoder.encode(row, types: cache.types, dataLength: dataSize, into: buffer)
        }
        return key
    }

    /// Inserts a row that its owner writes straight into the record (see ``DirectRow``), as
    /// ``insert(_:_:)`` inserts one given as values; returns its new key. Returns nil, changing nothing, when
    /// the row was made for other columns than the table's (its ``DirectRow/types`` differ) or the table has
    /// link columns (whose targets must be checked): insert its values then.
    /// - Throws: `.limitExceeded` for a row over the size limits or a table that has used every key,
    ///   `.primaryKeyExists`, `.invalidObject` for a table not in the schema, and the failure of an earlier
    ///   operation of this transaction.
    package func insert(_ tableID: TableID, direct row: some DirectRow) throws(StorageError) -> ObjectKey? {
        try checkUsable()
        let cache = try tableCache(tableID)
        guard cache.linkColumns.isEmpty, cache.types == row.types else { return nil }
        let key = try nextKey(cache)
        try RowEncoder.checkRowSize(dataSize: row.dataLength, columnCount: cache.types.count)
        try insert(tableID, cache, key, primaryKey: { row.value(ofColumn: $0) }) { buffer in
            RowEncoder.encode(row, into: buffer)
        }
        return key
    }

    /// Appends the insert of row `key`, written by `encode`, into the table of `cache`, and records it: it
    /// waits in ``deferredInserts`` where it may (`primaryKey` gives the value of a column, read for the
    /// primary key), or is applied at once.
    private func insert(
        _ tableID: TableID, _ cache: TableCache, _ key: ObjectKey, primaryKey: (Int) -> Value,
        encode: (RecordBuffer) -> Int
    ) throws(StorageError) {
        if cache.insertsMayWait,
            try appendInsert(tableID, key, primaryKey: cache.primaryKeyColumn.map(primaryKey), encode: encode)
        {
            // Waiting in `deferredInserts`.
        } else {
            try appendUpsert(tableID, key, changed: nil, encode: encode)
        }
        cache.nextKey = key.rawValue + 1
        if !pendingDeleted.keys.isEmpty || !pendingInserted.add(tableID, key) {
            recordPendingChanges()
            _ = pendingInserted.add(tableID, key)
        }
    }

    /// Appends the insert of row `key` (a new key) of `tableID`, a table whose inserts may wait
    /// (``TableCache/insertsMayWait``), to wait in ``deferredInserts``, if its primary key (`primaryKey`, the
    /// row's value; nil without one) is above every primary key of the table and of the inserts waiting, so
    /// that it cannot be taken. Returns false otherwise, having applied the waiting inserts and appended
    /// nothing: the caller then appends and applies it as any upsert, which refuses a taken key.
    private func appendInsert(
        _ tableID: TableID, _ key: ObjectKey, primaryKey: Value?, encode: (RecordBuffer) -> Int
    ) throws(StorageError) -> Bool {
        if !deferred.rows.isEmpty || deferredDeletes != nil
            || (!deferredInserts.rows.isEmpty && deferredInserts.table != tableID)
        {
            applyDeferred()
        }
        var indexKey: IndexKey? = nil
        if let primaryKey {
            // The validated row's value: the one the row is encoded from, so the one the index would read back.
            // When none wait, above every key of its tree in the table (read in place: passing the state
            // would copy it).
            guard let newKey = IndexKey(primaryKey),
                deferredInserts.rows.isEmpty
                    ? storedState.tables.primaryKey(newKey, isAboveThoseOf: tableID) : deferredInserts.follows(newKey)
            else {
                // Applied in the order appended: the waiting ones first.
                if !deferredInserts.rows.isEmpty { applyDeferred() }
                return false
            }
            indexKey = newKey
        }
        let (location, _, _) = try appendUpsertOp(tableID, key, encode: encode)
        deferredInserts.add(tableID, key, at: location, primaryKey: indexKey)
        locationEpoch &+= 1
        if deferredInserts.rows.count >= Self.insertChunk { applyDeferred() }
        return true
    }

    // MARK: Finishing

    /// Appends the transaction's record and waits until it is durable; then the new version is visible.
    /// A transaction with no operations commits nothing and returns the version it started from.
    /// - Throws: `.diskFull`, `.ioFailure` (nothing was committed; the engine state did not advance),
    ///   `.poisoned` (the commit's fsync failed; reopen the store).
    @discardableResult
    package nonisolated(nonsending) func commit() async throws(StorageError) -> CommitResult {
        if hasDeferred { applyDeferred() }
        try checkUsable()
        isFinished = true
        let outcome = await engine.append(self)
        releaseWriteLock()
        return try await engine.complete(outcome)
    }

    /// Discards everything the transaction did and releases the writer lock.
    package func rollback() {
        deferred = DeferredRows()
        deferredDeletes = nil
        deferredInserts = DeferredInserts()
        pendingModified = PendingModifications()
        pendingInserted = PendingInserts()
        isFinished = true
        abandonStream()
        releaseWriteLock()
    }

    // MARK: Streaming the record

    /// Writes the record's finished bytes to the file once another chunk of them is waiting (see
    /// ``RecordStream``). Called where an operation is about to be appended: everything before is final.
    @inline(__always)
    func streamIfDue() {
        if buffer.count >= streamAt { streamFinishedBytes() }
    }

    private func streamFinishedBytes() {
        guard let chunk = engine.configuration.recordStreamChunk else { return }
        buffer.stream(to: engine.makeRecordStream(recordStart: recordStart), from: Self.bodyStart)
        streamAt = buffer.count + chunk
    }

    /// For a transaction that will not commit: lets its stream finish, then has the engine cut the file back
    /// to where the record would have started, and only then lets the write lock go (the next writer
    /// appends there). Nothing happens without a stream.
    private func abandonStream() {
        guard let stream = buffer.recordStream, holdsWriteLock else { return }
        let release = holdsWriteLock
        holdsWriteLock = false
        let (engine, start) = (engine, recordStart)
        stream.afterWrites {
            engine.discardStreamedRecord(from: start, through: start + UInt64(stream.furthest))
            if release { engine.unlockWriter() }
        }
    }

    /// A commit record ready to append: where it goes, its bytes and the version it creates.
    struct SealedRecord {
        let start: UInt64
        let end: UInt64
        let bytes: RecordBuffer
        /// The new version, its end offset set.
        let state: DatabaseState
    }

    /// Completes the record in ``buffer``: the durability watermark, then (encrypted) the units sealed and
    /// the record's seal unit, then the header and footer around the payload (see ``Record``). Called
    /// once, by the engine, right before it appends the record.
    /// - Throws: what the platform's cryptography throws (encrypted stores; nothing was written).
    /// - Parameter streamed: the checksum of the record's bytes from ``bodyStart`` to `end`, computed as they
    ///   were streamed to the file (see ``RecordStream``): only the rest is checksummed here.
    func seal(watermark: UInt64, streamed: (crc: CRC32C, end: Int)? = nil) throws(StorageError) -> SealedRecord {
        buffer.store(watermark, at: Record.headerSize)
        if let cipher {
            try EncryptedRecord.sealUnits(
                in: buffer, from: Self.bodyStart, recordStart: recordStart, kind: .commit, cipher: cipher)
        }
        let payloadLength = buffer.count - Record.headerSize
        let payloadCRC: UInt32
        if cipher == nil, var body = streamed?.crc, let end = streamed?.end, end <= buffer.count {
            body.update(buffer.bytes(at: end, count: buffer.count - end))
            let head = CRC32C.checksum(buffer.bytes(at: Record.headerSize, count: Record.watermarkSize))
            payloadCRC = CRC32C.combine(head, body.value, lengthOfB: buffer.count - Self.bodyStart)
        } else {
            payloadCRC = CRC32C.checksum(buffer.bytes(at: Record.headerSize, count: payloadLength))
        }
        buffer.append(Record.footer(length: UInt64(payloadLength), payloadCRC: payloadCRC))
        let header = Record.header(
            kind: .commit, flags: cipher == nil ? .watermark : [.watermark, .encrypted], length: UInt64(payloadLength),
            payloadCRC: payloadCRC)
        for (i, byte) in header.enumerated() { buffer.store(byte, at: i) }
        var sealed = state
        sealed.endOffset = recordStart + UInt64(buffer.count)
        return SealedRecord(start: recordStart, end: sealed.endOffset, bytes: buffer, state: sealed)
    }

    // MARK: Helpers

    /// The validated row, new key and row data length of an insert into the table of `cache`.
    private func prepareInsert(_ cache: TableCache, _ values: [Value]) throws(StorageError) -> ([Value], ObjectKey, Int)
    {
        let key = try nextKey(cache)
        let (row, dataSize) = try RowEncoder.validateRowMeasuring(values, columns: cache.columns)
        for column in cache.linkColumns { try checkLinks(row[column], cache.columns[column]) }
        return (row, key, dataSize)
    }

    /// The key of the next row inserted into the table of `cache`.
    /// - Throws: `.limitExceeded` once the table has used every key.
    private func nextKey(_ cache: TableCache) throws(StorageError) -> ObjectKey {
        // The next key after this one must be representable too (`insert` stores `key + 1`).
        guard cache.nextKey < Int64.max else {
            throw StorageError(
                .limitExceeded,
                "The '\(cache.name)' table has used every object key (keys are never reused, and the next would be "
                    + "\(cache.nextKey)); it cannot hold another object. Copy its objects into a new table or store.")
        }
        return ObjectKey(cache.nextKey)
    }

    /// The cached facts of table `tableID` (see ``tableCacheEntry``).
    func tableCache(_ tableID: TableID) throws(StorageError) -> TableCache {
        if let cache = tableCacheEntry, cache.table == tableID { return cache }
        let cache = TableCache(tableID, try table(tableID))
        tableCacheEntry = cache
        return cache
    }

    func schemaAndTypes(_ tableID: TableID) throws(StorageError) -> (TableSchema, [ColumnType]) {
        let table = try table(tableID)
        return (table.schema, table.columnTypes)
    }

    /// Every object a link value refers to must exist in the target table.
    func checkLinks(_ value: Value, _ column: ColumnSchema) throws(StorageError) {
        guard column.type.scalar == .link else { return }
        guard let target = column.linkTarget.flatMap({ state.tableIDs[$0] }) else {
            throw StorageError(.schemaMismatch, "Column '\(column.name)' links to a table that is not in the schema.")
        }
        func check(_ v: Value) throws(StorageError) {
            if case .link(let k) = v, state.tables[target]?.rows.contains(k) != true {
                throw StorageError(
                    .invalidObject,
                    "'\(column.name)' refers to \(column.linkTarget ?? "") object \(k), which does not exist. "
                        + "Add the object first.")
            }
        }
        switch value {
        case .list(let items), .set(let items): for item in items { try check(item) }
        case .map(let entries): for entry in entries { try check(entry.value) }
        default: try check(value)
        }
    }

    // MARK: Deferred updates

    /// Records row `key` of `tableID` modified in `columns` (nothing if there are none): it waits in
    /// ``pendingModified`` when it continues the waiting rows' table and columns; otherwise those are
    /// recorded first.
    func recordModify(_ tableID: TableID, _ key: ObjectKey, _ columns: ColumnSet) {
        guard !columns.isEmpty else { return }
        if !pendingDeleted.keys.isEmpty || !pendingModified.add(tableID, key, columns) {
            recordPendingChanges()
            _ = pendingModified.add(tableID, key, columns)
        }
        if pendingModified.keys.count >= Self.updateChunk { recordPendingChanges() }
    }

    /// Records the inserts, modifications and deletes waiting (``pendingInserted``, ``pendingModified``,
    /// ``pendingDeleted``, in that order) in ``changes``, with one lookup of a table's changes per kind.
    private func recordPendingChanges() {
        if pendingInserted.count > 0 {
            let inserted = pendingInserted
            pendingInserted.count = 0
            var tableChanges = storedChanges.tables.removeValue(forKey: inserted.table) ?? TableChanges()
            for key in inserted.first.rawValue..<(inserted.first.rawValue + Int64(inserted.count)) {
                tableChanges.recordInsert(ObjectKey(key))
            }
            storedChanges.tables[inserted.table] = tableChanges
        }
        if !pendingModified.keys.isEmpty {
            let (table, columns) = (pendingModified.table, pendingModified.columns)
            var tableChanges = storedChanges.tables.removeValue(forKey: table) ?? TableChanges()
            for key in pendingModified.keys { tableChanges.recordModify(key, columns) }
            storedChanges.tables[table] = tableChanges
            pendingModified.keys.removeAll(keepingCapacity: true)
        }
        if !pendingDeleted.keys.isEmpty {
            let table = pendingDeleted.table
            var tableChanges = storedChanges.tables.removeValue(forKey: table) ?? TableChanges()
            for key in pendingDeleted.keys { tableChanges.recordDelete(key) }
            storedChanges.tables[table] = tableChanges
            pendingDeleted.keys.removeAll(keepingCapacity: true)
        }
    }

    /// Records the delete of row `key` of `tableID`: it waits in ``pendingDeleted`` with the deletes of the
    /// same table (a loop deleting one object after another then looks its table's changes up once per
    /// chunk of rows, not once per row).
    func recordDelete(_ tableID: TableID, _ key: ObjectKey) {
        let waiting = pendingDeleted.keys.count
        if waiting > 0, pendingDeleted.table != tableID || waiting >= Self.updateChunk { recordPendingChanges() }
        pendingDeleted.table = tableID
        pendingDeleted.keys.append(key)
    }

    /// Whether an update of row `key` of `tableID` changing `changed` may wait in ``deferred``: the row is
    /// ``deferrableRow``, and no changed column is a link (backlinks follow a link at once).
    func mayDefer(_ tableID: TableID, _ key: ObjectKey, changed: ColumnSet, linkColumns: [Int]) -> Bool {
        guard let row = deferrableRow, row.table == tableID, row.key == key else { return false }
        return !linkColumns.contains { changed.contains($0) }
    }

    /// Records that row `key` of `tableID`, differing from its current row in `changed` columns, was
    /// appended at `location` without being applied (see ``deferred``). Applies the waiting updates first
    /// if they are another table's, and all of them once a chunk is waiting.
    func deferUpdate(_ tableID: TableID, _ key: ObjectKey, at location: RowLocation, changed: ColumnSet) {
        if deferredDeletes != nil || !deferredInserts.rows.isEmpty { applyDeferred() }
        var waiting = deferred.add(tableID, key, at: location, changed: changed)
        if waiting == nil {
            applyDeferred()
            waiting = deferred.add(tableID, key, at: location, changed: changed)
        }
        locationEpoch &+= 1
        deferrableRow?.countWrite(tableID, key)
        if let waiting, waiting >= Self.updateChunk { applyDeferred() }
    }

    /// Whether any row of `tableID` is the target of a link (then deleting it rewrites the linking rows).
    ///
    /// - Complexity: O(log n) in the backlink index.
    func isLinkedTo(_ tableID: TableID) -> Bool {
        var linked = false
        // The backlinks never wait: deferred updates change no link, and a deferred delete removes the
        // backlinks of its row's links at once.
        storedState.backlinks.forEach(from: BacklinkKey.lowerBound(tableID, ObjectKey(Int64.min)), inclusive: true) {
            entry, _ in
            linked = entry.target == tableID
            return false
        }
        return linked
    }

    /// Deletes row `key` of `tableID` (at `knownLocation`, if given), the row a loop is at
    /// (``deferrableRow``), without removing it from the trees yet: its delete operation is appended, the
    /// backlinks of its links go at once, and its entries wait in ``deferredDeletes`` to be removed with
    /// the others, one pass per tree (as ``delete(_:keys:)`` removes a batch). Returns whether the row
    /// existed; nil, changing nothing, where the delete must go the usual way: rows of a table some row
    /// links to (deleting one rewrites the rows linking to it), or a key not above the last waiting one
    /// (so that a key is never deleted twice; the usual way applies the waiting ones first).
    func deferDelete(
        _ tableID: TableID, _ key: ObjectKey, knownLocation: RowLocation?
    ) throws(StorageError) -> Bool? {
        if !deferred.rows.isEmpty || !deferredInserts.rows.isEmpty { applyDeferred() }
        if let waiting = deferredDeletes {
            guard waiting.table == tableID, let last = waiting.keys.last, last < key else { return nil }
        } else {
            // A new batch: checked once, as no row can come to link here without the batch being applied
            // first (a link is written through `state`).
            guard !isLinkedTo(tableID), let batch = storedState.deletions(of: tableID, capacity: Self.updateChunk)
            else { return nil }
            deferredDeletes = batch
        }
        guard let location = knownLocation ?? storedState.tables.rowLocation(tableID, key) else { return false }
        let mark = buffer.count
        appendDeleteOp(tableID, key)
        do throws(StorageError) {
            try withRowBytes(at: location) { (old) throws(StorageError) in
                try storedState.collectDelete(key, at: location, oldRow: old, into: &deferredDeletes!, token: token)
            }
        } catch {
            buffer.truncate(to: mark)
            failure = error
            throw error
        }
        // The rows of the loop ahead did not move.
        locationEpoch &+= 1
        deferrableRow?.countWrite(tableID, key)
        if deferredDeletes!.keys.count >= Self.updateChunk { applyDeferred() }
        return true
    }

    /// Applies the updates waiting in ``deferred`` to the trees, in one pass per tree. A row updated more
    /// than once is at its last location. A failure (a row that cannot be decoded: a damaged file or
    /// record) becomes the transaction's, which can then only roll back.
    private func applyDeferred() {
        if !deferredInserts.rows.isEmpty {
            do throws(StorageError) {
                try storedState.applyAppends(
                    table: deferredInserts.table, deferredInserts.rows, integerKeys: deferredInserts.integerKeys,
                    otherKeys: deferredInserts.otherKeys, token: token)
            } catch {
                if failure == nil { failure = error }
            }
            deferredInserts.removeAll()
        }
        if let deletes = deferredDeletes {
            deferredDeletes = nil
            do throws(StorageError) { try storedState.applyDeletes(deletes, token: token) } catch {
                if failure == nil { failure = error }
            }
        }
        guard !deferred.rows.isEmpty else { return }
        var updates: [(key: ObjectKey, value: RowLocation)] = []
        swap(&updates, &deferred.rows)
        let (table, changed) = (deferred.table, deferred.changed)
        deferred.changed = ColumnSet()
        defer {
            // The array's storage serves the next updates.
            updates.removeAll(keepingCapacity: true)
            swap(&updates, &deferred.rows)
        }
        var ordered = updates
        if !zip(updates, updates.dropFirst()).allSatisfy({ $0.key < $1.key }) {
            // Sorted stably by key, keeping each key's last update: the row as it is now.
            let order = updates.indices.sorted { (updates[$0].key, $0) < (updates[$1].key, $1) }
            ordered.removeAll(keepingCapacity: true)
            for i in order {
                if let last = ordered.last, last.key == updates[i].key {
                    ordered[ordered.count - 1] = updates[i]
                } else {
                    ordered.append(updates[i])
                }
            }
        }
        do throws(StorageError) {
            try storedState.applyUpdates(table: table, ordered, changed: changed, token: token) {
                (location) throws(StorageError) in try rowView(at: location)
            }
        } catch {
            if failure == nil { failure = error }
        }
    }

    /// Encodes the row into the record and applies it; undoes the append if applying fails.
    func appendUpsert(
        _ tableID: TableID, _ key: ObjectKey, _ row: [Value], _ types: [ColumnType]
    ) throws(StorageError) {
        try appendUpsert(tableID, key, changed: nil) { buffer in RowEncoder.encode(row, types: types, into: buffer) }
    }

    /// Appends an upsert whose row `encode` writes at the end of the record (returning its length), and
    /// applies it; undoes the append if applying fails. `changed`, when known, is every column in which the
    /// row differs from the row it replaces (see ``DatabaseState/applyUpsert``).
    @discardableResult
    func appendUpsert(
        _ tableID: TableID, _ key: ObjectKey, changed: ColumnSet?, encode: (RecordBuffer) -> Int
    ) throws(StorageError) -> RowLocation {
        let mark = buffer.count
        let (location, rowStart, length) = try appendUpsertOp(tableID, key, encode: encode)
        defer { scratch.empty() }
        do throws(StorageError) {
            let newRow = try RowView(buffer.bytes(at: rowStart, count: length))
            try state.applyUpsert(
                table: tableID, key: key, location: location, newRow: newRow, changed: changed, token: token
            ) { (old) throws(StorageError) in try rowView(at: old) }
        } catch {
            buffer.truncate(to: mark)
            if error.code != .primaryKeyExists { failure = error }
            throw error
        }
        return location
    }

    /// Appends an upsert of row `key` to the record, the row written by `encode` (which returns its length),
    /// without applying it. Returns the row's location, and where its bytes start in the buffer.
    /// - Throws: `.limitExceeded` (the row is too long; nothing was appended).
    func appendUpsertOp(
        _ tableID: TableID, _ key: ObjectKey, encode: (RecordBuffer) -> Int
    ) throws(StorageError) -> (location: RowLocation, rowStart: Int, length: Int) {
        streamIfDue()
        let mark = buffer.count
        let unit = EncryptedRecord.beginUnit(in: buffer, encrypted: cipher != nil)
        buffer.append(CommitPayload.Op.upsert.rawValue)
        buffer.append(tableID.rawValue)
        buffer.append(key.rawValue)
        // The row is encoded straight into the record, after its length, which is filled in afterwards.
        let lengthOffset = buffer.count
        buffer.append(UInt32(0))
        let rowStart = buffer.count
        let length = encode(buffer)
        // Callers check the size first (``RowEncoder/checkRowSize(dataSize:columnCount:)``); never trap if one
        // did not.
        guard let storedLength = UInt32(exactly: length),
            cipher == nil || length <= Int(UInt32.max) - StoreCipher.unitOverhead - CommitPayload.upsertHeaderSize
        else {
            buffer.truncate(to: mark)
            throw StorageError(
                .limitExceeded,
                "The object takes \(length) bytes stored; the limit is \(RowFormat.maxRowBytes) bytes per object.")
        }
        buffer.store(storedLength, at: lengthOffset)
        EncryptedRecord.endUnit(unit, in: buffer)
        // Encrypted, a row's location is its whole unit: readers open the unit, then skip the upsert's fields.
        let location =
            unit.map { RowLocation(offset: recordStart + UInt64($0), length: UInt32(buffer.count - $0)) }
            ?? RowLocation(offset: recordStart + UInt64(rowStart), length: storedLength)
        return (location, rowStart, length)
    }

    static func removingLinks(to key: ObjectKey, from value: Value) -> Value {
        switch value {
        case .link(let k) where k == key: .null
        case .list(let items): .list(items.filter { $0 != .link(key) })
        case .set(let items): .set(items.filter { $0 != .link(key) })
        case .map(let entries): .map(entries.map { $0.value == .link(key) ? .init($0.key, .null) : $0 })
        default: value
        }
    }
}
