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
        ClosureObservation.observe(changes(keyPaths: keyPaths), block)
    }

    /// Calls `block` isolated to `actor` with this object's changes, in order, until the token is
    /// invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A,
        _ block: @escaping @Sendable (isolated A, ObjectChange<Frozen<Self>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(changes(observing: keyPaths), on: actor, block)
    }

    /// Calls `block` isolated to `actor` with this object's changes, where only the given key paths count,
    /// in order, until the token is invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Self>], on actor: A,
        _ block: @escaping @Sendable (isolated A, ObjectChange<Frozen<Self>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes(keyPaths: keyPaths)), on: actor, block)
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
        ClosureObservation.observe(changes, block)
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

extension Map where Value: _OptionalObject {
    /// Calls `block` with this map's changes (see `changes`), in order, on a background task, until the
    /// token is invalidated or released.
    public func observe(
        _ block: @escaping @Sendable (RealmCollectionChange<[String: Frozen<Value._Object>?]>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(changes, block)
    }

    /// Calls `block` isolated to `actor` with this map's changes, in order, until the token is invalidated
    /// or released.
    public func observe<A: Actor>(
        on actor: A,
        _ block: @escaping @Sendable (isolated A, RealmCollectionChange<[String: Frozen<Value._Object>?]>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes), on: actor, block)
    }
}
