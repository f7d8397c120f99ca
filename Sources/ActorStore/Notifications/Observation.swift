import ActorStorePersistence
import Foundation

/// An observation's hold on a file: it keeps the file open in this process (a `Realm` opened on it
/// meanwhile shares the same engine), and maps classes to tables at each version it adopts.
final class ObservedFile: Sendable {
    let engine: StorageEngine
    let fileKey: String
    let classes: [ObjectSchemaInfo]

    /// - Throws: `RealmError.closed` when every `Realm` on the file was released before observing began.
    init(engine: StorageEngine?, fileKey: String, root: ObjectSchemaInfo?) throws(RealmError) {
        guard let engine, EngineRegistry.retain(fileKey, engine: engine) else {
            throw RealmError(
                .closed,
                "The realm this was frozen from was closed, so its changes cannot be observed: keep a Realm open on the "
                    + "file while observing it.")
        }
        self.engine = engine
        self.fileKey = fileKey
        self.classes = root.map { SchemaCheck.closure(of: [$0]) } ?? []
    }

    deinit { EngineRegistry.release(fileKey, engine: engine) }

    /// A frozen context at `snapshot` (pinned here), reusing `previous`'s class mapping when the schema is
    /// the same.
    func context(_ snapshot: Snapshot, reusing previous: FrozenContext?) -> FrozenContext {
        let pinned = engine.pinned(snapshot)
        let bindings: SchemaBindings
        if let previous, previous.snapshot.state.tableIDs == pinned.state.tableIDs,
            previous.snapshot.schemaVersion == pinned.schemaVersion
        {
            bindings = previous.bindings
        } else {
            bindings = SchemaBindings(classes: classes, store: pinned)
        }
        return FrozenContext(snapshot: pinned, bindings: bindings, fileKey: fileKey, engine: engine)
    }
}

/// An observation fed by a change subscription (``QueryObservation``, ``ObjectObservation``): it turns
/// batches of commits into deliveries, queued in ``ready``. It pulls: ``next()`` waits for the next batch
/// only when nothing is ready, so commits made while the consumer is busy coalesce into one delivery.
protocol BatchObservation: AnyObject {
    associatedtype Delivery
    var subscription: ChangeSubscription { get }
    /// The deliveries computed and not yet taken.
    var ready: [Delivery] { get set }
    /// Whether observation ended (cancelled, the file closed, what is observed deleted).
    var finished: Bool { get set }
    /// Computes the deliveries of `batches` into ``ready``.
    func process(_ batches: [ChangeSubscription.Batch]) throws(RealmError)
}

extension BatchObservation {
    /// The next delivery (a query's initial one first). Nil when the observation ended (cancelled, the
    /// file closed, the observed object or the collection's owner deleted).
    func next() async throws(RealmError) -> Delivery? {
        while ready.isEmpty {
            guard !finished, let batches = await subscription.next() else {
                finished = true
                return nil
            }
            try process(batches)
        }
        return ready.removeFirst()
    }

    /// The deliveries for `batches` (taken from the subscription with `poll()`), after any ready ones,
    /// without waiting: how an observed view (``ObservedResults``, ``ObservedRealmObject``) catches up with
    /// the commits that arrived while it waited for its actor.
    func deliveries(for batches: [ChangeSubscription.Batch]) throws(RealmError) -> [Delivery] {
        if !finished { try process(batches) }
        defer { ready = [] }
        return ready
    }
}

/// The observation of a query (all objects of a class, a filtered and sorted `Results`, or the members of
/// a list, set or linking objects): it evaluates the query at each version a relevant commit creates and
/// diffs the matches with the previously delivered ones.
///
/// It pulls: ``next()`` waits for its subscription's next batch of changes, so commits made while the
/// consumer is busy coalesce into one delivery, and a commit that touches nothing the query or the watched
/// objects depend on costs nothing (the subscription is not even woken).
final class QueryObservation: BatchObservation {
    /// One delivery, before it is given its public shape.
    struct Delivery {
        var context: FrozenContext
        var keys: [ObjectKey]
        /// Nil for the initial delivery.
        var diff: CollectionDiff?
    }

    let file: ObservedFile
    let info: ObjectSchemaInfo
    let query: QueryDescription
    let keyPaths: [[String]]?
    let subscription: ChangeSubscription
    private(set) var context: FrozenContext
    private(set) var keys: [ObjectKey] = []
    private var table: TableID?
    private var watch: WatchTree?
    private var dependencies: QueryDependencies?
    /// The query's plan, resolved once per schema (each commit evaluates it).
    private let plans = QueryPlanCache()
    var ready: [Delivery] = []
    var finished = false

    init(file: ObservedFile, info: ObjectSchemaInfo, query: QueryDescription, keyPaths: [[String]]?) throws(RealmError)
    {
        self.file = file
        self.info = info
        self.query = query
        self.keyPaths = keyPaths
        // Plan against the newest schema, subscribe to the tables the plan involves, then start from the
        // subscription's version: every later commit to those tables reaches the subscription.
        let probe: FrozenContext
        do throws(StorageError) {
            probe = file.context(try file.engine.snapshot(), reusing: nil)
        } catch {
            throw RealmError(error)
        }
        context = probe
        let planned = try Self.plan(info, query, keyPaths, probe.snapshot.state)
        (table, watch, dependencies) = (planned.table, planned.watch, planned.dependencies)
        let tables = planned.tables
        let (subscription, snapshot): (ChangeSubscription, Snapshot)
        do throws(StorageError) {
            (subscription, snapshot, _) = try file.engine.subscribe(tables: tables)
        } catch {
            throw RealmError(error)
        }
        self.subscription = subscription
        context = file.context(snapshot, reusing: probe)
        if context.bindings !== probe.bindings { try replan() }
        keys = evaluate(context)
        ready.append(Delivery(context: context, keys: keys, diff: nil))
    }

    deinit { subscription.cancel() }

    /// Resolves the observed class, key paths and query against the current context's schema.
    /// - Returns: the tables they involve.
    private static func plan(
        _ info: ObjectSchemaInfo, _ query: QueryDescription, _ keyPaths: [[String]]?, _ state: DatabaseState
    ) throws(RealmError) -> (table: TableID?, watch: WatchTree?, dependencies: QueryDependencies?, tables: Set<TableID>)
    {
        guard let table = state.tableIDs[info.className] else { return (nil, nil, nil, []) }
        let watch =
            try keyPaths.map { (paths) throws(RealmError) in
                try WatchTree.keyPaths(paths, from: table, className: info.className, in: state)
            } ?? WatchTree.all(table, in: state)
        let dependencies = QueryDependencies(query, table: table, in: state)
        return (table, watch, dependencies, watch.tables.union(dependencies.tables))
    }

    /// Plans again (after a schema change) and watches the tables involved now.
    private func replan() throws(RealmError) {
        let planned = try Self.plan(info, query, keyPaths, context.snapshot.state)
        (table, watch, dependencies) = (planned.table, planned.watch, planned.dependencies)
        file.engine.hub.watch(subscription, tables: planned.tables)
    }

    private func evaluate(_ context: FrozenContext) -> [ObjectKey] {
        guard table != nil else { return [] }
        return QueryExecutor(store: context.snapshot, bindings: context.bindings, info: info).keys(query, cache: plans)
    }

    /// Handles `batches` in order.
    func process(_ batches: [ChangeSubscription.Batch]) throws(RealmError) {
        for batch in batches { try process(batch) }
    }

    private func process(_ batch: ChangeSubscription.Batch) throws(RealmError) {
        let previous = context
        context = file.context(batch.snapshot, reusing: batch.changes.schemaChanged ? nil : previous)
        if batch.changes.schemaChanged { try replan() }
        let modified = watch?.modifiedObjects(batch.changes, in: context.snapshot) ?? []
        var newKeys = keys
        var incrementalDiff: CollectionDiff?
        if let table, let dependencies, dependencies.affected(by: batch.changes, root: table) {
            if !batch.changes.schemaChanged, let changed = changedMatches(batch.changes, table, dependencies),
                let incremental = IncrementalQuery(query, info: info, table: table, context: context, plans: plans)
            {
                newKeys = incremental.update(keys, changed: changed)
                assert(newKeys == evaluate(context), "the incremental update of a query disagrees with running it")
                incrementalDiff = CollectionDiff.between(keys, newKeys, changed: changed, modified: modified)
            } else {
                newKeys = evaluate(context)
            }
        } else if table == nil {
            newKeys = []
        }
        let diff = incrementalDiff ?? CollectionDiff.between(keys, newKeys, modified: modified)
        keys = newKeys
        if !diff.isEmpty { ready.append(Delivery(context: context, keys: keys, diff: diff)) }
        if let silent = batch.silentlyThrough {
            // A commit made without notifying this observer: adopt its result without reporting it.
            let schemaChanged = silent.state.tableIDs != context.snapshot.state.tableIDs
            context = file.context(silent, reusing: schemaChanged ? nil : context)
            if schemaChanged { try replan() }
            keys = evaluate(context)
        }
        if ownerDeleted(in: context.snapshot) { finished = true }
    }

    /// The objects of the queried class whose membership or position may have changed, when that is all
    /// that can have (the query reads only their own columns) and they are few enough for an incremental
    /// update to pay; nil otherwise.
    private func changedMatches(
        _ changes: ChangeSet, _ table: TableID, _ dependencies: QueryDependencies
    )
        -> Set<ObjectKey>?
    {
        guard let columns = dependencies.ownColumns, let own = changes.tables[table] else { return nil }
        let limit = keys.count / 8
        guard own.inserted.count + own.deleted.count <= limit else { return nil }
        var changed = Set<ObjectKey>()
        for key in own.inserted { changed.insert(key) }
        for key in own.deleted { changed.insert(key) }
        for (key, modified) in own.modified where modified.intersects(columns) {
            changed.insert(key)
            if changed.count > limit { return nil }
        }
        return changed
    }

    /// Whether the object whose list, set or linking objects are observed no longer exists.
    private func ownerDeleted(in snapshot: Snapshot) -> Bool {
        switch query.base {
        case .table: false
        case .collection(let owner, let key, _): !snapshot.contains(owner, key)
        case .backlinks(let target, let key, _, _): !snapshot.contains(target, key)
        }
    }
}

/// The changes of a collection, as an `AsyncSequence` usable from any task: ``RealmCollectionChange/initial(_:)``
/// first, then an ``RealmCollectionChange/update(_:deletions:insertions:modifications:)`` after each commit
/// that changed the collection or a watched property of its objects.
///
/// ```swift
/// let changes = await realm.read { $0.objects(Dog.self).where { $0.age < 2 }.sorted(by: \.name).changes }
/// for await change in changes {
///     if case .update(let puppies, let deletions, let insertions, let modifications) = change { … }
/// }
/// ```
///
/// Collections arrive frozen (``FrozenResults``), so they can go anywhere. Each update, applied to the
/// previously delivered collection (deletions, then insertions, then modifications), describes exactly the
/// new one. A consumer slower than the commits gets one update covering all of them, never a backlog.
/// Observation begins at the first `next()` and stops when iteration ends or its task is cancelled, which
/// releases the versions it held.
public struct CollectionChanges<T: Object>: AsyncSequence, Sendable, ChangeStream {
    public typealias Element = RealmCollectionChange<FrozenResults<T>>
    public typealias Failure = Never

    let source: CollectionSource

    /// The same deliveries with every index set (including modifications as old indices).
    public var detailed: DetailedCollectionChanges<T> { DetailedCollectionChanges(source: source) }

    /// Iterates the changes: see ``ChangeIterator``.
    public typealias Iterator = ChangeIterator<Element>

    public func makeAsyncIterator() -> Iterator { Iterator(self) }

    func subscribe() throws(RealmError) -> QueryFeed<T> { try QueryFeed(source) }

    static func element(_ delivery: Result<CollectionChangeSet<FrozenResults<T>>, RealmError>) -> Element? {
        switch delivery {
        case .success(let set): set.change
        case .failure(let error): .error(error)
        }
    }
}

/// The changes of a collection with every index set: see ``CollectionChanges/detailed``.
public struct DetailedCollectionChanges<T: Object>: AsyncSequence, Sendable, ChangeStream {
    public typealias Element = CollectionChangeSet<FrozenResults<T>>
    public typealias Failure = Never

    let source: CollectionSource

    /// Iterates the changes: see ``ChangeIterator``.
    public typealias Iterator = ChangeIterator<Element>

    public func makeAsyncIterator() -> Iterator { Iterator(self) }

    func subscribe() throws(RealmError) -> QueryFeed<T> { try QueryFeed(source) }

    /// A change set has no form for an error: the sequence ends.
    static func element(_ delivery: Result<CollectionChangeSet<FrozenResults<T>>, RealmError>) -> Element? {
        try? delivery.get()
    }
}

/// Where a collection observation starts: the file (held weakly until observing begins), the class, the
/// query and the key paths.
struct CollectionSource: Sendable {
    weak var engine: StorageEngine?
    let fileKey: String
    let info: ObjectSchemaInfo
    let query: QueryDescription
    let keyPaths: [[String]]?
}

/// The deliveries of a collection observation: the query's matches at each version, frozen, with their
/// difference from the previous delivery.
final class QueryFeed<T: Object>: ChangeFeed {
    private let query: QueryDescription
    private let observation: QueryObservation

    init(_ source: CollectionSource) throws(RealmError) {
        let file = try ObservedFile(engine: source.engine, fileKey: source.fileKey, root: source.info)
        self.query = source.query
        self.observation = try QueryObservation(
            file: file, info: source.info, query: source.query, keyPaths: source.keyPaths)
    }

    var subscription: ChangeSubscription { observation.subscription }

    func next() async throws(RealmError) -> (delivery: CollectionChangeSet<FrozenResults<T>>, isLast: Bool)? {
        guard let delivery = try await observation.next() else { return nil }
        let results = FrozenResults<T>(context: delivery.context, query: query, keys: delivery.keys)
        let diff = delivery.diff ?? CollectionDiff()
        let set = CollectionChangeSet(
            collection: results, isInitial: delivery.diff == nil, deletions: diff.deletions,
            insertions: diff.insertions, modifications: diff.modifications, modificationsInOld: diff.modificationsInOld)
        return (set, false)
    }
}
