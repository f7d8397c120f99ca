import ActorStorePersistence
import Foundation

extension ObjectBase {
    /// This class's frozen object `key` at `context`'s version, type-erased (`Frozen<Self>`).
    class func _frozenErased(_ context: FrozenContext, _ key: ObjectKey) -> (any Sendable)? {
        context.frozen(self, key)
    }
}

/// The observation of one object: after each commit that changed a watched property of it (or of an
/// object it links to, up to four links away), the changed properties with their old and new values.
final class ObjectObservation: BatchObservation {
    enum Delivery {
        /// The object changed: the version, its watched properties that changed, the commits' change set
        /// (to tell which linked objects changed), and the version the change is relative to (the previous
        /// delivery's, or a silenced commit's adopted since).
        case change(FrozenContext, [PropertyChange], ChangeSet, since: FrozenContext)
        case deleted
    }

    /// What to watch, given the object's table, its class name and the schema: see ``WatchTree``.
    typealias Plan = (TableID, String, DatabaseState) throws(RealmError) -> WatchTree

    let file: ObservedFile
    let info: ObjectSchemaInfo
    let key: ObjectKey
    private let makeWatch: Plan
    let subscription: ChangeSubscription
    private var context: FrozenContext
    private var table: TableID?
    /// What counts as a change of the object (rebuilt when the schema changes).
    private(set) var watch: WatchTree?
    var ready: [Delivery] = []
    var finished = false

    /// Watches `keyPaths` (nil: everything reachable, up to ``WatchTree/maximumDepth`` links away).
    convenience init(
        file: ObservedFile, info: ObjectSchemaInfo, key: ObjectKey, keyPaths: [[String]]?, origin: FrozenContext
    ) throws(RealmError) {
        try self.init(file: file, info: info, key: key, origin: origin) {
            (table, className, state) throws(RealmError) in
            try keyPaths.map { (paths) throws(RealmError) in
                try WatchTree.keyPaths(paths, from: table, className: className, in: state)
            } ?? WatchTree.all(table, in: state)
        }
    }

    /// Starts from `origin` (the version the object was read at): a change between it and now is the
    /// first delivery.
    init(
        file: ObservedFile, info: ObjectSchemaInfo, key: ObjectKey, origin: FrozenContext, watch: @escaping Plan
    )
        throws(RealmError)
    {
        self.file = file
        self.info = info
        self.key = key
        self.makeWatch = watch
        self.context = origin
        let state = origin.snapshot.state
        if let table = state.tableIDs[info.className] {
            (self.table, self.watch) = (table, try watch(table, info.className, state))
        }
        let now: Snapshot
        let caughtUp: Bool
        do throws(StorageError) {
            (subscription, now, caughtUp) = try file.engine.subscribe(
                tables: self.watch?.tables ?? [], after: origin.snapshot.version)
        } catch {
            throw RealmError(error)
        }
        if !caughtUp {
            // The commits since the object was read are no longer remembered: compare its own properties.
            var changes = ChangeSet()
            if let table, let values = try? origin.snapshot.values(table, key) {
                var columns = ColumnSet()
                if let current = try? now.values(table, key) {
                    for (i, value) in values.enumerated() where i < current.count && current[i] != value {
                        columns.insert(i)
                    }
                }
                changes.tables[table, default: TableChanges()].modified[key] = columns
            }
            process(changes, now)
        }
    }

    deinit { subscription.cancel() }

    private func plan() throws(RealmError) {
        let state = context.snapshot.state
        guard let table = state.tableIDs[info.className] else {
            finished = true
            return
        }
        let watch = try makeWatch(table, info.className, state)
        (self.table, self.watch) = (table, watch)
        file.engine.hub.watch(subscription, tables: watch.tables)
    }

    /// Handles `batches` in order until the object's deletion was reported.
    func process(_ batches: [ChangeSubscription.Batch]) throws(RealmError) {
        for batch in batches where !finished { try handle(batch) }
    }

    private func handle(_ batch: ChangeSubscription.Batch) throws(RealmError) {
        if batch.changes.schemaChanged {
            context = file.context(batch.snapshot, reusing: nil)
            try plan()
        }
        process(batch.changes, batch.snapshot)
        if let silent = batch.silentlyThrough, !finished {
            context = file.context(silent, reusing: context)
            if !silent.contains(table ?? TableID(0), key) { finish(.deleted) }
        }
    }

    private func finish(_ delivery: Delivery) {
        ready.append(delivery)
        finished = true
        subscription.cancel()
    }

    private func process(_ changes: ChangeSet, _ snapshot: Snapshot) {
        guard let table, let watch, !finished else { return }
        let old = context
        let new = file.context(snapshot, reusing: old)
        context = new
        guard new.snapshot.contains(table, key) else { return finish(.deleted) }
        guard watch.modifies(key, changes, in: new.snapshot) else { return }
        guard let binding = new.binding(for: info.type),
            let oldValues = try? old.snapshot.values(table, key), let newValues = try? new.snapshot.values(table, key)
        else { return }
        var properties: [PropertyChange] = []
        let deep = Dictionary(watch.children.map { ($0.column, $0.node) }, uniquingKeysWith: { a, _ in a })
        for property in info.storedProperties {
            let column = binding.columns[property.ordinal]
            guard column >= 0, column < oldValues.count, column < newValues.count,
                watch.columns?.contains(column) ?? true
            else { continue }
            var changed = oldValues[column] != newValues[column]
            if !changed, let child = deep[column] {
                changed = WatchTree.links(in: newValues[column]).contains {
                    child.modifies($0, changes, in: new.snapshot)
                }
            }
            if changed {
                properties.append(
                    PropertyChange(
                        name: property.name, oldValue: Self.sendable(property, oldValues[column], old),
                        newValue: Self.sendable(property, newValues[column], new)))
            }
        }
        if !properties.isEmpty { ready.append(.change(new, properties, changes, since: old)) }
    }

    /// A stored value as the property's Swift value (links as frozen objects at `context`'s version).
    static func sendable(_ property: PropertyInfo, _ value: Value, _ context: FrozenContext) -> (any Sendable)? {
        if let target = property.kind.linkTarget {
            let frozen: (ObjectKey) -> (any Sendable)? = { target._frozenErased(context, $0) }
            switch value {
            case .link(let key): return frozen(key)
            case .list(let items), .set(let items):
                return items.compactMap { item -> (any Sendable)? in
                    if case .link(let key) = item { return frozen(key) }
                    return nil
                }
            case .map(let entries):
                var result: [String: (any Sendable)?] = [:]
                for entry in entries {
                    if case .link(let key) = entry.value {
                        result[entry.key] = frozen(key)
                    } else {
                        result.updateValue(nil, forKey: entry.key)
                    }
                }
                return result
            default: return nil
            }
        }
        switch value {
        case .list(let items), .set(let items): return items.map(plain)
        case .map(let entries):
            var result: [String: (any Sendable)?] = [:]
            for entry in entries { result[entry.key] = plain(entry.value) }
            return result
        default: return plain(value)
        }
    }

    /// A scalar as a plain Swift value.
    private static func plain(_ value: Value) -> (any Sendable)? {
        switch value {
        case .null: nil as (any Sendable)?
        case .bool(let v): v
        case .int(let v): Int(v)
        case .float(let v): v
        case .double(let v): v
        case .string(let v): v
        case .data(let v): v
        case .date(let v): v
        case .uuid(let v): v
        case .objectId(let v): ObjectId(storage: v)
        case .decimal128(let v): Decimal128(bits: v)
        case .link, .typedLink, .list, .set, .map: nil
        }
    }
}

/// The changes of one object, as an `AsyncSequence` usable from any task: ``ObjectChange/change(_:_:)``
/// after each commit that changed a watched property (with old and new values), then
/// ``ObjectChange/deleted`` if it is deleted, after which the sequence ends.
///
/// ```swift
/// let changes = await realm.read { $0.objects(Dog.self).first!.changes(keyPaths: [\.name]) }
/// for await change in changes {
///     if case .change(let dog, let properties) = change { print(dog.name, properties) }
/// }
/// ```
/// Changes are compared with the version the object was read at when the sequence was made; commits
/// made while the consumer is busy coalesce into one delivery.
public struct ObjectChanges<T: Object>: AsyncSequence, Sendable, ChangeStream {
    public typealias Element = ObjectChange<Frozen<T>>
    public typealias Failure = Never

    let origin: FrozenContext
    let key: ObjectKey
    let keyPaths: [[String]]?

    /// Iterates the changes: see ``ChangeIterator``.
    public typealias Iterator = ChangeIterator<Element>

    public func makeAsyncIterator() -> Iterator { Iterator(self) }

    func subscribe() throws(RealmError) -> ObjectFeed<T> { try ObjectFeed(self) }

    static func element(_ delivery: Result<ObjectChange<Frozen<T>>, RealmError>) -> Element? {
        switch delivery {
        case .success(let change): change
        case .failure(let error): .error(error)
        }
    }
}

/// The deliveries of an object observation: the object frozen at each version that changed it, with the
/// changed properties; `.deleted` last.
final class ObjectFeed<T: Object>: ChangeFeed {
    private let key: ObjectKey
    private let observation: ObjectObservation

    init(_ source: ObjectChanges<T>) throws(RealmError) {
        let info = ClassRegistry.info(for: T.self)
        let file = try ObservedFile(engine: source.origin.engine, fileKey: source.origin.fileKey, root: info)
        self.key = source.key
        self.observation = try ObjectObservation(
            file: file, info: info, key: source.key, keyPaths: source.keyPaths, origin: source.origin)
    }

    var subscription: ChangeSubscription { observation.subscription }

    func next() async throws(RealmError) -> (delivery: ObjectChange<Frozen<T>>, isLast: Bool)? {
        switch try await observation.next() {
        case .change(let context, let properties, _, _)?:
            guard let frozen = context.frozen(T.self, key) else { return (.deleted, false) }
            return (.change(frozen, properties), false)
        case .deleted?:
            return (.deleted, true)
        case nil:
            return nil
        }
    }
}

extension _ObjectFreezing where Self: Object {
    /// The changes of this managed object, from any task: see ``ObjectChanges``. Every property counts,
    /// and changes of the objects it links to (up to four links away) count as changes of the link.
    public var changes: ObjectChanges<Self> { objectChanges(paths: nil) }

    /// The changes of this object, where only the given key paths (`"name"`, `"dogs.age"`) count.
    /// - Throws: `RealmError.invalidKeyPath` when a key path names no stored property.
    public func changes(keyPaths: [String]) throws(RealmError) -> ObjectChanges<Self> {
        guard let managed = _managed else { return objectChanges(paths: nil) }
        return objectChanges(
            paths: try KeyPathNames.parse(keyPaths, managed.table.info, in: managed.context.state))
    }

    /// The changes of this object, where only the given key paths (`\.name`, `\.owner?.name`, `\.dogs.age`)
    /// count.
    public func changes(keyPaths: [PartialKeyPath<Self>]) -> ObjectChanges<Self> {
        objectChanges(paths: KeyPathNames.names(keyPaths, ClassRegistry.info(for: Self.self)))
    }

    func objectChanges(paths: [[String]]?) -> ObjectChanges<Self> {
        guard let managed = _managed else {
            preconditionFailure("Only managed objects can be observed: add the object to a realm first.")
        }
        precondition(
            managed.context.session == nil || managed.context.snapshot.contains(managed.table.tableID, managed.key),
            "Cannot observe an object created in the open write transaction: observe it after the write commits.")
        return ObjectChanges(origin: FrozenContext(managed.context), key: managed.key, keyPaths: paths)
    }
}

extension Frozen where T: Object {
    /// The changes of this object after this version, from any task: see ``ObjectChanges``. The file must
    /// still be open (a `Realm` on it alive) when iteration begins, else the sequence delivers `.error`.
    public var changes: ObjectChanges<T> { ObjectChanges(origin: context, key: key, keyPaths: nil) }

    /// The changes of this object after this version, where only the given key paths count.
    /// - Throws: `RealmError.invalidKeyPath` when a key path names no stored property.
    public func changes(keyPaths: [String]) throws(RealmError) -> ObjectChanges<T> {
        ObjectChanges(
            origin: context, key: key,
            keyPaths: try KeyPathNames.parse(keyPaths, binding.info, in: context.snapshot.state))
    }

    /// The changes of this object after this version, where only the given key paths (`\.name`,
    /// `\.dogs.age`) count.
    public func changes(keyPaths: [PartialKeyPath<T>]) -> ObjectChanges<T> {
        ObjectChanges(origin: context, key: key, keyPaths: KeyPathNames.names(keyPaths, binding.info))
    }
}
