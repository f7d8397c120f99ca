import ActorStorePersistence
import Foundation

/// Keeps a closure observation (`observe(…)`) alive: delivery stops at ``invalidate()`` or when the token
/// is released, as in Realm. Pass tokens to ``Realm/write(withoutNotifying:_:)->_`` to keep their observers
/// from hearing about one commit.
///
/// - Important: Keep the token as long as you want deliveries: releasing it stops them, as
///   ``invalidate()`` does.
public final class NotificationToken: Sendable {
    let subscription: ChangeSubscription?
    private let task: Locked<Task<Void, Never>?>

    init(subscription: ChangeSubscription?, task: Task<Void, Never>?) {
        self.subscription = subscription
        self.task = Locked(task)
    }

    /// Stops delivery: no block call starts after this returns (one already running finishes).
    public func invalidate() {
        subscription?.cancel()
        task.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    /// Whether ``invalidate()`` was called (or observation ended).
    var isInvalidated: Bool { subscription?.isCancelled ?? true }

    deinit { invalidate() }
}

/// Runs a closure observation: iterates `next` in a task and calls `deliver` for each element until the
/// token is invalidated or released.
enum ClosureObservation {
    static func start<Element: Sendable>(
        subscription: ChangeSubscription?,
        next: sending @escaping () async -> Element?,
        deliver: @escaping @Sendable (Element) async -> Void
    ) -> NotificationToken {
        let task = Task {
            while let element = await next() {
                if Task.isCancelled || subscription?.isCancelled == true { break }
                await deliver(element)
            }
        }
        return NotificationToken(subscription: subscription, task: task)
    }

    static func call<A: Actor, E: Sendable>(
        _ actor: A, _ element: E, _ block: @Sendable (isolated A, E) -> Void
    ) async {
        await block(actor, element)
    }
}

extension Results {
    /// Calls `block` with the results' changes (``RealmCollectionChange``, collections frozen), in order, on
    /// a background task, until the token is invalidated or released. Observation is registered when this
    /// returns, so a later ``Realm/write(withoutNotifying:_:)->_`` with the token skips it.
    /// - Parameters:
    ///   - keyPaths: only changes to these key paths count as modifications (nil: all).
    ///   - block: called with each change.
    public func observe(
        keyPaths: [String]? = nil, _ block: @escaping @Sendable (RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(changes(observing: keyPaths), block)
    }

    /// Calls `block` with the results' changes, where only the given key paths (`\.name`, `\.dogs.age`)
    /// count as modifications, in order, on a background task, until the token is invalidated or released.
    public func observe(
        keyPaths: [PartialKeyPath<Element>],
        _ block: @escaping @Sendable (RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes(keyPaths: keyPaths)), block)
    }

    /// Calls `block` isolated to `actor` with the results' changes, in order, until the token is invalidated
    /// or released.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A,
        _ block: @escaping @Sendable (isolated A, RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(changes(observing: keyPaths)) { await ClosureObservation.call(actor, $0, block) }
    }

    /// Calls `block` isolated to `actor` with the results' changes, where only the given key paths count as
    /// modifications, in order, until the token is invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Element>], on actor: A,
        _ block: @escaping @Sendable (isolated A, RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes(keyPaths: keyPaths))) {
            await ClosureObservation.call(actor, $0, block)
        }
    }

    /// The changes `observe(keyPaths:)` delivers, or why there are none (a key path naming no property).
    private func changes(observing keyPaths: [String]?) -> Result<CollectionChanges<Element>, RealmError> {
        Result { () throws(RealmError) in try keyPaths.map(changes(keyPaths:)) ?? changes }
    }
}

extension _ObjectFreezing where Self: Object {
    /// Calls `block` with this object's changes (``ObjectChange``, objects frozen), in order, on a
    /// background task, until the token is invalidated or released.
    /// - Parameter keyPaths: only changes to these key paths count (nil: all).
    public func observe(
        keyPaths: [String]? = nil, _ block: @escaping @Sendable (ObjectChange<Frozen<Self>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(changes(observing: keyPaths), block)
    }

    /// Calls `block` with this object's changes, where only the given key paths (`\.name`, `\.dogs.age`)
    /// count, in order, on a background task, until the token is invalidated or released.
    public func observe(
        keyPaths: [PartialKeyPath<Self>], _ block: @escaping @Sendable (ObjectChange<Frozen<Self>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes(keyPaths: keyPaths)), block)
    }

    /// Calls `block` isolated to `actor` with this object's changes, in order, until the token is
    /// invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A,
        _ block: @escaping @Sendable (isolated A, ObjectChange<Frozen<Self>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(changes(observing: keyPaths)) { await ClosureObservation.call(actor, $0, block) }
    }

    /// Calls `block` isolated to `actor` with this object's changes, where only the given key paths count,
    /// in order, until the token is invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Self>], on actor: A,
        _ block: @escaping @Sendable (isolated A, ObjectChange<Frozen<Self>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes(keyPaths: keyPaths))) {
            await ClosureObservation.call(actor, $0, block)
        }
    }

    /// The changes `observe(keyPaths:)` delivers, or why there are none (a key path naming no property).
    private func changes(observing keyPaths: [String]?) -> Result<ObjectChanges<Self>, RealmError> {
        Result { () throws(RealmError) in try keyPaths.map(changes(keyPaths:)) ?? changes }
    }
}

extension Realm {
    /// Calls `block` after every commit to the file (see ``changes``), on a background task, until the
    /// token is invalidated or released.
    public nonisolated func observe(_ block: @escaping @Sendable (RealmChange) -> Void) -> NotificationToken {
        ClosureObservation.observe(.success(changes), block)
    }

    /// Runs `block` in a write transaction and commits it without notifying the observers of `tokens` of
    /// this commit (they never report it; later commits are reported as usual). For interface-driven
    /// writes: the UI already shows the change it made.
    @discardableResult
    public func write<Result: Sendable>(
        withoutNotifying tokens: [NotificationToken], _ block: @Sendable (isolated Realm) throws -> Result
    ) async throws -> Result {
        try await write { realm in
            realm.silence(tokens)
            return try block(realm)
        }
    }

    /// Runs `block` in a write transaction and commits it without notifying the observers of `tokens` (the
    /// form for blocks without a result).
    public func write(
        withoutNotifying tokens: [NotificationToken], _ block: @Sendable (isolated Realm) throws -> Void
    ) async throws {
        try await write { realm in
            realm.silence(tokens)
            try block(realm)
        }
    }

    /// Commits the open write transaction (see ``commitWrite()``) without notifying the observers of
    /// `tokens` of it.
    public func commitWrite(withoutNotifying tokens: [NotificationToken]) async throws {
        silence(tokens)
        try await commitWrite()
    }

    /// Keeps the observers of `tokens` from hearing about the open transaction's commit (nothing when no
    /// transaction is open).
    private func silence(_ tokens: [NotificationToken]) {
        context.session?.transaction.silencedSubscriptions = Set(tokens.compactMap { $0.subscription?.id })
    }
}

extension _QueryableCollection {
    /// Calls `block` with the changes of the collection's members (see `changes`: membership, order and the
    /// members' properties), in order, on a background task, until the token is invalidated or released.
    /// - Parameters:
    ///   - keyPaths: only changes to these key paths count as modifications (nil: all).
    ///   - block: called with each change.
    public func observe(
        keyPaths: [String]? = nil, _ block: @escaping @Sendable (RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        _queryResults.observe(keyPaths: keyPaths, block)
    }

    /// Calls `block` with the changes of the collection's members, where only the given key paths count as
    /// modifications, on a background task, until the token is invalidated or released.
    public func observe(
        keyPaths: [PartialKeyPath<Element>],
        _ block: @escaping @Sendable (RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        _queryResults.observe(keyPaths: keyPaths, block)
    }

    /// Calls `block` isolated to `actor` with the changes of the collection's members, in order, until the
    /// token is invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A,
        _ block: @escaping @Sendable (isolated A, RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        _queryResults.observe(keyPaths: keyPaths, on: actor, block)
    }

    /// Calls `block` isolated to `actor` with the changes of the collection's members, where only the given
    /// key paths count as modifications, until the token is invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Element>], on actor: A,
        _ block: @escaping @Sendable (isolated A, RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        _queryResults.observe(keyPaths: keyPaths, on: actor, block)
    }
}

extension List where Element: _PersistableScalar & Sendable {
    /// Calls `block` with this list's changes (see `changes`), in order, on a background task, until the
    /// token is invalidated or released.
    public func observe(_ block: @escaping @Sendable (RealmCollectionChange<[Element]>) -> Void) -> NotificationToken {
        ClosureObservation.observe(.success(changes), block)
    }

    /// Calls `block` isolated to `actor` with this list's changes, in order, until the token is invalidated
    /// or released.
    public func observe<A: Actor>(
        on actor: A, _ block: @escaping @Sendable (isolated A, RealmCollectionChange<[Element]>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes)) { await ClosureObservation.call(actor, $0, block) }
    }
}

extension MutableSet where Element: _PersistableScalar & Sendable {
    /// Calls `block` with this set's changes (see `changes`), in order, on a background task, until the
    /// token is invalidated or released.
    public func observe(_ block: @escaping @Sendable (RealmCollectionChange<[Element]>) -> Void) -> NotificationToken {
        ClosureObservation.observe(.success(changes), block)
    }

    /// Calls `block` isolated to `actor` with this set's changes, in order, until the token is invalidated
    /// or released.
    public func observe<A: Actor>(
        on actor: A, _ block: @escaping @Sendable (isolated A, RealmCollectionChange<[Element]>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes)) { await ClosureObservation.call(actor, $0, block) }
    }
}

extension Map where Value: _PersistableScalar & Sendable {
    /// Calls `block` with this map's changes (see `changes`), in order, on a background task, until the
    /// token is invalidated or released.
    public func observe(
        _ block: @escaping @Sendable (RealmCollectionChange<[String: Value]>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes), block)
    }

    /// Calls `block` isolated to `actor` with this map's changes, in order, until the token is invalidated
    /// or released.
    public func observe<A: Actor>(
        on actor: A, _ block: @escaping @Sendable (isolated A, RealmCollectionChange<[String: Value]>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes)) { await ClosureObservation.call(actor, $0, block) }
    }
}

extension Map where Value: _OptionalObject {
    /// Calls `block` with this map's changes (see `changes`), in order, on a background task, until the
    /// token is invalidated or released.
    public func observe(
        _ block: @escaping @Sendable (RealmCollectionChange<[String: Frozen<Value._Object>?]>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes), block)
    }

    /// Calls `block` isolated to `actor` with this map's changes, in order, until the token is invalidated
    /// or released.
    public func observe<A: Actor>(
        on actor: A,
        _ block: @escaping @Sendable (isolated A, RealmCollectionChange<[String: Frozen<Value._Object>?]>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes)) { await ClosureObservation.call(actor, $0, block) }
    }
}
