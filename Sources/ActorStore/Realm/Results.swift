import ActorStorePersistence
import Foundation

/// The objects of one class in a realm, optionally filtered, sorted, made distinct and limited: lazy and
/// live.
///
/// ```swift
/// let puppies = try realm.objects(Dog.self)
///     .filter("age < %@ AND name BEGINSWITH[c] %@", 2, "b")
///     .sorted(by: \.name)
/// let sameThing = realm.objects(Dog.self).where { $0.age < 2 && $0.name.starts(with: "b", options: .caseInsensitive) }
/// ```
///
/// Nothing is evaluated until you read: chaining `filter`, `where`, `sorted`, `distinct` and `limit` (the
/// methods of ``ComposableQuery``) only composes a query. A `Results` always reflects the realm's current version, including the open write
/// transaction's own changes: the matches are recomputed at the first read after anything changed. All
/// objects of a class, unfiltered, have an O(1) `count` and O(log n) index access. A `for … in` loop
/// iterates the matches as they were when the loop began, even if the loop changes or deletes them.
///
/// Not `Sendable`: it stays inside its ``Realm`` actor. Use ``freeze()`` to get a ``FrozenResults`` for
/// other tasks. See the Queries article for the predicate language.
///
/// - Important: Use a `Results` only inside the ``Realm`` actor that made it: it is not `Sendable`, so the
///   compiler refuses to send it to another task. Give other tasks a ``FrozenResults`` (``freeze()``), or
///   another actor a ``ThreadSafeReference``.
public struct Results<Element: Object>: RandomAccessCollection {
    let context: RealmContext
    let query: QueryDescription
    private let cache = ResultsCache()
    /// The query's plan, resolved once per schema.
    let plans: QueryPlanCache

    init(context: RealmContext, query: QueryDescription = QueryDescription(), plans: QueryPlanCache? = nil) {
        self.context = context
        self.query = query
        self.plans = plans ?? QueryPlanCache()
    }

    private var binding: TableBinding? { context.binding(for: Element.self) }

    /// The matching keys at the realm's current version (computed once per version and write).
    var keys: [ObjectKey] { matches.keys }

    /// The matching keys at the realm's current version and, when the query scanned the rows, where each
    /// match's row is at that version (computed once per version and write).
    var matches: (keys: [ObjectKey], locations: [RowLocation]?) {
        if cache.stamp == context.stamp, let keys = cache.keys { return (keys, cache.locations) }
        // A class the realm could not bind (its model does not match the file, or a class it links to does
        // not) has no objects here, whatever a query would resolve it to on its own.
        guard binding != nil else { return ([], nil) }
        var locations: [RowLocation]? = []
        let keys = context.runQuery(query, Element.self) { $0.keys(query, cache: plans, locations: &locations) }
        cache.keys = keys
        cache.locations = locations
        cache.stamp = context.stamp
        return (keys, locations)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int {
        guard query.isWholeTable else { return keys.count }
        guard let binding else { return 0 }
        return context.rowCount(binding.tableID)
    }

    /// The object at `position`. O(log n).
    public subscript(position: Int) -> Element {
        guard let binding else { preconditionFailure("Index \(position) is out of bounds (count 0).") }
        if query.isWholeTable {
            guard let row = context.row(binding.tableID, at: position),
                let object = context.makeObject(binding, row.key, location: row.location) as? Element
            else { preconditionFailure("Index \(position) is out of bounds (count \(count)).") }
            return object
        }
        let (keys, locations) = matches
        precondition(keys.indices.contains(position), "Index \(position) is out of bounds (count \(keys.count)).")
        // The scan's location is the row's at the current version (the matches are the current version's).
        if let location = locations?[position],
            let object = context.makeObject(binding, keys[position], location: location) as? Element
        {
            return object
        }
        guard let object = context.object(Element.self, key: keys[position]) else {
            preconditionFailure("The object at \(position) no longer exists.")
        }
        return object
    }

    /// Iterates the matches of the version current when iteration begins.
    ///
    /// An object the loop body does not keep (stores nowhere, refers to with no `weak` or `unowned`
    /// reference) may be reused for a later match, as making an object costs more than the read or write a
    /// loop does with it; an object the body keeps stays the one it was. Compare objects with
    /// `isSameObject(as:)` or their primary key, not `===`, as in Realm.
    public func makeIterator() -> Iterator {
        guard let binding else {
            return Iterator(context: context, binding: nil, source: .keys([], 0), locations: nil)
        }
        if query.isWholeTable {
            // Outside a write transaction, the rows are read from the snapshot's region: the cursor drops
            // the pages it passed (see RowCursor).
            let region = context.session == nil ? context.snapshot.region : nil
            return Iterator(
                context: context, binding: binding,
                source: .rows(context.state.rowCursor(binding.tableID, releasingPagesOf: region)), locations: nil)
        }
        let (keys, locations) = matches
        return Iterator(context: context, binding: binding, source: .keys(keys, 0), locations: locations)
    }

    /// Iterates a stable snapshot of the matches.
    public struct Iterator: IteratorProtocol {
        enum Source {
            case rows(RowCursor)
            case keys([ObjectKey], Int)
        }
        let context: RealmContext
        let binding: TableBinding?
        /// The rows of the whole class, or nil when iterating `keys`. Not inside an enum: taking the cursor
        /// out of an enum case and putting it back copies it (retaining what it holds) for every object.
        private var rows: RowCursor?
        private var keys: [ObjectKey]
        private var index: Int
        /// The rows of the keys of `source` when iteration began, when the query scanned them (else looked up).
        let locations: [RowLocation]?
        /// Whether the locations still hold, and the row the loop is at (see `ObjectLoop`).
        private let loop: ObjectLoop
        /// The object handed out last: the next row's if nothing else refers to it by then
        /// (`RealmContext.loopObject`).
        private var spare: ObjectBase?

        init(context: RealmContext, binding: TableBinding?, source: Source, locations: [RowLocation]?) {
            self.context = context
            self.binding = binding
            switch source {
            case .rows(let cursor): (rows, keys, index) = (cursor, [], 0)
            case .keys(let keys, let index): (rows, self.keys, self.index) = (nil, keys, index)
            }
            self.locations = locations
            self.loop = ObjectLoop(context)
        }

        /// The next object, or nil at the end.
        public mutating func next() -> Element? {
            guard let binding else { return nil }
            let position = index
            if rows != nil {
                guard let row = rows?.next() else {
                    loop.end()
                    return nil
                }
                index += 1
                let holds = loop.enter(position, binding.tableID, row.key, in: context)
                return context.loopObject(&spare, binding, row.key, location: holds ? row.location : nil) as? Element
            }
            guard index < keys.count else {
                loop.end()
                return nil
            }
            index += 1
            let key = keys[position]
            let location =
                loop.enter(position, binding.tableID, key, in: context)
                ? locations?[position] ?? context.location(binding.tableID, key) : nil
            return context.loopObject(&spare, binding, key, location: location) as? Element
        }
    }

    /// The number of matches. O(1) for all objects of a class; O(log n) for an equality or range on an
    /// indexed integer property or the primary key (counted from the index, touching no object); otherwise
    /// evaluates the query once per version.
    /// - Complexity: O(1) for all the objects of a class; O(log n) for a counted index range; otherwise the
    ///   first read at each version runs the query (a scan, O(n) in the class's objects, unless an index
    ///   narrows it), later reads O(1).
    public var count: Int {
        if !query.isWholeTable, query.orderings.isEmpty, cache.stamp != context.stamp || cache.keys == nil,
            binding != nil,
            let counted = context.runQuery(query, Element.self, { $0.indexedCount(query, cache: plans) })
        {
            return counted
        }
        return endIndex
    }

    /// Whether there are no matches.
    public var isEmpty: Bool { count == 0 }

    /// The first match, or nil.
    ///
    /// - Complexity: on a sorted query whose matches are not computed yet, the query runs with a limit of 1:
    ///   one pass keeping the smallest (O(n)), or a walk of an index in order when the sort is by an indexed
    ///   integer property or primary key (O(log n) without a filter).
    public var first: Element? {
        if !query.orderings.isEmpty, cache.stamp != context.stamp || cache.keys == nil {
            let one = addingLimit(1)
            return one.isEmpty ? nil : one[0]
        }
        return isEmpty ? nil : self[0]
    }

    /// The last match, or nil.
    public var last: Element? { isEmpty ? nil : self[count - 1] }

    /// The position of a managed object in the results, or nil.
    /// - Complexity: O(log n) for all the objects of a class; otherwise O(n) in the matches.
    public func index(of object: Element) -> Int? {
        guard let managed = object._managed, managed.context === context else { return nil }
        if query.isWholeTable { return context.rowOffset(binding?.tableID ?? managed.table.tableID, managed.key) }
        return keys.firstIndex(of: managed.key)
    }

    /// An immutable, `Sendable` copy of the results at the realm's current version (outside a write
    /// transaction). O(1): the query is evaluated when the frozen results are read.
    public func freeze() -> FrozenResults<Element> {
        FrozenResults(context: FrozenContext(context), query: query, plans: plans)
    }

    /// Whether the results are frozen: never, for `Results` (see ``FrozenResults``).
    public var isFrozen: Bool { false }
}

extension Results: ComposableQuery {
    /// The class queried: the results' elements.
    public typealias Root = Element

    /// The query evaluated (see ``ComposableQuery``).
    public var _query: _QueryValue { _QueryValue(query, plans: plans) }

    /// Runs queries against the realm's current version (see ``ComposableQuery``).
    public var _queryRunner: _QueryRunner { context.runQuery(query, Element.self) { _QueryRunner($0) } }

    /// Live results of `query` in the same realm (see ``ComposableQuery``).
    public func _withQuery(_ query: _QueryValue) -> Results {
        Results(context: context, query: query.description, plans: query.plans)
    }
}

/// The matches of a live `Results`, kept until the realm's stamp moves.
final class ResultsCache {
    var stamp: UInt64 = 0
    var keys: [ObjectKey]?
    /// Where the rows of `keys` are at `stamp`, when the query scanned them.
    var locations: [RowLocation]?
}

extension RealmContext {
    /// Runs `body` with an executor over the version the realm reads (the open transaction's, or the
    /// snapshot's).
    func runQuery<T: ObjectBase, R, E: Error>(
        _ query: QueryDescription, _ type: T.Type, _ body: (QueryExecutor) throws(E) -> R
    ) throws(E) -> R {
        let info = info(for: type)
        if let session { return try body(QueryExecutor(store: session.transaction, bindings: bindings, info: info)) }
        return try body(QueryExecutor(store: snapshot, bindings: bindings, info: info))
    }
}
