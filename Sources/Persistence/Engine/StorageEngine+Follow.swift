import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A read-only engine follows the commits another process appends to its store.
///
/// ```text
///  file:  header | records known at open ... | records the writer appended since | zeros (reserved) |
///                                            ^ appendedEnd                       ^ validEnd of a scan
/// ```
/// The log is append-only, so catching up is a replay of the tail: each ``snapshot()`` (every `read`,
/// `refresh()` and `write` entry of a realm) of a read-only engine first checks the file's size and the
/// record header at the end of what it knows, and replays the complete records after it. A record still
/// being written (its checksum does not match yet) ends the replay; the next call tries again.
///
/// Durability: the writer publishes where its durable records end in the lock file
/// (``PresenceLock/publishDurableEnd(_:generation:)``) after each sync, and a reader replays nothing past it.
///
/// Safety against SIGBUS: bytes are read through the mapping only below a size this call just read with
/// `fstat`, and the writer never shortens the file while another process has it open (it holds the
/// ``PresenceLock`` exclusively to truncate, which this engine's shared hold prevents).
extension StorageEngine {
    /// Replays what other processes committed since this read-only engine last looked, and publishes it.
    /// Does nothing for a writable engine (it is the only writer). Errors leave the engine where it was.
    func followFile() {
        guard configuration.readOnly else { return }
        followLock.withLock { _ in
            do throws(StorageError) { try followFileLocked() } catch {}
        }
    }

    private func followFileLocked() throws(StorageError) {
        let (file, region, start, state, closed, presence, generation) = core.withLock {
            ($0.file, $0.region, $0.appendedEnd, $0.published, $0.isClosed, $0.presence, $0.header.generation)
        }
        guard !closed else { return }
        let fileSize = try fs.size(of: file)
        guard fileSize >= start + UInt64(Record.overhead) else { return }
        var current = region
        if fileSize > UInt64(region.length) {
            current = try fs.map(file, length: Self.regionLength(for: fileSize)).reading(through: region.cipher)
        }
        // Fast path: nothing after what is known (reserved zeros, or the end of the file).
        if current.bytes(at: Int(start), count: Record.headerSize).allSatisfy({ $0 == 0 }) { return }
        // Only what the writer made durable (it publishes where that ends): never a commit a power loss could
        // take back. A writer that publishes nothing (an older version of ActorStore) is followed to the end
        // of the file.
        let published = presence?.durableEnd(generation: generation)
        let size = min(fileSize, published ?? fileSize)
        guard size >= start + UInt64(Record.overhead) else { return }
        var replay = TailReplay(
            fileBytes: current.bytes(at: 0, count: Int(size)), region: current, state: state, end: start, path: path)
        // A record being written now may look damaged, or be followed by bytes that do: past a published
        // durable end (or without one) the scan's verdict on the tail is not trusted, only the records it
        // verified. Within one, damage is real and is reported (see ``scanFollowing(_:from:to:trusted:)``).
        scanFollowing(&replay, from: start, to: size, trusted: published.map { $0 != .max && $0 <= fileSize } ?? false)
        let (known, commits) = (replay.known, replay.commits)
        guard known.end > start else { return }
        core.withLock { core in
            guard !core.isClosed, core.appendedEnd == start else { return }
            if current !== core.region {
                core.region = current
                core.nodeStore.update(region: current, end: 0)
            }
            core.published = known.state
            core.tip = known.state
            core.appendedEnd = known.end
            core.durableEnd = known.end
            core.reservedEnd = max(core.reservedEnd, known.end)
        }
        // The observers of this process hear of the other process's commits as of its own.
        let observers = hub.record(commits, region: current)
        hub.dispatch(commits, to: observers, region: current)
    }

    /// Replays the records from `start` to `end` (the scan of a follower: a read-only engine, or reads of a
    /// writing one, see ``catchUpWithOtherWriters(upTo:)``). With `trusted` (`end` is a durable end another
    /// process published: every record before it is complete and synced), a record there that cannot be
    /// read is damage in the file, not a write in progress: the engine remembers it and every later
    /// snapshot throws it (``followDamage``), rather than staying at the version before it without a word.
    /// The records verified before the damage are replayed either way.
    func scanFollowing(_ replay: inout TailReplay, from start: UInt64, to end: UInt64, trusted: Bool) {
        var damage: StorageError?
        do throws(StorageError) {
            let outcome = try LogScanner.scan(replay.fileBytes, from: Int(start), path: path) {
                (entry) throws(StorageError) in try replay.visit(entry)
            }
            if outcome.validEnd < Int(end) {
                damage = StorageError(
                    .corrupted, "the record at offset \(outcome.validEnd) is damaged or incomplete",
                    offset: FileOffset(UInt64(outcome.validEnd)))
            }
        } catch {
            damage = error
        }
        replay.scratch.empty()
        guard trusted, let damage else { return }
        let version = replay.known.state.version
        let path = self.path
        core.withLock { core in
            guard core.followDamage == nil else { return }
            core.followDamage = StorageError(
                .corrupted,
                "The store at '\(path)' is damaged where another process's durable commits are (\(damage.message)): "
                    + "this process reads it up to \(version) and no further. Close every realm of it and open it "
                    + "again (open checks the whole log and says where it is damaged), or restore it from a backup.",
                offset: damage.offset)
        }
    }

    /// What a replayed commit changed, from the objects it wrote (`touched`): an object absent `before` is
    /// inserted, else modified — in every column, since the record does not say which changed (key-path
    /// filters of another process's commits are therefore coarse). A cleared table or a schema change
    /// counts as a schema change (observers re-read everything).
    static func changes(_ touched: Replay.Touched, before: DatabaseState, after: DatabaseState) -> ChangeSet {
        var changes = ChangeSet()
        changes.schemaChanged = touched.needsFullCheck
        for (table, key) in touched.upserted {
            var tableChanges = changes.tables[table] ?? TableChanges()
            if before.tables.rowLocation(table, key) == nil {
                _ = tableChanges.inserted.insert(key)
            } else if !tableChanges.inserted.contains(key) {
                var columns = ColumnSet()
                for column in 0..<(after.tables[table]?.schema.columns.count ?? 0) { columns.insert(column) }
                tableChanges.modified[key] = columns
            }
            changes.tables[table] = tableChanges
        }
        for (table, key) in touched.deleted {
            var tableChanges = changes.tables[table] ?? TableChanges()
            tableChanges.modified[key] = nil
            if tableChanges.inserted.remove(key) == nil, before.tables.rowLocation(table, key) != nil {
                _ = tableChanges.deleted.insert(key)
            }
            changes.tables[table] = tableChanges
        }
        return changes
    }

    /// Starts, once, the thread that makes an engine with observers follow the file by itself (without a
    /// read to trigger it): it waits for the store or its lock file to be modified (inotify on Linux: a
    /// writer appends to the store, then publishes the durable end in the lock file) or for
    /// ``followPollInterval`` to pass, whichever comes first, then catches up, which tells the observers: a
    /// read-only engine with ``followFile()``, a writable one that shares the file with writers in other
    /// processes (it has a ``PresenceLock``) with ``followOtherWriters()``. It ends when the engine is
    /// closed or released.
    func startFollowing() {
        guard fs.sharesFilesBetweenProcesses,
            configuration.readOnly || core.withLock({ $0.presence != nil })
        else { return }
        let start = followThreadStarted.withLock { started in
            defer { started = true }
            return !started
        }
        guard start else { return }
        let path = self.path
        let thread = Thread { [weak self] in
            let watch = FileWatch(path)
            defer { watch.close() }
            while true {
                watch.wait(upTo: StorageEngine.followPollInterval)
                guard let engine = self, !engine.core.withLock({ $0.isClosed }) else { return }
                if engine.configuration.readOnly { engine.followFile() } else { engine.followOtherWriters() }
            }
        }
        thread.name = "ActorStore.follow"
        thread.start()
    }

    /// The longest a read-only engine's observers wait for another process's commit when the file system
    /// does not report modifications (no inotify: Apple platforms, some network file systems): 50 ms.
    static let followPollInterval = 50
}

/// Replays the commit records a log scan visits after a known version: what a read-only engine and a
/// writer catching up with other processes both do with the tail another process appended. Records of
/// other kinds (nodes, checkpoints) are stepped over; each commit gives the state after it and what it
/// changed, for the change hub.
struct TailReplay {
    /// The file's bytes up to where the scan may read.
    let fileBytes: UnsafeRawBufferPointer
    /// Decrypted rows the replay reads (encrypted stores), kept until the caller empties it.
    let scratch = ScratchRows()
    private let region: MappedRegion
    private let path: String
    private let token = MutationToken.next()
    private var next: DatabaseState
    /// The state after the last replayed record, and where that record ends.
    private(set) var known: (state: DatabaseState, end: UInt64)
    /// The replayed commits, in order.
    private(set) var commits: [ChangeHub.Commit] = []

    init(fileBytes: UnsafeRawBufferPointer, region: MappedRegion, state: DatabaseState, end: UInt64, path: String) {
        self.fileBytes = fileBytes
        self.region = region
        self.path = path
        self.next = state
        self.known = (state, end)
    }

    /// Replays `entry` (a record the scan verified).
    mutating func visit(_ entry: LogScanner.Entry) throws(StorageError) {
        guard Record.Kind(rawValue: entry.kind) == .commit else {
            known.end = UInt64(entry.end)
            return
        }
        let (region, scratch, path) = (self.region, self.scratch, self.path)
        let readRow = { (location: RowLocation) throws(StorageError) -> RowView in
            if let cipher = region.cipher {
                return try scratch.keep(cipher: cipher, region: region, location: location, path: path)
            }
            return try RowView(region.bytes(at: Int(location.offset), count: Int(location.length)))
        }
        let before = next
        var touched: Replay.Touched? = Replay.Touched()
        if let cipher = region.cipher {
            defer { scratch.empty() }
            try Replay.apply(
                encrypted: entry, in: fileBytes, cipher: cipher, to: &next, token: token, path: path,
                touched: &touched, readRow: readRow)
        } else {
            let payload = UnsafeRawBufferPointer(rebasing: fileBytes[entry.payload])
            try Replay.apply(
                commit: payload, at: entry.payload.lowerBound, record: entry.offset, to: &next, token: token,
                path: path, readRow: readRow)
            touched?.add(payload)
        }
        known = (next, UInt64(entry.end))
        let changes = StorageEngine.changes(touched ?? Replay.Touched(), before: before, after: next)
        commits.append(ChangeHub.Commit(state: next, changes: changes, silenced: [], before: nil))
    }
}

/// Waits for modifications of a store or its lock file (where writers publish their durable end):
/// inotify (`IN_MODIFY`) on Linux, else a plain timeout.
private struct FileWatch {
    let descriptor: Int32

    init(_ path: String) {
        #if os(Linux)
            let descriptor = inotify_init1(Int32(IN_CLOEXEC))
            if descriptor >= 0, inotify_add_watch(descriptor, path, UInt32(IN_MODIFY)) < 0 {
                _ = Glibc.close(descriptor)
                self.descriptor = -1
            } else {
                self.descriptor = descriptor
                // No lock file (a store no writer of this version opened): the store's own changes wake.
                if descriptor >= 0 {
                    _ = inotify_add_watch(descriptor, PresenceLock.lockPath(forStore: path), UInt32(IN_MODIFY))
                }
            }
        #else
            self.descriptor = -1
        #endif
    }

    /// Returns after a modification or `milliseconds`, whichever comes first.
    func wait(upTo milliseconds: Int) {
        guard descriptor >= 0 else {
            var pause = timespec(tv_sec: 0, tv_nsec: milliseconds * 1_000_000)
            _ = nanosleep(&pause, nil)
            return
        }
        var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&request, 1, Int32(milliseconds)) > 0 else { return }
        // Drain the events: only "something changed" matters.
        var buffer = [UInt8](repeating: 0, count: 4096)
        _ = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    }

    func close() {
        #if canImport(Glibc)
            if descriptor >= 0 { _ = Glibc.close(descriptor) }
        #endif
    }
}
