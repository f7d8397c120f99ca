import ActorStorePersistence
import Foundation

/// The matches of a query at one version: immutable, `Sendable`, a `RandomAccessCollection` of
/// ``Frozen`` objects, with the same query methods as ``Results``.
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

    init(context: FrozenContext, query: QueryDescription, keys: [ObjectKey]? = nil) {
        self.context = context
        self.query = query
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
        let keys = executor.keys(query)
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
    public func thaw(in realm: isolated Realm) -> Results<Element> { Results(context: realm.context, query: query) }

    /// A short description of how the query runs (which index it uses, or a scan), for debugging.
    public func explain() -> String { executor.explain(query) }

    // MARK: Querying (the same methods as `Results`)

    private func adding(_ change: (inout QueryDescription) -> Void) throws(RealmError) -> FrozenResults {
        var query = query
        change(&query)
        try executor.validate(query)
        return FrozenResults(context: context, query: query)
    }

    private func addingValidated(_ change: (inout QueryDescription) -> Void) -> FrozenResults {
        var query = query
        change(&query)
        return FrozenResults(context: context, query: query)
    }

    /// The matches of a predicate string (see ``Results/filter(_:_:)-(String,_)``).
    public func filter(_ predicateFormat: String, _ args: Any...) throws(RealmError) -> FrozenResults<Element> {
        let predicate = try PredicateParser.parse(predicateFormat, args)
        return try adding { $0.predicates.append(predicate) }
    }

    /// The matches of a Foundation `#Predicate`.
    public func filter(_ predicate: Foundation.Predicate<Element>) throws(RealmError) -> FrozenResults<Element> {
        let translated = try translatePredicate(predicate)
        return try adding { $0.predicates.append(translated) }
    }

    /// The matches of a type-safe query: `where { $0.age < 2 }`.
    public func `where`(_ isIncluded: (Query<Element>) -> Query<Bool>) -> FrozenResults<Element> {
        let predicate = makeWherePredicate(Element.self, isIncluded)
        do {
            return try adding { $0.predicates.append(predicate) }
        } catch {
            preconditionFailure("where { … } built an invalid query: \(error.message)")
        }
    }

    /// Sorted by a property or a property of a to-one link (`"owner.name"`).
    public func sorted(
        byKeyPath keyPath: String, ascending: Bool = true
    ) throws(RealmError) -> FrozenResults<
        Element
    > {
        let path = try PredicateParser.parseKeyPath(keyPath)
        return try adding { $0.orderings.append(.sort([QuerySortKey(path: path, ascending: ascending)])) }
    }

    /// Sorted by a property: `sorted(by: \.name)`.
    public func sorted<V: _PersistableScalar>(
        by keyPath: KeyPath<Element, V>, ascending: Bool = true
    )
        -> FrozenResults<Element>
    {
        let path = QueryCalls.keyPath(keyPath, Element.self)
        return addingValidated { $0.orderings.append(.sort([QuerySortKey(path: path, ascending: ascending)])) }
    }

    /// Sorted by several keys, the first deciding first.
    public func sorted(by descriptors: [SortDescriptor<Element>]) -> FrozenResults<Element> {
        let keys = QueryCalls.sortKeys(descriptors)
        return addingValidated { $0.orderings.append(.sort(keys)) }
    }

    /// The first object for each distinct combination of values of the key paths.
    public func distinct(by keyPaths: [String]) throws(RealmError) -> FrozenResults<Element> {
        var paths: [QueryKeyPath] = []
        for keyPath in keyPaths { paths.append(try PredicateParser.parseKeyPath(keyPath)) }
        return try adding { $0.orderings.append(.distinct(paths)) }
    }

    /// The first object for each distinct combination of values of the key paths.
    public func distinct(by keyPaths: [PartialKeyPath<Element>]) -> FrozenResults<Element> {
        let paths = keyPaths.map { QueryCalls.keyPath($0, Element.self) }
        return addingValidated { $0.orderings.append(.distinct(paths)) }
    }

    /// At most `maxCount` objects.
    public func limit(_ maxCount: Int) -> FrozenResults<Element> {
        addingValidated { $0.orderings.append(.limit(Swift.max(0, maxCount))) }
    }

    /// The smallest value of a property among the matches; nil if there are none.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func min<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .min), to: T.self)
    }

    /// The largest value of a property among the matches; nil if there are none.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func max<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .max), to: T.self)
    }

    /// The sum of a numeric property over the matches.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func sum<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T {
        QueryCalls.convert(try aggregate(property, .sum), to: T.self) ?? T._rlmScalarDefault
    }

    /// The average of a numeric property over the matches; nil if there are none.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func average<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .avg), to: T.self)
    }

    private func aggregate(_ property: String, _ terminal: PlanTerminal) throws(RealmError) -> Value {
        try executor.aggregate(query, try PredicateParser.parseKeyPath(property), terminal)
    }
}
