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
        /// How often an engine that holds the writer lock of every process between its writes looks at
        /// whether it may let it go: after a tick with no write, or when another process waits for it (see
        /// StorageEngine+SharedWriting.swift). Another process waits for an idle writer about two ticks.
        package var writerLockTick: Duration = .milliseconds(2)
        /// Bytes of record a write transaction builds before it writes them to the file, and writes again each
        /// time as many more follow, while it goes on (see ``RecordStream``); nil: the record is written at
        /// commit. Not for encrypted stores (a record is encrypted at commit).
        package var recordStreamChunk: Int? = 4 << 20

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
        /// After a background checkpoint failed: the log end the next one waits for (see
        /// ``StorageEngine/considerCheckpoint()``).
        var checkpointRetryAt: UInt64 = 0
        /// The nodes record a checkpoint has placed and is writing the payload of, without the write lock
        /// (see ``StorageEngine/writeCheckpoint(holdingWriteLock:syncing:)``): until it is written, its
        /// payload does not match its checksum, which ``StorageEngine/verify()`` must not take for damage.
        var unfinishedNodes: Range<UInt64>?
        /// The record buffer of the last write transaction, kept for the next (see
        /// ``StorageEngine/recycle(_:)``).
        var spareBuffer: RecordBuffer?
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
        /// Counts the write rounds that began (``lockFileWriter()``): the writer lock's tick tells an idle
        /// engine from a busy one by it (see ``Configuration/writerLockTick``).
        var writerRounds: UInt64 = 0
        /// Counts the times this engine took the writer lock: a tick belongs to one hold.
        var writerHolds: UInt64 = 0
        /// Damage a follower found among another process's durable records (see ``scanFollowing``): every
        /// later snapshot throws it.
        var followDamage: StorageError?
        /// Counts the times this engine let the writer lock go because another process waited for it.
        var writerHandOffs: UInt64 = 0
        /// Another process waits for the writer lock: the engine lets it go at its next idle moment.
        var writerLockWanted = false
        /// The engine let the writer lock go to a waiting process: its next round waits its turn rather
        /// than taking the lock back before the waiter wakes up.
        var writerLockYielded = false
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

    /// Made by ``open(_:)`` only (in StorageEngine+Open.swift).
    init(
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
        let (state, region, closed, damage) = core.withLock { core in
            core.evictIfOver(configuration.nodeCacheLimit)
            return (core.published, core.region, core.isClosed, core.followDamage)
        }
        if closed { throw StorageError(.closed, "The store at '\(path)' is closed.") }
        if let damage, following { throw damage }
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

    /// How often this engine took the writer lock of every process, and how often it let it go because
    /// another process waited for it (see StorageEngine+SharedWriting.swift).
    package var writerLockCounts: (holds: UInt64, handOffs: UInt64) {
        core.withLock { ($0.writerHolds, $0.writerHandOffs) }
    }

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
        // A checkpoint writes its nodes without the write lock (under the compaction lock): the file must not
        // be closed under that write.
        await compactionLock.lock()
        defer { compactionLock.unlock() }
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
            core.spareBuffer = nil
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
