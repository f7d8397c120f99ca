import ActorStorePersistence
import Foundation

extension Realm {
    // MARK: Files

    /// Size and version information about the realm's file.
    public var statistics: Statistics {
        let stats = context.engine.statistics
        return Statistics(
            fileSize: Int(clamping: stats.totalBytes), usedBytes: Int(clamping: stats.liveBytes),
            version: stats.version.rawValue,
            pinnedVersions: stats.pinnedVersions, oldestPinnedVersion: stats.oldestPinnedVersion?.rawValue,
            checkpointVersion: stats.checkpointVersion?.rawValue,
            bytesSinceCheckpoint: Int(clamping: stats.bytesSinceCheckpoint), indexNodesLoaded: stats.nodesLoaded,
            indexBytesLoaded: stats.nodeBytesLoaded, indexCacheBytes: stats.nodeCacheBytes)
    }

    /// Reads the whole file and checks every checksum: every record's and every index node's the newest
    /// version uses. Opening a file checks only what follows its newest checkpoint (index nodes are checked
    /// as they are first read), so damage to older bytes — a failing disk, a file changed by another
    /// program — is found here, or by opening with ``Configuration/verifiesWholeFileAtOpen``.
    ///
    /// O(file size), off the actor's executor.
    /// - Throws: `RealmError.corrupted` with the offset of the first damage.
    public func verify() async throws {
        let engine = context.engine
        let result: Result<Void, StorageError> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                do throws(StorageError) {
                    try engine.verify()
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        do { try result.get() } catch { throw RealmError(error) }
    }

    /// Why the last compaction of the file failed, or nil if the last one succeeded (or none failed).
    ///
    /// Automatic compaction (``Configuration/automaticCompaction``) runs in the background, so its errors
    /// (`diskFull`, `ioFailure`, `corrupted`) cannot be thrown to anyone: they land here. The file is
    /// unchanged by a failed compaction, and the next commit that finds it over the threshold tries again;
    /// a success (automatic or ``compact()``) clears the error. Shared by every `Realm` on the file.
    public nonisolated var lastCompactionError: RealmError? {
        engine.lastCompactionError.map { RealmError($0) }
    }

    /// Rewrites the file without dead space. Writers wait only for the final switch-over.
    /// - Complexity: O(n) in the live rows, which are copied to a new file.
    /// - Throws: `RealmError.readOnly`, `.diskFull`, `.ioFailure`.
    public func compact() async throws {
        if configuration.readOnly {
            throw RealmError(.readOnly, "This realm was opened with readOnly: it cannot compact its file.")
        }
        do {
            try await context.engine.compact()
        } catch {
            throw RealmError(error)
        }
    }

    /// Writes a compacted copy of the realm's newest version to a new file.
    ///
    /// Called by the task that opened a write transaction (between `beginWrite()` and `commitWrite()`), it
    /// copies what that transaction sees, its uncommitted changes included, as Realm does; the transaction
    /// stays open. An in-memory realm is copied to a file on disk, which opens like any other realm.
    ///
    /// The copy is encrypted with `encryptionKey` (64 bytes), or not encrypted when it is nil, whatever this
    /// realm's own encryption: so it encrypts a file, decrypts one, or changes its key.
    /// - Throws: `RealmError.fileExists` if something is already at `url`; `.diskFull`, `.fileAccess`;
    ///   `.invalidValue` for a key that is not 64 bytes; the error an operation of the open transaction
    ///   recorded (that transaction cannot commit either).
    public func writeCopy(toFile url: URL, encryptionKey: Data? = nil) async throws {
        let ownSession = context.session.flatMap { $0.belongsToCurrentTask ? $0 : nil }
        // A transaction whose operation failed will not commit: its state may be half-applied.
        if let failure = ownSession?.failure { throw failure }
        let ownTransaction = ownSession?.transaction
        let disk: (any FileSystem)? = context.configuration.inMemoryIdentifier == nil ? nil : PosixFileSystem()
        do {
            try await context.engine.writeCopy(
                to: url.standardizedFileURL.path, transaction: ownTransaction, destinationFileSystem: disk,
                encryptionKey: encryptionKey.map { [UInt8]($0) })
        } catch {
            throw RealmError(error)
        }
    }

    /// File size, bytes in use, and pinned versions.
    public struct Statistics: Sendable, Equatable {
        /// Bytes of the file.
        public var fileSize: Int
        /// Bytes the newest version needs (what compaction would leave).
        public var usedBytes: Int
        /// The newest version of the file.
        public var version: UInt64
        /// How many versions frozen values, snapshots and references keep alive.
        public var pinnedVersions: Int
        /// The oldest of them, if any.
        public var oldestPinnedVersion: UInt64?
        /// The version of the newest checkpoint in the file: where the next open starts (nil: none yet; open
        /// then replays the whole file).
        public var checkpointVersion: UInt64?
        /// Bytes of the file after the newest checkpoint: what the next open reads and replays. A checkpoint
        /// is written when it passes 4 MiB, at close and after compaction.
        public var bytesSinceCheckpoint: Int
        /// Index nodes read from the file since it was opened, and their size in the file.
        public var indexNodesLoaded: Int
        public var indexBytesLoaded: Int
        /// About how much memory the index nodes loaded since the cache last let go of them take (bounded
        /// by ``Configuration/indexCacheLimit``, beside what frozen values and snapshots in use hold).
        public var indexCacheBytes: Int
    }

    /// Whether the file of a configuration exists.
    public static func fileExists(for configuration: Configuration) -> Bool {
        guard let url = configuration.fileURL else { return false }
        return FileManager.default.fileExists(atPath: url.standardizedFileURL.path)
    }

    /// Deletes the file of a configuration and its auxiliary files.
    ///
    /// Refused while the file is open anywhere: in this process (a `Realm`, an observer) or in another one
    /// (every process that opens a realm file holds a shared lock on the lock file beside it, `<file>.lock`,
    /// until it closes it). Another process opening the file meanwhile waits for the deletion and then
    /// creates a new file. The lock file itself is kept, as Realm keeps its `.lock`: it holds no data.
    ///
    /// ```swift
    /// realm = nil                                            // release every Realm on the file
    /// await Realm.waitUntilClosed(configuration: config)     // the file is closed in this process
    /// try Realm.deleteFiles(for: config)
    /// ```
    /// - Returns: whether a file existed.
    /// - Throws: `RealmError.alreadyOpen` while any `Realm` of this process has it open (or its closing has
    ///   not finished: see ``waitUntilClosed(configuration:)``) or another process has it open; `.fileAccess`.
    @discardableResult
    public static func deleteFiles(for configuration: Configuration) throws -> Bool {
        guard let url = configuration.fileURL else { return false }
        let path = url.standardizedFileURL.path
        let key = Configuration.fileKey(url, configuration.fileSystem)
        guard !EngineRegistry.isOpen(key) else {
            throw RealmError(
                .alreadyOpen,
                "The realm at '\(path)' is open in this process: release every Realm on it (and await "
                    + "Realm.waitUntilClosed(configuration:)) before deleting its files.")
        }
        let existed = FileManager.default.fileExists(atPath: path)
        try removeFilesIfNotOpen(at: url, fileSystem: configuration.fileSystem)
        return existed
    }

    /// Waits until this process has closed the file of `configuration`: returns once no `Realm` (and no
    /// change stream or observer) of this process uses it and its closing has finished — the writer's last
    /// sync, the checkpoint, a background compaction that was running, the reserved space given back and
    /// the file's locks released. Returns at once when the file is not open in this process.
    ///
    /// Why: a `Realm` closes its file asynchronously when the last instance on it is released, so the file
    /// may still be open a moment later. After this returns, the program may copy, move or delete the file
    /// (``deleteFiles(for:)``), hand it to another process, or open it with another configuration.
    ///
    /// ```swift
    /// realm = nil
    /// await Realm.waitUntilClosed(configuration: config)
    /// try FileManager.default.copyItem(at: config.fileURL!, to: backupURL)
    /// ```
    /// - Important: It waits as long as any `Realm` on the file is alive in this process, including one the
    ///   caller itself still holds: release them first. It says nothing about other processes.
    public static func waitUntilClosed(configuration: Configuration) async {
        let key: String
        if let url = configuration.fileURL {
            key = Configuration.fileKey(url, configuration.fileSystem)
        } else {
            guard let (engineKey, _) = try? configuration.engineConfiguration() else { return }
            key = engineKey
        }
        await EngineRegistry.waitUntilClosed(key)
    }

    /// Removes the file at `url` and its auxiliary files, holding its lock file exclusively (so no other
    /// process has it open, and none opens it meanwhile).
    /// - Throws: `.alreadyOpen` when another process (or a closing engine of this one) has it open.
    static func removeFilesIfNotOpen(at url: URL, fileSystem: (any FileSystem)?) throws(RealmError) {
        let fs = fileSystem ?? PosixFileSystem()
        let path = url.standardizedFileURL.path
        guard fs.sharesFilesBetweenProcesses, FileManager.default.fileExists(atPath: path) else {
            return try removeFiles(at: url)
        }
        var failure: RealmError?
        do throws(StorageError) {
            try PresenceLock.withExclusive(forStore: fs.resolvedPath(path)) { () throws(StorageError) in
                do throws(RealmError) { try removeFiles(at: url) } catch { failure = error }
            }
        } catch {
            throw RealmError(error)
        }
        if let failure { throw failure }
    }

    static func removeFiles(at url: URL) throws(RealmError) {
        let path = url.standardizedFileURL.path
        for suffix in ["", ".creating", ".compacting"] {
            let file = path + suffix
            guard FileManager.default.fileExists(atPath: file) else { continue }
            do {
                try FileManager.default.removeItem(atPath: file)
            } catch {
                throw RealmError(
                    .fileAccess, "Could not delete '\(file)': \(error.localizedDescription)",
                    underlyingError: error as NSError)
            }
        }
    }
}
