import ActorStorePersistence
import Foundation

extension Realm {
    // MARK: Writes

    /// Runs `block` in a write transaction and commits it; if `block` throws, or an operation inside it
    /// failed, nothing is committed and the error is thrown.
    ///
    /// The block runs isolated to the realm, so live objects can be used freely inside it:
    /// ```swift
    /// try await realm.write { realm in
    ///     let rex = realm.create(Dog.self, value: ["name": "Rex"])
    ///     rex.age += 1
    /// }
    /// ```
    /// Returns the block's value, which must be `Sendable` (a count, a frozen object) — a live object
    /// cannot leave the actor.
    /// - Throws: the block's error, or a ``RealmError`` recorded by an operation (a duplicate primary key,
    ///   an invalid value) or raised by the commit (`diskFull`, `ioFailure`, `poisoned`).
    @discardableResult
    public func write<Result: Sendable>(_ block: @Sendable (isolated Realm) throws -> Result) async throws -> Result {
        try await performWrite(block)
    }

    /// Runs `block` in a write transaction and commits it (the form for blocks without a result, such as
    /// `realm.write { $0.create(Dog.self, value: ["name": "Rex"]) }`, whose value is discarded).
    public func write(_ block: @Sendable (isolated Realm) throws -> Void) async throws {
        try await performWrite(block)
    }

    private func performWrite<Result>(_ block: (isolated Realm) throws -> Result) async throws -> Result {
        try await beginWrite()
        let session = context.session
        let result: Result
        do {
            session?.runsWriteBlock = true
            defer { session?.runsWriteBlock = false }
            result = try block(self)
        } catch {
            if isStillOpen(session) { cancelWrite() }
            throw error
        }
        // The block may have ended the transaction itself (cancelWrite(), invalidate()).
        if isStillOpen(session) { try await commitWrite() }
        return result
    }

    /// Whether `session`'s transaction is the one open now.
    private func isStillOpen(_ session: WriteSession?) -> Bool {
        session != nil && context.session === session
    }

    /// Whether a write transaction is open on this realm.
    public var isInWriteTransaction: Bool { context.session != nil }

    /// Starts a write transaction, first waiting for any other writer on the file and advancing to the
    /// newest version. End it with ``commitWrite()`` or ``cancelWrite()``.
    ///
    /// Calling it again from the same task before ending the transaction is a programmer error (it
    /// stops the program); another task waits for the transaction to end.
    /// - Important: Each `await` before ``commitWrite()`` lets other calls on this actor run in the middle of
    ///   the transaction (actors are reentrant). Prefer ``write(_:)->_``, whose block is synchronous.
    /// - Throws: `RealmError.readOnly`, `.closed`, `.poisoned`.
    public func beginWrite() async throws {
        if configuration.readOnly {
            throw RealmError(
                .readOnly, "This realm was opened with readOnly: open it with readOnly = false to change it.")
        }
        let task = Self.currentTaskID()
        // The realm's own writers queue here, first come, first served (see `TransactionState`); writers of
        // other realms on the file queue for the engine's writer lock below.
        while let session = context.session {
            precondition(
                session.owner == nil || session.owner != task,
                "The Realm is already in a write transaction: commit or cancel it before beginning another.")
            await withCheckedContinuation { context.transaction.enqueue($0) }
        }
        let transaction: WriteTransaction
        do {
            transaction = try await context.engine.beginWrite()
        } catch {
            // No transaction began: the next waiter tries in turn.
            context.transaction.resumeNextWaiter()
            throw RealmError(error)
        }
        if context.session != nil {
            // Another task began a transaction on this actor while we waited for the engine; queue again.
            transaction.rollback()
            try await beginWrite()
            return
        }
        context.beginTransaction(WriteSession(context: context, transaction: transaction, owner: task))
        if context.snapshot.version < transaction.state.version { context.invalidateLocations() }
        context.rebind()
    }

    /// Commits the open write transaction: when it returns, the changes are durable (per the
    /// configuration's durability) and visible to every realm on the file.
    /// - Throws: a ``RealmError`` recorded by an operation of the transaction (then nothing is committed),
    ///   or one raised by the commit (`diskFull`, `ioFailure`: nothing committed; `poisoned`: reopen).
    public func commitWrite() async throws {
        let open = ownSession(for: "commitWrite()")
        if open.failure == nil, let limit = configuration.maximumNumberOfActiveVersions,
            context.versionsPinnedByOthers() >= Int(clamping: limit)
        {
            open.fail(
                RealmError(
                    .tooManyVersions,
                    "\(context.engine.statistics.pinnedVersions) versions are pinned (the limit, "
                        + "maximumNumberOfActiveVersions, is \(limit)), so this commit could not be read back. "
                        + "Release frozen values, snapshots and ThreadSafeReferences you no longer need, or raise the "
                        + "limit. Nothing was committed."))
        }
        // The realm is idle from here: another task may begin a transaction while this commit is awaited.
        let (session, failure) = context.endTransaction()
        if let failure {
            closeTransaction(session, committed: false)
            throw failure
        }
        let result: CommitResult
        do {
            result = try await session.transaction.commit()
        } catch {
            closeTransaction(session, committed: false)
            throw RealmError(error)
        }
        closeTransaction(session, committed: true)
        // A commit may complete without suspending (durability `.none`, or a lone commit that polled for
        // its sync), so a loop of writes could hold its thread as a loop of reads does (see `read`): give it
        // up once per time slice, as a writer waiting for a thread (readers of the file give theirs up at
        // once, so it runs again soon). A commit that suspended for its sync has just had its turn: giving
        // the thread up again would cost a second wait for a thread of the pool in the same write.
        let now = DispatchTime.now().uptimeNanoseconds
        if result.suspended {
            startTurn(now: now)
        } else if isTurnOver(now: now) {
            await engine.yieldWriter()
        }
    }

    /// Discards everything the open write transaction did. Objects it added become invalidated; objects it
    /// deleted are valid again, the same instances (see ``ObjectBase/isInvalidated``).
    public func cancelWrite() {
        _ = ownSession(for: "cancelWrite()")
        let (session, _) = context.endTransaction()
        closeTransaction(session, committed: false)
    }

    /// The epilogue of every transaction, once it has ended (see `TransactionState`): committed, cancelled,
    /// rolled back for a latched failure, or failed to commit.
    ///
    /// A transaction that did not commit is rolled back (when its commit failed, that only makes sure the
    /// engine's writer lock is let go). The realm then moves to the newest version: after a commit, the one
    /// it made, even past the version limit (the commit is acknowledged, so the realm must see it);
    /// otherwise at least the version the transaction started from, so objects read in it stay valid.
    /// Last, the writer of this realm that has waited longest gets its turn.
    private func closeTransaction(_ session: WriteSession, committed: Bool) {
        if !committed { session.transaction.rollback() }
        context.advance(ignoringLimit: committed)
        context.rebind()
        context.transaction.resumeNextWaiter()
    }

    /// The open write transaction, which the current task must own: ending another task's transaction
    /// (while that task is suspended inside it, say in an `await`) is a programmer error.
    private func ownSession(for call: String) -> WriteSession {
        guard let session = context.session else {
            preconditionFailure("\(call) was called without a write transaction: call beginWrite() first.")
        }
        precondition(
            session.belongsToCurrentTask,
            "\(call) was called from a task that did not begin the open write transaction: another task "
                + "opened it with beginWrite() and only that task may end it.")
        return session
    }

    /// The number of this realm's writers waiting for its open transaction to end (for tests).
    var waitingWriterCount: Int { context.transaction.waiterCount }

    static func currentTaskID() -> Int? {
        withUnsafeCurrentTask { $0?.hashValue }
    }
}
