import ActorStorePersistence
import Foundation

/// The matches of a query at one version: immutable, `Sendable`, a `RandomAccessCollection` of
/// ``Frozen`` objects, with the same query methods as ``Results`` (those of ``ComposableQuery``), which
/// return frozen results of the same version.
///
/// O(1) to make; the query is evaluated once, at the first read, and the matches are kept. All objects of
/// a class, unfiltered, have an O(1) `count` and O(log n) index access.
public struct FrozenResults<Element: Object>: RandomAccessCollection, Sendable {
    let context: FrozenContext
    let query: QueryDescription
    let binding: TableBinding?
    /// The table's rows, for the unfiltered case.
    private let rows: PersistentBTree<ObjectKey, RowLocation>
    private let matches = Locked<[ObjectKey]?>(nil)
    /// The query's plan, resolved once (a frozen version's schema does not change).
    let plans: QueryPlanCache

    init(context: FrozenContext, query: QueryDescription, keys: [ObjectKey]? = nil, plans: QueryPlanCache? = nil) {
        self.context = context
        self.query = query
        self.plans = plans ?? QueryPlanCache()
        if let keys { matches.withLock { $0 = keys } }
        let binding = context.binding(for: Element.self)
        self.binding = binding
        self.rows = binding.flatMap { context.snapshot.state.tables[$0.tableID]?.rows } ?? PersistentBTree()
    }

    var executor: QueryExecutor {
        QueryExecutor(store: context.snapshot, bindings: context.bindings, info: ClassRegistry.info(for: Element.self))
    }

    /// The matching keys (evaluated once).
    var keys: [ObjectKey] {
        if let keys = matches.withLock({ $0 }) { return keys }
        // A class the realm could not bind has no objects here (as in `Results`), whatever a query would
        // resolve it to on its own.
        let keys = binding == nil ? [] : executor.keys(query, cache: plans)
        matches.withLock { $0 = keys }
        return keys
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { query.isWholeTable ? rows.count : keys.count }

    /// The frozen object at `position`. O(log n).
    public subscript(position: Int) -> Frozen<Element> {
        guard let binding else { preconditionFailure("Index \(position) is out of bounds (count 0).") }
        if query.isWholeTable {
            precondition(
                position >= 0 && position < rows.count, "Index \(position) is out of bounds (count \(rows.count)).")
            let entry = rows.element(at: position)
            return Frozen(context: context, binding: binding, key: entry.key, location: entry.value)
        }
        let keys = keys
        precondition(keys.indices.contains(position), "Index \(position) is out of bounds (count \(keys.count)).")
        guard let location = context.snapshot.state.rowLocation(binding.tableID, keys[position]) else {
            preconditionFailure("A frozen match is missing from its own version.")
        }
        return Frozen(context: context, binding: binding, key: keys[position], location: location)
    }

    /// Iterates in order, without index lookups for all objects of a class.
    public func makeIterator() -> Iterator {
        if query.isWholeTable {
            let cursor = RowCursor(rows, releasingPagesOf: context.snapshot.region)
            return Iterator(context: context, binding: binding, source: .rows(cursor))
        }
        return Iterator(context: context, binding: binding, source: .keys(keys, 0))
    }

    /// Iterates the frozen objects.
    public struct Iterator: IteratorProtocol {
        enum Source {
            case rows(RowCursor)
            case keys([ObjectKey], Int)
        }
        let context: FrozenContext
        let binding: TableBinding?
        /// The rows of the whole class, or nil when iterating `keys`. Not inside an enum: taking the cursor
        /// out of an enum case and putting it back copies it (retaining what it holds) for every object.
        private var rows: RowCursor?
        private var keys: [ObjectKey]
        private var index: Int

        init(context: FrozenContext, binding: TableBinding?, source: Source) {
            self.context = context
            self.binding = binding
            switch source {
            case .rows(let cursor): (rows, keys, index) = (cursor, [], 0)
            case .keys(let keys, let index): (rows, self.keys, self.index) = (nil, keys, index)
            }
        }

        /// The next frozen object, or nil at the end.
        public mutating func next() -> Frozen<Element>? {
            guard let binding else { return nil }
            if rows != nil {
                guard let row = rows?.next() else { return nil }
                return Frozen(context: context, binding: binding, key: row.key, location: row.location)
            }
            while index < keys.count {
                let key = keys[index]
                index += 1
                if let location = context.snapshot.state.rowLocation(binding.tableID, key) {
                    return Frozen(context: context, binding: binding, key: key, location: location)
                }
            }
            return nil
        }
    }

    /// The version frozen.
    public var version: UInt64 { context.snapshot.version.rawValue }

    /// Always true.
    public var isFrozen: Bool { true }

    /// The same query, live in `realm` (at its current version, not this one).
    public func thaw(in realm: isolated Realm) -> Results<Element> {
        Results(context: realm.context, query: query, plans: plans)
    }
}

extension FrozenResults: ComposableQuery {
    /// The class queried: the model class of the frozen objects.
    public typealias Root = Element

    /// The query evaluated (see ``ComposableQuery``).
    public var _query: _QueryValue { _QueryValue(query, plans: plans) }

    /// Runs queries against the frozen version (see ``ComposableQuery``).
    public var _queryRunner: _QueryRunner { _QueryRunner(executor) }

    /// Frozen results of `query` at the same version (see ``ComposableQuery``).
    public func _withQuery(_ query: _QueryValue) -> FrozenResults {
        FrozenResults(context: context, query: query.description, plans: query.plans)
    }
}
