import ActorStorePersistence

/// Runs a closure observation (every `observe(…)`): subscribes when `observe` returns, then iterates a
/// change stream's ``ChangeIteration`` in a task and calls the block with each element until the token is
/// invalidated or released.
enum ClosureObservation {
    /// The one implementation behind every `observe` form: subscribes now (a commit after this returns
    /// is observed), then calls `deliver` with each element of `stream` on a background task until the
    /// token is invalidated or released. A stream that could not be made (a key path naming no property)
    /// delivers its error once.
    static func observe<Stream: ChangeStream>(
        _ stream: Result<Stream, RealmError>, _ deliver: @escaping @Sendable (Stream.Element) async -> Void
    ) -> NotificationToken where Stream.Element: Sendable {
        let iterator = ChangeIteration(stream)
        let subscription = iterator.start()
        let task = Task {
            while let element = await iterator.next() {
                if Task.isCancelled || subscription?.isCancelled == true { break }
                await deliver(element)
            }
        }
        return NotificationToken(subscription: subscription, task: task)
    }

    /// `observe(_:)`'s form of `stream`: a stream that cannot fail.
    static func observe<Stream: ChangeStream>(
        _ stream: Stream, _ block: @escaping @Sendable (Stream.Element) -> Void
    ) -> NotificationToken where Stream.Element: Sendable {
        observe(.success(stream), block)
    }

    /// `observe(on:_:)`'s form: `block` runs isolated to `actor`.
    static func observe<Stream: ChangeStream, A: Actor>(
        _ stream: Result<Stream, RealmError>, on actor: A,
        _ block: @escaping @Sendable (isolated A, Stream.Element) -> Void
    ) -> NotificationToken where Stream.Element: Sendable {
        observe(stream) { element in await block(actor, element) }
    }
}

/// A collection of objects whose changes a closure can observe: ``Results``, and the `List`, `MutableSet`
/// and `LinkingObjects` of objects, whose changes are those of their members as `Results`. Its `observe`
/// forms are written once, in this protocol's extension.
public protocol _ObservableCollection {
    /// The class of the collection's objects.
    associatedtype Element: Object
    /// The collection's members as `Results` (a managed collection only).
    var _queryResults: Results<Element> { get }
}

extension Results: _ObservableCollection {
    /// These results (what ``_ObservableCollection`` observes).
    public var _queryResults: Results<Element> { self }
}

extension List: _ObservableCollection where Element: Object {}
extension MutableSet: _ObservableCollection where Element: Object {}
extension LinkingObjects: _ObservableCollection where Element: Object {}

extension _ObservableCollection {
    /// Calls `block` with the collection's changes (``RealmCollectionChange``, collections frozen; for a
    /// list, set or linking objects: membership, order and the members' properties), in order, on a
    /// background task, until the token is invalidated or released. Observation is registered when this
    /// returns, so a later ``Realm/write(withoutNotifying:_:)->_`` with the token skips it.
    /// - Parameters:
    ///   - keyPaths: only changes to these key paths (`"name"`, `"dogs.age"`) count as modifications
    ///     (nil: all). One naming no stored property makes the block's one call `.error`.
    ///   - block: called with each change.
    public func observe(
        keyPaths: [String]? = nil, _ block: @escaping @Sendable (RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(changes(observing: keyPaths), block)
    }

    /// Calls `block` with the collection's changes, where only the given key paths (`\.name`, `\.dogs.age`)
    /// count as modifications, in order, on a background task, until the token is invalidated or released.
    public func observe(
        keyPaths: [PartialKeyPath<Element>],
        _ block: @escaping @Sendable (RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(_queryResults.changes(keyPaths: keyPaths), block)
    }

    /// Calls `block` isolated to `actor` with the collection's changes, in order, until the token is
    /// invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A,
        _ block: @escaping @Sendable (isolated A, RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(changes(observing: keyPaths), on: actor, block)
    }

    /// Calls `block` isolated to `actor` with the collection's changes, where only the given key paths count
    /// as modifications, in order, until the token is invalidated or released.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Element>], on actor: A,
        _ block: @escaping @Sendable (isolated A, RealmCollectionChange<FrozenResults<Element>>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(_queryResults.changes(keyPaths: keyPaths)), on: actor, block)
    }

    /// The changes `observe(keyPaths:)` delivers, or why there are none (a key path naming no property).
    private func changes(observing keyPaths: [String]?) -> Result<CollectionChanges<Element>, RealmError> {
        Result { () throws(RealmError) in try keyPaths.map(_queryResults.changes(keyPaths:)) ?? _queryResults.changes }
    }
}

/// A collection stored in a property whose changes a closure can observe: a `List` or `MutableSet` of
/// values, a `Map` of values (its ``ValueCollectionChanges``). Its `observe` forms are written once, in
/// this protocol's extension. (A `Map` of objects has its own: a type conforms to a protocol once.)
public protocol _ObservableValueCollection {
    /// The collection as delivered: an array, or a dictionary for a map.
    associatedtype _Values: Sendable
    /// The collection's changes, from any task.
    var changes: ValueCollectionChanges<_Values> { get }
}

extension List: _ObservableValueCollection where Element: _PersistableScalar {}
extension MutableSet: _ObservableValueCollection where Element: _PersistableScalar {}
extension Map: _ObservableValueCollection where Value: _PersistableScalar {}

extension _ObservableValueCollection {
    /// Calls `block` with this collection's changes (see `changes`), in order, on a background task, until
    /// the token is invalidated or released.
    public func observe(_ block: @escaping @Sendable (RealmCollectionChange<_Values>) -> Void) -> NotificationToken {
        ClosureObservation.observe(changes, block)
    }

    /// Calls `block` isolated to `actor` with this collection's changes, in order, until the token is
    /// invalidated or released.
    public func observe<A: Actor>(
        on actor: A, _ block: @escaping @Sendable (isolated A, RealmCollectionChange<_Values>) -> Void
    ) -> NotificationToken {
        ClosureObservation.observe(.success(changes), on: actor, block)
    }
}
