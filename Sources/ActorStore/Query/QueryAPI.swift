import ActorStorePersistence
import Foundation

// The query methods of `Results` and `FrozenResults` (and, returning `Results`, of managed `List`,
// `MutableSet` and `LinkingObjects` of objects). They only compose a `QueryDescription`; evaluation waits
// for the first read.

/// Helpers shared by the query methods.
enum QueryCalls {
    /// The query key path of a Swift key path (`\Dog.owner?.name` → `owner.name`); a key path that reads no
    /// `@Persisted` property is a programmer error.
    static func keyPath<Root: ObjectBase>(_ keyPath: AnyKeyPath, _ root: Root.Type) -> QueryKeyPath {
        guard let properties = ClassRegistry.info(for: root).propertyPath(of: keyPath) else {
            preconditionFailure(
                "\(keyPath) does not read a @Persisted property of \(root) (through to-one links): queries, sorting "
                    + "and aggregates need stored properties.")
        }
        return QueryKeyPath(properties.map { .property($0.name) })
    }

    /// Sort keys from Foundation sort descriptors (their key path and order; their comparator is not used:
    /// values sort as in predicates, strings by UTF-8 bytes).
    static func sortKeys<Root: ObjectBase>(_ descriptors: [SortDescriptor<Root>]) -> [QuerySortKey] {
        descriptors.map { descriptor in
            guard let path = descriptor.keyPath else {
                preconditionFailure("A SortDescriptor without a key path cannot sort a realm query.")
            }
            return QuerySortKey(path: keyPath(path, Root.self), ascending: descriptor.order == .forward)
        }
    }

    /// An aggregate's value as `T` (an average of integers as a `Double`, a sum as the property's type).
    static func convert<T: _PersistableScalar>(_ value: Value, to type: T.Type) -> T? {
        if let converted = T._rlmFromStored(_StoredValue(value)) { return converted }
        let scalar = T._rlmScalarKind.scalar
        switch value {
        case .int(let v):
            switch scalar {
            case .double: return T._rlmFromStored(_StoredValue(.double(Double(v))))
            case .float: return T._rlmFromStored(_StoredValue(.float(Float(v))))
            case .decimal128: return T._rlmFromStored(_StoredValue(.decimal128(Decimal128(Int(v)).bits)))
            default: return nil
            }
        case .double, .float, .decimal128:
            guard let d = QueryValues.double(value) else { return nil }
            switch scalar {
            case .double: return T._rlmFromStored(_StoredValue(.double(d)))
            case .float: return T._rlmFromStored(_StoredValue(.float(Float(d))))
            case .decimal128: return T._rlmFromStored(_StoredValue(.decimal128(Decimal128(d).bits)))
            case .int8, .int16, .int32, .int64:
                guard d.isFinite, let i = Int64(exactly: d.rounded(.towardZero)) else { return nil }
                return T._rlmFromStored(_StoredValue(.int(i)))
            default: return nil
            }
        default: return nil
        }
    }
}

extension Results {
    /// The objects matching a predicate string, as in Realm:
    /// `filter("age < %@ AND name BEGINSWITH[c] %@", 2, "b")`. See the Queries article for the grammar.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` with the position and what was expected, for a syntax
    ///   error, an unknown property, a type mismatch or missing arguments.
    public func filter(_ predicateFormat: String, _ args: Any...) throws(RealmError) -> Results<Element> {
        try filter(predicateFormat, arguments: args)
    }

    func filter(_ predicateFormat: String, arguments: [Any]) throws(RealmError) -> Results<Element> {
        let predicate = try PredicateParser.parse(predicateFormat, arguments)
        return try adding { $0.predicates.append(predicate) }
    }

    /// The objects matching a Foundation `#Predicate`:
    /// `filter(#Predicate<Dog> { $0.age < 2 && $0.name.starts(with: "B") })`.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` naming an expression that has no translation.
    public func filter(_ predicate: Foundation.Predicate<Element>) throws(RealmError) -> Results<Element> {
        let translated = try translatePredicate(predicate)
        return try adding { $0.predicates.append(translated) }
    }

    /// The objects matching a type-safe query: `where { $0.age < 2 && $0.name.starts(with: "B") }`.
    public func `where`(_ isIncluded: (Query<Element>) -> Query<Bool>) -> Results<Element> {
        let predicate = makeWherePredicate(Element.self, isIncluded)
        do {
            return try adding { $0.predicates.append(predicate) }
        } catch {
            preconditionFailure("where { … } built an invalid query: \(error.message)")
        }
    }

    /// The results sorted by a property (or a property of a to-one link: `"owner.name"`). Sorts are
    /// stable: sorting sorted results again keeps their previous order among ties, so the last sort decides first.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property, a collection or a link.
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) throws(RealmError) -> Results<Element> {
        let path = try PredicateParser.parseKeyPath(keyPath)
        return try adding { $0.orderings.append(.sort([QuerySortKey(path: path, ascending: ascending)])) }
    }

    /// The results sorted by a property: `sorted(by: \.name)`, `sorted(by: \.owner?.name, ascending: false)`.
    public func sorted<V: _PersistableScalar>(
        by keyPath: KeyPath<Element, V>, ascending: Bool = true
    )
        -> Results<Element>
    {
        let path = QueryCalls.keyPath(keyPath, Element.self)
        return addingValidated { $0.orderings.append(.sort([QuerySortKey(path: path, ascending: ascending)])) }
    }

    /// The results sorted by several keys, the first deciding first:
    /// `sorted(by: [SortDescriptor(\.age, order: .reverse), SortDescriptor(\.name)])`. Only the key path
    /// and order of each descriptor are used.
    public func sorted(by descriptors: [SortDescriptor<Element>]) -> Results<Element> {
        let keys = QueryCalls.sortKeys(descriptors)
        return addingValidated { $0.orderings.append(.sort(keys)) }
    }

    /// The first object for each distinct combination of values of the key paths, in the current order.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property, a collection or a link.
    public func distinct(by keyPaths: [String]) throws(RealmError) -> Results<Element> {
        var paths: [QueryKeyPath] = []
        for keyPath in keyPaths { paths.append(try PredicateParser.parseKeyPath(keyPath)) }
        return try adding { $0.orderings.append(.distinct(paths)) }
    }

    /// The first object for each distinct combination of values of the key paths, in the current order.
    public func distinct(by keyPaths: [PartialKeyPath<Element>]) -> Results<Element> {
        let paths = keyPaths.map { QueryCalls.keyPath($0, Element.self) }
        return addingValidated { $0.orderings.append(.distinct(paths)) }
    }

    /// At most `maxCount` objects. Without a sort before it, evaluation stops after `maxCount` matches.
    public func limit(_ maxCount: Int) -> Results<Element> {
        addingValidated { $0.orderings.append(.limit(Swift.max(0, maxCount))) }
    }

    /// The smallest value of a property (numbers, dates, strings) among the matches; nil if there are none.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func min<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .min), to: T.self)
    }

    /// The largest value of a property (numbers, dates, strings) among the matches; nil if there are none.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func max<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .max), to: T.self)
    }

    /// The sum of a numeric property over the matches (0 when there are none).
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func sum<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T {
        QueryCalls.convert(try aggregate(property, .sum), to: T.self) ?? T._rlmScalarDefault
    }

    /// The average of a numeric property over the matches; nil if there are none.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func average<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .avg), to: T.self)
    }

    /// The smallest value of a property among the matches: `min(of: \.age)`.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func min<T: _PersistableScalar & Comparable>(of keyPath: KeyPath<Element, T>) -> T? {
        QueryCalls.convert(aggregate(keyPath, .min), to: T.self)
    }

    /// The largest value of a property among the matches: `max(of: \.age)`.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func max<T: _PersistableScalar & Comparable>(of keyPath: KeyPath<Element, T>) -> T? {
        QueryCalls.convert(aggregate(keyPath, .max), to: T.self)
    }

    /// The sum of a numeric property over the matches: `sum(of: \.price)`.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func sum<T: _PersistableScalar & AdditiveArithmetic>(of keyPath: KeyPath<Element, T>) -> T {
        QueryCalls.convert(aggregate(keyPath, .sum), to: T.self) ?? .zero
    }

    /// The average of a numeric property over the matches, or nil if there are none: `average(of: \.age)`.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func average<T: _PersistableScalar & AdditiveArithmetic>(of keyPath: KeyPath<Element, T>) -> Double? {
        QueryCalls.convert(aggregate(keyPath, .avg), to: Double.self)
    }

    private func aggregate(_ property: String, _ terminal: PlanTerminal) throws(RealmError) -> Value {
        let path = try PredicateParser.parseKeyPath(property)
        return try context.runQuery(query, Element.self) { (executor) throws(RealmError) in
            try executor.aggregate(query, path, terminal)
        }
    }

    private func aggregate(_ keyPath: AnyKeyPath, _ terminal: PlanTerminal) -> Value {
        let path = QueryCalls.keyPath(keyPath, Element.self)
        do {
            return try context.runQuery(query, Element.self) { (executor) throws(RealmError) in
                try executor.aggregate(query, path, terminal)
            }
        } catch {
            preconditionFailure("Cannot aggregate \(keyPath): \(error.message)")
        }
    }
}

/// A managed collection of objects that can be queried like ``Results``: `List`, `MutableSet` and
/// `LinkingObjects` of `Object`s. Their query methods return live `Results` over the collection's members,
/// in the collection's order.
public protocol _QueryableCollection {
    associatedtype Element: Object
    /// The members as `Results` (a managed collection only: querying an unmanaged one is a programmer
    /// error).
    var _queryResults: Results<Element> { get }
}

extension _QueryableCollection {
    /// The members matching a predicate string (see ``Results``).
    public func filter(_ predicateFormat: String, _ args: Any...) throws(RealmError) -> Results<Element> {
        try _queryResults.filter(predicateFormat, arguments: args)
    }

    /// The members matching a Foundation `#Predicate`.
    public func filter(_ predicate: Foundation.Predicate<Element>) throws(RealmError) -> Results<Element> {
        try _queryResults.filter(predicate)
    }

    /// The members matching a type-safe query: `dogs.where { $0.age < 2 }`.
    public func `where`(_ isIncluded: (Query<Element>) -> Query<Bool>) -> Results<Element> {
        _queryResults.where(isIncluded)
    }

    /// The members sorted by a property or a property of a to-one link.
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) throws(RealmError) -> Results<Element> {
        try _queryResults.sorted(byKeyPath: keyPath, ascending: ascending)
    }

    /// The members sorted by a property: `sorted(by: \.name)`.
    public func sorted<V: _PersistableScalar>(
        by keyPath: KeyPath<Element, V>, ascending: Bool = true
    )
        -> Results<Element>
    {
        _queryResults.sorted(by: keyPath, ascending: ascending)
    }

    /// The members sorted by several keys.
    public func sorted(by descriptors: [SortDescriptor<Element>]) -> Results<Element> {
        _queryResults.sorted(by: descriptors)
    }

    /// The first member for each distinct combination of values of the key paths.
    public func distinct(by keyPaths: [PartialKeyPath<Element>]) -> Results<Element> {
        _queryResults.distinct(by: keyPaths)
    }

    /// The smallest value of a property among the members; nil if there are none.
    /// - Complexity: O(n) in the members.
    public func min<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        try _queryResults.min(ofProperty: property)
    }

    /// The largest value of a property among the members; nil if there are none.
    /// - Complexity: O(n) in the members.
    public func max<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        try _queryResults.max(ofProperty: property)
    }

    /// The sum of a numeric property over the members.
    /// - Complexity: O(n) in the members.
    public func sum<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T {
        try _queryResults.sum(ofProperty: property)
    }

    /// The average of a numeric property over the members; nil if there are none.
    /// - Complexity: O(n) in the members.
    public func average<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        try _queryResults.average(ofProperty: property)
    }
}

extension QueryCalls {
    /// The `Results` over a managed collection property of `owner`.
    static func results<E: Object>(_ owner: ObjectBase?, _ ordinal: Int, _ type: E.Type, what: String) -> Results<E> {
        guard let owner, let managed = owner._managed else {
            preconditionFailure("Only a managed \(what) can be queried: add its owner to a realm first.")
        }
        let column = managed.table.columns[ordinal]
        var query = QueryDescription()
        query.base = .collection(owner: managed.table.tableID, key: managed.key, column: column)
        return Results(context: managed.context, query: query)
    }
}

extension List: _QueryableCollection where Element: Object {
    public var _queryResults: Results<Element> { QueryCalls.results(owner, ordinal, Element.self, what: "List") }
}

extension MutableSet: _QueryableCollection where Element: Object {
    public var _queryResults: Results<Element> { QueryCalls.results(owner, ordinal, Element.self, what: "MutableSet") }
}

extension LinkingObjects: _QueryableCollection where Element: Object {
    public var _queryResults: Results<Element> {
        guard let owner, let managed = owner._managed else {
            preconditionFailure("Only the LinkingObjects of a managed object can be queried.")
        }
        let context = managed.context
        var query = QueryDescription()
        if let origin = context.binding(for: Element.self),
            let ordinal = origin.info.property(named: originProperty)?.ordinal, origin.columns[ordinal] >= 0
        {
            query.base = .backlinks(
                target: managed.table.tableID, key: managed.key, origin: origin.tableID, column: origin.columns[ordinal]
            )
        } else {
            query.predicates = [.constant(false)]
        }
        return Results(context: context, query: query)
    }
}
