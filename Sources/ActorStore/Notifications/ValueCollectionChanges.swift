import ActorStorePersistence
import Foundation

/// The changes of a collection stored in one property of an object — a `List` or `MutableSet` of values,
/// or a `Map` of values or objects — as an `AsyncSequence` usable from any task. The collection arrives
/// frozen (an array, or a dictionary for a map; a map's objects as ``Frozen`` values).
///
/// The first delivery is the collection as it was read when the sequence was made; then an update after
/// each commit that changed it. For lists and sets, indices are positions in the collection (a value that
/// changed is deleted and inserted). For a map, indices are positions in its keys in ascending order: a new
/// key is an insertion, a removed key a deletion, a key whose value changed a modification — for a map of
/// objects, also a key whose object changed (its properties, or those of objects it links to, up to four
/// links away; `changes(keyPaths:)` narrows this to the given properties of the map's objects). When the
/// owner is deleted, a last update removes every element and the sequence ends.
public struct ValueCollectionChanges<Collection: Sendable>: AsyncSequence, Sendable, ChangeStream {
    public typealias Element = RealmCollectionChange<Collection>
    public typealias Failure = Never

    let origin: FrozenContext
    let key: ObjectKey
    let info: ObjectSchemaInfo
    let property: String
    /// The collection at a version (a map's objects are frozen at the context's version).
    let decode: @Sendable (Value, FrozenContext) -> Collection
    let isMap: Bool
    /// For a map of objects: the key paths of its objects that count as modifications (nil: all).
    let elementPaths: [[String]]?
    let holdsObjects: Bool

    /// Iterates the changes: see ``ChangeIterator``.
    public typealias Iterator = ChangeIterator<Element>

    public func makeAsyncIterator() -> Iterator { Iterator(self) }

    func subscribe() throws(RealmError) -> ValueCollectionFeed<Collection> { try ValueCollectionFeed(self) }

    static func element(_ delivery: Result<RealmCollectionChange<Collection>, RealmError>) -> Element? {
        switch delivery {
        case .success(let change): change
        case .failure(let error): .error(error)
        }
    }
}

/// The deliveries of a ``ValueCollectionChanges``: an object observation of the one property, diffing its
/// stored value between deliveries; first the collection as it was read.
final class ValueCollectionFeed<Collection: Sendable>: ChangeFeed {
    private let source: ValueCollectionChanges<Collection>
    private let observation: ObjectObservation
    /// The value last delivered; nil before the first (initial) delivery.
    private var previous: Value?

    /// Registers the observation: from here on, commits are remembered for this iteration.
    init(_ source: ValueCollectionChanges<Collection>) throws(RealmError) {
        self.source = source
        let file = try ObservedFile(engine: source.origin.engine, fileKey: source.origin.fileKey, root: source.info)
        self.observation = try ObjectObservation(
            file: file, info: source.info, key: source.key, origin: source.origin, watch: Self.watch(source))
    }

    var subscription: ChangeSubscription { observation.subscription }

    private func column(in store: some ReadableStore) -> (TableID, Int)? {
        guard let table = store.tableID(named: source.info.className),
            let column = store.tableSchema(table)?.columnIndex(named: source.property)
        else { return nil }
        return (table, column)
    }

    private func value(in store: some ReadableStore) -> Value {
        guard let (table, column) = column(in: store), let value = try? store.value(table, source.key, column: column)
        else { return .null }
        return value
    }

    /// What the observation watches: the property and, for a map of objects, its objects (all they reach,
    /// or the element key paths).
    private static func watch(_ source: ValueCollectionChanges<Collection>) -> ObjectObservation.Plan {
        { (table, className, state) throws(RealmError) in
            guard source.holdsObjects else {
                return try WatchTree.keyPaths([[source.property]], from: table, className: className, in: state)
            }
            if let paths = source.elementPaths {
                return try WatchTree.keyPaths(
                    [[source.property]] + paths.map { [source.property] + $0 }, from: table, className: className,
                    in: state)
            }
            guard let schema = state.tables[table]?.schema, let column = schema.columnIndex(named: source.property),
                let target = schema.columns[column].linkTarget.flatMap({ state.tableIDs[$0] })
            else { return try WatchTree.keyPaths([[source.property]], from: table, className: className, in: state) }
            var columns = ColumnSet()
            columns.insert(column)
            return WatchTree(table: table, columns: columns, children: [(column, WatchTree.all(target, in: state))])
        }
    }

    func next() async throws(RealmError) -> (delivery: RealmCollectionChange<Collection>, isLast: Bool)? {
        guard let previous else {
            let initial = value(in: source.origin.snapshot)
            self.previous = initial
            return (.initial(source.decode(initial, source.origin)), false)
        }
        switch try await observation.next() {
        case .change(let context, _, let changes, let since)?:
            // Relative to `since`: a silenced commit (`write(withoutNotifying:)`) may have been adopted.
            let before = value(in: since.snapshot)
            let current = value(in: context.snapshot)
            self.previous = current
            return (update(from: before, to: current, context, changes), false)
        case .deleted?:
            return (update(from: previous, to: .null, source.origin, ChangeSet()), true)
        case nil:
            return nil
        }
    }

    private func update(
        from old: Value, to new: Value, _ context: FrozenContext, _ changes: ChangeSet
    )
        -> RealmCollectionChange<Collection>
    {
        let diff: CollectionDiff
        if source.isMap {
            let (before, after) = (Self.entries(old), Self.entries(new))
            let values = Dictionary(before.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
            // The map's objects, watched below the map's column (nil for a map of values).
            let objects = column(in: context.snapshot).flatMap { _, column in
                observation.watch?.children.first { $0.column == column }?.node
            }
            var modified = Set<String>()
            for entry in after {
                guard let old = values[entry.key] else { continue }
                if old != entry.value {
                    modified.insert(entry.key)
                } else if let objects, case .link(let target) = entry.value,
                    objects.modifies(target, changes, in: context.snapshot)
                {
                    modified.insert(entry.key)
                }
            }
            diff = CollectionDiff.between(before.map(\.key), after.map(\.key), modified: modified)
        } else {
            diff = CollectionDiff.between(Self.items(old), Self.items(new), modified: [])
        }
        return .update(
            source.decode(new, context), deletions: diff.deletions, insertions: diff.insertions,
            modifications: diff.modifications)
    }

    private static func items(_ value: Value) -> [Value] {
        switch value {
        case .list(let items), .set(let items): items
        default: []
        }
    }

    private static func entries(_ value: Value) -> [Value.MapEntry] {
        if case .map(let entries) = value { return entries }
        return []
    }
}

extension ValueCollectionChanges {
    /// The changes of property `ordinal` of the managed `owner`.
    init(
        owner: ObjectBase?, ordinal: Int, isMap: Bool, what: String, holdsObjects: Bool = false,
        elementPaths: [[String]]? = nil, decode: @escaping @Sendable (Value, FrozenContext) -> Collection
    ) {
        guard let owner, let managed = owner._managed else {
            preconditionFailure("Only a managed \(what) can be observed: add its owner to a realm first.")
        }
        self.init(
            origin: FrozenContext(managed.context), key: managed.key, info: managed.table.info,
            property: managed.table.info.properties[ordinal].name, decode: decode, isMap: isMap,
            elementPaths: elementPaths, holdsObjects: holdsObjects)
    }
}

extension List where Element: _PersistableScalar & Sendable {
    /// The changes of this list of values, from any task: see ``ValueCollectionChanges``.
    public var changes: ValueCollectionChanges<[Element]> {
        ValueCollectionChanges(owner: owner, ordinal: ordinal, isMap: false, what: "List") { value, _ in
            guard case .list(let items) = value else { return [] }
            return items.compactMap { Element._rlmFromStored(_StoredValue($0)) }
        }
    }
}

extension MutableSet where Element: _PersistableScalar & Sendable {
    /// The changes of this set of values, from any task: see ``ValueCollectionChanges``.
    public var changes: ValueCollectionChanges<[Element]> {
        ValueCollectionChanges(owner: owner, ordinal: ordinal, isMap: false, what: "MutableSet") { value, _ in
            guard case .set(let items) = value else { return [] }
            return items.compactMap { Element._rlmFromStored(_StoredValue($0)) }
        }
    }
}

extension Map where Value: _PersistableScalar & Sendable {
    /// The changes of this map, from any task: see ``ValueCollectionChanges``. Indices are positions in
    /// the map's keys in ascending order.
    public var changes: ValueCollectionChanges<[String: Value]> {
        ValueCollectionChanges(owner: owner, ordinal: ordinal, isMap: true, what: "Map") { stored, _ in
            guard case .map(let entries) = stored else { return [:] }
            var result: [String: Value] = [:]
            for entry in entries { result[entry.key] = Value._rlmFromStored(_StoredValue(entry.value)) }
            return result
        }
    }
}

/// `Optional<T>` for an object type `T`: the value type of a map of objects (`Map<String, Dog?>`).
public protocol _OptionalObject {
    /// The object type.
    associatedtype _Object: Object
}

extension Optional: _OptionalObject where Wrapped: Object {
    /// The wrapped object type.
    public typealias _Object = Wrapped
}

extension Map where Value: _OptionalObject {
    /// The changes of this map of objects, from any task: see ``ValueCollectionChanges``. Indices are
    /// positions in the map's keys in ascending order; a key is modified when its entry now holds another
    /// object, or its object changed (any property, and the objects it links to up to four links away). An
    /// entry whose object was deleted holds nil.
    public var changes: ValueCollectionChanges<[String: Frozen<Value._Object>?]> { objectChanges(paths: nil) }

    /// The changes of this map of objects, where only the given key paths of its objects (`"age"`,
    /// `"owner.name"`) count as modifications; keys added, removed or set to another object always count.
    /// - Throws: `RealmError.invalidKeyPath` when a key path names no stored property of the objects.
    public func changes(
        keyPaths: [String]
    ) throws(RealmError) -> ValueCollectionChanges<[String: Frozen<Value._Object>?]> {
        guard let managed = owner?._managed else { return objectChanges(paths: nil) }
        let info = ClassRegistry.info(for: Value._Object.self)
        return objectChanges(paths: try KeyPathNames.parse(keyPaths, info, in: managed.context.state))
    }

    /// The changes of this map of objects, where only the given key paths of its objects (`\.age`,
    /// `\.owner?.name`) count as modifications.
    public func changes(
        keyPaths: [PartialKeyPath<Value._Object>]
    ) -> ValueCollectionChanges<
        [String: Frozen<Value._Object>?]
    > {
        objectChanges(paths: KeyPathNames.names(keyPaths, ClassRegistry.info(for: Value._Object.self)))
    }

    private func objectChanges(paths: [[String]]?) -> ValueCollectionChanges<[String: Frozen<Value._Object>?]> {
        ValueCollectionChanges(
            owner: owner, ordinal: ordinal, isMap: true, what: "Map", holdsObjects: true, elementPaths: paths
        ) { stored, context in
            guard case .map(let entries) = stored else { return [:] }
            var result: [String: Frozen<Value._Object>?] = [:]
            for entry in entries {
                guard case .link(let key) = entry.value else {
                    result.updateValue(nil, forKey: entry.key)
                    continue
                }
                result.updateValue(context.frozen(Value._Object.self, key), forKey: entry.key)
            }
            return result
        }
    }
}
