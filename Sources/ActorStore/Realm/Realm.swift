import ActorStorePersistence
import Foundation

/// A realm: an object database on one file, as a Swift actor.
///
/// ```swift
/// let realm = try await Realm()
/// try await realm.write { realm in
///     realm.create(Dog.self, value: ["name": "Rex", "age": 1])
/// }
/// let count = await realm.read { $0.objects(Dog.self).count }
/// ```
///
/// Live objects, ``Results`` and collections belong to the actor: they can be used only inside it (in a
/// `write` or `read` closure, or any function isolated to it), and the compiler refuses to let them out.
/// What crosses actors is frozen (``FrozenRealm``, ``Frozen``, ``FrozenResults``) or a
/// ``ThreadSafeReference``.
///
/// A realm sees one version of the data at a time. Each `write`, `read` and `freeze` call first advances it
/// to the newest version (Realm's auto-refresh). Any number of `Realm` actors may be open on one file in
/// a process; they share one storage engine, their writes are serialised (first come, first served), and
/// reads never wait for writes.
///
/// - Important: Live objects, ``Results`` and collections never leave the actor (the compiler checks it);
///   a ``ThreadSafeReference`` is resolved once, in a realm on the same file. See <doc:Concurrency>.
public actor Realm {
    /// The configuration the realm was opened with.
    public nonisolated let configuration: Configuration
    let context: RealmContext
    /// The file's engine and registry key, for observers started from any task.
    nonisolated let engine: StorageEngine
    nonisolated let fileKey: String
    /// When this realm's reads or writes last gave their thread up (`DispatchTime` nanoseconds; see the async
    /// `read`).
    private var lastTurn: UInt64 = DispatchTime.now().uptimeNanoseconds

    /// Opens the realm at ``Configuration/defaultConfiguration``.
    /// - Throws: ``RealmError`` (`fileAccess`, `alreadyOpen` by another process, `schemaMismatch`,
    ///   `corrupted`, ...).
    public init() async throws {
        try await self.init(configuration: .defaultConfiguration)
    }

    /// Opens (creating if needed) the realm a configuration describes, recovering from any crash, and
    /// migrating a file of a lower schema version (see ``Configuration/migrationBlock``).
    /// - Throws: ``RealmError`` with a message saying what to do (`fileAccess`, `alreadyOpen` by another
    ///   process, `schemaMismatch`, `corrupted`, `unsupportedFormat`, ...), or the error the migration block
    ///   threw (the file is then unchanged).
    public init(configuration: Configuration) async throws {
        self.configuration = configuration
        let context = try await RealmContext.open(configuration)
        self.context = context
        self.engine = context.engine
        self.fileKey = context.fileKey
        context.realm = self
    }

    // MARK: Reading

    /// Runs `block` on the newest version and returns its `Sendable` value.
    /// ```swift
    /// let names = await realm.read { $0.objects(Dog.self).map(\.name) }
    /// ```
    ///
    /// While another task of this realm has a transaction open (between its `beginWrite()` and
    /// `commitWrite()`), `read` sees the last committed version, never the transaction's uncommitted changes.
    public func read<Result: Sendable>(_ block: @Sendable (isolated Realm) throws -> Result) rethrows -> Result {
        try outsideOthersTransaction {
            if context.session == nil { context.refresh() }
            return try block(self)
        }
    }

    /// Runs `block` on the newest version and returns its `Sendable` value: the form an `await` picks (the
    /// synchronous one above serves code already isolated to the realm, such as a `write` block).
    ///
    /// It gives its thread up (`Task.yield()`) after the block when another task needs one: when a writer
    /// on the file was resumed (its commit became durable) and waits for a thread, and otherwise once per
    /// 500 µs of reads back to back. An uncontended `await realm.read { }` does not suspend — the task runs
    /// the actor's code on its own thread and comes back without giving the thread up — so without this, a
    /// loop of reads held its thread for as long as it ran, and as many such loops as the cooperative pool
    /// has threads (two on a 2-core machine) starved every other task, writers included.
    public nonisolated(nonsending) func read<Result: Sendable>(
        _ block: @Sendable (isolated Realm) throws -> Result
    ) async rethrows -> Result {
        let (result, yield) = try await readTakingTurns(block)
        if yield { await Task.yield() }
        return result
    }

    /// How long a realm's reads or writes run back to back before one gives its thread up to other tasks.
    static let timeSlice: UInt64 = 500_000

    /// `read`, and whether the reading task should give its thread up now (see the async `read`).
    private func readTakingTurns<Result: Sendable>(
        _ block: @Sendable (isolated Realm) throws -> Result
    ) rethrows -> (Result, Bool) {
        let result = try read(block)
        return (result, shouldGiveThreadUp())
    }

    /// Whether a task that just read from this realm should give its thread up: a writer on the file waits
    /// for a thread, or ``timeSlice`` has passed since this realm's calls last gave theirs up.
    private func shouldGiveThreadUp() -> Bool {
        if engine.hasPendingResumptions {
            lastTurn = DispatchTime.now().uptimeNanoseconds
            return true
        }
        return isTurnOver(now: DispatchTime.now().uptimeNanoseconds)
    }

    /// Whether ``timeSlice`` has passed since this realm's reads or writes last gave their thread up; if so,
    /// the caller is about to, and the next slice starts now.
    func isTurnOver(now: UInt64) -> Bool {
        guard now &- lastTurn >= Self.timeSlice else { return false }
        lastTurn = now
        return true
    }

    /// Starts a new time slice now: the caller has just had its thread back after giving it up.
    func startTurn(now: UInt64) { lastTurn = now }

    /// Runs `body` seeing this task's view: when another task has a transaction open (between its
    /// `beginWrite()` and `commitWrite()`), the last committed version instead of its uncommitted changes.
    private func outsideOthersTransaction<R>(_ body: () throws -> R) rethrows -> R {
        guard let session = context.session, !session.belongsToCurrentTask else {
            return try body()
        }
        // Hide the other task's transaction for the (synchronous) duration of `body`.
        return try context.withTransactionHidden(body)
    }

    /// All objects of a class, as a lazy, live ``Results``.
    public func objects<T: Object>(_ type: T.Type) -> Results<T> {
        Results(context: context)
    }

    /// The object of a class with a primary key value, or nil.
    public func object<T: Object>(ofType type: T.Type, forPrimaryKey key: Any?) -> T? {
        // One registry lookup when the class is bound (the common case); `info(for:)` registers it otherwise.
        let binding = context.binding(for: type)
        let info = binding?.info ?? context.info(for: type)
        guard let primaryKey = info.primaryKey, let binding else {
            precondition(
                info.primaryKey != nil,
                "object(ofType:forPrimaryKey:) needs a primary key, and \(info.className) has none: declare one "
                    + "with @Persisted(primaryKey: true).")
            return nil
        }
        guard let converted = primaryKey.accessor.fromAny(key ?? NSNull()),
            let indexKey = IndexKey(primaryKey.accessor.encode(converted, _Encoder(session: nil)))
        else { return nil }
        return context.object(binding, primaryKey: indexKey) as? T
    }

    /// The object of a class with a primary key value, or nil: the same as
    /// ``object(ofType:forPrimaryKey:)-(_,Any?)``, chosen by the compiler when the key's type is known. When
    /// it is the primary key's type (an `Int` for `@Persisted(primaryKey: true) var id = 0`), the key is
    /// encoded directly instead of being boxed in `Any` and converted by a dynamic cast; a key of another
    /// type converts exactly as the `Any?` form converts it (an `Int32` to `Int`, a `String` to a `UUID`).
    public func object<T: Object, Key: _PersistableScalar>(ofType type: T.Type, forPrimaryKey key: Key) -> T? {
        let binding = context.binding(for: type)
        let info = binding?.info ?? context.info(for: type)
        guard let primaryKey = info.primaryKey, primaryKey.kind.swiftType == Key.self else {
            // No primary key (a programming error, reported there), or a key of another type.
            let stored = key._rlmToStored.raw
            // A nil optional is what the `Any?` form receives as nil, not an `Any` holding `Optional.none`.
            if case .null = stored { return object(ofType: type, forPrimaryKey: nil) }
            return object(ofType: type, forPrimaryKey: key as Any)
        }
        guard let binding, let indexKey = IndexKey(key._rlmToStored.raw) else { return nil }
        return context.object(binding, primaryKey: indexKey) as? T
    }

    /// Advances to the newest version. Returns whether there was a newer one. Inside a write transaction
    /// it does nothing (a write always starts from the newest version).
    @discardableResult
    public func refresh() -> Bool { context.refresh() }

    /// Releases the version the realm holds until the next read or write; live objects are re-read then.
    /// Inside a write transaction, cancels it (as Realm). While another task's transaction is open (that
    /// task suspended in an `await` inside it), it does nothing: only that task may end it.
    public func invalidate() {
        if let session = context.session {
            guard session.belongsToCurrentTask else { return }
            cancelWrite()
        }
        context.refresh()
    }

    /// Whether the realm has no objects.
    public var isEmpty: Bool {
        outsideOthersTransaction {
            context.withStore { store in store.state.tableIDs.values.allSatisfy { store.count($0) == 0 } }
        }
    }

    /// The version the realm currently sees (increases with each commit to the file).
    public var version: UInt64 { outsideOthersTransaction { context.version.rawValue } }

    // MARK: Freezing and references

    /// An immutable, `Sendable` snapshot of the newest version. O(1). It pins its version (see
    /// ``statistics``) until the last frozen value made from it is released.
    ///
    /// Inside a write transaction it freezes the version the transaction started from.
    public func freeze() -> FrozenRealm {
        outsideOthersTransaction {
            if context.session == nil { context.refresh() }
            return FrozenRealm(FrozenContext(context))
        }
    }

    /// An immutable, `Sendable` snapshot of the newest version: the form an `await` picks (the synchronous
    /// one above serves code already isolated to the realm).
    ///
    /// Like the async `read`, it gives its thread up (`Task.yield()`) after taking the snapshot when
    /// another task needs one: a writer on the file was resumed and waits for a thread, or 500 µs of this
    /// realm's calls ran back to back. A loop of `await realm.freeze()` followed by reads of the snapshot
    /// never suspends otherwise, and as many such loops as the cooperative pool has threads would keep the
    /// file's writers from running at all.
    /// ```swift
    /// while !done {
    ///     let snapshot = await realm.freeze()
    ///     show(snapshot.objects(Dog.self).count)
    /// }
    /// ```
    /// - Important: Reading a ``FrozenRealm`` never awaits, so a loop over one snapshot that never awaits
    ///   holds its thread for as long as it runs: take a new snapshot (or `await Task.yield()`) now and then.
    public nonisolated(nonsending) func freeze() async -> FrozenRealm {
        let (frozen, yield) = await freezeTakingTurns()
        if yield { await Task.yield() }
        return frozen
    }

    /// `freeze()`, and whether the task should give its thread up now (see the async `freeze()`).
    private func freezeTakingTurns() -> (FrozenRealm, Bool) {
        let frozen: FrozenRealm = freeze()
        return (frozen, shouldGiveThreadUp())
    }
}
