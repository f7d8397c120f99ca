import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The write path: one writer at a time, group commit, publish-after-durable, poison on fsync failure.
///
/// ```text
///  writer A: lock ─ build ─ append ─ unlock ─┐ wait ·············· resumed (A durable, visible)
///  writer B:          lock (waits) ─ build ─ append ─ unlock ─┐ wait ··· resumed (B durable, visible)
///  sync thread:                          fdatasync(A) ────────┴─ fdatasync(A+B… only what's left) ──
/// ```
/// Appends happen in lock order; the sync thread makes everything appended so far durable with one
/// `fdatasync`, then publishes the newest version it covered and resumes every commit it covered. The
/// sync runs on a dedicated thread (``SyncThread``), never on the cooperative pool.
/// No commit is acknowledged or visible before the sync that covers it returns.
extension StorageEngine {
    /// Starts a write transaction, waiting (suspended, FIFO) for the previous writer to finish — of this
    /// process, and of any other process writing the file (see ``lockWriter()``): the transaction starts at
    /// the newest version of any process.
    ///
    /// The transaction owns the write lock from here on and releases it in one place
    /// (``WriteTransaction/releaseWriteLock()``): after its record is appended, at rollback, or when it is
    /// released unfinished.
    /// - Throws: `.readOnly`, `.closed`, `.poisoned`, `.limitExceeded` (the store is at the last version).
    package nonisolated(nonsending) func beginWrite() async throws(StorageError) -> WriteTransaction {
        if configuration.readOnly {
            throw StorageError(.readOnly, "The store at '\(path)' was opened read-only; open it writable to change it.")
        }
        // With other processes on the file: the writer lock of every process too, caught up with their
        // commits, so the transaction starts at the newest version of any process (see SharedWriting).
        try await lockWriter()
        let (state, end, region, problem) = core.withLock {
            core -> (DatabaseState, UInt64, MappedRegion, StorageError?) in
            let problem: StorageError? =
                core.isClosed ? StorageError(.closed, "The store at '\(path)' is closed.") : core.poisoned
            return (core.tip, core.appendedEnd, core.region, problem)
        }
        let spare = core.withLock { core in
            defer { core.spareBuffer = nil }
            return core.spareBuffer
        }
        let transaction = WriteTransaction(
            engine: self, base: state, recordStart: end, region: region, buffer: spare)
        if let problem = problem ?? Self.versionLimit(state.version, path) {
            transaction.rollback()
            throw problem
        }
        return transaction
    }

    /// The largest record buffer kept for the next write transaction: the record of a million-row bulk
    /// insert or update fits.
    static let spareBufferLimit = 64 << 20

    /// Keeps the record buffer of a finished write transaction for the next one. Its pages are then already
    /// mapped: a fresh buffer of tens of megabytes is faulted in and zeroed page by page as the record
    /// grows (12% of a million-row `update(_:_:)` on the 2-core VM, in `perf`). Kept up to
    /// ``spareBufferLimit``, and only while it is used: a transaction that needed less than a sixteenth of
    /// a buffer over 1 MiB gives it back to the allocator, so a bulk write's buffer stays until the next
    /// small transaction at the latest (or until close).
    func recycle(_ buffer: RecordBuffer) {
        guard buffer.capacity <= Self.spareBufferLimit,
            buffer.capacity <= 1 << 20 || buffer.count >= buffer.capacity / 16
        else {
            core.withLock { $0.spareBuffer = nil }
            return
        }
        core.withLock { core in
            if !core.isClosed { core.spareBuffer = buffer }
        }
    }

    /// The error for a store at the last version it can reach, or nil.
    private static func versionLimit(_ version: Version, _ path: String) -> StorageError? {
        guard version == .max else { return nil }
        return StorageError(
            .limitExceeded,
            "The store at '\(path)' is at \(version), the last version a store can reach; it accepts no "
                + "more writes. Copy its contents into a new store.")
    }

    /// Runs `body` in a write transaction and commits it; rolls back (and rethrows) if `body` throws.
    package func write<R>(_ body: (WriteTransaction) throws -> R) async throws -> (R, CommitResult) {
        let txn = try await beginWrite()
        let value: R
        do {
            value = try body(txn)
        } catch {
            txn.rollback()
            throw error
        }
        return (value, try await txn.commit())
    }

    /// What is left of a commit once its record is appended (or the append failed), for after the write
    /// lock is released: see ``WriteTransaction/commit()``.
    enum AppendOutcome {
        /// Nothing was written: the transaction changed nothing, or the append failed.
        case done(Result<CommitResult, StorageError>)
        /// A commit of durability `.none`, already the newest version: its observers are still to be told.
        case published(CommitResult, ChangeHub.Commit, MappedRegion)
        /// A durable commit, waiting for the sync that covers it (which `wakeSyncThread` starts).
        case awaitingSync(CommitWaiter, wakeSyncThread: Bool, poll: Bool)
    }

    /// The first half of a commit, under the write lock (which it neither takes nor releases): appends the
    /// transaction's sealed record, then makes the new version the tip (and, without durability, the
    /// published version) or queues it for the sync thread.
    nonisolated(nonsending) func append(_ txn: WriteTransaction) async -> AppendOutcome {
        guard txn.hasOperations else {
            return .done(.success(CommitResult(version: txn.baseVersion, changes: txn.changes)))
        }
        // A sync may have failed since this transaction began: its base may then be lost on disk, so
        // nothing may be appended (let alone acknowledged) behind it.
        let (file, poisoned, reserved, synced, damage) = core.withLock {
            ($0.file, $0.poisoned, $0.reservedEnd, $0.syncedEnd, $0.nodeStore.damage)
        }
        // The chunks of the record already streamed to the file (see RecordStream): all written before the
        // rest is; if the commit fails, the file is cut back to where the record starts.
        var streamed = 0
        var streamedThrough = txn.recordStart
        var streamedChecksum: (crc: CRC32C, end: Int)?
        if let stream = txn.buffer.recordStream {
            await stream.drain()
            streamed = txn.buffer.streamed
            streamedThrough = txn.recordStart + UInt64(stream.furthest)
            streamedChecksum = stream.checksum(from: WriteTransaction.bodyStart)
            txn.buffer.detachStream()
            if let failure = stream.failure {
                discardStreamedRecord(from: txn.recordStart, through: streamedThrough)
                return .done(.failure(failure))
            }
        }
        func fail(_ error: StorageError) -> AppendOutcome {
            if streamed > 0 { discardStreamedRecord(from: txn.recordStart, through: streamedThrough) }
            return .done(.failure(error))
        }
        if let poisoned { return fail(poisoned) }
        // A damaged index node read as empty: a commit built on it could drop data (see NodeStore).
        if let damage { return fail(damage) }
        // The watermark: what a completed sync covers now. The sync thread only raises it, so it never
        // claims a byte that was not durable when this record was written.
        let record: WriteTransaction.SealedRecord
        do throws(StorageError) {
            if txn.cipher != nil && txn.buffer.count >= EncryptedRecord.parallelSealThreshold {
                // Encrypting a large record (a bulk insert) takes every core for a while: not on the
                // cooperative pool. Safety: the transaction belongs to the task suspended here, which does not
                // touch it until this returns; the result is read after the offload has finished.
                nonisolated(unsafe) let transaction = txn
                nonisolated(unsafe) var sealed: WriteTransaction.SealedRecord?
                try await offload { () throws(StorageError) in sealed = try transaction.seal(watermark: synced) }
                record = sealed!
            } else {
                record = try txn.seal(watermark: synced, streamed: streamedChecksum)
            }
        } catch {
            return fail(error)
        }
        do throws(StorageError) {
            try await appendRecord(record.bytes, to: file, at: record.start, streamed: streamed)
            // A truncation of the record below what was streamed left bytes after its end.
            if streamedThrough > record.end {
                // Off the cooperative pool: it syncs.
                let (end, through) = (record.end, streamedThrough)
                try await offload { () throws(StorageError) in try self.clearTail(file, from: end, through: through) }
            }
            try remapIfNeeded(for: record.end)
        } catch {
            if streamed > 0 {
                discardStreamedRecord(from: record.start, through: max(streamedThrough, record.end))
            } else {
                rollBackAppend(file: file, to: record.start, after: error)
            }
            return .done(.failure(error))
        }
        if configuration.durability == .full && record.end > reserved { reserveSpace(in: file, after: record.end) }
        let result = CommitResult(version: record.state.version, changes: txn.changes)
        let silenced = txn.silencedSubscriptions
        let commit = ChangeHub.Commit(
            state: record.state, changes: result.changes, silenced: silenced,
            before: silenced.isEmpty ? nil : txn.baseState)
        if configuration.durability == .none {
            let region = core.withLock { core in
                core.tip = record.state
                core.appendedEnd = record.end
                core.durableEnd = record.end
                core.published = record.state
                return core.region
            }
            return .published(result, commit, region)
        }
        let waiter = CommitWaiter(resumptions: resumptions)
        return core.withLock { core -> AppendOutcome in
            if let poisoned = core.poisoned { return .done(.failure(poisoned)) }
            core.tip = record.state
            core.appendedEnd = record.end
            core.waiting.append(PendingCommit(end: record.end, result: result, commit: commit, waiter: waiter))
            // Poll for the sync only when no other writer needs the CPU (see CommitWaiter).
            let poll = core.waiting.count == 1 && writeLock.waiterCount == 0
            let wake = !core.syncInFlight
            core.syncInFlight = true
            return .awaitingSync(waiter, wakeSyncThread: wake, poll: poll)
        }
    }

    /// The second half of a commit, after the write lock was released: tells the observers of a commit
    /// without durability, or waits until the sync covers a durable one.
    nonisolated(nonsending) func complete(_ outcome: AppendOutcome) async throws(StorageError) -> CommitResult {
        switch outcome {
        case .done(let result):
            return try result.get()
        case .published(let result, let commit, let region):
            hub.publish([commit], region: region)
            considerAutoCompaction()
            considerCheckpoint()
            return result
        case .awaitingSync(let waiter, let wake, let poll):
            if wake { syncThread.wake() }
            return try await waiter.wait(polling: poll)
        }
    }

    /// Writes the record: inline when small (a page-cache copy), on a Dispatch thread when large. With
    /// `streamed` > 0, the bytes from ``WriteTransaction/bodyStart`` to `streamed` are in the file already (see
    /// ``RecordStream``): it writes the rest, then the header.
    private nonisolated(nonsending) func appendRecord(
        _ buffer: RecordBuffer, to file: OpenFile, at offset: UInt64, streamed: Int
    ) async throws(StorageError) {
        let tailStart = max(streamed, WriteTransaction.bodyStart)
        let head = buffer.bytes(at: 0, count: streamed > 0 ? WriteTransaction.bodyStart : buffer.count)
        let tail = buffer.bytes(at: tailStart, count: streamed > 0 ? buffer.count - tailStart : 0)
        if buffer.count - (streamed > 0 ? streamed - WriteTransaction.bodyStart : 0) < 1 << 20 {
            try fs.writeAll(file, tail, at: offset + UInt64(tailStart))
            try fs.writeAll(file, head, at: offset)
            return
        }
        // Safety: the buffer belongs to the suspended transaction, which does not touch it until this returns.
        nonisolated(unsafe) let (headBytes, tailBytes) = (head, tail)
        let fs = self.fs
        try await offload { () throws(StorageError) in
            try fs.writeAll(file, tailBytes, at: offset + UInt64(tailStart))
            try fs.writeAll(file, headBytes, at: offset)
        }
    }

    /// A record buffer's stream for the record starting at `recordStart` in the current file.
    func makeRecordStream(recordStart: UInt64) -> RecordStream {
        RecordStream(fs: fs, file: core.withLock { $0.file }, recordStart: recordStart)
    }

    /// Removes from the file the bytes a transaction that did not commit streamed to it (from `start`, where
    /// its record would have started, through `end`), so that no later, shorter record can leave them behind
    /// (see ``clearTail(_:from:through:)``). The caller holds the write lock. If even that fails, the engine
    /// is poisoned.
    func discardStreamedRecord(from start: UInt64, through end: UInt64) {
        guard end > start else { return }
        do throws(StorageError) { try clearTail(core.withLock { $0.file }, from: start, through: end) } catch {
            core.withLock { core in core.poisoned = core.poisoned ?? Self.poison(path, error) }
        }
    }

    /// Makes the file end at `start`, where no record may follow: cuts it back; while other processes have
    /// it open (it must not shrink under their mappings), writes zeros from `start` through `end` instead (a
    /// tail of zeros is no record, like the reserved space). Then syncs the file, whatever the durability:
    /// the next record is appended at `start`, and if a power loss took its end, what the disk held after it
    /// must read as the zeros the log appends into, not as the bytes discarded (which would make a torn
    /// write look like damage). The caller holds the write lock; it blocks on the sync (a rare path: a
    /// transaction of more than ``Configuration/recordStreamChunk`` bytes that did not commit).
    func clearTail(_ file: OpenFile, from start: UInt64, through end: UInt64) throws(StorageError) {
        let (fs, presence) = (self.fs, core.withLock { $0.presence })
        let truncate = { () throws(StorageError) in try fs.truncate(file, to: start) }
        let cut: Void? =
            if let presence { try presence.whileAlone(truncate) } else { try truncate() }
        if cut != nil {
            try fs.sync(file)
            core.withLock { $0.reservedEnd = min($0.reservedEnd, start) }
            return
        }
        // Only over bytes the file has: a stream that failed may have been asked for more than it wrote.
        let end = min(end, try fs.size(of: file))
        try Self.writeZeros(fs, file, from: start, to: end)
        try fs.sync(file)
        core.withLock { $0.reservedEnd = max($0.reservedEnd, end) }
    }

    /// After a failed append: cut the file back to the last good record so no partial bytes remain for a
    /// later, shorter record to leave behind. If even that fails, poison the engine.
    private func rollBackAppend(file: OpenFile, to offset: UInt64, after error: StorageError) {
        do throws(StorageError) {
            try cutBack(file, to: offset, after: error)
            core.withLock { $0.reservedEnd = offset }
        } catch {
            core.withLock { $0.poisoned = Self.poison(path, error) }
        }
    }

    /// Writes `Configuration.reservedSpace` zero bytes after the record that ends at `end`, so that the next
    /// commits overwrite space the file already has instead of growing it.
    ///
    /// Why: `fdatasync` after an append that grows the file must also write the inode (the new size) —
    /// a second synchronous write per commit; after an overwrite of space that is already allocated and
    /// durable, it writes the data only. `engine-bench commit-serial` on this project's ext4 VM, builds
    /// alternating: commit p50 169–216 µs without the reservation, 134–179 µs with it. The zeros become
    /// durable with the sync of the commit that wrote them; the size changes again only once per
    /// reservation.
    ///
    /// Safe by the file format: bytes after the last record are never read as records. A zero tail left
    /// by a crash is discarded at open like any torn tail (`RecoveryReport.truncatedBytes` counts it),
    /// and ``close()`` gives the space back. A failure here is ignored: the commit does not need the
    /// space, and whatever part of the zeros was written lies after the last record too.
    func reserveSpace(in file: OpenFile, after end: UInt64) {
        let size = min(configuration.reservedSpace, Self.reservationZeros.count)
        guard size > 0 else { return }
        let zeros = UnsafeRawBufferPointer(rebasing: Self.reservationZeros.prefix(size))
        do throws(StorageError) {
            try fs.writeAll(file, zeros, at: end)
            core.withLock { $0.reservedEnd = end + UInt64(zeros.count) }
        } catch {
            return
        }
    }

    /// `Configuration.maximumReservedSpace` zero bytes, allocated once and never freed (`calloc` maps an
    /// allocation of this size lazily, from zero pages); empty if the allocation failed, which turns
    /// reserving off.
    // Safety: initialised once (a `static let` is initialised exactly once, thread-safely) and only read.
    nonisolated(unsafe) static let reservationZeros: UnsafeRawBufferPointer = {
        let size = Configuration.maximumReservedSpace
        guard let zeros = calloc(1, size) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: zeros, count: size)
    }()

    /// Cuts the reserved zeros off the end of the file (at close): a closed store's file ends at its last
    /// record. Not synced, and a failure is ignored: a zero tail that survives is discarded at the next open.
    func releaseReservedSpace(_ core: Core) {
        guard core.reservedEnd > core.appendedEnd, core.poisoned == nil, !configuration.readOnly else { return }
        guard let presence = core.presence else {
            try? fs.truncate(core.file, to: core.appendedEnd)
            return
        }
        // Only while no other process has the file open: a reader there may map it up to its current size,
        // and reading a mapping past the end of its file is a SIGBUS. Else the zeros stay (the next writer
        // uses them as reserved space).
        let (fs, file, end) = (fs, core.file, core.appendedEnd)
        _ = try? presence.whileAlone { () throws(StorageError) in try fs.truncate(file, to: end) }
    }

    /// Maps a larger region when the file outgrows the current one.
    func remapIfNeeded(for end: UInt64) throws(StorageError) {
        let (file, length, cipher) = core.withLock { ($0.file, $0.region.length, $0.region.cipher) }
        guard end > UInt64(length) else { return }
        let region = try fs.map(file, length: Self.regionLength(for: end)).reading(through: cipher)
        core.withLock { core in
            core.region = region
            core.nodeStore.update(region: region, end: 0)
        }
    }

    static func poison(_ path: String, _ cause: StorageError) -> StorageError {
        StorageError(
            .poisoned,
            "Writing to '\(path)' failed (\(cause.message)), so commits since the last durable one may be lost. "
                + "Reopen the store to continue; everything acknowledged before the failure is safe.",
            errno: cause.errno)
    }

    /// The sync thread's round: sync, publish, resume; again while commits keep arriving.
    /// - Returns: whether the last sync covered a single commit (a serial writer).
    func runSyncLoop() -> Bool {
        while true {
            // A writer appending right now would miss this sync and wait a whole round for the next:
            // give it a moment (bounded) to join this one.
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: GroupCommit.joinWindow)
            while writeLock.isLocked && clock.now < deadline { sched_yield() }
            let (file, target) = core.withLock { ($0.file, $0.appendedEnd) }
            var failure: StorageError?
            do throws(StorageError) { try fs.sync(file) } catch { failure = error }
            // Published while this engine still holds the writer lock (a commit waits for this round), so
            // what the lock file says only grows.
            if failure == nil { publishDurableEnd(target) }
            let (ready, idle, error, again, region) = core.withLock { core in
                if let failure {
                    let poisoned = Self.poison(path, failure)
                    core.poisoned = poisoned
                    let all = core.waiting
                    core.waiting = []
                    core.syncInFlight = false
                    let idle = core.idleWaiters
                    core.idleWaiters = []
                    return (all, idle, Optional(poisoned), false, core.region)
                }
                core.durableEnd = max(core.durableEnd, target)
                core.syncedEnd = max(core.syncedEnd, target)
                let covered = core.waiting.prefix { $0.end <= target }
                core.waiting.removeFirst(covered.count)
                if let newest = covered.last { core.published = newest.commit.state }
                if core.waiting.isEmpty {
                    core.syncInFlight = false
                    let idle = core.idleWaiters
                    core.idleWaiters = []
                    return (Array(covered), idle, nil, false, core.region)
                }
                return (Array(covered), [], nil, true, core.region)
            }
            let published: [ChangeHub.Commit] = error != nil ? [] : ready.map(\.commit)
            let observers = hub.record(published, region: region)
            // Idle: the writer lock of every process goes now, before the committers are resumed (a serial
            // writer's next `beginWrite` would otherwise meet this thread holding the write lock to check).
            if !again { releaseWriterLockIfIdle() }
            for commit in ready {
                commit.waiter.complete(error.map { .failure($0) } ?? .success(commit.result))
            }
            hub.dispatch(published, to: observers, region: region)
            for waiter in idle { waiter.resume() }
            if !ready.isEmpty && error == nil {
                considerAutoCompaction()
                considerCheckpoint()
            }
            if !again { return ready.count == 1 }
        }
    }

    /// Returns once no commit is waiting for a sync.
    func waitUntilSynced() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = core.withLock { core in
                if !core.syncInFlight { return true }
                core.idleWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// Where a committing task waits for its sync.
///
/// A lone committer (no other commit waiting, no writer queued) first polls for a short while
/// (``GroupCommit/committerPoll``), yielding between polls (other tasks run; no thread blocks). Past it, or
/// when other writers need the CPU, it parks on a continuation like any other await.
final class CommitWaiter: Sendable {
    private struct State {
        var result: Result<CommitResult, StorageError>?
        var continuation: CheckedContinuation<CommitResult, any Error>?
    }
    private let state = Locked(State())
    /// Counts the committer from the moment `complete` resumes it until it runs (see ``PendingResumptions``).
    private let resumptions: PendingResumptions

    init(resumptions: PendingResumptions) {
        self.resumptions = resumptions
    }

    func complete(_ result: Result<CommitResult, StorageError>) {
        let continuation = state.withLock { s in
            s.result = result
            defer { s.continuation = nil }
            return s.continuation
        }
        guard let continuation else { return }
        resumptions.resuming()
        continuation.resume(with: result.mapError { $0 as any Error })
    }

    nonisolated(nonsending) func wait(polling: Bool) async throws(StorageError) -> CommitResult {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: GroupCommit.committerPoll)
        while polling && clock.now < deadline {
            if let result = state.withLock({ $0.result }) { return try result.get() }
            await Task.yield()
        }
        var suspended = false
        // A continuation stored here is resumed by `complete` only, which counted it.
        defer { if suspended { resumptions.resumed() } }
        do {
            var result = try await withCheckedThrowingContinuation { continuation in
                let done = state.withLock { s -> Result<CommitResult, StorageError>? in
                    if let result = s.result { return result }
                    s.continuation = continuation
                    return nil
                }
                suspended = done == nil
                if let done { continuation.resume(with: done.mapError { $0 as any Error }) }
            }
            result.suspended = suspended
            return result
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.ioFailure, "The commit failed: \(error)")
        }
    }
}
