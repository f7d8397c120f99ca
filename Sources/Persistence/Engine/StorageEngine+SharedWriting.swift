import Foundation

/// Several processes writing one store: the writer lock of every process, and catching up with what the
/// others appended.
///
/// ```text
///  process A: lock ─ catch up ─ build ─ append ─┐ (more of A's writers append: group commit) ─ sync ─ publish end ─ unlock
///  process B:        lockWriter (waits on a Dispatch thread) ·············································· lock ─ catch up (A's records) ─ build ─ …
/// ```
/// The writer lock (``PresenceLock/lockWriter(waiting:)``, a record lock on byte 1 of `<store>.lock`) is
/// taken by an engine when its first writer of a round gets the engine's write lock, before the
/// transaction is handed out, and kept while the engine writes: it goes once the engine is idle (nothing
/// waits for a sync, no writer holds the write lock) and either stayed idle for ``Configuration/writerLockTick`` or
/// another process waits for it (see ``writerLockTick(hold:roundsBefore:)``). So:
///
/// - **Every transaction starts at the newest version of any process.** Right after taking the lock, the
///   engine replays the records other processes appended since its own end (an incremental replay of the
///   log's tail, as a read-only engine follows a writer), so there is nothing to conflict with: writes of
///   all processes are serial, in the order they took the lock.
/// - **Group commit inside a process**: the lock stays with the process while its writers append behind
///   one another; the sync that covers them publishes the durable end (under the lock), and the lock goes
///   when the engine is idle.
/// - **A writer killed mid-append** leaves a torn record: the next holder finds it when it catches up and
///   zeroes it (never truncates: other processes may map the file) before it appends. Complete records a
///   killed writer appended but did not sync (never acknowledged) are kept, as a restart after such a crash
///   keeps them; the catching-up writer syncs them before they become visible, when the lock file's durable
///   end does not cover them.
/// - Blocking never happens on the cooperative pool: one `F_SETLK` try inline, and if another process holds
///   the lock, the waiting `F_SETLKW` on a Dispatch thread (``offload(_:)``).
/// - **A process alone pays nothing per commit.** While the engine holds the lock without a break, no
///   other process can have appended, so a round takes neither the lock nor a look at the file's size.
///   A tick every ``Configuration/writerLockTick`` (a Dispatch timer, only while the lock is held) lets it go after an
///   idle tick, or, when a process waits for it (``PresenceLock/writerIsWaiting()``, one `fcntl`), at the
///   engine's next idle moment; the engine's next round then waits its turn on a Dispatch thread instead
///   of taking the lock back first. So another process waits at most about two ticks for an idle writer,
///   and one tick plus the round in progress (a long transaction: its length) for a busy one.
///
/// Without a ``PresenceLock`` (an in-memory store, a file system without record locks) there is one writer
/// (the exclusive `flock` on the store), and none of this runs.
extension StorageEngine {
    /// Takes the engine's write lock, then the writer lock of every process, caught up.
    /// - Throws: what catching up throws (`.corrupted`, `.poisoned`, `.closed`); the locks are released then.
    nonisolated(nonsending) func lockWriter() async throws(StorageError) {
        await writeLock.lock()
        do throws(StorageError) {
            try await lockFileWriter()
        } catch {
            writeLock.unlock()
            throw error
        }
    }

    /// Cuts the file back to `offset` after a failed append, or poisons the engine when another process has
    /// the file open (a shorter file under its mapping is a SIGBUS there): the partial bytes stay, and the
    /// next writer of any process zeroes them as a torn tail. Throws what the truncation throws.
    func cutBack(_ file: OpenFile, to offset: UInt64, after error: StorageError) throws(StorageError) {
        let (fs, presence) = (self.fs, core.withLock { $0.presence })
        guard let presence else { return try fs.truncate(file, to: offset) }
        let cut: Void? = try presence.whileAlone { () throws(StorageError) in try fs.truncate(file, to: offset) }
        if cut == nil { throw error }
    }

    /// Lets the engine's write lock go, and the writer lock of every process if the engine is idle.
    func unlockWriter() {
        writeLock.unlock()
        releaseWriterLockIfIdle()
    }

    /// Takes the writer lock of every process, if the engine does not hold it, and catches up with what
    /// other processes appended meanwhile. The caller holds the engine's write lock.
    nonisolated(nonsending) func lockFileWriter() async throws(StorageError) {
        let (presence, held, closed, yielded) = core.withLock { core in
            core.writerRounds &+= 1
            return (core.presence, core.writerLockHeld, core.isClosed, core.writerLockYielded)
        }
        guard let presence, !held else { return }
        if closed { throw StorageError(.closed, "The store at '\(path)' is closed.") }
        // Just given to a waiting process: taking it back inline could beat that process to it.
        var locked = false
        if !yielded { locked = try presence.lockWriter(waiting: false) }
        if !locked {
            // Another process is writing: wait for it on a Dispatch thread, never on the cooperative pool.
            let locked = try await offload { () throws(StorageError) in try presence.lockWriter(waiting: true) }
            guard locked else { throw StorageError(.closed, "The store at '\(path)' is closed.") }
        }
        let (hold, rounds) = core.withLock { core in
            core.writerLockHeld = true
            core.writerLockWanted = false
            core.writerLockYielded = false
            core.writerHolds &+= 1
            return (core.writerHolds, core.writerRounds)
        }
        scheduleWriterLockTick(hold: hold, roundsBefore: rounds)
        do throws(StorageError) {
            try catchUpWithOtherWriters()
        } catch {
            core.withLock { core in
                core.presence?.unlockWriter()
                core.writerLockHeld = false
            }
            throw error
        }
    }

    /// Lets the writer lock of every process go if another process waits for it (or `always`) and
    /// nothing of this engine needs it: no writer holds the write lock (one that does comes here later)
    /// and no commit waits for a sync (the sync thread comes here after its last round). Cheap when the
    /// lock is not held or not wanted: a round of a process alone keeps it (see the tick).
    func releaseWriterLockIfIdle(always: Bool = false) {
        guard core.withLock({ $0.writerLockHeld && (always || $0.writerLockWanted) }), writeLock.tryLock()
        else { return }
        core.withLock { core in
            guard core.writerLockHeld, !core.syncInFlight, core.waiting.isEmpty else { return }
            core.presence?.unlockWriter()
            core.writerLockHeld = false
            core.writerLockYielded = core.writerLockWanted
            if core.writerLockWanted { core.writerHandOffs += 1 }
            core.writerLockWanted = false
        }
        writeLock.unlock()
    }

    /// The writer lock's next tick (see ``writerLockTick(hold:roundsBefore:)``), on a Dispatch thread.
    private func scheduleWriterLockTick(hold: UInt64, roundsBefore rounds: UInt64) {
        let (seconds, attoseconds) = configuration.writerLockTick.components
        let tick = DispatchTimeInterval.nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        DispatchQueue.global(qos: .userInitiated).asyncAfter(deadline: .now() + tick) {
            [weak self] in self?.writerLockTick(hold: hold, roundsBefore: rounds)
        }
    }

    /// Every ``Configuration/writerLockTick`` while the engine holds the writer lock (`hold`, its count of holds): no
    /// round began since the last tick (`roundsBefore`), so the engine is idle: the lock goes. Else, when
    /// another process waits for it, it goes at the engine's next idle moment (now, if that is now). Stops
    /// when the hold ends (or the engine is gone: the timer holds it weakly).
    private func writerLockTick(hold: UInt64, roundsBefore: UInt64) {
        let (current, rounds, presence) = core.withLock { core in
            (core.writerLockHeld && core.writerHolds == hold, core.writerRounds, core.presence)
        }
        guard current, let presence else { return }
        if rounds == roundsBefore {
            releaseWriterLockIfIdle(always: true)
        } else if presence.writerIsWaiting() {
            core.withLock { $0.writerLockWanted = true }
            releaseWriterLockIfIdle()
        }
        guard core.withLock({ $0.writerLockHeld && $0.writerHolds == hold }) else { return }
        scheduleWriterLockTick(hold: hold, roundsBefore: rounds)
    }

    /// A writable engine's reads (``snapshot()``, ``newestVersionAndCacheEpoch()``) catch up with the
    /// commits of other processes when the lock file says one made records durable past this engine's end:
    /// one memory read of the lock file's mapping when none did. Without the writer lock (a read never waits
    /// for another process): only up to that durable end, whose records are complete and never change, as a
    /// read-only engine follows a writer. Skipped while a writer of this engine holds its write lock (it is
    /// caught up then).
    func followOtherWriters() {
        let (presence, end, generation) = core.withLock { core -> (PresenceLock?, UInt64, UInt64) in
            (core.writerLockHeld || core.isClosed ? nil : core.presence, core.appendedEnd, core.header.generation)
        }
        // `.max` (a writer without durability, which publishes no end, this engine included): not followed
        // here, only at the next write.
        guard let presence, let published = presence.mappedDurableEnd(generation: generation), published > end,
            published != .max, writeLock.tryLock()
        else { return }
        defer { writeLock.unlock() }
        try? catchUpWithOtherWriters(upTo: published)
    }

    /// Replays the records other processes appended after this engine's end, then publishes the newest
    /// version and tells the observers. The caller holds the engine's write lock.
    ///
    /// Under the writer lock (`limit` nil: nothing is being appended now), up to the end of the file: a torn
    /// tail a killed writer left is zeroed, and records the lock file does not say are durable are synced
    /// first. Without it, up to `limit` (a durable end the lock file gave): nothing is written.
    func catchUpWithOtherWriters(upTo limit: UInt64? = nil) throws(StorageError) {
        let path = self.path
        let (file, region, start, state, presence, generation, problem, reservedEnd) = core.withLock { core in
            (
                core.file, core.region, core.appendedEnd, core.published, core.presence, core.header.generation,
                core.isClosed ? StorageError(.closed, "The store at '\(path)' is closed.") : core.poisoned,
                core.reservedEnd
            )
        }
        if let problem { throw problem }
        let fileSize = try fs.size(of: file)
        let size = min(fileSize, limit ?? fileSize)
        guard size > start else { return }
        var current = region
        if fileSize > UInt64(region.length) {
            current = try fs.map(file, length: Self.regionLength(for: fileSize)).reading(through: region.cipher)
        }
        // Fast path: no record after this engine's end (space reserved by this or another process).
        if size < start + UInt64(Record.overhead)
            || current.bytes(at: Int(start), count: Record.headerSize).allSatisfy({ $0 == 0 })
        {
            if limit == nil && fileSize > start {
                // A writer killed while it streamed a record (see RecordStream) left bytes after a header of
                // zeros: zeroed, as any torn tail, so that the space reads as reserved (the scanner tells a
                // torn write from damage by the zeros the log appends into). Checked whatever this engine
                // thought reserved: another process may have streamed into that space since.
                do throws(StorageError) {
                    try Self.zeroTail(
                        fs, file, in: current.bytes(at: 0, count: Int(fileSize)), from: start, to: fileSize)
                } catch {
                    core.withLock { $0.poisoned = Self.poison(path, error) }
                    throw Self.poison(path, error)
                }
            }
            if limit == nil && (fileSize > reservedEnd || current !== region) {
                core.withLock { core in
                    core.reservedEnd = max(core.reservedEnd, fileSize)
                    if current !== core.region {
                        core.region = current
                        core.nodeStore.update(region: current, end: 0)
                    }
                }
            }
            return
        }
        var replay = TailReplay(
            fileBytes: current.bytes(at: 0, count: Int(size)), region: current, state: state, end: start, path: path)
        let fileBytes = replay.fileBytes
        let visit = { (entry: LogScanner.Entry) throws(StorageError) in try replay.visit(entry) }
        var durable = false
        if limit != nil {
            // Records before the limit (a published durable end) are complete: damage there is reported, and
            // the records verified before it count (see scanFollowing).
            scanFollowing(&replay, from: start, to: size, trusted: size == limit)
            durable = true
        } else {
            let outcome = try LogScanner.scan(fileBytes, from: Int(start), path: path, visit: visit)
            replay.scratch.empty()
            let end = UInt64(outcome.validEnd)
            // A writer killed mid-append: its partial record (and whatever follows it) is zeroed, never cut
            // off (another process may map the file up to its size). It was never acknowledged.
            if outcome.tornTailAt != nil || outcome.discardedRecords > 0 {
                do throws(StorageError) {
                    try Self.zeroTail(fs, file, in: fileBytes, from: end, to: fileSize)
                } catch {
                    core.withLock { $0.poisoned = Self.poison(path, error) }
                    throw Self.poison(path, error)
                }
            }
            // Records no sync of their writer covered (it was killed before): durable before anyone sees them.
            // Without durability nothing is synced, and the watermark of this engine's records stays put.
            let published = presence?.durableEnd(generation: generation) ?? 0
            durable = published >= replay.known.end && published != .max
            if replay.known.end > start && !durable && configuration.durability == .full {
                do throws(StorageError) { try fs.sync(file) } catch {
                    core.withLock { $0.poisoned = Self.poison(path, error) }
                    throw Self.poison(path, error)
                }
                durable = true
                publishDurableEnd(replay.known.end)
            }
        }
        guard replay.known.end > start else { return }
        let caughtUp = replay.known
        core.withLock { core in
            guard core.appendedEnd == start else { return }
            if current !== core.region {
                core.region = current
                core.nodeStore.update(region: current, end: 0)
            }
            core.published = caughtUp.state
            core.tip = caughtUp.state
            core.appendedEnd = caughtUp.end
            core.durableEnd = caughtUp.end
            if durable { core.syncedEnd = max(core.syncedEnd, caughtUp.end) }
            core.reservedEnd = max(core.reservedEnd, caughtUp.end, limit == nil ? fileSize : 0)
            core.foreignCatchUps += 1
        }
        let commits = replay.commits
        guard !commits.isEmpty else { return }
        // The observers of this process hear of the other process's commits as of its own.
        let observers = hub.record(commits, region: current)
        hub.dispatch(commits, to: observers, region: current)
    }
}
