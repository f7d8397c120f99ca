import Foundation

/// Compaction: rewrite the live rows of a version into a new file, catch up with the commits that arrived
/// meanwhile, sync, rename over the old file, sync the directory.
///
/// ```text
///  phase 1 (no lock)    new file := header(generation + 1) | base record (schema + every live row of version v)
///  phase 2 (no lock)    copy the durable records after v, replaying each onto the new indexes
///  phase 3 (write lock) wait for in-flight syncs, copy the rest, fsync, rename, fsync directory, swap
/// ```
/// Writers stop only for phase 3, which copies what arrived during phase 2. Snapshots taken before the
/// swap keep reading the old file through their own mapping until they are released; the old file's
/// space returns to the system then. A crash before the rename leaves the old file as it was (the
/// temporary file is removed at the next open); after the rename the new file is complete and synced.
/// Object keys, versions and the file id survive compaction.
extension StorageEngine {
    /// Compacts the store now (waits for a running background compaction first).
    /// - Throws: `.diskFull`, `.ioFailure` (the store is unchanged), `.poisoned`, `.closed`, `.readOnly`.
    package func compact() async throws(StorageError) {
        if configuration.readOnly {
            throw StorageError(.readOnly, "The store at '\(path)' was opened read-only; it cannot be compacted.")
        }
        await compactionLock.lock()
        defer { compactionLock.unlock() }
        do throws(StorageError) {
            try await compactNow()
        } catch {
            core.withLock { $0.lastCompactionError = error }
            throw error
        }
        core.withLock { $0.lastCompactionError = nil }
        await checkpointAfterCompaction()
    }

    /// Writes a compacted copy of the newest durable version to `destination` (which must not exist), or,
    /// given the open write transaction `transaction`, of what that transaction sees (its uncommitted
    /// changes included; the transaction stays open and unchanged).
    ///
    /// - Parameter destinationFileSystem: where `destination` is, when not in this engine's file system (an
    ///   in-memory store copied to a real file).
    /// - Throws: `.fileExists`, `.diskFull`, `.ioFailure`, `.permissionDenied`; the error an operation of
    ///   `transaction` failed with.
    package nonisolated(nonsending) func writeCopy(
        to destination: String, transaction: WriteTransaction? = nil,
        destinationFileSystem: (any FileSystem)? = nil, encryptionKey: [UInt8]? = nil
    ) async throws(StorageError) {
        if let encryptionKey {
            try StoreCipher.checkKeyLength(encryptionKey.count)
            try PlatformCrypto.checkAvailable()
        }
        // A finished transaction, or one whose operation failed (its state may be half-applied), is not copied.
        try transaction?.checkUsable()
        let fs = destinationFileSystem ?? self.fs
        if fs.fileExists(destination) {
            if fs.sharesFilesBetweenProcesses, PresenceLock.isHeld(forStore: fs.resolvedPath(destination)) {
                throw StorageError(
                    .alreadyOpen,
                    "'\(destination)' is a realm file open in this or another process: a copy never replaces a file, "
                        + "least of all an open one. Choose another path.")
            }
            throw StorageError(.fileExists, "'\(destination)' already exists. Choose another path or remove it first.")
        }
        let (state, region, pending, snapshot): (DatabaseState, MappedRegion, CompactedFile.PendingRows?, Snapshot?)
        if let transaction {
            let rows = CompactedFile.PendingRows(start: transaction.recordStart, bytes: transaction.buffer.bytes)
            (state, region, pending, snapshot) = (transaction.state, transaction.region, rows, nil)
        } else {
            // The newest version, pinned by the snapshot until the copy is written.
            let newest = try self.snapshot()
            (state, region, pending, snapshot) = (newest.state, newest.region, nil, newest)
        }
        // Safety: `pending` points into the transaction's record buffer. Its owner is suspended in this call
        // (the transaction is used only by the task that opened it), so nothing appends to the buffer (which
        // could move it) until this returns.
        nonisolated(unsafe) let rows = pending
        try await offload { () throws(StorageError) in
            let temporary = destination + ".compacting"
            let header = FileHeader(fileID: UUID(), generation: 0)
            let cipher = try encryptionKey.map { (key) throws(StorageError) in
                try StoreCipher(userKey: key, fileID: header.fileID, generation: 0, path: destination)
            }
            var copy = try CompactedFile(fs: fs, path: temporary, header: header.encrypted(by: cipher), cipher: cipher)
            do throws(StorageError) {
                try withExtendedLifetime(snapshot) { () throws(StorageError) in
                    try copy.writeBase(of: state, from: region, pending: rows)
                }
                try fs.sync(copy.file)
                try fs.renameNoReplace(temporary, to: destination)
            } catch {
                copy.discard()
                throw error
            }
            fs.close(copy.file)
            try fs.syncDirectory(Self.directory(of: destination))
        }
    }

    /// Starts a background compaction when dead bytes pass the configured ratio.
    func considerAutoCompaction() {
        guard let auto = configuration.autoCompaction, !configuration.readOnly else { return }
        let start = core.withLock { core -> Bool in
            let total = core.appendedEnd
            let dead = total > core.liveBytes ? total - core.liveBytes : 0
            guard total >= auto.minimumFileSize, Double(dead) >= auto.deadRatio * Double(total),
                !core.compactionRunning, !core.isClosed, core.poisoned == nil
            else { return false }
            // Not while another process has the file open (see ``PresenceLock``): tried again after a later
            // commit. Asked last: it is a system call (`fcntl`), and this runs after every commit — first, it
            // was ~6% of a one-object commit without a sync.
            if core.presence?.othersHaveItOpen ?? false { return false }
            core.compactionRunning = true
            return true
        }
        guard start else { return }
        let task = Task.detached {
            var ran = false
            var failure: StorageError?
            if self.compactionLock.tryLock() {
                ran = true
                do throws(StorageError) { try await self.compactNow() } catch { failure = error }
                if failure == nil { await self.checkpointAfterCompaction() }
                self.compactionLock.unlock()
            }
            self.core.withLock {
                $0.compactionRunning = false
                // Not latched: the flag is down again, so the next commit over the threshold retries.
                if ran { $0.lastCompactionError = failure }
            }
        }
        core.withLock { $0.backgroundCompaction = task }
    }

    /// A compacted file starts with a checkpoint, so that the next open reads none of it; the caller holds
    /// the compaction lock. Failing leaves a good compacted file without one (open replays it; the next
    /// checkpoint comes later): the error is kept in ``lastCheckpointError``.
    func checkpointAfterCompaction() async {
        do throws(StorageError) {
            try await writeCheckpoint(holdingWriteLock: false, syncing: false)
        } catch {
            core.withLock { $0.lastCheckpointError = error }
        }
    }

    /// The error of the last compaction that failed (background ones included, which throw to no one), or
    /// nil once one succeeds. The store is unaffected by a failed compaction.
    package var lastCompactionError: StorageError? { core.withLock { $0.lastCompactionError } }

    /// Returns when the background compaction started last (if any) has finished.
    package func waitForBackgroundCompaction() async {
        await core.withLock { $0.backgroundCompaction }?.value
    }

    private func compactNow() async throws(StorageError) {
        // Compaction renames a new file over the store: never under another process that has it open
        // (checked again, for real, around the rename).
        if let presence = core.withLock({ $0.presence }), presence.othersHaveItOpen {
            throw PresenceLock.openElsewhere(path, holder: presence.otherProcess)
        }
        let foreignCatchUps = core.withLock { $0.foreignCatchUps }
        let snapshot = try snapshot()
        let header = core.withLock { $0.header }
        let fs = self.fs
        let temporary = path + ".compacting"
        // The generation comes from the file's header: a crafted one may be at the limit.
        guard header.generation < UInt64.max else {
            throw StorageError(
                .corrupted,
                "The header of '\(path)' gives generation \(header.generation), which no store reaches, so it "
                    + "cannot be compacted. The file is damaged; copy its contents into a new store or restore it "
                    + "from a backup.")
        }
        var newHeader = header
        newHeader.generation += 1
        // A format-1 file is upgraded here: the copy holds commit records only, so any format reads it.
        newHeader.formatVersion = FileHeader.currentFormatVersion
        // An encrypted store stays encrypted, under the new generation's key (compaction rotates it).
        let cipher = try configuration.encryptionKey.map { (key) throws(StorageError) in
            try StoreCipher(userKey: key, fileID: newHeader.fileID, generation: newHeader.generation, path: path)
        }
        let finalHeader = newHeader.encrypted(by: cipher)
        // Phases 1 and 2, off the cooperative pool and without the write lock.
        let built: CompactedFile = try await offload { () throws(StorageError) in
            var copy = try CompactedFile(fs: fs, path: temporary, header: finalHeader, cipher: cipher)
            do throws(StorageError) {
                try copy.writeBase(of: snapshot.state, from: snapshot.region)
                for _ in 0..<3 {
                    let (region, durable) = self.core.withLock { ($0.region, $0.published.endOffset) }
                    if copy.sourceEnd >= durable { break }
                    try copy.catchUp(from: region, to: durable)
                }
            } catch {
                copy.discard()
                throw error
            }
            return copy
        }
        var copy = built
        // Phase 3, under the write lock.
        do throws(StorageError) { try await lockWriter() } catch {
            copy.discard()
            throw error
        }
        defer { unlockWriter() }
        await waitUntilSynced()
        // Another process opened the file and wrote meanwhile (then closed it, or the rename below would be
        // refused): its records are not in the copy, which is abandoned.
        if core.withLock({ $0.foreignCatchUps }) != foreignCatchUps {
            copy.discard()
            throw PresenceLock.openElsewhere(path)
        }
        let (region, end, oldFile, problem) = core.withLock { core in
            (
                core.region, core.tip.endOffset, core.file,
                core.isClosed ? StorageError(.closed, "The store at '\(path)' is closed.") : core.poisoned
            )
        }
        if let problem {
            copy.discard()
            throw problem
        }
        var newLock: OpenFile
        do throws(StorageError) {
            try copy.catchUp(from: region, to: end)
            // The copy replaces the store: it keeps the store's permissions (and owner, as root).
            try fs.copyPermissions(from: oldFile, to: copy.file)
            try fs.sync(copy.file)
            newLock = try Self.lockedDescriptor(fs, temporary, shared: core.withLock { $0.presence != nil })
        } catch {
            copy.discard()
            throw error
        }
        do throws(StorageError) {
            let (fs, path) = (self.fs, self.path)
            let rename = { () throws(StorageError) in try fs.rename(temporary, to: path) }
            if let presence = core.withLock({ $0.presence }) {
                // Exclusive around the rename: no other process has the old file open, and none opens the
                // store until the new one is in place.
                guard try presence.whileAlone(rename) != nil else {
                    throw PresenceLock.openElsewhere(path, holder: presence.otherProcess)
                }
            } else {
                try rename()
            }
        } catch {
            Self.closeLock(fs, newLock)
            copy.discard()
            throw error
        }
        // The descriptors are the store's now: errors must name the store, not the temporary file.
        newLock = OpenFile(descriptor: newLock.descriptor, path: path)
        let newFile = OpenFile(descriptor: copy.file.descriptor, path: path)
        var directoryError: StorageError?
        do throws(StorageError) { try fs.syncDirectory(Self.directory(of: path)) } catch { directoryError = error }
        let newState = copy.state
        let oldLock = core.withLock { core in
            let oldLock = core.lockFile
            core.lockFile = newLock
            core.file = newFile
            core.region = copy.region
            core.header = finalHeader
            core.tip = newState
            core.published = newState
            core.appendedEnd = newState.endOffset
            core.durableEnd = newState.endOffset
            core.syncedEnd = newState.endOffset
            core.reservedEnd = newState.endOffset
            // The nodes of the old file's checkpoints stay readable through the old store (its mapping) by
            // the trees that still use them; the next checkpoint writes them into the new file.
            core.nodeStore = NodeStore(
                region: copy.region, end: newState.endOffset, path: path, cacheLimit: configuration.nodeCacheLimit)
            core.checkpoint = nil
            core.checkpointNodeBytes = 0
            if let directoryError { core.poisoned = Self.poison(path, directoryError) }
            return oldLock
        }
        fs.close(oldFile)
        if let oldLock { Self.closeLock(fs, oldLock) }
        if let directoryError { throw Self.poison(path, directoryError) }
        publishDurableEnd(newState.endOffset)
    }
}

/// A store file being written by compaction or `writeCopy`, with the state that indexes it.
struct CompactedFile {
    let fs: any FileSystem
    let path: String
    let file: OpenFile
    private(set) var region: MappedRegion
    private(set) var state: DatabaseState
    /// End, in the source file, of the last source record copied.
    private(set) var sourceEnd: UInt64 = 0
    private var end: UInt64
    private let token = MutationToken.next()
    /// The new file's encryption (nil: not encrypted).
    let cipher: StoreCipher?

    init(fs: any FileSystem, path: String, header: FileHeader, cipher: StoreCipher?) throws(StorageError) {
        self.fs = fs
        self.path = path
        self.cipher = cipher
        file = try StorageEngine.createTemporaryFile(fs, path)
        do throws(StorageError) {
            try fs.writeAll(file, header.encoded(), at: 0)
            region = try fs.map(file, length: StorageEngine.regionLength(for: UInt64(FileHeader.size)))
                .reading(through: cipher)
        } catch {
            fs.close(file)
            try? fs.remove(path)
            throw error
        }
        state = DatabaseState()
        end = UInt64(FileHeader.size)
    }

    func discard() {
        fs.close(file)
        try? fs.remove(path)
    }

    /// Writes one record holding the whole of `source` (schema, then every live row, bytes copied as they
    /// are), streaming it in chunks, and builds the new row index in one ordered pass per table.
    /// The rows of an open write transaction, which are in its record buffer rather than in the file: the
    /// row at file offset `o >= start` is at `bytes[o - start]`.
    struct PendingRows {
        let start: UInt64
        let bytes: UnsafeRawBufferPointer
    }

    mutating func writeBase(
        of source: DatabaseState, from sourceRegion: MappedRegion, pending: PendingRows? = nil
    ) throws(StorageError) {
        sourceEnd = source.endOffset
        guard source.version > .zero else { return }
        let recordStart = end
        var offset = recordStart + UInt64(Record.headerSize)
        var crc = CRC32C()
        // Raw stores into one reused 4 MiB chunk, streamed to the file as it fills.
        let chunk = RecordBuffer(capacity: 1 << 22)
        var length: UInt64 = 0
        func flush() throws(StorageError) {
            crc.update(chunk.bytes)
            try fs.writeAll(file, chunk.bytes, at: offset)
            offset += UInt64(chunk.count)
            length += UInt64(chunk.count)
            chunk.truncate(to: 0)
        }
        // Encrypted, each operation is a unit, sealed where it lies in the file (see EncryptedRecord).
        let cipher = self.cipher
        var units: UInt64 = 0
        func endUnit(_ start: Int?) throws(StorageError) {
            guard let start, let cipher else { return }
            EncryptedRecord.endUnit(start, in: chunk)
            let unit = UnsafeMutableRawBufferPointer(mutating: chunk.bytes(at: start, count: chunk.count - start))
            try cipher.seal(unit, at: offset + UInt64(start))
            units += 1
        }
        // The watermark: nothing but the file header precedes the base record.
        chunk.append(UInt64(FileHeader.size))
        var unit = EncryptedRecord.beginUnit(in: chunk, encrypted: cipher != nil)
        chunk.append(source.version.rawValue)
        try endUnit(unit)
        var schema = ByteWriter()
        let entries = source.orderedTables.map {
            CommitPayload.TableEntry(id: $0.id, schema: $0.schema, nextKey: $0.nextKey)
        }
        CommitPayload.appendSchema(entries, version: source.schemaVersion, to: &schema)
        unit = EncryptedRecord.beginUnit(in: chunk, encrypted: cipher != nil)
        chunk.append(schema.bytes)
        try endUnit(unit)
        var result = source
        var live = UInt64(FileHeader.size)
        for table in source.orderedTables {
            var rows: [(ObjectKey, RowLocation)] = []
            rows.reserveCapacity(table.rows.count)
            for (key, location) in table.rows {
                let newLocation = try withSourceRow(at: location, in: sourceRegion, pending: pending) {
                    (rowBytes) throws(StorageError) -> RowLocation in
                    let unit = EncryptedRecord.beginUnit(in: chunk, encrypted: cipher != nil)
                    chunk.append(CommitPayload.Op.upsert.rawValue)
                    chunk.append(table.id.rawValue)
                    chunk.append(key.rawValue)
                    chunk.append(UInt32(rowBytes.count))
                    let rowOffset = offset + UInt64(chunk.count)
                    chunk.append(rowBytes)
                    guard let unit else { return RowLocation(offset: rowOffset, length: UInt32(rowBytes.count)) }
                    try endUnit(unit)
                    return RowLocation(offset: offset + UInt64(unit), length: UInt32(chunk.count - unit))
                }
                rows.append((key, newLocation))
                live += UInt64(newLocation.length) + DatabaseState.rowOverhead
                if chunk.count >= 1 << 22 { try flush() }
            }
            result.tables[table.id]!.rows = PersistentBTree(sortedUniqueElements: rows, token: token)
            if !table.primaryIndex.isEmpty {
                result.tables[table.id]!.primaryIndex = try Self.relocated(table.primaryIndex, rows, token: token)
            }
        }
        let flags: Record.Flags
        if let cipher {
            // The seal unit binds the header: its length counts the seal unit itself.
            let sealStart = chunk.count
            let total = length + UInt64(chunk.count + StoreCipher.sealUnitSize)
            let seal = EncryptedRecord.beginUnit(in: chunk, encrypted: true)
            chunk.append(units)
            EncryptedRecord.endUnit(seal, in: chunk)
            let context = StoreCipher.sealContext(
                recordStart: recordStart, header: EncryptedRecord.headerPrefix(kind: .commit, length: total))
            try cipher.seal(
                UnsafeMutableRawBufferPointer(mutating: chunk.bytes(at: sealStart, count: StoreCipher.sealUnitSize)),
                at: offset + UInt64(sealStart), context: context)
            flags = [.watermark, .encrypted]
        } else {
            flags = .watermark
        }
        try flush()
        let payloadCRC = crc.value
        try fs.writeAll(
            file, Record.header(kind: .commit, flags: flags, length: length, payloadCRC: payloadCRC), at: recordStart)
        try fs.writeAll(file, Record.footer(length: length, payloadCRC: payloadCRC), at: offset)
        end = offset + UInt64(Record.footerSize)
        result.liveBytes = live
        result.endOffset = end
        state = result
        try remap()
    }

    /// Calls `body` with the encoded bytes of the source row at `location`: in the open transaction's record
    /// (`pending`), or in the source file (opened, if the source is encrypted).
    private func withSourceRow<R>(
        at location: RowLocation, in sourceRegion: MappedRegion, pending: PendingRows?,
        _ body: (UnsafeRawBufferPointer) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        // Locations come from the file (through replay): checked arithmetic, no conversion that traps.
        let count = Int(location.length)
        if let pending, location.offset >= pending.start {
            guard let start = Int(exactly: location.offset - pending.start),
                count <= pending.bytes.count, start <= pending.bytes.count - count
            else {
                throw StorageError(.corrupted, "A row location lies outside the write transaction's record.")
            }
            guard sourceRegion.cipher != nil else {
                return try body(UnsafeRawBufferPointer(rebasing: pending.bytes[start..<start + count]))
            }
            // The transaction's units are plaintext until it commits: the row follows the unit's header and
            // the upsert's fields.
            let skip = StoreCipher.unitHeaderSize + CommitPayload.upsertHeaderSize
            guard count >= skip + PlatformCrypto.tagSize else {
                throw StorageError(.corrupted, "A row location lies outside the write transaction's record.")
            }
            return try body(
                UnsafeRawBufferPointer(rebasing: pending.bytes[start + skip..<start + count - PlatformCrypto.tagSize]))
        }
        guard let start = Int(exactly: location.offset), count <= sourceRegion.length,
            start <= sourceRegion.length - count
        else {
            throw StorageError(
                .corrupted,
                "A row of '\(path)' lies outside the mapped file (offset \(location.offset), "
                    + "\(count) bytes). The store is damaged; copy its contents into a new store or "
                    + "restore it from a backup.")
        }
        if let sourceCipher = sourceRegion.cipher {
            return try EncryptedRecord.withRowBytes(
                at: location, in: sourceRegion.bytes(at: 0, count: sourceRegion.length), cipher: sourceCipher,
                path: sourceCipher.path, body)
        }
        return try body(sourceRegion.bytes(at: start, count: count))
    }

    /// The primary-key index `index` with each entry's row location replaced by the object's location in
    /// the rewritten file: `rows` holds every object of the table with its new location, in key order.
    ///
    /// Each object is found in `rows` at the position after the previous one (the index's order follows
    /// key order when objects were created in primary-key order), else at its key's distance from the first
    /// key (keys are dense unless many objects were deleted), else by binary search.
    ///
    /// - Throws: `.corrupted` if the index names an object that has no row.
    /// - Complexity: O(n) when the guesses hit; O(n log n) at worst.
    static func relocated(
        _ index: PrimaryIndex, _ rows: [(ObjectKey, RowLocation)], token: MutationToken
    ) throws(StorageError) -> PrimaryIndex {
        let firstKey = rows.first?.0.rawValue ?? 0
        var next = 0
        return try index.relocated(token: token) { (entry) throws(StorageError) in
            let object = entry.object
            var position: Int
            if next < rows.count, rows[next].0 == object {
                position = next
            } else if case (let distance, false) = object.rawValue.subtractingReportingOverflow(firstKey),
                distance >= 0, distance < Int64(rows.count), rows[Int(distance)].0 == object
            {
                // Keys come from the file: a crafted one far from `firstKey` must not wrap into range.
                position = Int(distance)
            } else {
                var low = 0
                var high = rows.count
                while low < high {
                    let middle = (low &+ high) &>> 1
                    if rows[middle].0 < object { low = middle &+ 1 } else { high = middle }
                }
                guard low < rows.count, rows[low].0 == object else {
                    throw StorageError(
                        .corrupted,
                        "The primary-key index names object \(object.rawValue), which has no row, so the store cannot "
                            + "be compacted. The store is damaged; copy its contents into a new store or restore it "
                            + "from a backup.")
                }
                position = low
            }
            next = position &+ 1
            return rows[position].1
        }
    }

    /// Copies the source records in `sourceEnd ..< upTo` (whole, verified records) and replays them.
    /// Encrypted, each unit is opened with the source's key and sealed again with the new file's (the
    /// units move, and a new generation has a new key).
    mutating func catchUp(from sourceRegion: MappedRegion, to upTo: UInt64) throws(StorageError) {
        guard upTo > sourceEnd else { return }
        let bytes = sourceRegion.bytes(at: 0, count: Int(upTo))
        var failure: StorageError?
        var records: [LogScanner.Entry] = []
        let outcome = try LogScanner.scan(bytes, from: Int(sourceEnd), path: path) { entry in records.append(entry) }
        guard outcome.tornTailAt == nil else {
            throw StorageError(
                .corrupted, "Compaction found an incomplete record in the live file at \(outcome.validEnd).")
        }
        // Checkpoints are not copied: their nodes point into the old file.
        for entry in records where entry.kind == Record.Kind.commit.rawValue {
            let newOffset = end
            let delta = Int(newOffset) - entry.offset
            var moved = entry
            moved.offset += delta
            moved.payload = (entry.payload.lowerBound + delta)..<(entry.payload.upperBound + delta)
            if let sourceCipher = sourceRegion.cipher, let cipher {
                let record = try Self.resealed(entry, in: bytes, from: sourceCipher, to: cipher, at: newOffset)
                try fs.writeAll(file, record, at: newOffset)
                end += UInt64(record.count)
            } else {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[entry.offset..<entry.end])
                try fs.writeAll(file, raw, at: newOffset)
                end += UInt64(raw.count)
            }
            try remap()
            let region = self.region
            let newBytes = region.bytes(at: 0, count: Int(end))
            let scratch = ScratchRows()
            let path = self.path
            let readRow = { (location: RowLocation) throws(StorageError) -> RowView in
                if let cipher = region.cipher {
                    return try scratch.keep(cipher: cipher, region: region, location: location, path: path)
                }
                return try RowView(region.bytes(at: Int(location.offset), count: Int(location.length)))
            }
            let cipher = self.cipher
            do throws(StorageError) {
                if let cipher {
                    try Replay.apply(
                        encrypted: moved, in: newBytes, cipher: cipher, to: &state, token: token, path: path,
                        readRow: readRow)
                } else {
                    try Replay.apply(
                        commit: UnsafeRawBufferPointer(rebasing: newBytes[moved.payload]), at: moved.payload.lowerBound,
                        record: moved.offset, to: &state, token: token, path: path, readRow: readRow)
                }
            } catch { failure = error }
            scratch.empty()
            if let failure { throw failure }
        }
        sourceEnd = upTo
    }

    /// The encrypted commit record `entry` of `file`, its units opened with `source` and sealed with
    /// `destination` for their place in a record written at `offset`; the same size, new checksums.
    static func resealed(
        _ entry: LogScanner.Entry, in file: UnsafeRawBufferPointer, from source: StoreCipher,
        to destination: StoreCipher, at offset: UInt64
    ) throws(StorageError) -> [UInt8] {
        let path = source.path
        let (units, count) = try EncryptedRecord.openSeal(of: entry, in: file, cipher: source, path: path)
        let buffer = RecordBuffer(capacity: entry.end - entry.offset)
        buffer.append(UnsafeRawBufferPointer(rebasing: file[entry.offset..<units.lowerBound]))
        try EncryptedRecord.forEachUnit(in: file, units, count: count, cipher: source, path: path) {
            (_, _, plain) throws(StorageError) in
            let unit = EncryptedRecord.beginUnit(in: buffer, encrypted: true)
            buffer.append(plain)
            EncryptedRecord.endUnit(unit, in: buffer)
        }
        try EncryptedRecord.sealUnits(
            in: buffer, from: units.lowerBound - entry.offset, recordStart: offset, kind: .commit, cipher: destination)
        let length = buffer.count - Record.headerSize
        let crc = CRC32C.checksum(buffer.bytes(at: Record.headerSize, count: length))
        buffer.append(Record.footer(length: UInt64(length), payloadCRC: crc))
        let header = Record.header(
            kind: .commit, flags: [.watermark, .encrypted], length: UInt64(length), payloadCRC: crc)
        for (i, byte) in header.enumerated() { buffer.store(byte, at: i) }
        return Array(buffer.bytes)
    }

    private mutating func remap() throws(StorageError) {
        if end > UInt64(region.length) {
            region = try fs.map(file, length: StorageEngine.regionLength(for: end)).reading(through: cipher)
        }
    }
}
