import ActorStorePersistence
import Foundation

// The `#Predicate` front end: Foundation's `Predicate<Dog>` is a tree of generic `PredicateExpressions`
// values (`Conjunction<Comparison<KeyPath<Variable<Dog>, Int>, Value<Int>>, …>`). Each expression type
// that has a query form conforms to `QueryTranslatable` below, with no constraints beyond its own, so a
// dynamic cast (`as? any QueryTranslatable`) finds the translation of any node and children are translated
// the same way at run time. A node with no conformance (arithmetic, casts, subscripts, regexes, …) is
// reported by name as a `RealmError.invalidQuery`; nothing here traps.
//
// Each node becomes a `PredicateTerm`: a condition, a key path, a constant, a subquery count, or one of a
// few intermediate forms (`a ?? b`, `optional?.condition`, `filter { … }`, a range) that only make sense
// to the node above them. Comparisons then combine terms into `QueryPredicate`s; comparisons between two
// constants fold with Swift's own `==` and `<` on the constants' Swift types.
//
// Semantics the query plan is expected to follow: a key path through a nil to-one link reads nil, so
// `$0.owner?.name == "x"` is `owner.name == 'x'` and `$0.owner!.name` reads the same path (where Swift
// would throw on nil, the query reads nil).

// MARK: Entry point

/// Translates a Foundation `#Predicate` over a model class into the query AST.
///
/// ```swift
/// let query = try translatePredicate(#Predicate<Dog> { $0.age < 2 && $0.name.starts(with: "B") })
/// // (age < 2) AND (name BEGINSWITH 'B')
/// ```
///
/// Supported: `==`, `!=`, `<`, `<=`, `>`, `>=`; `&&`, `||`, `!`, ternaries of conditions; constants and
/// `nil`; key paths on `@Persisted` properties, through to-one links with `?.` (and `!`); `??`; String
/// `contains(_:)`, `starts(with:)`, `localizedStandardContains(_:)` (`CONTAINS[cd]`) and
/// `caseInsensitiveCompare(_:) == .orderedSame` (the last two exist in `#Predicate` on Apple platforms
/// only); collection `contains(_:)` (`IN`), `contains(where:)` and `allSatisfy(_:)` (subqueries),
/// `filter(_:).count`, `count`, `isEmpty`, `min()`, `max()`; `contains(_:)` on a constant array (`IN {…}`)
/// or range (`BETWEEN`).
///
/// - Throws: `RealmError` with code `invalidQuery` naming the first expression that has no query form.
func translatePredicate<T: ObjectBase>(_ predicate: Foundation.Predicate<T>) throws(RealmError) -> QueryPredicate {
    let variable: PredicateExpressions.Variable<T> = predicate.variable
    let translator = PredicateTranslator(root: variable.key)
    return try translator.condition(predicate.expression)
}

// MARK: Terms

/// What one `#Predicate` expression translates to, before its parent decides how to use it.
enum PredicateTerm {
    /// A condition.
    case predicate(QueryPredicate)
    /// The value a key path reads (a property, `@count`, `@min`, …), or the object a variable stands for.
    case path(QueryKeyPath)
    /// A constant: its stored form (nil when the Swift value has none, like a `ComparisonResult` or a
    /// range) and the Swift value itself, for folding comparisons between constants.
    case constant(Value?, Any)
    /// A computed operand: a subquery count.
    case expression(QueryExpression)
    /// `optional ?? fallback`.
    indirect case coalesce(PredicateTerm, PredicateTerm)
    /// `optional?.condition`: nil when `guard` (a key path) reads nil, else `condition`.
    case optionalPredicate(guard: QueryKeyPath, QueryPredicate)
    /// `collection.filter { condition }`, usable only as the base of `count`, `isEmpty`,
    /// `contains(where:)` and `allSatisfy(_:)`.
    case filtered(collection: QueryKeyPath, variable: String, QueryPredicate)
    /// `lower...upper` (closed) or `lower..<upper`, usable only as the base of `contains(_:)`.
    indirect case range(lower: PredicateTerm, upper: PredicateTerm, closed: Bool)
    /// `a.caseInsensitiveCompare(b)`, usable only compared with `.orderedSame`.
    indirect case caseInsensitiveCompare(PredicateTerm, PredicateTerm)
}

/// A `PredicateExpressions` node with a query form.
protocol QueryTranslatable {
    /// This node's term; children are translated through `translator`.
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm
}

// MARK: Translator

/// Walks one predicate: knows what each variable in scope stands for and names subquery variables.
final class PredicateTranslator {
    /// The key path each variable in scope stands for: the queried object (an empty path), the value an
    /// optional chain unwrapped (`owner` in `$0.owner?.name`), or a subquery variable (`$v`).
    var bindings: [PredicateExpressions.VariableID: QueryKeyPath]
    /// How many subqueries enclose the node being translated: nested subqueries get distinct variables.
    var subqueryDepth = 0

    init(root: PredicateExpressions.VariableID) {
        bindings = [root: QueryKeyPath(variable: nil, [])]
    }

    /// Translates one node (anything found in a predicate tree).
    func term(_ expression: Any) throws(RealmError) -> PredicateTerm {
        if let node = expression as? any QueryTranslatable { return try node.translate(self) }
        return try foundationFrameworkTerm(expression)
    }

    /// Translates a node that must be a condition.
    func condition(_ expression: Any) throws(RealmError) -> QueryPredicate {
        try condition(from: term(expression), expression)
    }

    /// A term used as a condition: a Bool key path is `path == true`; an optional condition is false when
    /// nil (as `?? false`).
    func condition(from term: PredicateTerm, _ node: Any) throws(RealmError) -> QueryPredicate {
        switch term {
        case .predicate(let predicate):
            return predicate
        case .path(let path):
            return .comparison(QueryComparison(try operand(.path(path), node), .equal, .value(.bool(true))))
        case .constant(.bool(let value)?, _):
            return .constant(value)
        case .optionalPredicate(let guardPath, let predicate):
            return allOf([notNil(guardPath), predicate])
        case .coalesce(let wrapped, let fallback):
            let present = try condition(whenPresent: wrapped, node)
            if case .constant(.bool(true)?, _) = fallback {
                // `x ?? true`: nil or the condition.
                return anyOf([try isNil(wrapped, node), present])
            }
            return anyOf([
                allOf([try notNil(wrapped, node), present]),
                allOf([try isNil(wrapped, node), try condition(from: fallback, node)]),
            ])
        default:
            throw unsupported(node, "is not a condition")
        }
    }

    /// The condition an optional Bool term stands for when it is not nil.
    private func condition(whenPresent term: PredicateTerm, _ node: Any) throws(RealmError) -> QueryPredicate {
        if case .optionalPredicate(_, let predicate) = term { return predicate }
        return try condition(from: term, node)
    }

    /// A term used as one side of a comparison.
    func operand(_ term: PredicateTerm, _ node: Any) throws(RealmError) -> QueryExpression {
        switch term {
        case .path(let path):
            guard path.variable != nil || !path.components.isEmpty else {
                throw unsupported(node, "compares the queried object itself; compare one of its properties")
            }
            return .keyPath(path)
        case .constant(let value?, _):
            return .value(value)
        case .constant(nil, let swiftValue):
            throw unsupported(node, "uses a constant of type \(type(of: swiftValue)), which is not a persistable value")
        case .expression(let expression):
            return expression
        default:
            throw unsupported(node, "is not a value that can be compared")
        }
    }

    // MARK: Comparisons

    /// `lhs op rhs`, distributing `??` over the comparison and folding comparisons between constants with
    /// `fold` (which returns nil when the constants' types do not fit the comparison).
    func compare(
        _ lhs: PredicateTerm, _ op: QueryOperator, _ rhs: PredicateTerm, options: QueryOptions = [], in node: Any,
        fold: (Any, Any) -> Bool?
    ) throws(RealmError) -> QueryPredicate {
        switch (lhs, rhs) {
        case (.coalesce(let wrapped, let fallback), _):
            // (a ?? b) op c  ==  (a != nil AND a op c) OR (a == nil AND b op c)
            return anyOf([
                allOf([
                    try notNil(wrapped, node), try compare(wrapped, op, rhs, options: options, in: node, fold: fold),
                ]),
                allOf([
                    try isNil(wrapped, node), try compare(fallback, op, rhs, options: options, in: node, fold: fold),
                ]),
            ])
        case (_, .coalesce(let wrapped, let fallback)):
            return anyOf([
                allOf([
                    try notNil(wrapped, node), try compare(lhs, op, wrapped, options: options, in: node, fold: fold),
                ]),
                allOf([
                    try isNil(wrapped, node), try compare(lhs, op, fallback, options: options, in: node, fold: fold),
                ]),
            ])
        case (.caseInsensitiveCompare(let a, let b), .constant(_, let result)),
            (.constant(_, let result), .caseInsensitiveCompare(let a, let b)):
            guard op == .equal || op == .notEqual, let result = result as? ComparisonResult, result == .orderedSame
            else {
                throw unsupported(
                    node, "compares caseInsensitiveCompare(_:) with something other than == or != .orderedSame")
            }
            return try compare(
                a, op, b, options: options.union(.caseInsensitive), in: node,
                fold: { x, y in
                    guard let x = x as? String, let y = y as? String else { return nil }
                    return (x.caseInsensitiveCompare(y) == .orderedSame) == (op == .equal)
                })
        case (.constant(_, let a), .constant(_, let b)):
            guard let result = fold(a, b) else {
                throw unsupported(node, "compares constants of types \(type(of: a)) and \(type(of: b))")
            }
            return .constant(result)
        case (.predicate, _), (_, .predicate), (.optionalPredicate, _), (_, .optionalPredicate):
            return try compareConditions(lhs, op, rhs, node)
        default:
            return .comparison(QueryComparison(try operand(lhs, node), op, try operand(rhs, node), options: options))
        }
    }

    /// `==` / `!=` where a side is a condition (`($0.age > 2) == true`, `$0.owner?.isGood == nil`).
    private func compareConditions(
        _ lhs: PredicateTerm, _ op: QueryOperator, _ rhs: PredicateTerm, _ node: Any
    ) throws(RealmError) -> QueryPredicate {
        guard op == .equal || op == .notEqual else { throw unsupported(node, "orders conditions") }
        let equal: QueryPredicate
        switch (lhs, rhs) {
        case (.optionalPredicate(let guardPath, _), .constant(.null?, _)),
            (.constant(.null?, _), .optionalPredicate(let guardPath, _)):
            equal = isNil(guardPath)
        case (.optionalPredicate(let guardPath, let predicate), .constant(.bool(let value)?, _)),
            (.constant(.bool(let value)?, _), .optionalPredicate(let guardPath, let predicate)):
            // nil equals neither true nor false.
            equal = allOf([notNil(guardPath), value ? predicate : negate(predicate)])
        case (.optionalPredicate, _), (_, .optionalPredicate):
            throw unsupported(node, "compares an optional condition with something other than true, false or nil")
        case (_, .constant(.bool(let value)?, _)):
            let condition = try condition(from: lhs, node)
            equal = value ? condition : negate(condition)
        case (.constant(.bool(let value)?, _), _):
            let condition = try condition(from: rhs, node)
            equal = value ? condition : negate(condition)
        default:
            let a = try condition(from: lhs, node)
            let b = try condition(from: rhs, node)
            equal = anyOf([allOf([a, b]), allOf([negate(a), negate(b)])])
        }
        return op == .equal ? equal : negate(equal)
    }

    /// `term == nil`.
    func isNil(_ term: PredicateTerm, _ node: Any) throws(RealmError) -> QueryPredicate {
        switch term {
        case .path(let path): return isNil(path)
        case .optionalPredicate(let guardPath, _): return isNil(guardPath)
        case .constant(let value, _): return .constant(value == Value.null)
        case .coalesce(let wrapped, let fallback): return allOf([try isNil(wrapped, node), try isNil(fallback, node)])
        default: throw unsupported(node, "applies ?? to a value that cannot be checked for nil")
        }
    }

    /// `term != nil`.
    func notNil(_ term: PredicateTerm, _ node: Any) throws(RealmError) -> QueryPredicate {
        switch term {
        case .path(let path): return notNil(path)
        case .optionalPredicate(let guardPath, _): return notNil(guardPath)
        case .constant(let value, _): return .constant(value != Value.null)
        case .coalesce(let wrapped, let fallback):
            return anyOf([try notNil(wrapped, node), try notNil(fallback, node)])
        default: throw unsupported(node, "applies ?? to a value that cannot be checked for nil")
        }
    }

    private func isNil(_ path: QueryKeyPath) -> QueryPredicate {
        .comparison(QueryComparison(.keyPath(path), .equal, .value(.null)))
    }

    private func notNil(_ path: QueryKeyPath) -> QueryPredicate {
        .comparison(QueryComparison(.keyPath(path), .notEqual, .value(.null)))
    }
}

// MARK: Combining conditions

/// `parts` joined with AND: nested ANDs flattened, `true` dropped, `false` absorbing, duplicates dropped.
func allOf(_ parts: [QueryPredicate]) -> QueryPredicate {
    var flat: [QueryPredicate] = []
    for part in parts {
        switch part {
        case .constant(true): continue
        case .constant(false): return .constant(false)
        case .and(let inner): for item in inner where !flat.contains(item) { flat.append(item) }
        default: if !flat.contains(part) { flat.append(part) }
        }
    }
    return flat.count == 1 ? flat[0] : (flat.isEmpty ? .constant(true) : .and(flat))
}

/// `parts` joined with OR: nested ORs flattened, `false` dropped, `true` absorbing, duplicates dropped.
func anyOf(_ parts: [QueryPredicate]) -> QueryPredicate {
    var flat: [QueryPredicate] = []
    for part in parts {
        switch part {
        case .constant(false): continue
        case .constant(true): return .constant(true)
        case .or(let inner): for item in inner where !flat.contains(item) { flat.append(item) }
        default: if !flat.contains(part) { flat.append(part) }
        }
    }
    return flat.count == 1 ? flat[0] : (flat.isEmpty ? .constant(false) : .or(flat))
}

/// NOT `predicate`, folding constants and double negations.
func negate(_ predicate: QueryPredicate) -> QueryPredicate {
    switch predicate {
    case .constant(let value): .constant(!value)
    case .not(let inner): inner
    default: .not(predicate)
    }
}

/// A fold for an ordering or equality operator on `T`.
func comparisonFold<T: Comparable>(_: T.Type, _ op: QueryOperator) -> (Any, Any) -> Bool? {
    { a, b in
        guard let a = a as? T, let b = b as? T else { return nil }
        switch op {
        case .equal: return a == b
        case .notEqual: return a != b
        case .less: return a < b
        case .lessOrEqual: return a <= b
        case .greater: return a > b
        case .greaterOrEqual: return a >= b
        default: return nil
        }
    }
}
