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
    private var transactionWaiters: [CheckedContinuation<Void, Never>] = []
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
            result = try block(self)
        } catch {
            if session != nil, context.session === session { cancelWrite() }
            throw error
        }
        // The block may have ended the transaction itself (cancelWrite(), invalidate()).
        if session != nil, context.session === session { try await commitWrite() }
        return result
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
        while let session = context.session {
            precondition(
                session.owner == nil || session.owner != task,
                "The Realm is already in a write transaction: commit or cancel it before beginning another.")
            await withCheckedContinuation { transactionWaiters.append($0) }
        }
        let transaction: WriteTransaction
        do {
            transaction = try await context.engine.beginWrite()
        } catch {
            resumeNextWaiter()
            throw RealmError(error)
        }
        if context.session != nil {
            // Another task began a transaction on this actor while we waited for the engine; queue again.
            transaction.rollback()
            try await beginWrite()
            return
        }
        context.session = WriteSession(context: context, transaction: transaction, owner: task)
        if context.snapshot.version < transaction.state.version { context.invalidateLocations() }
        context.rebind()
    }

    /// Commits the open write transaction: when it returns, the changes are durable (per the
    /// configuration's durability) and visible to every realm on the file.
    /// - Throws: a ``RealmError`` recorded by an operation of the transaction (then nothing is committed),
    ///   or one raised by the commit (`diskFull`, `ioFailure`: nothing committed; `poisoned`: reopen).
    public func commitWrite() async throws {
        let session = ownSession(for: "commitWrite()")
        context.session = nil
        context.invalidateLocations()
        if session.failure == nil, let limit = configuration.maximumNumberOfActiveVersions,
            context.versionsPinnedByOthers() >= Int(clamping: limit)
        {
            session.fail(
                RealmError(
                    .tooManyVersions,
                    "\(context.engine.statistics.pinnedVersions) versions are pinned (the limit, "
                        + "maximumNumberOfActiveVersions, is \(limit)), so this commit could not be read back. "
                        + "Release frozen values, snapshots and ThreadSafeReferences you no longer need, or raise the "
                        + "limit. Nothing was committed."))
        }
        if let failure = session.failure {
            session.transaction.rollback()
            context.advance()
            context.rebind()
            resumeNextWaiter()
            throw failure
        }
        do {
            try await session.transaction.commit()
        } catch {
            context.advance()
            context.rebind()
            resumeNextWaiter()
            throw RealmError(error)
        }
        // The commit is acknowledged: the realm must see it, even past the version limit (checked above).
        context.advance(ignoringLimit: true)
        context.rebind()
        resumeNextWaiter()
        // A commit may complete without suspending (durability `.none`, or a lone commit that polled for
        // its sync), so a loop of writes could hold its thread as a loop of reads does (see `read`): give it
        // up once per time slice, as a writer waiting for a thread (readers of the file give theirs up at
        // once, so it runs again soon).
        if isTurnOver(now: DispatchTime.now().uptimeNanoseconds) { await engine.yieldWriter() }
    }

    /// Discards everything the open write transaction did. Objects it added become invalidated; objects it
    /// deleted are valid again, the same instances (see ``ObjectBase/isInvalidated``).
    public func cancelWrite() {
        let session = ownSession(for: "cancelWrite()")
        context.session = nil
        session.transaction.rollback()
        context.invalidateLocations()
        // Stay at (at least) the version the transaction started from: objects read in it stay valid.
        context.advance()
        context.rebind()
        resumeNextWaiter()
    }

    /// The open write transaction, which the current task must own: ending another task's transaction
    /// (while that task is suspended inside it, say in an `await`) is a programmer error.
    private func ownSession(for call: String) -> WriteSession {
        guard let session = context.session else {
            preconditionFailure("\(call) was called without a write transaction: call beginWrite() first.")
        }
        if let owner = session.owner {
            precondition(
                owner == Self.currentTaskID(),
                "\(call) was called from a task that did not begin the open write transaction: another task "
                    + "opened it with beginWrite() and only that task may end it.")
        }
        return session
    }

    private func resumeNextWaiter() {
        if !transactionWaiters.isEmpty { transactionWaiters.removeFirst().resume() }
    }

    private static func currentTaskID() -> Int? {
        withUnsafeCurrentTask { $0?.hashValue }
    }

    // MARK: Adding, creating, deleting

    /// Adds an unmanaged object — and the unmanaged objects it links to — to the realm inside the open
    /// write transaction. The object becomes managed: later changes to it are persisted.
    ///
    /// With `update: .modified` or `.all`, an object whose primary key exists updates the stored one
    /// instead (and becomes that object). A failure (a duplicate primary key with `.error`) makes the
    /// enclosing `write` throw and commit nothing.
    public func add(_ object: ObjectBase, update: UpdatePolicy = .error) {
        addInTransaction(object, update: update)
    }

    private func addInTransaction(_ object: ObjectBase, update: UpdatePolicy) {
        let session = context.requireWriteSession(for: "add objects")
        guard !(object is EmbeddedObject) || object.isManaged else {
            return session.fail(
                RealmError(
                    .invalidObject,
                    "Embedded objects cannot be added on their own: assign the \(type(of: object)) to a property of "
                        + "its parent."))
        }
        session.add(object, update: update)
    }

    /// Adds an unmanaged object in a write transaction of its own (or the open one). `sending`: the caller
    /// gives the object away — the compiler rejects any later use of it there.
    /// ```swift
    /// let fido = Dog()
    /// fido.name = "Fido"
    /// try await realm.add(fido)
    /// ```
    public func add(_ object: sending ObjectBase, update: UpdatePolicy = .error) async throws {
        if let session = context.session, session.owner == Self.currentTaskID() {
            return addInTransaction(object, update: update)
        }
        try await beginWrite()
        addInTransaction(object, update: update)
        try await commitWrite()
    }

    /// Adds each object of a sequence (see `add(_:update:)`).
    public func add<S: Sequence>(_ objects: S, update: UpdatePolicy = .error) where S.Element: ObjectBase {
        for object in objects { add(object, update: update) }
    }

    /// Creates an object from a dictionary (`["name": "Rex"]`), an array of values in property declaration
    /// order (`["Rex", 3]`), or another object of the class, inside the open write transaction; nested
    /// dictionaries and arrays create linked objects.
    ///
    /// Missing properties take their default values; dictionary keys that name no property are ignored (a
    /// JSON document may carry more than the model keeps). With a primary key and `update: .modified` (or
    /// `.all`), an existing object is updated with only the values given; `nil` (or `NSNull()`) clears an
    /// optional property. A value that does not fit makes the enclosing `write` throw
    /// `RealmError.invalidValue` and commit nothing.
    ///
    /// To copy an object from a realm on another file, pass its frozen form (live objects cannot leave
    /// their actor): the copy takes its values and copies the objects it links to with it (and the objects
    /// those link to, cycles included), each once, with the same update policy; the copies link to each
    /// other as the originals do. Frozen objects may also stand among nested values.
    /// ```swift
    /// let rex = await source.read { $0.objects(Dog.self).first!.freeze() }
    /// try await destination.write { $0.create(Dog.self, value: rex) }
    /// ```
    @discardableResult
    public func create<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: UpdatePolicy = .error) -> T {
        let session = context.requireWriteSession(for: "create objects")
        if let object = session.create(type, value: value, update: update) as? T { return object }
        return T()
    }

    /// Deletes a managed object; links to it become nil and it leaves every list. Embedded objects it owns
    /// are deleted with it.
    public func delete(_ object: ObjectBase) {
        context.requireWriteSession(for: "delete objects").delete(object)
    }

    /// Deletes each object of a sequence (a `List`, `MutableSet`, `LinkingObjects` or an array of objects).
    ///
    /// An object the sequence holds more than once (a `List` may) is deleted once. Every object must exist
    /// when the call starts: one deleted before is an error, as when deleting one object.
    public func delete<S: Sequence>(_ objects: S) where S.Element: ObjectBase {
        let session = context.requireWriteSession(for: "delete objects")
        var seen = Set<SequenceDeletion>()
        for object in Array(objects) {
            if let managed = object._managed, managed.context === context,
                !seen.insert(SequenceDeletion(table: managed.table.tableID, key: managed.key)).inserted
            {
                continue
            }
            session.delete(object)
        }
    }

    /// Deletes every object of a `Results` (as it is when the call starts).
    /// - Complexity: O(n) in the matches: the query runs once, then each match is deleted.
    public func delete<T: Object>(_ results: Results<T>) {
        let session = context.requireWriteSession(for: "delete objects")
        guard results.context === context, let binding = context.binding(for: T.self) else {
            // No table yet (nothing to delete), or results of another realm, which isolation should rule
            // out: deleting its first object then reports the error.
            for object in Array(results) { session.delete(object) }
            return
        }
        // By key: no object is made for a row only to delete it.
        session.delete(results.keys, of: binding)
    }

    /// Deletes every object in the realm. The schema stays.
    /// - Complexity: O(n) in the objects of every class.
    public func deleteAll() {
        context.requireWriteSession(for: "delete objects").deleteAll()
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
        if engine.hasPendingResumptions {
            lastTurn = DispatchTime.now().uptimeNanoseconds
            return (result, true)
        }
        return (result, isTurnOver(now: DispatchTime.now().uptimeNanoseconds))
    }

    /// Whether ``timeSlice`` has passed since this realm's reads or writes last gave their thread up; if so,
    /// the caller is about to, and the next slice starts now.
    private func isTurnOver(now: UInt64) -> Bool {
        guard now &- lastTurn >= Self.timeSlice else { return false }
        lastTurn = now
        return true
    }

    /// Runs `body` seeing this task's view: when another task has a transaction open (between its
    /// `beginWrite()` and `commitWrite()`), the last committed version instead of its uncommitted changes.
    private func outsideOthersTransaction<R>(_ body: () throws -> R) rethrows -> R {
        guard let session = context.session, session.owner != nil, session.owner != Self.currentTaskID() else {
            return try body()
        }
        // Hide the other task's transaction for the (synchronous) duration of `body`.
        context.session = nil
        context.invalidateLocations()
        defer {
            context.session = session
            context.invalidateLocations()
        }
        return try body()
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
            guard session.owner == nil || session.owner == Self.currentTaskID() else { return }
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
        let ownSession = context.session.flatMap { $0.owner == Self.currentTaskID() ? $0 : nil }
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

/// A row that `Realm.delete(_:)` of a sequence has deleted: it skips the row when the sequence holds it again.
private struct SequenceDeletion: Hashable {
    let table: TableID
    let key: ObjectKey
}
