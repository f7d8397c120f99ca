import Dispatch
import Foundation

/// Opening a store: recovery from the log (from the newest checkpoint), the header and its key.
extension StorageEngine {
    // MARK: Open

    /// Opens (creating if needed) the store described by `configuration`, recovering from any crash.
    ///
    /// Recovery verifies every record's checksums, replays the commits into the indexes, truncates a torn
    /// tail and rewrites a damaged last footer; corruption throws and leaves the file untouched.
    /// - Throws: `.corrupted` (with the offset), `.alreadyOpen`, `.fileNotFound` (read-only, missing),
    ///   `.permissionDenied`, `.unsupportedFormat`, `.diskFull`, `.ioFailure`.
    package static func open(_ configuration: Configuration) async throws(StorageError) -> StorageEngine {
        let engine = try await offload { () throws(StorageError) in try openSynchronously(configuration) }
        // Like Realm, compaction on launch is skipped while another process has the file open: it would
        // replace the file under that process (see ``PresenceLock``).
        let othersHaveItOpen = engine.core.withLock { $0.presence?.othersHaveItOpen ?? false }
        if let should = configuration.shouldCompactOnLaunch, !configuration.readOnly, !othersHaveItOpen {
            let stats = engine.statistics
            if should(stats.totalBytes, stats.liveBytes) {
                try await engine.compact()
                engine.core.withLock { $0.report.compactedOnLaunch = true }
            }
        }
        return engine
    }

    /// Tells read-only engines in other processes where this writer's durable records end (see
    /// ``PresenceLock/publishDurableEnd(_:generation:)``); `.max` with durability `.none`, which promises
    /// nothing. At open, after each sync and after compaction.
    func publishDurableEnd(_ end: UInt64) {
        guard !configuration.readOnly else { return }
        let (presence, generation) = core.withLock { ($0.presence, $0.header.generation) }
        presence?.publishDurableEnd(configuration.durability == .none ? .max : end, generation: generation)
    }

    static func openSynchronously(_ configuration: Configuration) throws(StorageError) -> StorageEngine {
        let fs = configuration.fileSystem
        // The real path (symbolic links, `.` and `..` resolved): compaction writes its copy next to the real
        // file and renames it there, so a link to the store keeps pointing at the live file.
        let path = configuration.path.map { fs.resolvedPath($0) } ?? "/memory/\(UUID().uuidString)/store"
        let report = RecoveryReport()
        if let key = configuration.encryptionKey {
            try StoreCipher.checkKeyLength(key.count)
            try PlatformCrypto.checkAvailable()
        }
        // First of all, so that no other process deletes, compacts or shortens the file while this one
        // reads it (a mapping read past a shortened end is a SIGBUS).
        let presence =
            fs.sharesFilesBetweenProcesses
            ? try PresenceLock.acquireShared(forStore: path, readOnly: configuration.readOnly) : nil
        do throws(StorageError) {
            // A writer recovers under the writer lock: another process may be appending a record right now,
            // which would otherwise look like a torn tail (and be zeroed). Blocking is fine: open runs on a
            // Dispatch thread.
            let writing = !configuration.readOnly ? try presence?.lockWriter(waiting: true) ?? false : false
            defer { if writing { presence?.unlockWriter() } }
            let engine = try openSynchronously(configuration, path: path, fs: fs, presence: presence, report: report)
            // Under the writer lock, so that what the lock file says only grows.
            engine.publishDurableEnd(engine.core.withLock { $0.durableEnd })
            return engine
        } catch {
            presence?.release()
            throw error
        }
    }

    private static func openSynchronously(
        _ configuration: Configuration, path: String, fs: any FileSystem, presence: PresenceLock?,
        report: RecoveryReport
    ) throws(StorageError) -> StorageEngine {
        var report = report
        if !fs.fileExists(path) {
            if configuration.readOnly {
                throw StorageError(
                    .fileNotFound,
                    "There is no store at '\(path)' to open read-only. Open it writable once to create it.")
            }
            try createStoreFile(fs, path, header: newHeader(key: configuration.encryptionKey, path: path))
        }
        let (lockFile, file) = try openFiles(
            fs, path, readOnly: configuration.readOnly, shared: presence != nil, report: &report)
        do throws(StorageError) {
            var size = try fs.size(of: file)
            if size == 0 && !configuration.readOnly {
                let header = try newHeader(key: configuration.encryptionKey, path: path).encoded()
                try fs.writeAll(file, header, at: 0)
                try fs.sync(file)
                size = UInt64(FileHeader.size)
            }
            let mapped = try fs.map(file, length: regionLength(for: size))
            let header = try FileHeader(decoding: mapped.bytes(at: 0, count: Int(size)), path: path)
            let cipher = try cipher(for: header, key: configuration.encryptionKey, path: path)
            let region = mapped.reading(through: cipher)
            let fileBytes = region.bytes(at: 0, count: Int(size))
            let nodeStore = NodeStore(
                region: region, end: size, path: path, cacheLimit: configuration.nodeCacheLimit)
            var state = DatabaseState()
            var scanFrom = FileHeader.size
            var checkpoint: CheckpointMark?
            var checkpointNodeBytes: UInt64 = 0
            // With a checkpoint, only the links of the commits replayed after it are checked (see below).
            var touched: Replay.Touched?
            var checkpointHadDanglingLinks = false
            var trustedNodes: Range<Int>?
            if header.hasCheckpoints, !configuration.ignoresCheckpoints,
                let found = newestCheckpoint(in: fileBytes, path: path, cipher: cipher)
            {
                state = DatabaseState(checkpoint: found.checkpoint, store: nodeStore)
                // The commits after its version: they may lie before the checkpoint record too (a checkpoint
                // lets commits through while it syncs its nodes), among records of nodes it vouches for.
                scanFrom = Int(found.checkpoint.replayFrom)
                trustedNodes = Int(found.checkpoint.nodesStart)..<Int(found.checkpoint.nodesEnd)
                checkpoint = CheckpointMark(version: found.checkpoint.version, end: UInt64(found.end))
                checkpointNodeBytes = found.checkpoint.nodeBytes
                touched = Replay.Touched()
                checkpointHadDanglingLinks = found.checkpoint.danglingLinks
                report.checkpointVersion = found.checkpoint.version
            }
            let token = MutationToken.next()
            var lastEntry: LogScanner.Entry?
            // Encrypted, rows are decrypted into `scratch`, emptied after each record (and the link check).
            let scratch = ScratchRows()
            let readRow = { (location: RowLocation) throws(StorageError) -> RowView in
                if let cipher {
                    return try scratch.keep(cipher: cipher, region: region, location: location, path: path)
                }
                return try RowView(region.bytes(at: Int(location.offset), count: Int(location.length)))
            }
            let outcome = try LogScanner.scan(
                fileBytes, from: scanFrom, path: path, trustedNodes: trustedNodes
            ) { (entry) throws(StorageError) in
                let kind = Record.Kind(rawValue: entry.kind)
                let flags = Record.Flags(rawValue: entry.flags)
                guard kind == .commit || (kind != nil && header.hasCheckpoints),
                    Record.Flags.known.isSuperset(of: flags)
                else {
                    throw StorageError(
                        .unsupportedFormat,
                        "'\(path)' has a record of unknown kind \(entry.kind) or flags \(entry.flags) at byte \(entry.offset): "
                            + "it was written by a newer version of ActorStore.",
                        offset: FileOffset(entry.offset))
                }
                // An encrypted store's records are all sealed, and only an encrypted store's are.
                guard flags.contains(.encrypted) == (cipher != nil) else {
                    throw StorageError(
                        .corrupted,
                        "The record at byte \(entry.offset) of '\(path)' is \(cipher == nil ? "" : "not ")encrypted, "
                            + "unlike the rest of the store: the file was changed by something other than ActorStore. "
                            + "Restore it from a backup.",
                        offset: FileOffset(entry.offset))
                }
                lastEntry = entry
                switch kind {
                case .commit:
                    if let cipher {
                        defer { scratch.empty() }
                        try Replay.apply(
                            encrypted: entry, in: fileBytes, cipher: cipher, to: &state, token: token, path: path,
                            touched: &touched, readRow: readRow)
                    } else {
                        let payload = UnsafeRawBufferPointer(rebasing: fileBytes[entry.payload])
                        try Replay.apply(
                            commit: payload, at: entry.payload.lowerBound, record: entry.offset, to: &state,
                            token: token, path: path, readRow: readRow)
                        touched?.add(payload)
                    }
                    report.recordsReplayed += 1
                case .checkpoint:
                    // The newest one seen is remembered, so that the next is written after enough new log
                    // (its version is the first field after the watermark).
                    let read = { (body: UnsafeRawBufferPointer) -> Version? in
                        body.count >= 8 ? Version(UInt64(littleEndian: body.loadUnaligned(as: UInt64.self))) : nil
                    }
                    let version =
                        if let cipher {
                            try EncryptedRecord.withCheckpointBody(
                                entry, in: fileBytes, cipher: cipher, path: path, read)
                        } else {
                            read(UnsafeRawBufferPointer(rebasing: fileBytes[entry.payload]))
                        }
                    guard let version else { break }
                    if version >= (checkpoint?.version ?? .zero) {
                        checkpoint = CheckpointMark(version: version, end: UInt64(entry.end))
                    }
                case .nodes where entry.payloadIsDamaged:
                    report.damagedNodeRecords += 1
                case .nodes:
                    // Its seal binds its kind: a commit relabelled as nodes (to be passed over) is found here.
                    if let cipher {
                        _ = try EncryptedRecord.openSeal(of: entry, in: fileBytes, cipher: cipher, path: path)
                    }
                case nil:
                    break
                }
            }
            // Opened past its checkpoints on purpose, or some of their nodes are damaged: the next checkpoint
            // (at the latest at close) writes every node again, even for a version already checkpointed.
            if configuration.ignoresCheckpoints || report.damagedNodeRecords > 0 { checkpoint = nil }
            var end = UInt64(outcome.validEnd)
            var reservedTail: UInt64?
            if !configuration.readOnly {
                if let footerAt = outcome.damagedFooterAt, let last = lastEntry,
                    let parsed = Record.parseHeader(fileBytes[last.offset...].prefix(Record.headerSize).rebased)
                {
                    let footer = Record.footer(length: parsed.length, payloadCRC: parsed.payloadCRC)
                    try fs.writeAll(file, footer, at: UInt64(footerAt))
                    report.repairedFooterAt = UInt64(footerAt)
                }
                if outcome.tornTailAt != nil || size > end {
                    report.truncatedBytes = size - end
                    report.discardedRecords = outcome.discardedRecords
                    if let presence {
                        // A reader in another process may map the file up to its size: never shorten it under
                        // that reader; zero the tail instead (it becomes reserved space).
                        let cut: Void? = try presence.whileAlone { () throws(StorageError) in
                            try fs.truncate(file, to: end)
                        }
                        if cut == nil {
                            try zeroTail(fs, file, in: fileBytes, from: end, to: size)
                            reservedTail = size
                        }
                    } else {
                        try fs.truncate(file, to: end)
                    }
                }
                // Everything kept is made durable before the first new record claims it is (its watermark).
                try fs.sync(file)
            } else {
                end = UInt64(outcome.validEnd)
            }
            let core = Core(
                file: file, lockFile: lockFile, presence: presence, header: header, region: region, published: state,
                tip: state, appendedEnd: end, durableEnd: end, syncedEnd: configuration.readOnly ? 0 : end,
                reservedEnd: reservedTail ?? end,
                nodeStore: nodeStore, checkpoint: checkpoint, checkpointNodeBytes: checkpointNodeBytes,
                report: report)
            let danglingLinks =
                touched.map { checkpointHadDanglingLinks || state.hasDanglingLinks(after: $0, readRow: readRow) }
                ?? state.hasDanglingLinks()
            scratch.empty()
            return StorageEngine(
                path: path, configuration: configuration, fs: fs, core: core, mayHaveDanglingLinks: danglingLinks)
        } catch {
            fs.close(file)
            if let lockFile { Self.closeLock(fs, lockFile) }
            throw error
        }
    }

    /// Overwrites the bytes `from ..< to` of `file` (seen in `bytes`) with zeros where they are not zero,
    /// and syncs: a torn tail made harmless without changing the file's size.
    static func zeroTail(
        _ fs: any FileSystem, _ file: OpenFile, in bytes: UnsafeRawBufferPointer, from: UInt64, to: UInt64
    ) throws(StorageError) {
        if try writeZeros(fs, file, from: from, to: to, over: bytes) { try fs.sync(file) }
    }

    /// Writes zeros over the bytes `from ..< to` of `file`, a block at a time, skipping the blocks that
    /// `bytes` (the file's bytes, when given) shows are zeros already; returns whether it wrote any. Not
    /// synced.
    @discardableResult
    static func writeZeros(
        _ fs: any FileSystem, _ file: OpenFile, from: UInt64, to: UInt64, over bytes: UnsafeRawBufferPointer? = nil
    ) throws(StorageError) -> Bool {
        guard from < to else { return false }
        var zeros = reservationZeros
        var allocated: UnsafeMutableRawBufferPointer?
        if zeros.isEmpty {
            // The reserved zeros could not be allocated: a smaller block, for this call.
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            (allocated, zeros) = (buffer, UnsafeRawBufferPointer(buffer))
        }
        defer { allocated?.deallocate() }
        var offset = from
        var wrote = false
        while offset < to {
            let count = Int(min(to - offset, UInt64(zeros.count)))
            if let bytes, isZero(UnsafeRawBufferPointer(rebasing: bytes[Int(offset)..<(Int(offset) + count)])) {
                offset += UInt64(count)
                continue
            }
            try fs.writeAll(file, UnsafeRawBufferPointer(rebasing: zeros.prefix(count)), at: offset)
            wrote = true
            offset += UInt64(count)
        }
        return wrote
    }

    /// Whether every byte of `bytes` is zero; eight at a time (a tail of megabytes is checked at each
    /// catch-up with other writers).
    static func isZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let words = bytes.count / 8
        var any: UInt64 = 0
        var i = 0
        while i < words {
            any |= base.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)
            i += 1
            // Stop early at a non-zero word, checked every 512 bytes to keep the loop tight.
            if i & 63 == 0 && any != 0 { return false }
        }
        for j in (words * 8)..<bytes.count { any |= UInt64(base.load(fromByteOffset: j, as: UInt8.self)) }
        return any == 0
    }

    /// The header of a new store: encrypted, with its key check, when `key` is given.
    static func newHeader(key: [UInt8]?, path: String) throws(StorageError) -> FileHeader {
        let header = FileHeader()
        guard let key else { return header }
        return header.encrypted(
            by: try StoreCipher(userKey: key, fileID: header.fileID, generation: header.generation, path: path))
    }

    /// The cipher of a store whose header is `header`, opened with `key`: nil for an unencrypted store
    /// opened without a key.
    /// - Throws: `.wrongKey` when the key is not the store's, a key is given for an unencrypted store, or
    ///   none for an encrypted one. Decides from the header alone: nothing else is read.
    static func cipher(for header: FileHeader, key: [UInt8]?, path: String) throws(StorageError) -> StoreCipher? {
        switch (header.flags.contains(.encrypted), key) {
        case (false, nil):
            return nil
        case (false, .some):
            throw StorageError(
                .wrongKey,
                "'\(path)' is not encrypted, but an encryption key was given. Open it without a key, or write an "
                    + "encrypted copy with writeCopy(toFile:encryptionKey:) and use that.")
        case (true, nil):
            throw StorageError(
                .wrongKey, "'\(path)' is encrypted: open it with the encryption key it was created with.")
        case (true, .some(let key)):
            let cipher = try StoreCipher(userKey: key, fileID: header.fileID, generation: header.generation, path: path)
            guard cipher.keyCheck == header.keyCheck else {
                throw StorageError(
                    .wrongKey,
                    "The encryption key is not the key of '\(path)'. Open it with the key it was created with (a key "
                        + "cannot be recovered from the file).")
            }
            return cipher
        }
    }
}
