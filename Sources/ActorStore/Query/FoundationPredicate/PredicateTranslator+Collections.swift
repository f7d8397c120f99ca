import ActorStorePersistence
import Foundation

// How `#Predicate` collection, string and range operations become query conditions.

extension PredicateTranslator {
    /// `sequence.contains(element)`: `element IN collection`, `string CONTAINS character`, or `element IN
    /// {constants}`.
    func sequenceContains(
        _ sequence: Any, element: Any, sequenceIsString: Bool, node: Any
    ) throws(RealmError) -> PredicateTerm {
        let base = try term(sequence)
        let item = try term(element)
        if sequenceIsString {
            return .predicate(
                try compare(base, .contains, item, in: node) { a, b in
                    guard let a = a as? String, let b = b as? Character else { return nil }
                    return a.contains(b)
                })
        }
        switch base {
        case .path:
            return .predicate(.comparison(QueryComparison(try operand(item, node), .in, try operand(base, node))))
        case .constant(_, let swiftValue):
            guard let values = constantElements(swiftValue) else {
                throw unsupported(node, "searches a constant of type \(type(of: swiftValue))")
            }
            if case .constant(let value, _) = item {
                // Both constant: fold.
                guard let value else { throw unsupported(node, "searches for a non-persistable constant") }
                return .predicate(.constant(values.contains(value)))
            }
            return .predicate(
                .comparison(QueryComparison(try operand(item, node), .in, .list(values.map(QueryExpression.value)))))
        default:
            throw unsupported(node, "searches something that is not a collection property or a constant array")
        }
    }

    /// A string operator (`CONTAINS`, `BEGINSWITH`) between two String terms; `fold` decides constants.
    func stringComparison(
        _ lhs: Any, _ op: QueryOperator, _ rhs: Any, options: QueryOptions = [], node: Any,
        fold: (String, String) -> Bool
    ) throws(RealmError) -> PredicateTerm {
        .predicate(
            try compare(term(lhs), op, term(rhs), options: options, in: node) { a, b in
                guard let a = Self.string(a), let b = Self.string(b) else { return nil }
                return fold(a, b)
            })
    }

    /// `range.contains(element)`: `element BETWEEN {lower, upper}` for a closed range of constants, else
    /// `element >= lower AND element <(=) upper`.
    func rangeContains(
        _ range: Any, element: Any, node: Any, fold: (QueryOperator) -> (Any, Any) -> Bool?
    ) throws(RealmError) -> PredicateTerm {
        let value = try term(element)
        let lower: PredicateTerm
        let upper: PredicateTerm
        let closed: Bool
        switch try term(range) {
        case .range(let rangeLower, let rangeUpper, let rangeClosed):
            (lower, upper, closed) = (rangeLower, rangeUpper, rangeClosed)
        case .constant(_, let swiftValue as any PredicateRangeConstant):
            let bounds = swiftValue.queryBounds
            lower = .constant(Self.storedValue(bounds.lower), bounds.lower)
            upper = .constant(Self.storedValue(bounds.upper), bounds.upper)
            closed = bounds.closed
        default:
            throw unsupported(node, "tests membership in something that is not a range")
        }
        if closed, case .path = value, case .constant = lower, case .constant = upper {
            return .predicate(
                .between(
                    try operand(value, node), lower: try operand(lower, node), upper: try operand(upper, node),
                    quantifier: nil))
        }
        let top: QueryOperator = closed ? .lessOrEqual : .less
        return .predicate(
            allOf([
                try compare(value, .greaterOrEqual, lower, in: node, fold: fold(.greaterOrEqual)),
                try compare(value, top, upper, in: node, fold: fold(top)),
            ]))
    }

    /// `collection.min()` / `collection.max()`.
    func aggregate(
        _ collection: Any, _ component: QueryKeyPath.Component, node: Any
    ) throws(RealmError) -> PredicateTerm {
        guard case .path(var path) = try term(collection) else {
            throw unsupported(node, "aggregates something that is not a collection property")
        }
        path.components.append(component)
        return .path(path)
    }

    /// Expressions that exist only in Apple's Foundation framework (not in swift-foundation on Linux),
    /// recognised by name so that this file builds everywhere: `localizedStandardContains(_:)`,
    /// `caseInsensitiveCompare(_:)`. Both have `root` and `other` children.
    func foundationFrameworkTerm(_ expression: Any) throws(RealmError) -> PredicateTerm {
        let name = Self.baseTypeName(expression)
        guard name == "StringLocalizedStandardContains" || name == "StringCaseInsensitiveCompare" else {
            throw unsupported(expression)
        }
        var root: Any?
        var other: Any?
        for child in Mirror(reflecting: expression).children {
            if child.label == "root" { root = child.value }
            if child.label == "other" { other = child.value }
        }
        guard let root, let other else { throw unsupported(expression, "has an unexpected shape") }
        if name == "StringCaseInsensitiveCompare" {
            return .caseInsensitiveCompare(try term(root), try term(other))
        }
        return try stringComparison(
            root, .contains, other, options: [.caseInsensitive, .diacriticInsensitive], node: expression
        ) { a, b in a.range(of: b, options: [.caseInsensitive, .diacriticInsensitive]) != nil }
    }
}

// MARK: Types seen through the predicate

/// `Optional<Wrapped>`'s wrapped type, found at run time.
private protocol OptionalTypeMarker {
    static var wrappedType: Any.Type { get }
}

extension Optional: OptionalTypeMarker {
    fileprivate static var wrappedType: Any.Type { Wrapped.self }
}

/// `type` without any levels of `Optional`.
func unwrappedType(_ type: Any.Type) -> Any.Type {
    var current = type
    while let optional = current as? any OptionalTypeMarker.Type { current = optional.wrappedType }
    return current
}

/// Collections whose `count` and `isEmpty` translate to `@count` (the key paths a `#Predicate` uses).
protocol PredicateCountable {
    static var countKeyPath: AnyKeyPath { get }
    static var isEmptyKeyPath: AnyKeyPath { get }
}

extension List: PredicateCountable {
    static var countKeyPath: AnyKeyPath { \List<Element>.count }
    static var isEmptyKeyPath: AnyKeyPath { \List<Element>.isEmpty }
}

extension MutableSet: PredicateCountable {
    static var countKeyPath: AnyKeyPath { \MutableSet<Element>.count }
    static var isEmptyKeyPath: AnyKeyPath { \MutableSet<Element>.isEmpty }
}

extension Map: PredicateCountable {
    static var countKeyPath: AnyKeyPath { \Map<Key, Value>.count }
    static var isEmptyKeyPath: AnyKeyPath { \Map<Key, Value>.isEmpty }
}

extension LinkingObjects: PredicateCountable {
    static var countKeyPath: AnyKeyPath { \LinkingObjects<Element>.count }
    static var isEmptyKeyPath: AnyKeyPath { \LinkingObjects<Element>.isEmpty }
}

/// The result of `filter(_:)` in a predicate.
extension Array: PredicateCountable {
    static var countKeyPath: AnyKeyPath { \[Element].count }
    static var isEmptyKeyPath: AnyKeyPath { \[Element].isEmpty }
}

/// A constant range in a predicate (`(1...5).contains($0.age)` with the range captured).
protocol PredicateRangeConstant {
    var queryBounds: (lower: Any, upper: Any, closed: Bool) { get }
}

extension ClosedRange: PredicateRangeConstant {
    var queryBounds: (lower: Any, upper: Any, closed: Bool) { (lowerBound, upperBound, true) }
}

extension Range: PredicateRangeConstant {
    var queryBounds: (lower: Any, upper: Any, closed: Bool) { (lowerBound, upperBound, false) }
}
