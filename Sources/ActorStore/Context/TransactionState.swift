import ActorStorePersistence

/// Where a realm's write transaction is, and which writers of the realm wait for it: the one place that
/// state changes.
///
/// ```
///            begin(_:)                           fail(_:in:), the first failure only
///   ┌──────┐ ────────────► ┌──────────────────┐ ────────────────► ┌────────────────────────┐
///   │ idle │               │ writing(session) │                   │ failed(session, error) │
///   └──────┘ ◄──────────── └──────────────────┘                   └────────────────────────┘
///       ▲           end()                                                   │
///       └──────────────────────────────── end() ────────────────────────────┘
/// ```
///
/// - `begin(_:)` needs `idle`: a writer that finds a transaction open joins the waiters
///   (`enqueue(_:)`), first come, first served; the end of each transaction resumes one of them
///   (`resumeNextWaiter()`), which then looks at the state again.
/// - `failed` is the transaction's failure latch. Realm's mutating calls (`add`, `create`, property
///   setters) do not throw, so an operation that fails records its error here and the transaction stays
///   open; every later operation of it is skipped, and its commit rolls back and throws the error.
///   Nothing of a failed transaction is ever committed, and the realm is idle (usable) once it ends.
/// - `end()` leaves either state for `idle` and hands the session and its failure to the realm, which
///   commits or rolls back and then runs its one epilogue (`Realm.closeTransaction`).
/// - While another task's transaction is open (that task suspended in an `await` inside it), a read of
///   the realm by another task hides it for its synchronous duration (`hide()` / `restore(_:)`), so
///   it sees the last committed version.
///
/// The engine's `WriteTransaction` keeps a latch of its own for operations that failed half-way (its
/// safety net for code that writes to the engine directly); every engine error reaches this latch first
/// (`WriteSession.run`), so the object layer never sees that one.
struct TransactionState {
    /// The state proper.
    enum Phase {
        /// No transaction is open: the realm reads its snapshot.
        case idle
        /// A transaction is open: the realm reads and writes through the session's engine transaction.
        case writing(WriteSession)
        /// An operation of the open transaction failed with `error` (the first failure): later operations
        /// are skipped and the commit throws it.
        indirect case failed(WriteSession, RealmError)
    }

    private(set) var phase = Phase.idle
    /// The writers of this realm waiting for the open transaction to end, oldest first.
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// The open transaction's session (failed or not), or nil when the realm is idle.
    var session: WriteSession? {
        switch phase {
        case .idle: nil
        case .writing(let session), .failed(let session, _): session
        }
    }

    /// The failure latched by `session`'s transaction, or nil (also when `session` is not the open one).
    func failure(of session: WriteSession) -> RealmError? {
        guard case .failed(let open, let error) = phase, open === session else { return nil }
        return error
    }

    /// The number of writers waiting for the open transaction to end.
    var waiterCount: Int { waiters.count }

    /// idle → writing.
    mutating func begin(_ session: WriteSession) {
        guard case .idle = phase else { preconditionFailure("A write transaction began while another was open.") }
        phase = .writing(session)
    }

    /// writing → failed, when `session` is the open transaction and nothing failed in it yet (the first
    /// failure is the one the commit throws). Otherwise nothing happens.
    mutating func fail(_ error: RealmError, in session: WriteSession) {
        guard case .writing(let open) = phase, open === session else { return }
        phase = .failed(session, error)
    }

    /// writing or failed → idle.
    /// - Returns: the transaction's session, and its failure if it failed.
    mutating func end() -> (session: WriteSession, failure: RealmError?) {
        let ended: (WriteSession, RealmError?)
        switch phase {
        case .idle: preconditionFailure("A write transaction ended while none was open.")
        case .writing(let session): ended = (session, nil)
        case .failed(let session, let error): ended = (session, error)
        }
        phase = .idle
        return ended
    }

    /// Hides the open transaction (the phase reads `idle`) until `restore(_:)`.
    /// - Returns: the phase to restore.
    mutating func hide() -> Phase {
        let hidden = phase
        phase = .idle
        return hidden
    }

    /// Puts back the phase `hide()` hid.
    mutating func restore(_ hidden: Phase) {
        guard case .idle = phase else { preconditionFailure("A hidden write transaction changed while hidden.") }
        phase = hidden
    }

    /// Queues a writer until a transaction ends.
    mutating func enqueue(_ waiter: CheckedContinuation<Void, Never>) { waiters.append(waiter) }

    /// Resumes the writer that has waited longest, if any: its turn to look at the state.
    mutating func resumeNextWaiter() {
        if !waiters.isEmpty { waiters.removeFirst().resume() }
    }
}

extension RealmContext {
    /// The open transaction's session (failed or not), or nil: what reads go through.
    var session: WriteSession? { transaction.session }

    /// Opens `session`'s transaction (idle → writing).
    func beginTransaction(_ session: WriteSession) {
        transaction.begin(session)
    }

    /// Ends the open transaction (writing or failed → idle); row locations read in it are stale.
    /// - Returns: its session, and its failure if it failed.
    func endTransaction() -> (session: WriteSession, failure: RealmError?) {
        let ended = transaction.end()
        invalidateLocations()
        return ended
    }

    /// Runs `body` with the open transaction hidden: the realm reads its snapshot meanwhile.
    func withTransactionHidden<R>(_ body: () throws -> R) rethrows -> R {
        let hidden = transaction.hide()
        invalidateLocations()
        defer {
            transaction.restore(hidden)
            invalidateLocations()
        }
        return try body()
    }
}
