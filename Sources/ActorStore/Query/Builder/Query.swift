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
    fileprivate let _node: WhereNode

    fileprivate init(_ node: WhereNode) { self._node = node }

    /// A property of the object queried: `$0.name`.
    public subscript<V>(dynamicMember member: KeyPath<T, V>) -> Query<V> where T: ObjectBase {
        appendingMember(member, of: T.self)
    }
}

/// Builds the predicate of `where { … }`: `body` receives the query of an object of `type`.
func makeWherePredicate<T: ObjectBase>(_ type: T.Type, _ body: (Query<T>) -> Query<Bool>) -> QueryPredicate {
    body(Query<T>(.path(WherePath()))).condition.lowered { QueryKeyPath($0.components) }
}

// MARK: - Marker protocols

/// Types that order in queries (`<`, ranges, `min`, `max`): numbers, `Date`, and their optionals. Public only
/// because `Query`'s constraints name it.
public protocol _QueryComparable: _PersistableScalar {
    /// The type of range bounds: the type itself, or the wrapped type of an optional.
    associatedtype _QueryBound: _PersistableScalar & Comparable
}

/// Numbers, which also `sum` and `avg` in queries. Public only because `Query`'s constraints name it.
public protocol _QueryNumeric: _QueryComparable {
    /// The type of an average: `Double` for integers and floating-point numbers, `Decimal128` for decimals.
    associatedtype _QueryAverage: _PersistableScalar
}

/// `String` and `String?`: the string operators of queries. Public only because `Query`'s constraints name it.
public protocol _QueryString: _PersistableScalar {}

/// `Data` and `Data?`: the binary operators of queries. Public only because `Query`'s constraints name it.
public protocol _QueryData: _PersistableScalar {}

/// Optional links (`Person?`): queried through their properties, compared by identity. Public only because
/// `Query`'s constraints name it.
public protocol _QueryLink {
    /// The class linked to.
    associatedtype _QueryLinked: ObjectBase
}

/// Optional enums (`Taste?`), for `rawValue`. Public only because `Query`'s constraints name it.
public protocol _QueryOptionalEnum {
    /// The optional raw value type.
    associatedtype _QueryRawValue
}

/// Collections whose elements a query compares one by one (``List``, ``MutableSet``, ``LinkingObjects``,
/// ``ToMany``). Public only because `Query`'s constraints name it.
public protocol _QueryCollection {
    /// The type of the elements.
    associatedtype _QueryElement
}

/// ``List`` and ``MutableSet``: collections a value can be looked for in (`$0.tags.contains("x")`). Public only
/// because `Query`'s constraints name it.
public protocol _QueryStoredCollection: _QueryCollection {}

/// ``ToMany``: the values of a property across a to-many relationship, whose string `contains` is a substring
/// search, as for a single string. Public only because `Query`'s constraints name it.
public protocol _QueryToMany: _QueryCollection {}

/// ``Map``: queried by key, over its keys or its values. Public only because `Query`'s constraints name it.
public protocol _QueryMap {
    /// The type of the values.
    associatedtype _QueryMapValue
}

extension Int: _QueryNumeric {
    public typealias _QueryBound = Int
    public typealias _QueryAverage = Double
}
extension Int8: _QueryNumeric {
    public typealias _QueryBound = Int8
    public typealias _QueryAverage = Double
}
extension Int16: _QueryNumeric {
    public typealias _QueryBound = Int16
    public typealias _QueryAverage = Double
}
extension Int32: _QueryNumeric {
    public typealias _QueryBound = Int32
    public typealias _QueryAverage = Double
}
extension Int64: _QueryNumeric {
    public typealias _QueryBound = Int64
    public typealias _QueryAverage = Double
}
extension Float: _QueryNumeric {
    public typealias _QueryBound = Float
    public typealias _QueryAverage = Double
}
extension Double: _QueryNumeric {
    public typealias _QueryBound = Double
    public typealias _QueryAverage = Double
}
extension Decimal128: _QueryNumeric {
    public typealias _QueryBound = Decimal128
    public typealias _QueryAverage = Decimal128
}
extension Date: _QueryComparable {
    public typealias _QueryBound = Date
}
extension Optional: _QueryComparable where Wrapped: _QueryComparable {
    public typealias _QueryBound = Wrapped._QueryBound
}
extension Optional: _QueryNumeric where Wrapped: _QueryNumeric {
    public typealias _QueryAverage = Wrapped._QueryAverage
}
extension String: _QueryString {}
extension Optional: _QueryString where Wrapped: _QueryString {}
extension Data: _QueryData {}
extension Optional: _QueryData where Wrapped: _QueryData {}
extension Optional: _QueryLink where Wrapped: ObjectBase {
    public typealias _QueryLinked = Wrapped
}
extension Optional: _QueryOptionalEnum where Wrapped: PersistableEnum {
    public typealias _QueryRawValue = Wrapped.RawValue?
}
extension List: _QueryStoredCollection {
    public typealias _QueryElement = Element
}
extension MutableSet: _QueryStoredCollection {
    public typealias _QueryElement = Element
}
extension LinkingObjects: _QueryCollection {
    public typealias _QueryElement = Element
}
extension Map: _QueryMap {
    public typealias _QueryMapValue = Value
}

/// The values of one property across the elements of a to-many relationship, as a ``Query`` sees them:
/// `$0.dogs.age` is a `Query<ToMany<Int>>`, the ages of a person's dogs.
///
/// Comparisons hold when any of the values matches (`$0.dogs.age < 2`: some dog is younger than 2;
/// `$0.dogs.name.contains("ex")`: some dog's name contains "ex"), aggregates combine them
/// (`$0.dogs.age.avg >= 3`), and the properties of objects continue the path (`$0.dogs.owner.name`). A
/// to-many property of the elements flattens: `$0.dogs.toys` is a `Query<ToMany<Toy>>`. The type has no
/// values; it exists only to select the operators of `Query`.
public enum ToMany<Element>: _QueryToMany {
    /// The type of the values.
    public typealias _QueryElement = Element
}

// MARK: - Internal representation

/// A key path being built, with what aggregates and subqueries need to know about it.
private struct WherePath: Hashable, Sendable {
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
private enum WhereOperand: Hashable, Sendable {
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
private indirect enum WhereCondition: Hashable, Sendable {
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
private enum WhereNode: Hashable, Sendable {
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
    fileprivate var path: WherePath {
        guard case .path(let path) = _node else {
            preconditionFailure("A where-query can only read properties of objects and collections.")
        }
        return path
    }

    /// This query as the operand of a comparison.
    fileprivate var operand: WhereOperand {
        switch _node {
        case .path(let path): .path(path)
        case .expression(let expression): .expression(expression)
        case .condition:
            preconditionFailure("A condition cannot be compared to a value; combine conditions with &&, || and !.")
        }
    }

    /// The query of what `member` reads from an object of `type`, the class this query's path ends at.
    fileprivate func appendingMember<V>(_ member: AnyKeyPath, of type: ObjectBase.Type) -> Query<V> {
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
    fileprivate func compare(_ op: QueryOperator, _ rhs: WhereOperand, _ options: QueryOptions = []) -> Query<Bool> {
        Query<Bool>(.condition(.comparison(operand, op, rhs, options)))
    }

    /// `self op rhs` for two queries of the same type.
    fileprivate func compare(_ op: QueryOperator, _ rhs: Query<T>) -> Query<Bool> { compare(op, rhs.operand) }

    /// `self BETWEEN {lower, upper}`.
    fileprivate func between<B: _PersistableScalar>(_ lower: B, _ upper: B) -> Query<Bool> {
        Query<Bool>(.condition(.between(operand, lower: constant(lower), upper: constant(upper))))
    }

    /// `lower <= self && self < upper`.
    fileprivate func halfOpen<B: _PersistableScalar>(_ lower: B, _ upper: B) -> Query<Bool> {
        Query<Bool>(
            .condition(
                .and([
                    .comparison(operand, .greaterOrEqual, .expression(constant(lower)), []),
                    .comparison(operand, .less, .expression(constant(upper)), []),
                ])))
    }

    /// `self IN {values…}`.
    fileprivate func isIn(_ values: [QueryExpression]) -> Query<Bool> { compare(.in, .expression(.list(values))) }

    /// `value IN self`, where this query is a collection: consumes its innermost collection.
    fileprivate func including(_ value: QueryExpression) -> Query<Bool> {
        Query<Bool>(.condition(.comparison(.expression(value), .in, .path(path.collection), [])))
    }

    /// The aggregate `component` of this collection.
    fileprivate func aggregate<V>(_ component: QueryKeyPath.Component, _ name: String) -> Query<V> {
        Query<V>(.path(path.aggregated(component, name)))
    }
}

/// A constant in a query.
private func constant<V: _PersistableScalar>(_ value: V) -> QueryExpression { .value(value._rlmToStored.raw) }

/// An object in a query, matched by identity (`nil`: the null link).
private func objectConstant(_ object: ObjectBase?) -> QueryExpression {
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
    fileprivate var condition: WhereCondition {
        switch _node {
        case .condition(let condition): condition
        case .path(let path): .comparison(.path(path), .equal, .expression(.value(.bool(true))), [])
        case .expression:
            preconditionFailure("A subquery count is a number, not a condition; compare it: `(…).count > 0`.")
        }
    }
}

// MARK: - Values

extension Query where T: _PersistableScalar {
    /// Whether the value equals `rhs` (`$0.owner == nil` style for optionals).
    public static func == (lhs: Query, rhs: T) -> Query<Bool> {
        if case .condition(let condition) = lhs._node, let flag = rhs as? Bool {
            return Query<Bool>(.condition(flag ? condition : .not(condition)))
        }
        return lhs.compare(.equal, .expression(constant(rhs)))
    }

    /// Whether the value differs from `rhs`.
    public static func != (lhs: Query, rhs: T) -> Query<Bool> {
        if case .condition(let condition) = lhs._node, let flag = rhs as? Bool {
            return Query<Bool>(.condition(flag ? .not(condition) : condition))
        }
        return lhs.compare(.notEqual, .expression(constant(rhs)))
    }

    /// Whether two values of the object are equal: `$0.name == $0.nickname`.
    public static func == (lhs: Query, rhs: Query) -> Query<Bool> {
        if let equivalence = lhs.equivalence(rhs) { return equivalence }
        return lhs.compare(.equal, rhs)
    }

    /// Whether two values of the object differ.
    public static func != (lhs: Query, rhs: Query) -> Query<Bool> {
        if let equivalence = lhs.equivalence(rhs) { return Query<Bool>(.condition(.not(equivalence.condition))) }
        return lhs.compare(.notEqual, rhs)
    }

    /// Whether the value is one of `values`: `$0.name.in(["Rex", "Fido"])`.
    public func `in`<S: Sequence>(_ values: S) -> Query<Bool> where S.Element == T {
        isIn(values.map(constant))
    }

    /// `a == b` for two conditions: both hold or neither does. Nil unless a side is a condition.
    private func equivalence(_ rhs: Query) -> Query<Bool>? {
        guard T.self == Bool.self else { return nil }
        switch (_node, rhs._node) {
        case (.condition, _), (_, .condition): break
        default: return nil
        }
        let a = Query<Bool>(_node).condition
        let b = Query<Bool>(rhs._node).condition
        return Query<Bool>(.condition(.or([.and([a, b]), .and([.not(a), .not(b)])])))
    }
}

extension Query where T: _QueryComparable {
    /// Whether the value is less than `rhs`.
    public static func < (lhs: Query, rhs: T) -> Query<Bool> { lhs.compare(.less, .expression(constant(rhs))) }

    /// Whether the value is at most `rhs`.
    public static func <= (lhs: Query, rhs: T) -> Query<Bool> {
        lhs.compare(.lessOrEqual, .expression(constant(rhs)))
    }

    /// Whether the value is greater than `rhs`.
    public static func > (lhs: Query, rhs: T) -> Query<Bool> { lhs.compare(.greater, .expression(constant(rhs))) }

    /// Whether the value is at least `rhs`.
    public static func >= (lhs: Query, rhs: T) -> Query<Bool> {
        lhs.compare(.greaterOrEqual, .expression(constant(rhs)))
    }

    /// Whether one value of the object is less than another: `$0.age < $0.limit`.
    public static func < (lhs: Query, rhs: Query) -> Query<Bool> { lhs.compare(.less, rhs) }

    /// Whether one value of the object is at most another.
    public static func <= (lhs: Query, rhs: Query) -> Query<Bool> { lhs.compare(.lessOrEqual, rhs) }

    /// Whether one value of the object is greater than another.
    public static func > (lhs: Query, rhs: Query) -> Query<Bool> { lhs.compare(.greater, rhs) }

    /// Whether one value of the object is at least another.
    public static func >= (lhs: Query, rhs: Query) -> Query<Bool> { lhs.compare(.greaterOrEqual, rhs) }

    /// Whether the value lies in `range`, bounds included: `$0.age.contains(1...5)` (`age BETWEEN {1, 5}`).
    public func contains(_ range: ClosedRange<T._QueryBound>) -> Query<Bool> {
        between(range.lowerBound, range.upperBound)
    }

    /// Whether the value lies in `range`, upper bound excluded: `$0.age.contains(1..<5)`.
    public func contains(_ range: Range<T._QueryBound>) -> Query<Bool> {
        halfOpen(range.lowerBound, range.upperBound)
    }
}

extension Query where T: _QueryString {
    /// Whether the string contains `value`.
    public func contains(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.contains, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string starts with `value`.
    public func starts(with value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.beginsWith, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string ends with `value`.
    public func ends(with value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.endsWith, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string equals `value` under `options` (`==` with options).
    public func equals(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.equal, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string differs from `value` under `options` (`!=` with options).
    public func notEquals(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.notEqual, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string matches the wildcard `pattern`: `?` matches one character, `*` any run of them
    /// (`"?bc*"` matches "abcde" and "cbc").
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> Query<Bool> {
        compare(.like, .expression(constant(pattern)), caseInsensitive ? .caseInsensitive : [])
    }
}

extension Query where T: _QueryData {
    /// Whether the bytes contain `value`.
    public func contains(_ value: Data) -> Query<Bool> { compare(.contains, .expression(constant(value))) }

    /// Whether the bytes start with `value`.
    public func starts(with value: Data) -> Query<Bool> { compare(.beginsWith, .expression(constant(value))) }

    /// Whether the bytes end with `value`.
    public func ends(with value: Data) -> Query<Bool> { compare(.endsWith, .expression(constant(value))) }
}

extension Query where T: PersistableEnum {
    /// The enum's raw value, for operators the enum lacks: `$0.taste.rawValue.starts(with: "s")`.
    public var rawValue: Query<T.RawValue> { Query<T.RawValue>(_node) }
}

extension Query where T: _QueryOptionalEnum {
    /// The optional enum's raw value, for operators the enum lacks.
    public var rawValue: Query<T._QueryRawValue> { Query<T._QueryRawValue>(_node) }
}

// MARK: - Conditions

extension Query where T == Bool {
    /// Whether the condition does not hold.
    public static prefix func ! (query: Query) -> Query<Bool> { Query<Bool>(.condition(.not(query.condition))) }

    /// Whether both conditions hold.
    public static func && (lhs: Query, rhs: Query) -> Query<Bool> {
        var parts: [WhereCondition] = []
        for side in [lhs.condition, rhs.condition] {
            if case .and(let inner) = side { parts += inner } else { parts.append(side) }
        }
        return Query<Bool>(.condition(.and(parts)))
    }

    /// Whether either condition holds.
    public static func || (lhs: Query, rhs: Query) -> Query<Bool> {
        var parts: [WhereCondition] = []
        for side in [lhs.condition, rhs.condition] {
            if case .or(let inner) = side { parts += inner } else { parts.append(side) }
        }
        return Query<Bool>(.condition(.or(parts)))
    }

    /// A subquery: how many elements of a collection meet the condition, each on its own.
    ///
    /// `$0.dogs.age < 2 && $0.dogs.name.starts(with: "R")` holds when some dog is young and some dog's name
    /// starts with R, maybe not the same dog; `($0.dogs.age < 2 && $0.dogs.name.starts(with: "R")).count > 0`
    /// requires one dog that is both. Every key path of the condition must go through the same collection
    /// (`SUBQUERY(dogs, $s0, $s0.age < 2 AND $s0.name BEGINSWITH 'R').@count`).
    public var count: Query<Int> { Query<Int>(.expression(condition.subqueryCount)) }
}

// MARK: - Links

extension Query where T: _QueryLink {
    /// A property of the linked object: `$0.owner.name` (false for objects without an owner).
    public subscript<V>(dynamicMember member: KeyPath<T._QueryLinked, V>) -> Query<V> {
        appendingMember(member, of: T._QueryLinked.self)
    }

    /// Whether the link refers to `rhs` (the same stored object), or is empty for `nil`.
    public static func == (lhs: Query, rhs: T._QueryLinked?) -> Query<Bool> {
        lhs.compare(.equal, .expression(objectConstant(rhs)))
    }

    /// Whether the link refers to another object than `rhs`, or is not empty for `nil`.
    public static func != (lhs: Query, rhs: T._QueryLinked?) -> Query<Bool> {
        lhs.compare(.notEqual, .expression(objectConstant(rhs)))
    }

    /// Whether the link refers to one of `objects`.
    public func `in`<S: Sequence>(_ objects: S) -> Query<Bool> where S.Element == T._QueryLinked {
        isIn(objects.map(objectConstant))
    }
}

// MARK: - Collections

extension Query where T: _QueryCollection {
    /// The number of elements: `$0.dogs.count > 3`. For the values of a to-many property (`$0.dogs.age`), the
    /// number of elements of the collection they come from (`dogs.@count`).
    public var count: Query<Int> { aggregate(.count, "count") }
}

extension Query where T: _QueryCollection, T._QueryElement: _PersistableScalar {
    /// Whether any element equals `rhs`: `$0.tags == "x"`, `$0.dogs.age == 3`.
    public static func == (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.equal, .expression(constant(rhs)))
    }

    /// Whether any element differs from `rhs`.
    public static func != (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.notEqual, .expression(constant(rhs)))
    }

    /// Whether any element is one of `values`: `$0.dogs.name.in(["Rex", "Fido"])`.
    public func `in`<S: Sequence>(_ values: S) -> Query<Bool> where S.Element == T._QueryElement {
        isIn(values.map(constant))
    }

    /// Whether any element is one of `values` (the same as `in(_:)`).
    public func containsAny<S: Sequence>(in values: S) -> Query<Bool> where S.Element == T._QueryElement {
        isIn(values.map(constant))
    }
}

extension Query where T: _QueryStoredCollection, T._QueryElement: _PersistableScalar {
    /// Whether the collection holds `element`: `$0.tags.contains("x")` (`'x' IN tags`).
    public func contains(_ element: T._QueryElement) -> Query<Bool> { including(constant(element)) }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryComparable {
    /// Whether any element is less than `rhs`: `$0.dogs.age < 2`.
    public static func < (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.less, .expression(constant(rhs)))
    }

    /// Whether any element is at most `rhs`.
    public static func <= (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.lessOrEqual, .expression(constant(rhs)))
    }

    /// Whether any element is greater than `rhs`.
    public static func > (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.greater, .expression(constant(rhs)))
    }

    /// Whether any element is at least `rhs`.
    public static func >= (lhs: Query, rhs: T._QueryElement) -> Query<Bool> {
        lhs.compare(.greaterOrEqual, .expression(constant(rhs)))
    }

    /// Whether any element lies in `range`, bounds included: `$0.dogs.age.contains(1...5)`.
    ///
    /// Realm's `List.contains(range)` requires all elements in the range; here, as for the values of a to-many
    /// property, one is enough. For all of them, compare `min` and `max`.
    public func contains(_ range: ClosedRange<T._QueryElement._QueryBound>) -> Query<Bool> {
        between(range.lowerBound, range.upperBound)
    }

    /// The smallest element: `$0.dogs.age.min < 1` (`dogs.@min.age`).
    public var min: Query<T._QueryElement> { aggregate(.min, "min") }

    /// The largest element.
    public var max: Query<T._QueryElement> { aggregate(.max, "max") }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryNumeric {
    /// The sum of the elements (0 when empty).
    public var sum: Query<T._QueryElement> { aggregate(.sum, "sum") }

    /// The average of the elements: `$0.dogs.age.avg >= 3` (`dogs.@avg.age`).
    public var avg: Query<T._QueryElement._QueryAverage> { aggregate(.avg, "avg") }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryString {
    /// Whether any element starts with `value`.
    public func starts(with value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.beginsWith, .expression(constant(value)), options.queryOptions)
    }

    /// Whether any element ends with `value`.
    public func ends(with value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.endsWith, .expression(constant(value)), options.queryOptions)
    }

    /// Whether any element equals `value` under `options`.
    public func equals(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.equal, .expression(constant(value)), options.queryOptions)
    }

    /// Whether any element differs from `value` under `options`.
    public func notEquals(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.notEqual, .expression(constant(value)), options.queryOptions)
    }

    /// Whether any element matches the wildcard `pattern` (`?`: one character, `*`: any run).
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> Query<Bool> {
        compare(.like, .expression(constant(pattern)), caseInsensitive ? .caseInsensitive : [])
    }
}

extension Query where T: _QueryToMany, T._QueryElement: _QueryString {
    /// Whether any of the strings contains `value`: `$0.dogs.name.contains("ex")`. (On a list of strings,
    /// `contains` looks for an element instead.)
    public func contains(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.contains, .expression(constant(value)), options.queryOptions)
    }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryData {
    /// Whether any element starts with `value`.
    public func starts(with value: Data) -> Query<Bool> { compare(.beginsWith, .expression(constant(value))) }

    /// Whether any element ends with `value`.
    public func ends(with value: Data) -> Query<Bool> { compare(.endsWith, .expression(constant(value))) }
}

extension Query where T: _QueryToMany, T._QueryElement: _QueryData {
    /// Whether any of the byte strings contains `value`.
    public func contains(_ value: Data) -> Query<Bool> { compare(.contains, .expression(constant(value))) }
}

extension Query where T: _QueryCollection, T._QueryElement: ObjectBase {
    /// A property of the elements: `$0.dogs.age`, the ages of the dogs.
    public subscript<V>(dynamicMember member: KeyPath<T._QueryElement, V>) -> Query<ToMany<V>> {
        appendingMember(member, of: T._QueryElement.self)
    }

    /// A to-many property of the elements, flattened: `$0.dogs.toys`, the toys of all the dogs.
    public subscript<V: _QueryCollection>(dynamicMember member: KeyPath<T._QueryElement, V>) -> Query<
        ToMany<V._QueryElement>
    > {
        appendingMember(member, of: T._QueryElement.self)
    }

    /// A map property of the elements: `$0.dogs.scores["speed"] > 3` holds when it does for some dog.
    public subscript<V: _QueryMap>(dynamicMember member: KeyPath<T._QueryElement, V>) -> Query<V> {
        appendingMember(member, of: T._QueryElement.self)
    }

    /// Whether the collection holds `object` (the same stored object): `$0.dogs.contains(rex)`.
    public func contains(_ object: T._QueryElement) -> Query<Bool> { including(objectConstant(object)) }

    /// Whether the collection holds one of `objects`.
    public func containsAny<S: Sequence>(in objects: S) -> Query<Bool> where S.Element == T._QueryElement {
        isIn(objects.map(objectConstant))
    }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryLink {
    /// A property of the linked objects: `$0.dogs.owner.name`, the names of the dogs' owners.
    public subscript<V>(dynamicMember member: KeyPath<T._QueryElement._QueryLinked, V>) -> Query<ToMany<V>> {
        appendingMember(member, of: T._QueryElement._QueryLinked.self)
    }

    /// A to-many property of the linked objects, flattened.
    public subscript<V: _QueryCollection>(dynamicMember member: KeyPath<T._QueryElement._QueryLinked, V>)
        -> Query<ToMany<V._QueryElement>>
    {
        appendingMember(member, of: T._QueryElement._QueryLinked.self)
    }

    /// A map property of the linked objects.
    public subscript<V: _QueryMap>(dynamicMember member: KeyPath<T._QueryElement._QueryLinked, V>) -> Query<V> {
        appendingMember(member, of: T._QueryElement._QueryLinked.self)
    }

    /// Whether any link refers to `rhs`, or, for `nil`, whether any is empty.
    public static func == (lhs: Query, rhs: T._QueryElement._QueryLinked?) -> Query<Bool> {
        lhs.compare(.equal, .expression(objectConstant(rhs)))
    }

    /// Whether any link refers to another object than `rhs`, or, for `nil`, whether any is not empty.
    public static func != (lhs: Query, rhs: T._QueryElement._QueryLinked?) -> Query<Bool> {
        lhs.compare(.notEqual, .expression(objectConstant(rhs)))
    }

    /// Whether any link refers to one of `objects`.
    public func `in`<S: Sequence>(_ objects: S) -> Query<Bool> where S.Element == T._QueryElement._QueryLinked {
        isIn(objects.map(objectConstant))
    }
}

// MARK: - Maps

extension Query where T: _QueryMap {
    /// The value for `key`: `$0.scores["math"] > 3` (false when the key is absent).
    public subscript(key: String) -> Query<T._QueryMapValue> {
        var path = self.path
        _ = path.toMany.popLast()
        path.components.append(.mapKey(key))
        return Query<T._QueryMapValue>(.path(path))
    }

    /// The keys: `$0.scores.keys == "math"` holds when the map has the key "math".
    public var keys: Query<ToMany<String>> {
        var path = self.path
        path.components.append(.allKeys)
        return Query<ToMany<String>>(.path(path))
    }

    /// The values: `$0.scores.values > 3` holds when any value is greater than 3.
    public var values: Query<ToMany<T._QueryMapValue>> {
        var path = self.path
        path.components.append(.allValues)
        return Query<ToMany<T._QueryMapValue>>(.path(path))
    }

    /// The number of entries.
    public var count: Query<Int> { aggregate(.count, "count") }
}

extension Query where T: _QueryMap, T._QueryMapValue: _PersistableScalar {
    /// Whether some value equals `value`: `$0.scores.contains(3)` (`3 IN scores`).
    public func contains(_ value: T._QueryMapValue) -> Query<Bool> { including(constant(value)) }
}

extension Query where T: _QueryMap, T._QueryMapValue: _QueryComparable {
    /// The smallest value.
    public var min: Query<T._QueryMapValue> { aggregate(.min, "min") }

    /// The largest value.
    public var max: Query<T._QueryMapValue> { aggregate(.max, "max") }
}

extension Query where T: _QueryMap, T._QueryMapValue: _QueryNumeric {
    /// The sum of the values (0 when empty).
    public var sum: Query<T._QueryMapValue> { aggregate(.sum, "sum") }

    /// The average of the values.
    public var avg: Query<T._QueryMapValue._QueryAverage> { aggregate(.avg, "avg") }
}

// MARK: - AnyRealmValue

extension Query where T == AnyRealmValue {
    /// Whether the value equals `rhs`: same type and value (numbers compare across types), or the same object.
    public static func == (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.equal, .expression(rhs.queryExpression))
    }

    /// Whether the value differs from `rhs`.
    public static func != (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.notEqual, .expression(rhs.queryExpression))
    }

    /// Whether the value is less than `rhs` (false when their types cannot be compared).
    public static func < (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.less, .expression(rhs.queryExpression))
    }

    /// Whether the value is at most `rhs` (false when their types cannot be compared).
    public static func <= (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.lessOrEqual, .expression(rhs.queryExpression))
    }

    /// Whether the value is greater than `rhs` (false when their types cannot be compared).
    public static func > (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.greater, .expression(rhs.queryExpression))
    }

    /// Whether the value is at least `rhs` (false when their types cannot be compared).
    public static func >= (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.greaterOrEqual, .expression(rhs.queryExpression))
    }

    /// Whether the value is one of `values`: `$0.value.in([.int(1), .string("one")])`.
    public func `in`<S: Sequence>(_ values: S) -> Query<Bool> where S.Element == AnyRealmValue {
        isIn(values.map(\.queryExpression))
    }
}

extension Query where T: _QueryCollection, T._QueryElement == AnyRealmValue {
    /// Whether any element equals `rhs`.
    public static func == (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.equal, .expression(rhs.queryExpression))
    }

    /// Whether any element is greater than `rhs` (elements of other types do not count).
    public static func > (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.greater, .expression(rhs.queryExpression))
    }

    /// Whether any element is less than `rhs` (elements of other types do not count).
    public static func < (lhs: Query, rhs: AnyRealmValue) -> Query<Bool> {
        lhs.compare(.less, .expression(rhs.queryExpression))
    }

    /// Whether any element is one of `values`.
    public func `in`<S: Sequence>(_ values: S) -> Query<Bool> where S.Element == AnyRealmValue {
        isIn(values.map(\.queryExpression))
    }
}

extension Query where T: _QueryStoredCollection, T._QueryElement == AnyRealmValue {
    /// Whether the collection holds `element`: `$0.values.contains(.int(3))`.
    public func contains(_ element: AnyRealmValue) -> Query<Bool> { including(element.queryExpression) }
}

extension Query where T: _QueryMap, T._QueryMapValue == AnyRealmValue {
    /// Whether some value equals `value`.
    public func contains(_ value: AnyRealmValue) -> Query<Bool> { including(value.queryExpression) }
}
