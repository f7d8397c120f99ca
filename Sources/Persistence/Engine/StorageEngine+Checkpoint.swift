import Foundation

/// The newest checkpoint of a store file: its version and the end of its record.
struct CheckpointMark: Sendable, Equatable {
    var version: Version
    var end: UInt64
}

/// Checkpoints (format 2): the indexes of a version written into the log, so that open reads them lazily
/// instead of replaying the whole log. See ``Checkpoint`` for the records and their order.
///
/// A checkpoint is written at ``close()``, after a compaction, and in the background when
/// ``Configuration/checkpointInterval`` bytes of log followed the last one. It holds the write lock only
/// to place its two records and write the small one and the other's frame (see
/// ``writeCheckpoint(holdingWriteLock:syncing:)``).
extension StorageEngine {
    /// Writes a checkpoint of the newest version, unless the newest checkpoint already has it.
    /// - Throws: `.readOnly`, `.closed`, `.poisoned`; `.diskFull`, `.ioFailure` (the file is unchanged:
    ///   the checkpoint's bytes are cut off again, and the engine goes on from the previous checkpoint).
    package func checkpoint() async throws(StorageError) {
        if configuration.readOnly {
            throw StorageError(.readOnly, "The store at '\(path)' was opened read-only; it cannot be checkpointed.")
        }
        // One at a time, and never during a compaction (which replaces the file).
        await compactionLock.lock()
        defer { compactionLock.unlock() }
        try await writeCheckpoint(holdingWriteLock: false, syncing: false)
    }

    /// The newest checkpoint's failure, if the last one written in the background failed (nil once one
    /// succeeds). The store is unaffected.
    package var lastCheckpointError: StorageError? { core.withLock { $0.lastCheckpointError } }

    /// Starts a checkpoint in the background when enough log followed the last one.
    func considerCheckpoint() {
        guard let interval = configuration.checkpointInterval, configuration.writesCheckpoints, !configuration.readOnly
        else { return }
        let start = core.withLock { core -> Bool in
            let since = core.appendedEnd - min(core.checkpoint?.end ?? UInt64(FileHeader.size), core.appendedEnd)
            guard core.header.hasCheckpoints, since >= interval, core.appendedEnd >= core.checkpointRetryAt,
                !core.checkpointRunning, !core.isClosed, core.poisoned == nil
            else { return false }
            core.checkpointRunning = true
            return true
        }
        guard start else { return }
        Task.detached {
            var failure: StorageError?
            do throws(StorageError) { try await self.checkpoint() } catch { failure = error }
            self.core.withLock { core in
                core.checkpointRunning = false
                core.lastCheckpointError = failure
                // A failed one (a full disk, say) may leave a nodes record behind (see
                // `abandonUnfinishedNodes`): the next waits for as much log again as this one covered, so
                // that retries do not eat the space left.
                let since = core.appendedEnd - min(core.checkpoint?.end ?? UInt64(FileHeader.size), core.appendedEnd)
                core.checkpointRetryAt = failure == nil ? 0 : core.appendedEnd + max(interval, since)
            }
        }
    }

    /// Writes a checkpoint of the newest version (see ``Checkpoint``) in four steps:
    ///
    /// 1. without the write lock: encode the nodes changed since the last checkpoint into a nodes record,
    ///    which does not depend on where it will be appended (``BTreeNodeFormat``);
    /// 2. under the write lock: reserve the record's place at the end of the log and write its frame (its
    ///    header and footer); then, without the lock, its payload (commits append after it meanwhile: see
    ///    ``appendCheckpointNodes(_:after:store:deferringPayload:)`` for why that is safe);
    /// 3. without the lock: sync the file, so that the nodes are durable (commits append meanwhile, and pay
    ///    no sync of the checkpoint's);
    /// 4. under the write lock again: append the checkpoint record, whose watermark (the end of the nodes)
    ///    vouches for them, and let the newest versions read the nodes written from the file, releasing
    ///    their memory once no snapshot uses it.
    ///
    /// With `holdingWriteLock` (at close) the caller holds the lock throughout; with `syncing` the checkpoint
    /// record is synced too (at close: nothing else will sync it). The caller holds the compaction lock or
    /// the write lock, so that the file is not replaced meanwhile.
    func writeCheckpoint(holdingWriteLock: Bool, syncing: Bool) async throws(StorageError) {
        // 1. Encode.
        let (state, synced, store, header, problem, last, danglingLinks) = core.withLock { core in
            (
                core.tip, core.syncedEnd, core.nodeStore, core.header,
                core.isClosed ? StorageError(.closed, "The store at '\(path)' is closed.") : core.poisoned,
                core.checkpoint, mayHaveDanglingLinks
            )
        }
        if let problem { throw problem }
        // Nothing to do: no checkpoints in a format-1 file (its first compaction upgrades it), none of an
        // empty store, none twice of one version (unless open found the last one's nodes damaged).
        guard configuration.writesCheckpoints, header.hasCheckpoints, state.version > .zero,
            last?.version != state.version
        else { return }
        var written: [ObjectIdentifier: WrittenNode] = [:]
        let cipher = store.cipher
        // Unencrypted, the nodes are encoded after room for the record's header and watermark, and framed
        // where they are (no copy of what can be tens of megabytes).
        var nodes =
            cipher == nil
            ? ByteWriter(reservingPrefix: Record.headerSize + Record.watermarkSize, capacity: 1 << 16)
            : ByteWriter(capacity: 1 << 16)
        let unplaced = try state.writeCheckpointNodes(
            to: &nodes, store: store, danglingLinks: danglingLinks, written: &written)
        // The watermark: what a completed sync covered before the encoding (it only grows). Encrypted, the
        // record's seal unit needs its offset: it is framed when appended.
        var nodesRecord: [UInt8] = []
        var nodesBody: [UInt8] = []
        if cipher == nil {
            swap(&nodesRecord, &nodes.bytes)
            Record.frameInPlace(kind: .nodes, watermark: synced, &nodesRecord)
        } else {
            swap(&nodesBody, &nodes.bytes)
        }
        let (framedNodes, sealedLater) = (nodesRecord, nodesBody)
        let frameNodes = { (start: UInt64) throws(StorageError) -> [UInt8] in
            guard let cipher else { return framedNodes }
            return try EncryptedRecord.frame(
                kind: .nodes, body: sealedLater, sealingBody: false, watermark: synced, at: start, cipher: cipher)
        }

        // 2. Append the nodes (under the writer lock of every process too: see SharedWriting). Without the
        // caller holding the lock, only the record's frame is written under it, and its payload after.
        if !holdingWriteLock { try await lockWriter() }
        let appended: AppendedNodes
        do throws(StorageError) {
            appended = try await appendCheckpointNodes(
                frameNodes, after: state, store: store, deferringPayload: !holdingWriteLock)
        } catch {
            if !holdingWriteLock { unlockWriter() }
            throw error
        }
        if !holdingWriteLock { unlockWriter() }
        let (start, file, nodesEnd) = (appended.start, appended.file, appended.end)
        if let record = appended.unwrittenRecord {
            do throws(StorageError) {
                try await writeNodesPayload(of: record, to: file, at: start)
                core.withLock { $0.unfinishedNodes = nil }
            } catch {
                await abandonUnfinishedNodes(file: file, start: start, end: nodesEnd, after: error)
                throw error
            }
        }
        let base = start + UInt64(Record.headerSize + Record.watermarkSize)
        var checkpoint = unplaced.placed(at: base)
        checkpoint.nodesStart = start
        checkpoint.nodesEnd = nodesEnd
        for (node, placed) in written { written[node]?.offset = base + placed.offset }

        // 3. Sync them.
        do throws(StorageError) { try fs.sync(file) } catch {
            core.withLock { $0.poisoned = Self.poison(path, error) }
            throw Self.poison(path, error)
        }
        core.withLock { core in
            core.syncedEnd = max(core.syncedEnd, nodesEnd)
            core.durableEnd = max(core.durableEnd, nodesEnd)
        }

        // 4. The checkpoint record.
        if !holdingWriteLock { try await lockWriter() }
        defer { if !holdingWriteLock { unlockWriter() } }
        let (recordStart, problemNow, sameFile) = core.withLock { core in
            (
                core.appendedEnd,
                core.isClosed ? StorageError(.closed, "The store at '\(path)' is closed.") : core.poisoned,
                core.file.descriptor == file.descriptor && core.nodeStore === store
            )
        }
        if let problemNow { throw problemNow }
        guard sameFile else { return }
        checkpoint.recordOffset = recordStart
        var record: [UInt8] = []
        if let cipher {
            record = try EncryptedRecord.frame(
                kind: .checkpoint, body: checkpoint.encoded(), sealingBody: true, watermark: nodesEnd, at: recordStart,
                cipher: cipher)
        } else {
            checkpoint.encoded().withUnsafeBytes {
                Record.frame(kind: .checkpoint, payload: $0, watermark: nodesEnd, into: &record)
            }
        }
        let end = recordStart + UInt64(record.count)
        do throws(StorageError) {
            try fs.writeAll(file, record, at: recordStart)
            try remapIfNeeded(for: end)
            if syncing { try fs.sync(file) }
        } catch {
            abandonCheckpoint(file: file, at: recordStart, after: error)
            throw error
        }
        store.update(region: core.withLock { $0.region }, end: nodesEnd)
        core.withLock { core in
            core.appendedEnd = end
            core.reservedEnd = max(core.reservedEnd, end)
            if syncing { core.syncedEnd = max(core.syncedEnd, end) }
            core.checkpoint = CheckpointMark(version: state.version, end: end)
            core.checkpointNodeBytes = checkpoint.nodeBytes
            // The newest versions read what was written from the file: the nodes the engine held go once
            // no snapshot uses them (memory stays bounded by what changed since).
            let tip = core.tip.rebased(onto: written, store: store)
            if core.published.version == core.tip.version { core.published = tip }
            core.tip = tip
            core.cacheEpoch &+= 1
        }
    }

    /// Where step 2 of ``writeCheckpoint(holdingWriteLock:syncing:)`` appended the nodes record; with
    /// `unwrittenRecord`, only its frame is written yet (see ``appendCheckpointNodes``).
    private struct AppendedNodes {
        var start: UInt64
        var file: OpenFile
        var end: UInt64
        var unwrittenRecord: [UInt8]?
    }

    /// Step 2 of ``writeCheckpoint(holdingWriteLock:syncing:)``, under the write lock: appends the nodes
    /// record; returns where, and the file.
    ///
    /// With `deferringPayload`, it writes only the record's footer and header, and returns the record for
    /// the caller to write its payload (``writeNodesPayload(of:to:at:)``) after letting go of the lock: the
    /// nodes of a big change are tens of megabytes, and commits append after them meanwhile instead of
    /// waiting. That is safe because a complete frame around a payload that does not match its checksum is
    /// a damaged nodes record, which open and catch-up step over (nodes repeat what commits hold) and no
    /// checkpoint record uses: the checkpoint record comes only after the payload is written and synced. A
    /// crash meanwhile leaves such an unfinished record in the log, before commits that stay whole.
    private func appendCheckpointNodes(
        _ frame: (UInt64) throws(StorageError) -> [UInt8], after state: DatabaseState, store: NodeStore,
        deferringPayload: Bool
    ) async throws(StorageError) -> AppendedNodes {
        let (file, start, problem, sameStore) = core.withLock { core in
            (
                core.file, core.appendedEnd,
                core.isClosed ? StorageError(.closed, "The store at '\(path)' is closed.") : core.poisoned,
                core.nodeStore === store
            )
        }
        if let problem { throw problem }
        guard sameStore, state.endOffset <= start else {
            throw StorageError(.ioFailure, "The store at '\(path)' was replaced while a checkpoint was written.")
        }
        let record = try frame(start)
        let end = start + UInt64(record.count)
        do throws(StorageError) {
            if deferringPayload {
                // The footer first: until the header is written too, the record reads as a torn tail.
                let footer = (record.count - Record.footerSize)..<record.count
                try Self.write(record, footer, of: file, at: end - UInt64(Record.footerSize), fs)
                try Self.write(record, 0..<Record.headerSize, of: file, at: start, fs)
            } else {
                try await appendCheckpointBytes(record, to: file, at: start)
            }
            try remapIfNeeded(for: end)
        } catch {
            abandonCheckpoint(file: file, at: start, after: error)
            throw error
        }
        core.withLock { core in
            core.appendedEnd = end
            core.reservedEnd = max(core.reservedEnd, end)
            if deferringPayload { core.unfinishedNodes = start..<end }
        }
        return AppendedNodes(start: start, file: file, end: end, unwrittenRecord: deferringPayload ? record : nil)
    }

    /// Writes the payload of the nodes record `record` appended at `start` (its frame is written), without
    /// the write lock, on a Dispatch thread (a background checkpoint is in no hurry; the cooperative pool's
    /// threads are not for file writes).
    private func writeNodesPayload(of record: [UInt8], to file: OpenFile, at start: UInt64) async throws(StorageError) {
        let fs = self.fs
        try await offload { () throws(StorageError) in
            let payload = Record.headerSize..<(record.count - Record.footerSize)
            try Self.write(record, payload, of: file, at: start + UInt64(Record.headerSize), fs)
        }
    }

    /// Writes `bytes[range]` at `offset` of `file`.
    private static func write(
        _ bytes: [UInt8], _ range: Range<Int>, of file: OpenFile, at offset: UInt64, _ fs: any FileSystem
    ) throws(StorageError) {
        var failure: StorageError?
        bytes.withUnsafeBytes { raw in
            do throws(StorageError) {
                try fs.writeAll(file, UnsafeRawBufferPointer(rebasing: raw[range]), at: offset)
            } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// After the payload of a nodes record could not be written: cuts the record off if nothing was
    /// appended after it and no sync covered it (a sync round may have published its end as durable, to
    /// other processes too, and later commits' watermarks would vouch for bytes below it). Else, or if the
    /// cut fails, the record stays: a damaged nodes record, which open and catch-up step over and
    /// ``verify()`` recognises as unfinished (part of it is zeros).
    private func abandonUnfinishedNodes(file: OpenFile, start: UInt64, end: UInt64, after error: StorageError) async {
        defer { core.withLock { $0.unfinishedNodes = nil } }
        guard (try? await lockWriter()) != nil else { return }
        defer { unlockWriter() }
        let last = core.withLock { core in
            core.appendedEnd == end && core.file.descriptor == file.descriptor && !core.isClosed
                && core.syncedEnd <= start && core.durableEnd <= start
        }
        guard last else { return }
        do throws(StorageError) {
            try cutBack(file, to: start, after: error)
            core.withLock { core in
                core.appendedEnd = start
                core.reservedEnd = start
            }
        } catch {}
    }

    /// Writes a checkpoint's record: inline when small, on a Dispatch thread when large.
    private func appendCheckpointBytes(
        _ bytes: [UInt8], to file: OpenFile, at offset: UInt64
    ) async throws(StorageError) {
        if bytes.count < 1 << 20 {
            try fs.writeAll(file, bytes, at: offset)
            return
        }
        let fs = self.fs
        try await offload { () throws(StorageError) in try fs.writeAll(file, bytes, at: offset) }
    }

    /// After a failed checkpoint write: cut the file back to where the checkpoint started (the previous
    /// checkpoint stays the newest), or poison the engine if even that fails.
    private func abandonCheckpoint(file: OpenFile, at offset: UInt64, after error: StorageError) {
        do throws(StorageError) {
            try cutBack(file, to: offset, after: error)
            core.withLock { core in
                core.appendedEnd = min(core.appendedEnd, offset)
                core.reservedEnd = offset
            }
        } catch {
            core.withLock { $0.poisoned = Self.poison(path, error) }
        }
    }

    /// The newest checkpoint record of a format-2 file, found by walking back from the end of the file
    /// through the record footers (each gives its record's length), without reading anything else.
    ///
    /// Returns nil (open then replays the whole log, as for format 1) when the walk cannot get through: a
    /// torn or damaged tail, or no checkpoint yet. A checkpoint record that is found but malformed, or whose
    /// watermark does not cover its nodes, is not used either: the log holds everything a checkpoint does.
    ///
    /// - Complexity: O(records after the checkpoint), plus O(zero bytes at the end) (space reserved ahead of
    ///   the records, see ``reserveSpace(in:after:)``).
    static func newestCheckpoint(
        in file: UnsafeRawBufferPointer, path: String, cipher: StoreCipher?
    ) -> (checkpoint: Checkpoint, offset: Int, end: Int)? {
        // The records end within the last 4 bytes after the last non-zero byte: a footer's checksum may
        // end in zero bytes, and zeros reserved ahead of the records (or left by a crash) may follow it.
        var last = file.count
        while last > FileHeader.size && last % 8 != 0 && file[last - 1] == 0 { last -= 1 }
        while last - 8 >= FileHeader.size && file.loadUnaligned(fromByteOffset: last - 8, as: UInt64.self) == 0 {
            last -= 8
        }
        while last > FileHeader.size && file[last - 1] == 0 { last -= 1 }
        for end in last...min(last + 4, file.count) {
            if let found = walkBack(file, from: end, path: path, cipher: cipher) { return found }
        }
        return nil
    }

    private static func walkBack(
        _ file: UnsafeRawBufferPointer, from end: Int, path: String, cipher: StoreCipher?
    ) -> (checkpoint: Checkpoint, offset: Int, end: Int)? {
        var end = end
        while end - FileHeader.size >= Record.overhead {
            guard let footer = Record.parseFooter(file[(end - Record.footerSize)..<end].rebased),
                footer.length <= UInt64(end - FileHeader.size - Record.overhead)
            else { return nil }
            let start = end - Record.overhead - Int(footer.length)
            guard let header = Record.parseHeader(file[start..<(start + Record.headerSize)].rebased),
                header.length == footer.length, header.payloadCRC == footer.payloadCRC
            else { return nil }
            if header.kind == Record.Kind.checkpoint.rawValue {
                let payload = file[(start + Record.headerSize)..<(end - Record.footerSize)].rebased
                let flags: Record.Flags = cipher == nil ? .watermark : [.watermark, .encrypted]
                guard header.flags == flags.rawValue, payload.count >= Record.watermarkSize,
                    CRC32C.checksum(payload) == header.payloadCRC
                else { return nil }
                let watermark = UInt64(littleEndian: payload.loadUnaligned(as: UInt64.self))
                let decode = { (body: UnsafeRawBufferPointer) throws(StorageError) -> Checkpoint in
                    try Checkpoint(decoding: body, at: start, path: path)
                }
                let decoded: Checkpoint?
                if let cipher {
                    let entry = LogScanner.Entry(
                        offset: start, kind: header.kind, flags: header.flags,
                        payload: (start + Record.headerSize + Record.watermarkSize)..<(end - Record.footerSize),
                        watermark: watermark)
                    decoded = try? EncryptedRecord.withCheckpointBody(
                        entry, in: file, cipher: cipher, path: path, decode)
                } else {
                    decoded = try? decode(UnsafeRawBufferPointer(rebasing: payload[Record.watermarkSize...]))
                }
                // It knows where it was written, and its watermark covers its nodes: a file whose bytes moved
                // (a splice) or whose nodes were not durable has no usable checkpoint.
                guard let checkpoint = decoded, checkpoint.nodesEnd <= watermark else { return nil }
                return (checkpoint, start, end)
            }
            end = start
        }
        return nil
    }
}

extension StorageEngine {
    /// Reads the whole file and checks every checksum: every record's, and every index node's that the
    /// newest version uses. Open checks only the records after the newest checkpoint (and nodes are checked
    /// when first loaded), so damage to older bytes of a store (a failing disk, a changed file) is found
    /// here, by compaction, or not at all. A nodes record that a checkpoint did not finish writing (part of
    /// its payload never written: a crash or a full disk during the checkpoint) is not damage: no
    /// checkpoint uses it.
    /// - Throws: `.corrupted` with the offset of the first damage found; `.closed`.
    /// - Complexity: O(file size).
    package func verify() throws(StorageError) {
        let (region, end, snapshot, unfinished) = core.withLock {
            ($0.region, $0.appendedEnd, $0.published, $0.unfinishedNodes)
        }
        // The nodes first: a damaged one is named as such (a damaged record around it is found after).
        for (_, _) in snapshot.backlinks {}
        for table in snapshot.orderedTables {
            for (_, _) in table.rows {}
            table.primaryIndex.forEach(from: nil, inclusive: true) { _, _ in true }
            for index in table.indexes.values { for (_, _) in index {} }
        }
        if let damage = core.withLock({ $0.nodeStore.damage }) { throw damage }
        let bytes = region.bytes(at: 0, count: Int(end))
        let cipher = region.cipher
        let outcome = try LogScanner.scan(bytes, from: FileHeader.size, path: path) { (entry) throws(StorageError) in
            if let cipher, !entry.payloadIsDamaged {
                // Every unit of an encrypted record authenticates (a node's when the nodes are walked above).
                let (units, count) = try EncryptedRecord.openSeal(of: entry, in: bytes, cipher: cipher, path: path)
                if entry.kind != Record.Kind.nodes.rawValue {
                    try EncryptedRecord.forEachUnit(in: bytes, units, count: count, cipher: cipher, path: path) {
                        _, _, _ in
                    }
                }
            }
            // A checkpoint that did not finish writing its nodes (a crash, a full disk) left them unused.
            // Nor is the one a checkpoint is writing now.
            guard entry.payloadIsDamaged, !LogScanner.looksUnfinished(bytes, payload: entry.payload),
                unfinished?.lowerBound != UInt64(entry.offset)
            else { return }
            throw StorageError(
                .corrupted,
                "The index nodes record at byte \(entry.offset) of '\(path)' is damaged (checksum mismatch). Open the "
                    + "store with checkpoints ignored (Realm: verifiesWholeFileAtOpen) to rebuild the indexes from the log.",
                offset: FileOffset(entry.offset))
        }
        if outcome.validEnd != Int(end) {
            throw StorageError(
                .corrupted, "'\(path)' has damaged bytes at \(outcome.validEnd), before the end of its log.",
                offset: FileOffset(UInt64(outcome.validEnd)))
        }
    }
}

extension DatabaseState {
    /// The same version with every tree's loaded file nodes dropped (see ``PersistentBTree/unloaded()``).
    func unloaded() -> DatabaseState {
        var state = self
        state.backlinks = backlinks.unloaded()
        for id in tables.keys {
            guard var table = state.tables[id] else { continue }
            table.rows = table.rows.unloaded()
            table.primaryIndex.integers = table.primaryIndex.integers.unloaded()
            table.primaryIndex.others = table.primaryIndex.others.unloaded()
            for column in table.indexes.keys { table.indexes[column] = table.indexes[column]!.unloaded() }
            state.tables[id] = table
        }
        return state
    }
}
