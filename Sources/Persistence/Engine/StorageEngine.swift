import Dispatch
import Foundation

/// The storage engine of one store file: an append-only log of commit records, persistent in-memory
/// indexes over it, MVCC snapshots, a single FIFO writer with group commit, and compaction.
///
/// ```swift
/// let engine = try await StorageEngine.open(.init(path: "/tmp/app.store"))
/// let txn = try await engine.beginWrite()
/// let dogs = try txn.createTable(TableSchema("Dog", columns: [ColumnSchema("name", ColumnType(.string))]))
/// let rex = try txn.insert(dogs, [.string("Rex")])
/// let result = try await txn.commit()          // durable (fsync'd) and visible when this returns
/// let snapshot = try engine.snapshot()         // O(1), Sendable, immutable
/// ```
///
/// - Important: A version becomes visible to ``snapshot()`` only once it is durable under the configured
///   ``Durability``. An fsync failure poisons the engine: later writes throw `.poisoned` until the store is
///   reopened (as LMDB and PostgreSQL do), because the kernel may have dropped the unsynced pages.
package final class StorageEngine: Sendable {
    /// When a commit counts as done.
    package enum Durability: Sendable {
        /// `fdatasync` (F_FULLFSYNC on Apple platforms) before the commit returns or becomes visible. The default.
        case full
        /// No sync: a crash may lose recent commits (never corrupt the file). For caches and tests.
        case none
    }

    /// How an engine opens its store.
    package struct Configuration: Sendable {
        /// The store file, or nil for an in-memory store (same engine, on a ``MemoryFileSystem``).
        package var path: String?
        package var fileSystem: any FileSystem
        package var durability: Durability
        /// Open without the write lock: no writes, no repair of a torn tail (it is ignored).
        package var readOnly: Bool
        /// Compact in the background when dead bytes exceed `deadRatio` of a file of at least `minimumFileSize`.
        package var autoCompaction: AutoCompaction?
        /// Asked once at open with (total bytes, live bytes); returning true compacts before open returns.
        package var shouldCompactOnLaunch: (@Sendable (_ totalBytes: UInt64, _ usedBytes: UInt64) -> Bool)?
        /// The most distinct versions snapshots may pin at once; nil for no limit.
        package var maximumNumberOfActiveVersions: Int?
        /// Bytes of zero-filled space written ahead of the records of durable commits, so that most commits
        /// overwrite allocated space instead of growing the file (see
        /// ``StorageEngine/reserveSpace(in:after:)``); 0 turns it off. At most ``maximumReservedSpace``.
        package var reservedSpace = Configuration.maximumReservedSpace
        /// 1 MiB: room for about 10,000 small commits per reservation.
        package static let maximumReservedSpace = 1 << 20
        /// Bytes of log after the newest checkpoint past which a checkpoint is written in the background
        /// (nil: only at close and after compaction). What open replays is at most about this much.
        package var checkpointInterval: UInt64? = 4 << 20
        /// About how many bytes of index nodes read from the file the newest version keeps in memory: past it,
        /// they are dropped and read again when used (snapshots in use keep theirs until released).
        package var nodeCacheLimit = 64 << 20
        /// Open by replaying the whole log and checking every record, ignoring checkpoints (O(file size)):
        /// for a store whose checkpoint nodes are damaged (see ``verify()``).
        package var ignoresCheckpoints = false
        /// Whether the engine writes checkpoints at all (at close, after compaction, and by
        /// ``checkpointInterval``). Off, open replays the log; for tests of the log alone.
        package var writesCheckpoints = true
        /// The 64-byte key of an encrypted store (nil: not encrypted). A new store is created encrypted with
        /// it; an existing one must have been created with it (see ``StoreCipher``).
        package var encryptionKey: [UInt8]?

        package init(
            path: String?, fileSystem: any FileSystem = PosixFileSystem(), durability: Durability = .full,
            readOnly: Bool = false, autoCompaction: AutoCompaction? = AutoCompaction(),
            shouldCompactOnLaunch: (@Sendable (UInt64, UInt64) -> Bool)? = nil,
            maximumNumberOfActiveVersions: Int? = nil
        ) {
            self.path = path
            self.fileSystem = fileSystem
            self.durability = durability
            self.readOnly = readOnly
            self.autoCompaction = autoCompaction
            self.shouldCompactOnLaunch = shouldCompactOnLaunch
            self.maximumNumberOfActiveVersions = maximumNumberOfActiveVersions
        }

        /// An in-memory store: nothing touches the disk.
        package static func inMemory() -> Configuration {
            Configuration(path: nil, fileSystem: MemoryFileSystem(), durability: .none)
        }
    }

    /// The automatic compaction trigger.
    package struct AutoCompaction: Sendable {
        package var deadRatio: Double
        package var minimumFileSize: UInt64
        package init(deadRatio: Double = 0.5, minimumFileSize: UInt64 = 16 << 20) {
            self.deadRatio = deadRatio
            self.minimumFileSize = minimumFileSize
        }
    }

    /// What open found and did.
    package struct RecoveryReport: Sendable, Equatable {
        package var recordsReplayed = 0
        /// Bytes of torn tail that were discarded (0 if none).
        package var truncatedBytes: UInt64 = 0
        /// Complete records the torn tail held: records a power loss persisted after one it lost (see
        /// ``LogScanner``). None of them had been acknowledged.
        package var discardedRecords = 0
        /// The version of the checkpoint open started from (nil: it replayed the whole log).
        package var checkpointVersion: Version?
        /// Checkpoint nodes records whose bytes no longer match their checksum, passed over by a replay of
        /// the whole log (the commits hold everything they do; the next checkpoint writes the nodes again).
        package var damagedNodeRecords = 0
        /// Offset of a last-record footer that was damaged and rewritten, if any.
        package var repairedFooterAt: UInt64?
        /// Stale temporary files removed.
        package var removedTemporaryFiles: [String] = []
        package var compactedOnLaunch = false
    }

    /// Sizes and pins, for `Realm`'s file statistics.
    package struct Statistics: Sendable {
        package var version: Version
        package var totalBytes: UInt64
        package var liveBytes: UInt64
        package var pinnedVersions: Int
        package var oldestPinnedVersion: Version?
        package var generation: UInt64
        /// The version of the newest checkpoint in the file (nil: none yet).
        package var checkpointVersion: Version?
        /// Bytes of log after the newest checkpoint: what the next open replays.
        package var bytesSinceCheckpoint: UInt64
        /// Index nodes read from the file since open, and their encoded size.
        package var nodesLoaded: Int
        package var nodeBytesLoaded: Int
        /// About how much memory the nodes loaded since the last eviction take (see `nodeCacheLimit`).
        package var nodeCacheBytes: Int
    }

    package let path: String
    /// Whether the file, as opened, has a link to an object that does not exist. Deleting an object removes
    /// the links to it, so only a damaged or crafted log (checksums intact) leads here; readers of
    /// collections of links then skip the missing objects. Checked once at open (one walk of the backlink
    /// index), so that ordinary files pay nothing per read.
    package let mayHaveDanglingLinks: Bool
    package let configuration: Configuration
    let fs: any FileSystem
    /// Tasks the engine resumed that wait for a thread (see ``hasPendingResumptions``).
    let resumptions = PendingResumptions()
    let writeLock: AsyncWriteLock
    /// Serialises compactions (explicit and background).
    let compactionLock = AsyncWriteLock()
    let pins = VersionPins()
    /// Observers of commits (see ``subscribe(tables:)``).
    package let hub: ChangeHub
    let core: Locked<Core>
    /// Serialises a read-only engine's catching up with other processes' commits (see ``followFile()``).
    let followLock = Locked(())
    /// Whether the thread that follows the file for observers runs (see ``startFollowing()``).
    let followThreadStarted = Locked(false)
    /// Runs the fsyncs of durable commits (see ``SyncThread``).
    private let syncThreadBox = Locked<SyncThread?>(nil)
    /// What open found and did.
    package var recoveryReport: RecoveryReport { core.withLock { $0.report } }

    /// The engine's mutable state. Everything in it changes under the `core` lock only.
    struct Core {
        var file: OpenFile
        /// A second descriptor of the same file that holds the exclusive lock. It is never mapped: a mapping
        /// keeps its descriptor's open file description (and so an `flock`) alive after `close`, while this one
        /// lets `close()` release the lock even when snapshots still map the file.
        var lockFile: OpenFile?
        /// The shared hold of the lock file beside the store, which says "open in this process" to the
        /// others (see ``PresenceLock``); nil for an in-memory store, or a read-only one whose lock file
        /// could not be opened.
        var presence: PresenceLock?
        var header: FileHeader
        var region: MappedRegion
        /// The newest durable version: what snapshots see.
        var published: DatabaseState
        /// The newest appended version: what the next write transaction starts from.
        var tip: DatabaseState
        var appendedEnd: UInt64
        var durableEnd: UInt64
        /// The end of what a completed sync made durable: the watermark new records carry (see ``Record``).
        /// Unlike `durableEnd`, never raised by commits of durability `.none`.
        var syncedEnd: UInt64
        /// The end of the zero-filled space written ahead of the records (see ``reserveSpace(in:after:)``):
        /// the file's size while it has such space, else `appendedEnd`.
        var reservedEnd: UInt64
        /// Where the nodes of checkpoints are read from (the current file).
        var nodeStore: NodeStore
        /// The newest checkpoint in the file, if any.
        var checkpoint: CheckpointMark?
        /// The bytes of the index nodes the newest checkpoint's trees use: live bytes beside the rows (see
        /// ``liveBytes``).
        var checkpointNodeBytes: UInt64 = 0
        var checkpointRunning = false
        var lastCheckpointError: StorageError?
        /// Counts the times the newest version was replaced by the same version reading its nodes from the
        /// file again (node cache eviction, a checkpoint): a reader holding that version can take the fresh
        /// one to let go of the nodes it loaded (see ``StorageEngine/newestVersionAndCacheEpoch()``).
        var cacheEpoch: UInt64 = 0

        /// The node cache's bound: past `limit` bytes loaded, the newest versions let go of the nodes they
        /// loaded (older snapshots keep theirs until they are released), and nodes are loaded again as used.
        mutating func evictIfOver(_ limit: Int) {
            guard nodeStore.takeLoadedSinceEviction(ifOver: limit) else { return }
            published = published.unloaded()
            tip = tip.version == published.version ? published : tip.unloaded()
            cacheEpoch &+= 1
        }

        /// The bytes a compaction would keep: the newest version's rows and the newest checkpoint's nodes
        /// (the nodes changed since count when the next checkpoint writes them).
        var liveBytes: UInt64 { published.liveBytes + checkpointNodeBytes }
        var waiting: [PendingCommit] = []
        var syncInFlight = false
        var poisoned: StorageError?
        var isClosed = false
        var compactionRunning = false
        var lastCompactionError: StorageError?
        /// The background compaction started last (see ``waitForBackgroundCompaction()``).
        var backgroundCompaction: Task<Void, Never>?
        var report: RecoveryReport
        /// Whether this engine holds the writer lock of every process (see ``lockWriter()``).
        var writerLockHeld = false
        /// Catch-ups that found records of other processes since open (a compaction started before one is
        /// abandoned: its copy lacks them).
        var foreignCatchUps = 0
        /// Resumed when no commit is waiting for a sync any more.
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// A durable commit whose record is appended, waiting for the sync that covers it.
    struct PendingCommit {
        /// The end of its record: a sync that covers this offset makes it durable.
        let end: UInt64
        let result: CommitResult
        /// What it publishes (the new version) and tells the observers.
        let commit: ChangeHub.Commit
        let waiter: CommitWaiter
    }

    private init(
        path: String, configuration: Configuration, fs: any FileSystem, core: Core, mayHaveDanglingLinks: Bool
    ) {
        self.path = path
        self.configuration = configuration
        self.fs = fs
        self.mayHaveDanglingLinks = mayHaveDanglingLinks
        self.core = Locked(core)
        self.writeLock = AsyncWriteLock(resumptions: resumptions)
        let pins = self.pins
        self.hub = ChangeHub { snapshot in
            guard snapshot.pin == nil, let pin = try? pins.pin(snapshot.version, limit: nil) else { return snapshot }
            var pinned = snapshot
            pinned.pin = pin
            return pinned
        }
    }

    /// The sync thread, started on first use. It holds the engine weakly, so the engine can go away.
    var syncThread: SyncThread {
        syncThreadBox.withLock { box in
            if let thread = box { return thread }
            let thread = SyncThread(name: "ActorStore.sync") { [weak self] in self?.runSyncLoop() ?? false }
            box = thread
            return thread
        }
    }

    deinit {
        hub.close()
        syncThreadBox.withLock { $0?.stop() }
        core.withLock { core in
            if !core.isClosed {
                releaseReservedSpace(core)
                fs.close(core.file)
                if let lock = core.lockFile { Self.closeLock(fs, lock) }
                if core.writerLockHeld { core.presence?.unlockWriter() }
                core.presence?.release()
            }
        }
    }

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
            var trustedNodesEnd = 0
            if header.hasCheckpoints, !configuration.ignoresCheckpoints,
                let found = newestCheckpoint(in: fileBytes, path: path, cipher: cipher)
            {
                state = DatabaseState(checkpoint: found.checkpoint, store: nodeStore)
                // The commits after its version: they may lie before the checkpoint record too (a checkpoint
                // lets commits through while it syncs its nodes), among records of nodes it vouches for.
                scanFrom = Int(found.checkpoint.replayFrom)
                trustedNodesEnd = found.offset
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
                fileBytes, from: scanFrom, path: path, trustedNodesEnd: trustedNodesEnd
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
        guard from < to else { return }
        if bytes[Int(from)..<Int(to)].allSatisfy({ $0 == 0 }) { return }
        var offset = from
        while offset < to {
            let count = min(Int(to - offset), reservationZeros.count)
            guard count > 0 else { return }
            try fs.writeAll(file, UnsafeRawBufferPointer(rebasing: reservationZeros.prefix(count)), at: offset)
            offset += UInt64(count)
        }
        try fs.sync(file)
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

    /// How often opening tries again when the file at the path was replaced while it was being locked.
    static let lockAttempts = 8

    /// The store's lock descriptor (locked; nil read-only) and data descriptor, both of the file that is at
    /// `path` while the lock is held. Writable, it also removes stale temporary files and syncs the directory.
    ///
    /// Another engine's compaction may rename a new file over `path` between any two of these steps: a lock
    /// taken on the replaced file protects nothing (its holder would write the live file beside the real
    /// lock holder), so the data descriptor must be of the locked file, else everything is tried again.
    /// - Throws: `.alreadyOpen` when another process (or engine) holds the lock.
    static func openFiles(
        _ fs: any FileSystem, _ path: String, readOnly: Bool, shared: Bool, report: inout RecoveryReport
    ) throws(StorageError) -> (lock: OpenFile?, file: OpenFile) {
        if readOnly { return (nil, try fs.open(path, create: false, readOnly: true)) }
        for _ in 0..<lockAttempts {
            let lockFile = try lockedDescriptor(fs, path, shared: shared)
            let file: OpenFile
            do throws(StorageError) {
                // Only the lock holder may judge the temporary files stale (another engine may be compacting).
                report.removedTemporaryFiles = removeStaleTemporaryFiles(fs, path)
                // The file's directory entry may not be durable yet (a create or a compaction whose directory
                // sync failed before a crash): make it so before acknowledging anything written to it.
                try fs.syncDirectory(directory(of: path))
                file = try fs.open(path, create: false, readOnly: false)
            } catch {
                closeLock(fs, lockFile)
                throw error
            }
            let same: Bool
            do throws(StorageError) {
                same = try fs.identity(of: file) == fs.identity(of: lockFile)
            } catch {
                fs.close(file)
                closeLock(fs, lockFile)
                throw error
            }
            if same { return (lockFile, file) }
            fs.close(file)
            closeLock(fs, lockFile)
        }
        throw replacedWhileLocking(path)
    }

    /// Opens `path` and takes its exclusive lock on that descriptor, making sure the locked file is still
    /// the one at `path` (a compaction in another process may have renamed a new file over it meanwhile;
    /// then it tries again, and meets that process's lock on the new file).
    /// - Throws: `.alreadyOpen` when another process (or engine) holds it.
    static func lockedDescriptor(_ fs: any FileSystem, _ path: String, shared: Bool) throws(StorageError) -> OpenFile {
        for _ in 0..<lockAttempts {
            let lockFile = try fs.open(path, create: false, readOnly: false)
            let current: Bool
            do throws(StorageError) {
                try lockPatiently(fs, lockFile, shared: shared)
                current = try fs.identity(of: lockFile) == fs.identity(atPath: path)
            } catch {
                closeLock(fs, lockFile)
                throw error
            }
            if current { return lockFile }
            closeLock(fs, lockFile)
        }
        throw replacedWhileLocking(path)
    }

    /// Takes the exclusive lock, trying again for up to 100 ms while it is held — and for up to 10 s while
    /// the only holder is a descriptor this process already closed.
    ///
    /// Why wait at all: a child process that this process is starting holds a copy of every descriptor
    /// from its fork until its exec closes them (close-on-exec), and with them every `flock` on them. A
    /// store closed and reopened in that moment meets its own lock, released a moment later (`alreadyOpen`
    /// "by another process" on an immediate reopen: 6 of 240 reopens while other threads started
    /// processes on a loaded machine, where the moment between fork and exec can last more than 100 ms).
    /// On Linux, `/proc/locks` names the process that took a lock: when it is this process and no engine
    /// of this process holds the lock (``heldLocks``), the holder can only be such a child, and opening
    /// waits for its exec. A lock that another process (or engine) really holds is reported after 100 ms.
    ///
    /// With `shared` (the store has a ``PresenceLock``, whose writer lock serialises the writers of every
    /// process), the lock is taken shared (see ``FileSystem/lockForSharedWriting(_:)``): it keeps out
    /// writers of older versions only.
    static func lockPatiently(_ fs: any FileSystem, _ file: OpenFile, shared: Bool) throws(StorageError) {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(100))
        let longDeadline = clock.now.advanced(by: .seconds(10))
        while true {
            do throws(StorageError) {
                if shared { try fs.lockForSharedWriting(file) } else { try fs.lockExclusive(file) }
                if fs.sharesFilesBetweenProcesses, let identity = try? fs.identity(of: file) {
                    heldLocks.withLock { $0[file.descriptor] = identity }
                }
                return
            } catch
                where error.code == .alreadyOpen
                && (clock.now < deadline
                    || (clock.now < longDeadline && fs.sharesFilesBetweenProcesses
                        && heldOnlyByOwnClosedDescriptor(fs, file)))
            {
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
    }

    /// The identities of the store files whose exclusive lock an engine of this process holds, by the
    /// descriptor holding it (real files only).
    static let heldLocks = Locked<[Int32: FileIdentity]>([:])

    /// Closes a lock descriptor (releasing its lock) and forgets it in ``heldLocks``.
    static func closeLock(_ fs: any FileSystem, _ file: OpenFile) {
        if fs.sharesFilesBetweenProcesses {
            heldLocks.withLock { $0[file.descriptor] = nil }
        }
        fs.close(file)
    }

    /// Whether `file`'s lock is held, per `/proc/locks`, by this process only, while no engine of this
    /// process holds it: then a child process being started holds it through a copy of a descriptor this
    /// process has closed. Also true when `/proc/locks` lists no lock on the file at all: the holder let
    /// go between the failed attempt and the reading (a child's exec; worth another attempt, which either
    /// succeeds or meets the new holder). False where `/proc/locks` does not exist (the 100 ms wait
    /// applies), or while an engine of this process holds the file.
    static func heldOnlyByOwnClosedDescriptor(_ fs: any FileSystem, _ file: OpenFile) -> Bool {
        guard let identity = try? fs.identity(of: file),
            !heldLocks.withLock({ $0.values.contains(identity) }),
            let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)
        else { return false }
        let own = String(ProcessInfo.processInfo.processIdentifier)
        let suffix = ":\(identity.inode)"
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5].hasSuffix(suffix) else { continue }
            if fields[4] != own { return false }
        }
        // Held by this process only, or by nobody any more (before, that was taken as another process's
        // lock: 2 of about 4,000 immediate reopens failed that way on a machine at load 13).
        return true
    }

    private static func replacedWhileLocking(_ path: String) -> StorageError {
        StorageError(
            .alreadyOpen,
            "'\(path)' is open for writing by another process, which keeps replacing the file (compacting it). "
                + "Close it there first.")
    }

    /// The longest mapping the engine asks for, and so the largest store file it opens or grows: 2^62
    /// bytes (4 EiB), beyond what any file system holds; a bound that keeps the length arithmetic exact.
    static let maxRegionLength = 1 << 62

    /// The mapping length for a file of `size` bytes: room to grow before the next remap (twice the size,
    /// rounded up to a power of two, at least 1 MiB and at most ``maxRegionLength``).
    /// - Throws: `.limitExceeded` if `size` is over ``maxRegionLength`` (the doubling would overflow).
    static func regionLength(for size: UInt64) throws(StorageError) -> Int {
        guard size <= UInt64(maxRegionLength) else {
            throw StorageError(
                .limitExceeded,
                "A store file of \(size) bytes is larger than the \(maxRegionLength) bytes ActorStore can map. "
                    + "The file is damaged or not a store; restore it from a backup.")
        }
        var length = 1 << 20
        while length < maxRegionLength && UInt64(length) < size * 2 { length <<= 1 }
        return length
    }

    /// Creates a complete store file atomically: header into a temporary file, sync, move it to `path`
    /// unless a store appeared there meanwhile (another process created it: that one is kept), sync the
    /// directory.
    static func createStoreFile(_ fs: any FileSystem, _ path: String, header: FileHeader) throws(StorageError) {
        do throws(StorageError) {
            try createStoreFileOnce(fs, path, header: header)
        } catch  where error.code == .fileNotFound && !fs.fileExists(path) {
            // Another process creating the store at the same moment took the temporary file over (it judged it
            // stale) and has not moved it into place yet: create it again.
            try createStoreFileOnce(fs, path, header: header)
        }
    }

    private static func createStoreFileOnce(
        _ fs: any FileSystem, _ path: String, header: FileHeader
    ) throws(StorageError) {
        let temporary = path + ".creating"
        let file = try createTemporaryFile(fs, temporary)
        do throws(StorageError) {
            try fs.writeAll(file, header.encoded(), at: 0)
            try fs.sync(file)
            fs.close(file)
        } catch {
            fs.close(file)
            try? fs.remove(temporary)
            throw error
        }
        do throws(StorageError) {
            try fs.renameNoReplace(temporary, to: path)
        } catch  where fs.fileExists(path) {
            // Another process created the store meanwhile: that one is kept. The temporary file is ours unless
            // that process took the name over (then the move failed with fileNotFound).
            if error.code == .fileExists { try? fs.remove(temporary) }
        } catch {
            if error.code != .fileNotFound { try? fs.remove(temporary) }
            throw error
        }
        try fs.syncDirectory(directory(of: path))
    }

    /// Creates the temporary file `path` without following a symbolic link planted there (it would make
    /// the store write the link's target). Something already at `path` is stale (left by a crash, or
    /// planted): it is removed (a link itself, never its target) and the creation tried once more.
    static func createTemporaryFile(_ fs: any FileSystem, _ path: String) throws(StorageError) -> OpenFile {
        do throws(StorageError) {
            return try fs.createExclusive(path)
        } catch  where error.code == .fileExists {
            do throws(StorageError) { try fs.remove(path) } catch  where error.code == .fileNotFound {}
            return try fs.createExclusive(path)
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Suffixes of the engine's temporary files next to a store.
    static let temporarySuffixes = [".creating", ".compacting"]

    /// Removes temporary files a crash left next to the store; returns their paths.
    static func removeStaleTemporaryFiles(_ fs: any FileSystem, _ path: String) -> [String] {
        let directory = directory(of: path)
        let base = String(path.split(separator: "/").last ?? "")
        guard let names = try? fs.contentsOfDirectory(directory) else { return [] }
        var removed: [String] = []
        for name in names where temporarySuffixes.contains(where: { name == base + $0 }) {
            let full = directory == "/" ? "/" + name : directory + "/" + name
            if (try? fs.remove(full)) != nil { removed.append(full) }
        }
        return removed
    }

    // MARK: Reading

    /// The newest durable version, pinned until the snapshot is released. O(1).
    /// - Throws: `.tooManyVersions` past `maximumNumberOfActiveVersions`; `.closed`.
    package func snapshot() throws(StorageError) -> Snapshot { try makeSnapshot(replacing: nil) }

    /// The newest durable version, for a reader about to release `old`: if `old` holds the only pin of its
    /// version (no copy of it lives elsewhere, no other snapshot pins that version), that version does not
    /// count against `maximumNumberOfActiveVersions`. `inout` so that uniqueness can be checked.
    /// - Parameter ignoringLimit: pin even past the limit (for a writer that must see its acknowledged
    ///   commit; the limit was checked before committing).
    package func snapshot(replacing old: inout Snapshot, ignoringLimit: Bool = false) throws(StorageError) -> Snapshot {
        try makeSnapshot(replacing: solePin(&old), ignoringLimit: ignoringLimit)
    }

    /// Catches up with the commits of other processes: a read-only engine follows the file, a writable one
    /// the other writers' durable commits (see ``followOtherWriters()``).
    func followOtherProcesses() {
        if configuration.readOnly { followFile() } else { followOtherWriters() }
    }

    /// The number of versions pinned, not counting `own`'s when it holds the only pin of its version.
    package func pinnedVersions(besides own: inout Snapshot) -> Int {
        pins.count(excludingSolePinOf: solePin(&own))
    }

    /// - Parameter following: catch up with other processes' commits first; never while the change hub's
    ///   lock is held (catching up records the commits there).
    private func makeSnapshot(
        replacing: Version?, ignoringLimit: Bool = false, following: Bool = true
    ) throws(StorageError) -> Snapshot {
        if following { followOtherProcesses() }
        let (state, region, closed) = core.withLock { core in
            core.evictIfOver(configuration.nodeCacheLimit)
            return (core.published, core.region, core.isClosed)
        }
        if closed { throw StorageError(.closed, "The store at '\(path)' is closed.") }
        let limit = ignoringLimit ? nil : configuration.maximumNumberOfActiveVersions
        let pin = try pins.pin(state.version, limit: limit, replacing: replacing)
        return Snapshot(state: state, region: region, pin: pin)
    }

    /// `snapshot`'s version if its pin object is referenced by it alone (no frozen copy shares it).
    private func solePin(_ snapshot: inout Snapshot) -> Version? {
        guard isKnownUniquelyReferenced(&snapshot.pin) else { return nil }
        return snapshot.pin?.version
    }

    /// Whether a writer of this store was resumed (its commit became durable, or the write lock became its)
    /// and waits for a thread to run on. A reader that loops without suspending should give its thread up
    /// then (`await Task.yield()`), or on a pool with as many threads as such readers the writer never runs.
    /// A hint, read without a lock: it may change at once.
    package var hasPendingResumptions: Bool { !resumptions.isEmpty }

    /// Gives the thread up to other tasks (`Task.yield()`), counted as a writer waiting for a thread while
    /// it waits to run again, so that readers (``hasPendingResumptions``) give theirs up at once.
    package func yieldWriter() async {
        resumptions.resuming()
        await Task.yield()
        resumptions.resumed()
    }

    /// The newest durable version number.
    package var latestVersion: Version { core.withLock { $0.published.version } }

    /// The newest durable version number, and how many times that version was replaced by itself reading
    /// its index nodes from the file again. A reader that holds the newest version but an older epoch takes
    /// a new snapshot to let go of the nodes it loaded: how a realm that only reads stays within
    /// ``Configuration/nodeCacheLimit``. Drops the loaded nodes first when they are over that limit.
    package func newestVersionAndCacheEpoch() -> (version: Version, epoch: UInt64) {
        followOtherProcesses()
        return core.withLock { core in
            core.evictIfOver(configuration.nodeCacheLimit)
            return (core.published.version, core.cacheEpoch)
        }
    }

    /// The current cache epoch (see ``newestVersionAndCacheEpoch()``).
    package var cacheEpoch: UInt64 { core.withLock { $0.cacheEpoch } }

    /// File size, live bytes, and pinned versions.
    package var statistics: Statistics {
        let pinned = pins.summary
        return core.withLock { core in
            let loads = core.nodeStore.loadStatistics
            return Statistics(
                version: core.published.version, totalBytes: core.appendedEnd, liveBytes: core.liveBytes,
                pinnedVersions: pinned.count, oldestPinnedVersion: pinned.oldest, generation: core.header.generation,
                checkpointVersion: core.checkpoint?.version,
                bytesSinceCheckpoint: core.appendedEnd
                    - min(core.checkpoint?.end ?? UInt64(FileHeader.size), core.appendedEnd),
                nodesLoaded: loads.nodes, nodeBytesLoaded: loads.bytes, nodeCacheBytes: core.nodeStore.cachedBytes)
        }
    }

    /// Waits for the writer lock, writes a checkpoint if commits came after the last one (so that the next
    /// open reads no log), then closes the file. Snapshots stay readable; writes throw `.closed`.
    package func close() async {
        // A background compaction holds the engine (and may hold the files) until it ends: let it end, so
        // that when this returns the file is really closed.
        await waitForBackgroundCompaction()
        await writeLock.lock()
        await waitUntilSynced()
        if !configuration.readOnly {
            // The checkpoint appends: under the writer lock of every process, caught up first.
            let locked = (try? await lockFileWriter()) != nil
            if locked {
                try? await writeCheckpoint(holdingWriteLock: true, syncing: true)
                // The checkpoint's records are synced: the next writer elsewhere need not sync them again.
                publishDurableEnd(core.withLock { $0.syncedEnd })
            }
        }
        core.withLock { core in
            if !core.isClosed {
                core.isClosed = true
                // Only while alone (see releaseReservedSpace), so under the writer lock or not does not matter.
                releaseReservedSpace(core)
                fs.close(core.file)
                if let lock = core.lockFile { Self.closeLock(fs, lock) }
                if core.writerLockHeld { core.presence?.unlockWriter() }
                core.writerLockHeld = false
                core.presence?.release()
            }
        }
        syncThreadBox.withLock {
            $0?.stop()
            $0 = nil
        }
        hub.close()
        writeLock.unlock()
    }

    // MARK: Observing

    /// Starts observing commits to `tables` (all tables when nil): returns the subscription and a
    /// snapshot of the newest version, the one its first batch will follow. The snapshot is pinned
    /// regardless of `maximumNumberOfActiveVersions`: an observer must be able to start.
    /// - Throws: `.closed`.
    ///
    /// With `after`, a version the observer already holds, the commits since then are the subscription's
    /// first batch, if the engine still remembers them; `caughtUp` is false when it does not.
    package func subscribe(
        tables: Set<TableID>?, after: Version? = nil
    ) throws(StorageError)
        -> (subscription: ChangeSubscription, snapshot: Snapshot, caughtUp: Bool)
    {
        // A read-only engine learns of other processes' commits by looking: a thread looks for its observers.
        startFollowing()
        // Caught up here, not in the snapshot taken under the hub's lock (catching up records in the hub).
        followOtherProcesses()
        let (subscription, snapshot, caughtUp) = hub.subscribe(tables: tables, after: after) {
            try? makeSnapshot(replacing: nil, ignoringLimit: true, following: false)
        }
        guard let snapshot else {
            subscription.cancel()
            throw StorageError(.closed, "The store at '\(path)' is closed.")
        }
        return (subscription, snapshot, caughtUp)
    }

    /// A pinned copy of a snapshot handed out unpinned (a ``ChangeSubscription/Batch``'s).
    package func pinned(_ snapshot: Snapshot) -> Snapshot { hub.pin(snapshot) }
}

extension Slice where Base == UnsafeRawBufferPointer {
    var rebased: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: self) }
}

/// Runs blocking work (file I/O) on a Dispatch thread instead of the cooperative pool, and awaits it.
///
/// The result crosses threads through a lock as well as the continuation: ThreadSanitizer does not always
/// see the continuation as a synchronisation point (a continuation resumed before its task suspended),
/// and then reports every field of an engine opened here as a race with its initialisation. The lock
/// (a pthread mutex, see ``Locked``) gives it the order that the continuation guarantees anyway.
func offload<T: Sendable>(_ work: @escaping @Sendable () throws(StorageError) -> T) async throws(StorageError) -> T {
    let box = Locked<Result<T, StorageError>>(.failure(StorageError(.ioFailure, "The work did not run.")))
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global(qos: .userInitiated).async {
            let result: Result<T, StorageError>
            do throws(StorageError) {
                result = .success(try work())
            } catch {
                result = .failure(error)
            }
            box.withLock { $0 = result }
            continuation.resume()
        }
    }
    return try box.withLock { $0 }.get()
}
