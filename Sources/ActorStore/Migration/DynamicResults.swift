import ActorStorePersistence
import Foundation

/// The objects of one class, read by property name and queried without the model class: what
/// ``Realm/dynamicObjects(_:)`` (and, inside a migration block, ``Migration/newObjects(ofType:)`` and
/// ``Migration/oldObjects(ofType:)``) return.
///
/// ```swift
/// let names = await realm.read { realm in
///     try realm.dynamicObjects("Dog")
///         .filter("age > %@ AND owner.name BEGINSWITH %@", 2, "J")
///         .sorted(byKeyPath: "name")
///         .map { $0["name"] as! String }
/// }
/// ```
///
/// It works as ``Results`` does, with the class's schema as the file stores it: the same predicate
/// language (links such as `owner.name`, collections such as `ANY dogs.age`, `@count` and the other
/// aggregates, `SUBQUERY`), the same sorting, `distinct` and `limit` (the methods of ``ComposableQuery`` that
/// name properties by strings), and the same errors. It is lazy and
/// live: chaining only composes a query, and the matches are recomputed at the first read after the version
/// changed (including the open write transaction's own changes). A `for … in` loop iterates the matches as
/// they were when the loop began.
///
/// `LinkingObjects` properties are not stored in the file, so dynamic queries cannot use them. An unknown
/// class name gives empty results, whatever the predicate (a syntax error still throws).
///
/// - Important: It belongs to its realm's actor (or migration block), as live objects do.
public final class DynamicResults: RandomAccessCollection {
    let source: any DynamicQuerySource
    let generation: DynamicGeneration
    let query: QueryDescription
    private let cache = ResultsCache()
    /// The query's plan, resolved once per schema.
    let plans: QueryPlanCache
    /// The class name.
    public let className: String

    init(
        source: any DynamicQuerySource, className: String, generation: DynamicGeneration,
        query: QueryDescription = QueryDescription(), plans: QueryPlanCache? = nil
    ) {
        self.source = source
        self.className = className
        self.generation = generation
        self.query = query
        self.plans = plans ?? QueryPlanCache()
    }

    private func run<R, E: Error>(_ body: (QueryExecutor) throws(E) -> R) throws(E) -> R {
        try source.runDynamicQuery(className, generation, body)
    }

    /// The matching keys at the version the source reads (computed once per version and write).
    private var keys: [ObjectKey] {
        let stamp = source.dynamicStamp
        if cache.stamp == stamp, let keys = cache.keys { return keys }
        let keys = run { $0.keys(query, cache: plans) }
        cache.keys = keys
        cache.stamp = stamp
        return keys
    }

    /// 0.
    public var startIndex: Int { 0 }

    /// The number of matches.
    public var endIndex: Int {
        guard query.isWholeTable else { return keys.count }
        return run { executor in executor.table.map { executor.store.state.rowCount($0) } ?? 0 }
    }

    /// The object at `position`: O(log n) for all objects of a class, else once the query ran at this
    /// version.
    ///
    /// - Precondition: `position` is in `indices`, as for any collection.
    public subscript(position: Int) -> DynamicObject {
        let key: ObjectKey?
        if query.isWholeTable {
            key = run { executor in executor.table.flatMap { executor.store.state.row($0, at: position)?.key } }
        } else {
            key = keys[checked: position]
        }
        guard let key, let object = source.linkedObject(key, target: className, generation: generation) else {
            preconditionFailure("Index \(position) is out of bounds (count \(count)).")
        }
        return object
    }

    /// Iterates the matches of the version current when iteration begins.
    public func makeIterator() -> Iterator {
        let keys: [ObjectKey]
        if query.isWholeTable {
            keys = run { executor in
                guard let table = executor.table else { return [] }
                var cursor = executor.store.state.rowCursor(table)
                var keys: [ObjectKey] = []
                while let row = cursor.next() { keys.append(row.key) }
                return keys
            }
        } else {
            keys = self.keys
        }
        return Iterator(results: self, keys: keys)
    }

    /// Iterates a stable snapshot of the matches: objects deleted during the loop are skipped.
    public struct Iterator: IteratorProtocol {
        let results: DynamicResults
        let keys: [ObjectKey]
        var index = 0

        /// The next object, or nil at the end.
        public mutating func next() -> DynamicObject? {
            while index < keys.count {
                let key = keys[index]
                index += 1
                if let object = results.source.linkedObject(
                    key, target: results.className, generation: results.generation)
                {
                    return object
                }
            }
            return nil
        }
    }

    /// The number of matches. O(1) for all objects of a class; otherwise evaluates the query once per
    /// version.
    public var count: Int { endIndex }

    /// Whether there are no matches.
    public var isEmpty: Bool { count == 0 }

    /// The first match, or nil.
    public var first: DynamicObject? { isEmpty ? nil : self[0] }

    /// The last match, or nil.
    public var last: DynamicObject? { isEmpty ? nil : self[count - 1] }

    /// The position of `object` in the results, or nil.
    /// - Complexity: O(n) in the matches.
    public func index(of object: DynamicObject) -> Int? {
        guard object.source === source, object.className == className else { return nil }
        return keys.firstIndex(of: object.key)
    }

    /// The results sorted by several keys, the first deciding first:
    /// `sorted(by: [DynamicSortDescriptor(keyPath: "age", ascending: false), DynamicSortDescriptor(keyPath: "name")])`.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property, a collection or a link.
    public func sorted(by descriptors: [DynamicSortDescriptor]) throws(RealmError) -> DynamicResults {
        var keys: [QuerySortKey] = []
        for descriptor in descriptors {
            keys.append(
                QuerySortKey(
                    path: try PredicateParser.parseKeyPath(descriptor.keyPath), ascending: descriptor.ascending))
        }
        return try adding { $0.orderings.append(.sort(keys)) }
    }
}

extension DynamicResults: ComposableQuery {
    /// The objects queried, read by property name.
    public typealias Root = DynamicObject

    /// The query evaluated (see ``ComposableQuery``).
    public var _query: _QueryValue { _QueryValue(query, plans: plans) }

    /// Runs queries against the class's stored schema at the version the source reads (a class that version
    /// does not have is not checked: its results are empty). See ``ComposableQuery``.
    public var _queryRunner: _QueryRunner { run { _QueryRunner($0) } }

    /// Dynamic results of `query` over the same class and source (see ``ComposableQuery``).
    public func _withQuery(_ query: _QueryValue) -> DynamicResults {
        DynamicResults(
            source: source, className: className, generation: generation, query: query.description,
            plans: query.plans)
    }
}

@available(*, unavailable, message: "Dynamic results stay inside their Realm actor or migration block")
extension DynamicResults: Sendable {}

/// A sort key of ``DynamicResults/sorted(by:)``: a key path by name (through to-one links: `"owner.name"`)
/// and a direction, as Realm's `SortDescriptor(keyPath:ascending:)`.
public struct DynamicSortDescriptor: Hashable, Sendable {
    /// The property (or `link.property`) sorted by.
    public var keyPath: String
    /// Whether smaller values come first.
    public var ascending: Bool

    /// A sort by `keyPath`, ascending unless told otherwise.
    public init(keyPath: String, ascending: Bool = true) {
        self.keyPath = keyPath
        self.ascending = ascending
    }
}

/// Where ``DynamicResults`` run their queries: a realm, or a running migration.
protocol DynamicQuerySource: DynamicRowSource {
    /// Runs `body` with an executor for the class named `className`, as stored at the version the objects
    /// of `generation` read.
    func runDynamicQuery<R, E: Error>(
        _ className: String, _ generation: DynamicGeneration, _ body: (QueryExecutor) throws(E) -> R
    ) throws(E) -> R
    /// Changes whenever what the source reads may have changed: cached matches are then stale.
    var dynamicStamp: UInt64 { get }
}

extension RealmContext: DynamicQuerySource {
    func runDynamicQuery<R, E: Error>(
        _ className: String, _ generation: DynamicGeneration, _ body: (QueryExecutor) throws(E) -> R
    ) throws(E) -> R {
        if let session {
            return try body(QueryExecutor(store: session.transaction, bindings: bindings, className: className))
        }
        return try body(QueryExecutor(store: snapshot, bindings: bindings, className: className))
    }

    var dynamicStamp: UInt64 { stamp }
}
