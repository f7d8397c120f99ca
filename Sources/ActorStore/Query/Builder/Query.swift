import ActorStorePersistence
import Foundation

// The type-safe query builder: `results.where { $0.age < 2 && $0.name.starts(with: "B") }`.
//
// A `Query<T>` stands for a value of type `T` read from the object queried: the object itself (`$0`), one of
// its properties (`$0.name` is a `Query<String>`), a property through links (`$0.owner.name`), the values of a
// property across a to-many relationship (`$0.dogs.age` is a `Query<ToMany<Int>>`), an aggregate
// (`$0.dogs.count` is a `Query<Int>`), or a condition (`Query<Bool>`). Which operators exist is decided by `T`
// in constrained extensions, so that a comparison the query engine would reject (`$0.name > 3`,
// `$0.age.starts(with: "x")`) does not compile. The builder produces a `QueryPredicate`, the AST the predicate
// parser produces too; `makeWherePredicate` is the entry point `Results.where` calls.

// MARK: - Options

/// Modifiers of a string comparison in a ``Query``: `$0.name.contains("rex", options: .caseInsensitive)`.
public struct StringOptions: OptionSet, Hashable, Sendable {
    /// The options' bits.
    public let rawValue: UInt8

    /// Options from their bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Compares with full Unicode case folding (`ß` matches `SS`): the predicate string's `[c]`.
    public static let caseInsensitive = StringOptions(rawValue: 1)

    /// Ignores diacritics (`é` matches `e`): the predicate string's `[d]`.
    public static let diacriticInsensitive = StringOptions(rawValue: 2)

    var queryOptions: QueryOptions {
        var options: QueryOptions = []
        if contains(.caseInsensitive) { options.insert(.caseInsensitive) }
        if contains(.diacriticInsensitive) { options.insert(.diacriticInsensitive) }
        return options
    }
}

// MARK: - Query

/// A type-safe query expression: what the closure given to `where` receives and returns.
///
/// ```swift
/// let puppies = realm.objects(Dog.self).where {
///     $0.age < 2 && $0.name.starts(with: "B", options: .caseInsensitive)
/// }
/// let owners = realm.objects(Person.self).where { $0.dogs.age < 2 }  // some dog is younger than 2
/// let busy = realm.objects(Person.self).where { $0.dogs.count > 3 }
/// let both = realm.objects(Person.self).where {
///     ($0.dogs.age < 2 && $0.dogs.name.starts(with: "R")).count > 0  // one dog that is both
/// }
/// ```
///
/// `$0` is a `Query` of the object type queried. Reading a `@Persisted` property of it gives a `Query` of the
/// property's type, and that type decides which operators apply:
///
/// - Every value type (numbers, `Bool`, `String`, `Data`, `Date`, `UUID`, ``ObjectId``, ``Decimal128``,
///   ``PersistableEnum`` enums, and their optionals): `==`, `!=`, `in(_:)`. Optionals compare with `nil`.
/// - Numbers and `Date`, and their optionals: `<`, `<=`, `>`, `>=`, and `contains(_:)` with a range
///   (`$0.age.contains(1...5)`).
/// - `String` and `String?`: `contains(_:options:)`, `starts(with:options:)`, `ends(with:options:)`,
///   `equals(_:options:)`, `notEquals(_:options:)`, `like(_:caseInsensitive:)`, with ``StringOptions``.
/// - `Data` and `Data?`: `contains(_:)`, `starts(with:)`, `ends(with:)`.
/// - Enums: `rawValue`, for the operators of the raw type (`$0.taste.rawValue.starts(with: "s")`).
/// - An optional link (`Person?`): its properties (`$0.owner.name`), `==` and `!=` with a managed object (by
///   identity) or `nil`, `in(_:)`.
/// - ``List``, ``MutableSet``, ``LinkingObjects``: the comparisons above on their elements, true when any
///   element matches (`$0.tags == "x"`); `contains(_:)` an element or object; `containsAny(in:)`; `count`;
///   `min`, `max` (numbers, dates), `sum`, `avg` (numbers); and the properties of their objects, read as a
///   ``ToMany`` (`$0.dogs.age`), which supports the same, with `contains(_:options:)` a substring search.
/// - ``Map``: `map["key"]`, `keys`, `values`, `count`, `min`, `max`, `sum`, `avg`, `contains(_:)` a value.
/// - `Bool`, a condition: `&&`, `||`, prefix `!`; and `count`, a subquery.
///
/// Ordering (`<`, ranges, `min`, `max`) applies to numbers and dates only, as in the predicate language, so
/// `$0.name < "m"` does not compile. Two queries of the same type compare too (`$0.age > $0.minimumAge`).
///
/// A property through a to-many relationship is implicitly *any*: `$0.dogs.age < 2` holds when at least one dog
/// is younger than 2, and `$0.dogs.age.avg` is the average of the dogs' ages. To require that *one* element
/// match several conditions, count the elements that do with a subquery, as in the last example.
///
/// On a collection, the builder's `count`, `min`, `max`, `sum` and `avg` hide properties of those names of its
/// elements. A key path that reads no `@Persisted` property (a computed property combining several, a property
/// that is not persisted) stops the program, as does comparing with an object that is not managed by a realm:
/// both are programmer errors.
@dynamicMemberLookup
public struct Query<T>: Sendable {
    /// What this query stands for.
    let _node: WhereNode

    init(_ node: WhereNode) { self._node = node }

    /// A property of the object queried: `$0.name`.
    public subscript<V>(dynamicMember member: KeyPath<T, V>) -> Query<V> where T: ObjectBase {
        appendingMember(member, of: T.self)
    }
}

/// Builds the predicate of `where { … }`: `body` receives the query of an object of `type`.
func makeWherePredicate<T: ObjectBase>(_ type: T.Type, _ body: (Query<T>) -> Query<Bool>) -> QueryPredicate {
    body(Query<T>(.path(WherePath()))).condition.lowered { QueryKeyPath($0.components) }
}

// MARK: - Internal representation

/// A key path being built, with what aggregates and subqueries need to know about it.
struct WherePath: Hashable, Sendable {
    var components: [QueryKeyPath.Component] = []
    /// The positions in `components` of the to-many properties (lists, sets, linking objects, maps) the path
    /// reads element by element: each makes a comparison implicitly *any*. An aggregate or a membership test
    /// consumes the last; a subquery iterates the first.
    var toMany: [Int] = []

    /// The path with `component` applied to its innermost collection: `dogs.age` + `@avg` is `dogs.@avg.age`;
    /// `@count` drops what follows (`dogs.age` + `@count` is `dogs.@count`); `@allValues` before an aggregate
    /// goes (`scores.@allValues` + `@max` is `scores.@max`).
    func aggregated(_ component: QueryKeyPath.Component, _ name: String) -> WherePath {
        var path = self
        guard let index = path.toMany.popLast() else {
            preconditionFailure("'\(name)' applies to a collection, and \(QueryKeyPath(components)) is not one.")
        }
        let next = index + 1
        if component == .count {
            path.components.removeSubrange(next...)
            path.components.append(.count)
        } else {
            if next < path.components.count, path.components[next] == .allValues || path.components[next] == .allKeys {
                path.components.remove(at: next)
            }
            path.components.insert(component, at: next)
        }
        return path
    }

    /// The path as its collection: for `value IN path`, which consumes the innermost collection.
    var collection: WherePath {
        var path = self
        _ = path.toMany.popLast()
        return path
    }
}

/// An operand of a comparison.
enum WhereOperand: Hashable, Sendable {
    case path(WherePath)
    /// A constant, an object, a list of constants, or a subquery count.
    case expression(QueryExpression)

    func lowered(_ lowerPath: (WherePath) -> QueryKeyPath) -> QueryExpression {
        switch self {
        case .path(let path): .keyPath(lowerPath(path))
        case .expression(let expression): expression
        }
    }
}

/// A condition: a `QueryPredicate` whose key paths are still `WherePath`s, so that a subquery can rewrite
/// the ones that iterate its collection.
indirect enum WhereCondition: Hashable, Sendable {
    case not(WhereCondition)
    case and([WhereCondition])
    case or([WhereCondition])
    case comparison(WhereOperand, QueryOperator, WhereOperand, QueryOptions)
    case between(WhereOperand, lower: QueryExpression, upper: QueryExpression)

    func lowered(_ lowerPath: (WherePath) -> QueryKeyPath) -> QueryPredicate {
        switch self {
        case .not(let inner): .not(inner.lowered(lowerPath))
        case .and(let parts): .and(parts.map { $0.lowered(lowerPath) })
        case .or(let parts): .or(parts.map { $0.lowered(lowerPath) })
        case .comparison(let lhs, let op, let rhs, let options):
            .comparison(QueryComparison(lhs.lowered(lowerPath), op, rhs.lowered(lowerPath), options: options))
        case .between(let value, let lower, let upper):
            .between(value.lowered(lowerPath), lower: lower, upper: upper, quantifier: nil)
        }
    }

    /// Calls `body` with each key path the condition reads (not those inside nested subqueries).
    func forEachPath(_ body: (WherePath) -> Void) {
        func visit(_ operand: WhereOperand) {
            if case .path(let path) = operand { body(path) }
        }
        switch self {
        case .not(let inner): inner.forEachPath(body)
        case .and(let parts), .or(let parts): for part in parts { part.forEachPath(body) }
        case .comparison(let lhs, _, let rhs, _):
            visit(lhs)
            visit(rhs)
        case .between(let value, _, _): visit(value)
        }
    }

    /// How deeply subqueries nest inside the condition (0 without subqueries).
    var subqueryDepth: Int {
        func depth(_ operand: WhereOperand) -> Int {
            if case .expression(let expression) = operand { return Self.expressionDepth(expression) }
            return 0
        }
        switch self {
        case .not(let inner): return inner.subqueryDepth
        case .and(let parts), .or(let parts): return parts.map(\.subqueryDepth).max() ?? 0
        case .comparison(let lhs, _, let rhs, _): return Swift.max(depth(lhs), depth(rhs))
        case .between(let value, let lower, let upper):
            return Swift.max(depth(value), Self.expressionDepth(lower), Self.expressionDepth(upper))
        }
    }

    private static func expressionDepth(_ expression: QueryExpression) -> Int {
        switch expression {
        case .subqueryCount(_, _, let predicate): 1 + predicateDepth(predicate)
        case .list(let items): items.map(expressionDepth).max() ?? 0
        case .keyPath, .value, .object: 0
        }
    }

    private static func predicateDepth(_ predicate: QueryPredicate) -> Int {
        switch predicate {
        case .constant: 0
        case .not(let inner): predicateDepth(inner)
        case .and(let parts), .or(let parts): parts.map(predicateDepth).max() ?? 0
        case .comparison(let c): Swift.max(expressionDepth(c.lhs), expressionDepth(c.rhs))
        case .between(let value, let lower, let upper, _):
            Swift.max(expressionDepth(value), expressionDepth(lower), expressionDepth(upper))
        }
    }

    /// `SUBQUERY(collection, $sN, condition).@count`: the condition's key paths must all iterate one
    /// collection; inside the subquery they start from its variable.
    var subqueryCount: QueryExpression {
        var collections: [[QueryKeyPath.Component]] = []
        var outside: [QueryKeyPath] = []
        forEachPath { path in
            guard let first = path.toMany.first else {
                outside.append(QueryKeyPath(path.components))
                return
            }
            let collection = Array(path.components[...first])
            if !collections.contains(collection) { collections.append(collection) }
        }
        guard collections.count == 1, let collection = collections.first else {
            if collections.isEmpty {
                preconditionFailure(
                    "A subquery (`(condition).count`) needs a condition on the elements of a collection, such as "
                        + "`($0.dogs.age < 2).count`; this one reads no collection.")
            }
            let names = collections.map { QueryKeyPath($0).description }.joined(separator: ", ")
            preconditionFailure(
                "A subquery's condition must read the elements of one collection; this one reads \(names).")
        }
        guard outside.isEmpty else {
            let names = outside.map(\.description).joined(separator: ", ")
            preconditionFailure(
                "A subquery's condition can read only the elements of \(QueryKeyPath(collection)); it also reads "
                    + "\(names) (correlated subqueries are not supported).")
        }
        let variable = "$s\(subqueryDepth)"
        let predicate = lowered { path in
            QueryKeyPath(variable: variable, Array(path.components[collection.count...]))
        }
        return .subqueryCount(collection: QueryKeyPath(collection), variable: variable, predicate: predicate)
    }
}

/// What a ``Query`` stands for.
enum WhereNode: Hashable, Sendable {
    /// A key path from the object queried (empty: the object itself).
    case path(WherePath)
    /// A subquery count.
    case expression(QueryExpression)
    /// A condition (`Query<Bool>` only).
    case condition(WhereCondition)
}

// MARK: - Building blocks

extension Query {
    /// The key path this query stands for; anything else here is a broken invariant of the builder's types.
    var path: WherePath {
        guard case .path(let path) = _node else {
            preconditionFailure("A where-query can only read properties of objects and collections.")
        }
        return path
    }

    /// This query as the operand of a comparison.
    var operand: WhereOperand {
        switch _node {
        case .path(let path): .path(path)
        case .expression(let expression): .expression(expression)
        case .condition:
            preconditionFailure("A condition cannot be compared to a value; combine conditions with &&, || and !.")
        }
    }

    /// The query of what `member` reads from an object of `type`, the class this query's path ends at.
    func appendingMember<V>(_ member: AnyKeyPath, of type: ObjectBase.Type) -> Query<V> {
        var path = self.path
        let info = ClassRegistry.info(for: type)
        guard let properties = info.propertyPath(of: member) else {
            preconditionFailure(
                "The key path \(member) does not read a @Persisted property of \(info.className), so a where-query "
                    + "cannot use it; query the persisted properties it is computed from instead.")
        }
        for property in properties {
            path.components.append(.property(property.name))
            if property.kind.collection != .single || property.kind.isLinkingObjects {
                path.toMany.append(path.components.count - 1)
            }
        }
        return Query<V>(.path(path))
    }

    /// `self op rhs`.
    func compare(_ op: QueryOperator, _ rhs: WhereOperand, _ options: QueryOptions = []) -> Query<Bool> {
        Query<Bool>(.condition(.comparison(operand, op, rhs, options)))
    }

    /// `self op rhs` for two queries of the same type.
    func compare(_ op: QueryOperator, _ rhs: Query<T>) -> Query<Bool> { compare(op, rhs.operand) }

    /// `self BETWEEN {lower, upper}`.
    func between<B: _PersistableScalar>(_ lower: B, _ upper: B) -> Query<Bool> {
        Query<Bool>(.condition(.between(operand, lower: constant(lower), upper: constant(upper))))
    }

    /// `lower <= self && self < upper`.
    func halfOpen<B: _PersistableScalar>(_ lower: B, _ upper: B) -> Query<Bool> {
        Query<Bool>(
            .condition(
                .and([
                    .comparison(operand, .greaterOrEqual, .expression(constant(lower)), []),
                    .comparison(operand, .less, .expression(constant(upper)), []),
                ])))
    }

    /// `self IN {values…}`.
    func isIn(_ values: [QueryExpression]) -> Query<Bool> { compare(.in, .expression(.list(values))) }

    /// `value IN self`, where this query is a collection: consumes its innermost collection.
    func including(_ value: QueryExpression) -> Query<Bool> {
        Query<Bool>(.condition(.comparison(.expression(value), .in, .path(path.collection), [])))
    }

    /// The aggregate `component` of this collection.
    func aggregate<V>(_ component: QueryKeyPath.Component, _ name: String) -> Query<V> {
        Query<V>(.path(path.aggregated(component, name)))
    }
}

/// A constant in a query.
func constant<V: _PersistableScalar>(_ value: V) -> QueryExpression { .value(value._rlmToStored.raw) }

/// An object in a query, matched by identity (`nil`: the null link).
func objectConstant(_ object: ObjectBase?) -> QueryExpression {
    guard let object else { return .value(.null) }
    let className = ClassRegistry.info(for: type(of: object)).className
    guard let managed = object._managed else {
        preconditionFailure(
            "A where-query compares objects by identity, and this \(className) is not managed by a realm: add it "
                + "to the realm first, or compare one of its properties.")
    }
    return .object(className: className, key: managed.key)
}

extension Query where T == Bool {
    /// The condition this query stands for: a `Bool` property `p` is the condition `p == true`.
    var condition: WhereCondition {
        switch _node {
        case .condition(let condition): condition
        case .path(let path): .comparison(.path(path), .equal, .expression(.value(.bool(true))), [])
        case .expression:
            preconditionFailure("A subquery count is a number, not a condition; compare it: `(…).count > 0`.")
        }
    }
}
