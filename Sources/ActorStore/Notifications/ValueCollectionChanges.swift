import ActorStorePersistence
import Foundation

/// The changes of a collection stored in one property of an object — a `List` or `MutableSet` of values,
/// or a `Map` — as an `AsyncSequence` usable from any task. The collection arrives frozen (an array, or a
/// dictionary for a map).
///
/// The first delivery is the collection as it was read when the sequence was made; then an update after
/// each commit that changed it. For lists and sets, indices are positions in the collection (a value that
/// changed is deleted and inserted). For a map, indices are positions in its keys in ascending order: a new
/// key is an insertion, a removed key a deletion, a key whose value changed a modification. When the owner
/// is deleted, a last update removes every element and the sequence ends.
public struct ValueCollectionChanges<Collection: Sendable>: AsyncSequence, Sendable {
    public typealias Element = RealmCollectionChange<Collection>
    public typealias Failure = Never

    let origin: FrozenContext
    let key: ObjectKey
    let info: ObjectSchemaInfo
    let property: String
    let decode: @Sendable (Value) -> Collection
    let isMap: Bool

    public func makeAsyncIterator() -> Iterator { Iterator(core: ValueCollectionIteratorCore(self)) }

    /// Iterates the changes.
    public struct Iterator: AsyncIteratorProtocol {
        let core: ValueCollectionIteratorCore<Collection>

        /// The next change; nil once observation ended.
        public mutating func next() async -> RealmCollectionChange<Collection>? { await core.next() }
    }
}

/// The state of one iteration of ``ValueCollectionChanges``: an object observation of the one property,
/// diffing its stored value between deliveries.
final class ValueCollectionIteratorCore<Collection: Sendable> {
    private let source: ValueCollectionChanges<Collection>
    private var observation: ObjectObservation?
    private var previous: Value?
    private var done = false

    init(_ source: ValueCollectionChanges<Collection>) { self.source = source }

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

    func next() async -> RealmCollectionChange<Collection>? {
        guard !done else { return nil }
        guard let previous else {
            do throws(RealmError) {
                let file = try ObservedFile(
                    engine: source.origin.engine, fileKey: source.origin.fileKey, root: source.info)
                observation = try ObjectObservation(
                    file: file, info: source.info, key: source.key, keyPaths: [[source.property]],
                    origin: source.origin)
            } catch {
                done = true
                return .error(error)
            }
            let initial = value(in: source.origin.snapshot)
            self.previous = initial
            return .initial(source.decode(initial))
        }
        guard let observation else { return nil }
        do throws(RealmError) {
            switch try await observation.next() {
            case .change(let context, _)?:
                let current = value(in: context.snapshot)
                self.previous = current
                return update(from: previous, to: current)
            case .deleted?:
                done = true
                return update(from: previous, to: .null)
            case nil:
                done = true
                return nil
            }
        } catch {
            done = true
            return .error(error)
        }
    }

    private func update(from old: Value, to new: Value) -> RealmCollectionChange<Collection> {
        let diff: CollectionDiff
        if source.isMap {
            let (before, after) = (Self.entries(old), Self.entries(new))
            let values = Dictionary(before.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
            let modified = Set(
                after.filter { entry in values[entry.key].map { $0 != entry.value } ?? false }.map(\.key))
            diff = CollectionDiff.between(before.map(\.key), after.map(\.key), modified: modified)
        } else {
            diff = CollectionDiff.between(Self.items(old), Self.items(new), modified: [])
        }
        return .update(
            source.decode(new), deletions: diff.deletions, insertions: diff.insertions,
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
    init(owner: ObjectBase?, ordinal: Int, isMap: Bool, what: String, decode: @escaping @Sendable (Value) -> Collection)
    {
        guard let owner, let managed = owner._managed else {
            preconditionFailure("Only a managed \(what) can be observed: add its owner to a realm first.")
        }
        self.init(
            origin: FrozenContext(managed.context), key: managed.key, info: managed.table.info,
            property: managed.table.info.properties[ordinal].name, decode: decode, isMap: isMap)
    }
}

extension List where Element: _PersistableScalar & Sendable {
    /// The changes of this list of values, from any task: see ``ValueCollectionChanges``.
    public var changes: ValueCollectionChanges<[Element]> {
        ValueCollectionChanges(owner: owner, ordinal: ordinal, isMap: false, what: "List") { value in
            guard case .list(let items) = value else { return [] }
            return items.compactMap { Element._rlmFromStored(_StoredValue($0)) }
        }
    }
}

extension MutableSet where Element: _PersistableScalar & Sendable {
    /// The changes of this set of values, from any task: see ``ValueCollectionChanges``.
    public var changes: ValueCollectionChanges<[Element]> {
        ValueCollectionChanges(owner: owner, ordinal: ordinal, isMap: false, what: "MutableSet") { value in
            guard case .set(let items) = value else { return [] }
            return items.compactMap { Element._rlmFromStored(_StoredValue($0)) }
        }
    }
}

extension Map where Value: _PersistableScalar & Sendable {
    /// The changes of this map, from any task: see ``ValueCollectionChanges``. Indices are positions in
    /// the map's keys in ascending order.
    public var changes: ValueCollectionChanges<[String: Value]> {
        ValueCollectionChanges(owner: owner, ordinal: ordinal, isMap: true, what: "Map") { stored in
            guard case .map(let entries) = stored else { return [:] }
            var result: [String: Value] = [:]
            for entry in entries { result[entry.key] = Value._rlmFromStored(_StoredValue(entry.value)) }
            return result
        }
    }
}
