import ActorStorePersistence
import Foundation
import Observation

/// A query's matches as an `@Observable` value that updates itself: the view a list screen holds.
///
/// Realm Swift offered `@ObservedResults` for SwiftUI; this is its Swift 6 form, built on the Observation
/// framework, so it works with SwiftUI, with `withObservationTracking`, and with anything else that
/// observes `@Observable` types, on every platform:
///
/// ```swift
/// @MainActor @Observable final class DogListModel {
///     let puppies: ObservedResults<Dog>
///     init(realm: Realm) throws {
///         puppies = try ObservedResults(Dog.self, in: realm) { $0.where { $0.age < 2 }.sorted(by: \.name) }
///     }
/// }
/// // In a SwiftUI view: List(model.puppies.results, id: \.id) { dog in Text(dog.name) }
/// ```
///
/// ``results`` is a ``FrozenResults`` (random access, `count`, `Sendable`); ``changeSet`` is the last
/// update's index sets (deletions, insertions, modifications), for table and collection views that
/// animate rows. Both change together, once per update, so an observer is told once per update.
///
/// Updates come from the query's change stream (see ``CollectionChanges``): the view starts observing
/// when it is made, at the newest version, and changes after each commit that changes its matches or a
/// watched property of them. The diff is computed off the actor; the view's properties change on it. A
/// burst of commits made while the actor is busy is applied as one update. Observation stops when the
/// view is released or ``cancel()`` is called, which releases the versions it held.
///
/// - Important: The view is isolated to the actor that makes it (usually the main actor): it may only be
///   made in code isolated to an actor (`#isolation`), and only used there. It is not `Sendable`; its
///   ``results`` are, and may be handed anywhere.
@Observable
public final class ObservedResults<Element: Object>: ObservedView {
    typealias Source = ResultsSource

    /// The last update: the matches now (``CollectionChangeSet/collection``), and how they came from the
    /// previous ones. Initially the matches when the view was made, with ``CollectionChangeSet/isInitial``
    /// set and no indices.
    ///
    /// Deleting `deletions` from the previous ``results`` (highest first), then inserting the new elements
    /// at `insertions` (lowest first), turns them into the new ones; `modifications` are objects kept that
    /// changed. See ``RealmCollectionChange`` for the contract.
    public private(set) var changeSet: CollectionChangeSet<FrozenResults<Element>>

    /// Why observation stopped early (the realm's files were closed, a key path no longer matches the
    /// model); nil while it runs.
    public internal(set) var error: RealmError?

    /// The realm the view observes, for writes (see ``write(_:_:)``).
    public let realm: Realm

    @ObservationIgnored private var task: Task<Void, Never>?

    /// The query the view observes (what each update's matches are frozen with).
    @ObservationIgnored private let query: QueryDescription

    /// The matches now: frozen at the version of the last update, `Sendable`, random access.
    public var results: FrozenResults<Element> { changeSet.collection }

    /// Observes the objects of a class that a query selects, in a realm.
    ///
    /// ```swift
    /// let all = try ObservedResults(Dog.self, in: realm)
    /// let puppies = try ObservedResults(Dog.self, in: realm) { $0.where { $0.age < 2 }.sorted(by: \.name) }
    /// let named = try ObservedResults(Dog.self, in: realm) { try $0.filter("name BEGINSWITH %@", "R").limit(20) }
    /// let young = try ObservedResults(Dog.self, in: realm) { try $0.filter(#Predicate { $0.age < 5 }) }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The class observed.
    ///   - realm: The realm; it need not be isolated to the caller.
    ///   - keyPaths: The properties (`"name"`, `"owner.name"`) whose changes count as modifications of the
    ///     matches; nil for all of them (and of objects they link to, up to four links away). Objects
    ///     entering or leaving the matches always count.
    ///   - isolation: The actor the view belongs to: leave the default, the caller's.
    ///   - query: Builds the query from all the class's objects (at the newest version): any filter
    ///     (`where`, a predicate string, `#Predicate`), sort, `distinct` and `limit` of ``FrozenResults``.
    /// - Throws: `RealmError.invalidQuery` when `query` throws (its `RealmError` as it is, any other error as
    ///   the underlying error), `RealmError.invalidKeyPath` when a key path names no stored property,
    ///   `RealmError.closed` when the realm's files are closed.
    /// - Complexity: Runs the query once, on the caller's actor.
    public convenience init(
        _ type: Element.Type, in realm: Realm, keyPaths: [String]? = nil,
        isolation: isolated any Actor = #isolation,
        query: (FrozenResults<Element>) throws -> FrozenResults<Element> = { $0 }
    ) throws(RealmError) {
        try self.init(
            realm: realm, isolation: isolation, query: query,
            paths: { (state) throws(RealmError) in
                try keyPaths.map { (paths) throws(RealmError) in
                    try KeyPathNames.parse(paths, ClassRegistry.info(for: Element.self), in: state)
                }
            })
    }

    /// Observes the objects of a class that a query selects, where only the given properties (`\.name`,
    /// `\.owner?.name`) count as modifications. See ``init(_:in:keyPaths:isolation:query:)-(_,_,[String]?,_,_)``.
    /// - Throws: `RealmError.invalidQuery` (from `query`), `RealmError.closed` when the realm's files are
    ///   closed.
    public convenience init(
        _ type: Element.Type, in realm: Realm, keyPaths: [PartialKeyPath<Element>],
        isolation: isolated any Actor = #isolation,
        query: (FrozenResults<Element>) throws -> FrozenResults<Element> = { $0 }
    ) throws(RealmError) {
        let paths = KeyPathNames.names(keyPaths, ClassRegistry.info(for: Element.self))
        try self.init(realm: realm, isolation: isolation, query: query, paths: { _ in paths })
    }

    private init(
        realm: Realm, isolation: isolated any Actor,
        query: (FrozenResults<Element>) throws -> FrozenResults<Element>,
        paths: (DatabaseState) throws(RealmError) -> [[String]]?
    ) throws(RealmError) {
        let info = ClassRegistry.info(for: Element.self)
        let file = try ObservedFile(engine: realm.engine, fileKey: realm.fileKey, root: info)
        let newest: FrozenContext
        do throws(StorageError) {
            newest = file.context(try file.engine.snapshot(), reusing: nil)
        } catch {
            throw RealmError(error)
        }
        let description: QueryDescription
        do {
            description = try query(FrozenResults(context: newest, query: QueryDescription())).query
        } catch let error as RealmError {
            throw error
        } catch {
            throw RealmError(
                .invalidQuery, "The query of an ObservedResults<\(info.className)> failed: \(error)",
                underlyingError: error)
        }
        let keyPaths = try paths(newest.snapshot.state)
        let observation = try QueryObservation(file: file, info: info, query: description, keyPaths: keyPaths)
        let initial = FrozenResults<Element>(context: observation.context, query: description, keys: observation.keys)
        self.realm = realm
        self.changeSet = CollectionChangeSet(
            collection: initial, isInitial: true, deletions: [], insertions: [], modifications: [],
            modificationsInOld: [])
        self.query = description
        task = ObservedDriver.start(self, ResultsSource(observation), isolation: isolation)
    }

    deinit { task?.cancel() }

    /// Stops observing: the view keeps its last values and changes no more; the versions it held for
    /// observing are released. Releasing the view does the same.
    public func cancel() {
        task?.cancel()
        task = nil
    }

    /// Runs `block` on the live form of `object` (one of the ``results``, or any frozen object of the
    /// realm) in a write transaction on ``realm``, and commits it: the Swift 6 form of a Realm binding's
    /// `$dog.name = "Rex"`. The view shows the change once the commit reaches it, like any other commit.
    ///
    /// ```swift
    /// try await puppies.write(puppies.results[0]) { $0.name = "Rex" }
    /// ```
    /// - Throws: `RealmError.invalidObject` when the object was deleted (or belongs to another realm),
    ///   the block's error, or the commit's (see ``Realm/write(_:)->_``).
    public nonisolated(nonsending) func write<T: Object>(
        _ object: Frozen<T>, _ block: @Sendable (T) throws -> Void
    ) async throws {
        try await realm.write(object, block)
    }

    /// Shows the matches after an update, with its change set.
    func apply(_ update: ResultsSource.Update) -> Bool {
        let diff = update.diff
        changeSet = CollectionChangeSet(
            collection: FrozenResults(context: update.context, query: query, keys: update.keys), isInitial: false,
            deletions: diff.deletions, insertions: diff.insertions, modifications: diff.modifications,
            modificationsInOld: diff.modificationsInOld)
        return true
    }
}

/// The updates of an ``ObservedResults``: a query observation's deliveries, with the keys they start
/// from, so that several can merge into one.
final class ResultsSource: ObservedSource {
    struct Update: Sendable {
        var context: FrozenContext
        /// The matches the update starts from.
        var old: [ObjectKey]
        /// The matches after it.
        var keys: [ObjectKey]
        var diff: CollectionDiff
    }

    private let observation: QueryObservation
    /// The matches of the last update (or of the initial state).
    private var keys: [ObjectKey]
    var pending: [ChangeSubscription.Batch] = []

    init(_ observation: QueryObservation) {
        self.observation = observation
        self.keys = observation.keys
    }

    func next() async throws(RealmError) -> Update? {
        while let delivery = try await observation.next() {
            if let update = update(delivery) { return update }
        }
        return nil
    }

    var subscription: ChangeSubscription { observation.subscription }

    func update(for batches: [ChangeSubscription.Batch]) throws(RealmError) -> Update? {
        Self.merged(try observation.deliveries(for: batches).compactMap { update($0) })
    }

    /// The update of a delivery; nil for the initial one (the view starts from it).
    private func update(_ delivery: QueryObservation.Delivery) -> Update? {
        defer { keys = delivery.keys }
        guard let diff = delivery.diff else { return nil }
        return Update(context: delivery.context, old: keys, keys: delivery.keys, diff: diff)
    }

    /// One update from `first.old` to `second.keys`: every object either touched (deleted, inserted or
    /// modified) counts as modified if it is in both, so nothing either reported is lost.
    /// - Complexity: O(n) in the number of matches.
    /// A merged update whose diff is empty: every object it touched is in neither the old nor the new
    /// matches (inserted and deleted within the burst).
    static func changesNothing(_ update: Update) -> Bool { update.diff.isEmpty }

    static func merge(_ first: Update, _ second: Update) -> Update {
        var touched = Set<ObjectKey>()
        for update in [first, second] {
            for i in update.diff.deletions { touched.insert(update.old[i]) }
            for j in update.diff.insertions { touched.insert(update.keys[j]) }
            for j in update.diff.modifications { touched.insert(update.keys[j]) }
        }
        return Update(
            context: second.context, old: first.old, keys: second.keys,
            diff: CollectionDiff.between(first.old, second.keys, modified: touched))
    }
}
