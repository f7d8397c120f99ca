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
    private var bindings: [PredicateExpressions.VariableID: QueryKeyPath]
    /// How many subqueries enclose the node being translated: nested subqueries get distinct variables.
    private var subqueryDepth = 0

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

    // MARK: Key paths

    /// The term for `base[keyPath: keyPath]`, where `base` is a value of type `rootType`.
    func member(
        _ base: PredicateTerm, rootType: Any.Type, keyPath: AnyKeyPath, node: Any
    ) throws(RealmError) -> PredicateTerm {
        switch base {
        case .path(let path):
            if let objectType = rootType as? ObjectBase.Type {
                guard let properties = Self.persistedProperties(read: keyPath, on: objectType) else {
                    throw unsupported(
                        node,
                        "reads \(keyPath), which is not a @Persisted property of "
                            + "\(ClassRegistry.info(for: objectType).className) (computed and non-persisted "
                            + "properties cannot be queried)")
                }
                var next = path
                next.components += properties.map { .property($0.name) }
                return .path(next)
            }
            if let collection = rootType as? any PredicateCountable.Type {
                var count = path
                count.components.append(.count)
                if keyPath == collection.countKeyPath { return .path(count) }
                if keyPath == collection.isEmptyKeyPath {
                    return .predicate(.comparison(QueryComparison(.keyPath(count), .equal, .value(.int(0)))))
                }
                throw unsupported(node, "reads a member of \(rootType) other than count and isEmpty")
            }
            throw unsupported(
                node,
                "reads a member of \(rootType) (\(keyPath)); only @Persisted properties of model classes and "
                    + "count/isEmpty of their collections can be queried")
        case .filtered(let collection, let variable, let predicate):
            let count = QueryExpression.subqueryCount(collection: collection, variable: variable, predicate: predicate)
            if let array = rootType as? any PredicateCountable.Type {
                if keyPath == array.countKeyPath { return .expression(count) }
                if keyPath == array.isEmptyKeyPath {
                    return .predicate(.comparison(QueryComparison(count, .equal, .value(.int(0)))))
                }
            }
            throw unsupported(node, "reads a member of a filtered collection other than count and isEmpty")
        default:
            throw unsupported(node, "reads a key path of something that is not a property or the queried object")
        }
    }

    /// The properties `keyPath` reads from an `objectType` through to-one links, or nil if it reads
    /// anything else.
    static func persistedProperties(read keyPath: AnyKeyPath, on objectType: ObjectBase.Type) -> [PropertyInfo]? {
        guard let properties = ClassRegistry.info(for: objectType).propertyPath(of: keyPath),
            let last = properties.last, Self.keyPath(keyPath, reads: last),
            properties.count > 1 || Self.keyPath(keyPath, readsUnchanged: last, of: objectType)
        else { return nil }
        return properties
    }

    /// Whether `keyPath`'s value type is `property`'s type (up to optionals): rejects computed properties
    /// of another type that happen to read one persisted property (`var isOld: Bool { age > 10 }`).
    private static func keyPath(_ keyPath: AnyKeyPath, reads property: PropertyInfo) -> Bool {
        let valueType = unwrappedType(type(of: keyPath).valueType)
        let kind = property.kind
        if kind.scalar == .link, kind.collection == .single, !kind.isLinkingObjects, let target = kind.linkTarget {
            return ObjectIdentifier(valueType) == ObjectIdentifier(target)
        }
        return ObjectIdentifier(valueType) == ObjectIdentifier(unwrappedType(kind.swiftType))
    }

    /// Whether reading `keyPath` on an object gives `property`'s value unchanged, found by setting the
    /// property of fresh unmanaged instances to two sample values and reading them back (once per key
    /// path). Rejects computed properties that transform one persisted property of the same type
    /// (`var shout: String { name.uppercased() }`), which the key path probe alone takes for `name`.
    /// Types without samples (enums, links, collections, ObjectId, Decimal128) are taken as read.
    private static func keyPath(
        _ keyPath: AnyKeyPath, readsUnchanged property: PropertyInfo, of type: ObjectBase.Type
    ) -> Bool {
        if let known = verifiedKeyPaths.withLock({ $0[keyPath] }) { return known }
        let kind = property.kind
        guard kind.collection == .single, !kind.isLinkingObjects,
            let scalarType = kind.swiftType as? any _PersistableScalar.Type
        else { return true }
        let samples: [Value] =
            switch kind.scalar {
            case .bool: [.bool(true), .bool(false)]
            case .int8, .int16, .int32, .int64: [.int(7), .int(-3)]
            case .float: [.float(1.5), .float(-2.25)]
            case .double: [.double(1.5), .double(-2.25)]
            case .string: [.string("ActorStore probe a"), .string("actorstore Probe B")]
            case .data: [.data(Data([1, 2])), .data(Data([3]))]
            case .date: [.date(Date(timeIntervalSince1970: 12_345)), .date(Date(timeIntervalSince1970: -5))]
            case .uuid: [.uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))), .uuid(UUID())]
            default: []
            }
        var unchanged = true
        for sample in samples {
            guard let value = scalarType._rlmFromStored(_StoredValue(sample)) else { break }
            let instance = type.init()
            guard instance._slots.indices.contains(property.ordinal) else { break }
            instance._slots[property.ordinal] = value
            guard let read = instance[keyPath: keyPath] as? any _PersistableScalar, read._rlmToStored.raw == sample
            else {
                unchanged = false
                break
            }
        }
        verifiedKeyPaths.withLock { $0[keyPath] = unchanged }
        return unchanged
    }

    /// ``keyPath(_:readsUnchanged:of:)``'s answers.
    private static let verifiedKeyPaths = Locked<[AnyKeyPath: Bool]>([:])

    /// `variable`'s term.
    func variable(_ id: PredicateExpressions.VariableID, node: Any) throws(RealmError) -> PredicateTerm {
        guard let path = bindings[id] else { throw unsupported(node, "uses a variable from outside the predicate") }
        return .path(path)
    }

    /// Runs `body` with `id` standing for `path`.
    func binding<R>(
        _ id: PredicateExpressions.VariableID, to path: QueryKeyPath, _ body: () throws(RealmError) -> R
    ) throws(RealmError) -> R {
        let saved = bindings[id]
        bindings[id] = path
        defer { bindings[id] = saved }
        return try body()
    }

    /// `wrapped.flatMap { variable in transform }`: optional chaining (`$0.owner?.name`).
    func optionalChain(
        _ wrapped: Any, variable: PredicateExpressions.VariableID, transform: Any, node: Any
    ) throws(RealmError) -> PredicateTerm {
        guard case .path(let path) = try term(wrapped) else {
            throw unsupported(node, "chains (?.) on something that is not a property")
        }
        let inner = try binding(variable, to: path) { () throws(RealmError) in try term(transform) }
        switch inner {
        case .path, .optionalPredicate:
            // A path through a nil link reads nil, as the optional chain does.
            return inner
        case .predicate(let predicate):
            return .optionalPredicate(guard: path, predicate)
        default:
            throw unsupported(node, "chains (?.) into something other than a property or a condition")
        }
    }

    // MARK: Subqueries

    /// The variable name for a subquery opened at the current depth.
    private var subqueryVariable: String { subqueryDepth == 0 ? "$v" : "$v\(subqueryDepth)" }

    /// `collection.filter { variable in test }`.
    func filter(
        _ collection: Any, variable: PredicateExpressions.VariableID, test: Any, node: Any
    ) throws(RealmError) -> PredicateTerm {
        let (path, name, predicate) = try subquery(
            over: term(collection), variable: variable, test: test, negated: false, node: node)
        return .filtered(collection: path, variable: name, predicate)
    }

    /// `SUBQUERY(collection, $v, test).@count > 0` (`contains(where:)`), or `SUBQUERY(collection, $v, NOT
    /// test).@count == 0` (`allSatisfy`).
    func subqueryCondition(
        _ collection: Any, variable: PredicateExpressions.VariableID, test: Any, all: Bool, node: Any
    ) throws(RealmError) -> PredicateTerm {
        let (path, name, predicate) = try subquery(
            over: term(collection), variable: variable, test: test, negated: all, node: node)
        let count = QueryExpression.subqueryCount(collection: path, variable: name, predicate: predicate)
        return .predicate(.comparison(QueryComparison(count, all ? .equal : .greater, .value(.int(0)))))
    }

    private func subquery(
        over collection: PredicateTerm, variable: PredicateExpressions.VariableID, test: Any, negated: Bool, node: Any
    ) throws(RealmError) -> (QueryKeyPath, String, QueryPredicate) {
        let path: QueryKeyPath
        let name: String
        var conditions: [QueryPredicate] = []
        switch collection {
        case .path(let collectionPath):
            path = collectionPath
            name = subqueryVariable
        case .filtered(let collectionPath, let filterVariable, let filter):
            path = collectionPath
            name = filterVariable
            conditions.append(filter)
        default:
            throw unsupported(node, "iterates something that is not a collection property")
        }
        subqueryDepth += 1
        defer { subqueryDepth -= 1 }
        let condition = try binding(variable, to: QueryKeyPath(variable: name, [])) { () throws(RealmError) in
            try self.condition(test)
        }
        conditions.append(negated ? negate(condition) : condition)
        return (path, name, allOf(conditions))
    }

    // MARK: Collections, strings and ranges

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
    private func foundationFrameworkTerm(_ expression: Any) throws(RealmError) -> PredicateTerm {
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

    // MARK: Errors

    /// An `invalidQuery` error naming `node` (its shortened Swift type and its description), why it has no
    /// translation, and what is supported.
    func unsupported(_ node: Any, _ reason: String? = nil) -> RealmError {
        let name = Self.shortTypeName(node)
        var message = "#Predicate cannot be translated into a query: \(name)"
        if let friendly = Self.friendlyNames[Self.baseTypeName(node)] { message += " (\(friendly))" }
        message += " " + (reason ?? "has no query equivalent")
        var text = Self.describe(node)
        if text.count > 240 { text = String(text.prefix(240)) + "…" }
        message += ", in `\(text)`. " + Self.supported
        return RealmError(.invalidQuery, message)
    }

    /// What the translator supports, for error messages.
    static let supported =
        "Supported: ==, !=, <, <=, >, >= between properties and constants (nil included); &&, ||, ! and "
        + "ternaries of conditions; @Persisted properties, through to-one links with ?. or !; ??; String "
        + "contains(_:), starts(with:), localizedStandardContains(_:) and caseInsensitiveCompare(_:) == "
        + ".orderedSame; collection contains(_:), contains(where:), allSatisfy(_:), filter(_:).count, count, "
        + "isEmpty, min() and max(); contains(_:) on a constant array or range."

    private static let friendlyNames: [String: String] = [
        "Arithmetic": "+, -, *",
        "IntDivision": "/",
        "FloatDivision": "/",
        "IntRemainder": "%",
        "UnaryMinus": "unary -",
        "StringContainsRegex": "regex matching",
        "TypeCheck": "is",
        "ConditionalCast": "as?",
        "ForceCast": "as!",
        "CollectionIndexSubscript": "subscript",
        "CollectionRangeSubscript": "range subscript",
        "DictionaryKeySubscript": "dictionary subscript",
        "DictionaryKeyDefaultValueSubscript": "dictionary subscript",
        "CollectionContainsCollection": "contains(_:) on a collection",
        "SequenceStartsWith": "starts(with:) on a collection",
        "StringLocalizedCompare": "localizedCompare(_:), whose order depends on the locale",
        "ExpressionEvaluate": "evaluating an #Expression",
    ]

    /// `node`'s description, with key paths to persisted properties spelled by name: a `@Persisted`
    /// property is a computed property (backed by its wrapper), which a key path prints as
    /// `\Dog.<computed 0x… (Int)>` where the runtime has no name for it (Linux).
    static func describe(_ node: Any) -> String {
        var text = String(describing: node)
        var keyPaths: [AnyKeyPath] = []
        collectKeyPaths(in: node, into: &keyPaths, depth: 0)
        for keyPath in keyPaths {
            let printed = String(describing: keyPath)
            guard printed.contains("<computed"), let objectType = type(of: keyPath).rootType as? ObjectBase.Type,
                let properties = persistedProperties(read: keyPath, on: objectType)
            else { continue }
            let named =
                "\\\(ClassRegistry.info(for: objectType).className)." + properties.map(\.name).joined(separator: ".")
            text = text.replacingOccurrences(of: printed, with: named)
        }
        return text
    }

    private static func collectKeyPaths(in value: Any, into keyPaths: inout [AnyKeyPath], depth: Int) {
        guard depth < 64 else { return }
        for child in Mirror(reflecting: value).children {
            if let keyPath = child.value as? AnyKeyPath {
                keyPaths.append(keyPath)
            } else {
                collectKeyPaths(in: child.value, into: &keyPaths, depth: depth + 1)
            }
        }
    }

    /// `Arithmetic` for `PredicateExpressions.Arithmetic<…>`.
    static func baseTypeName(_ value: Any) -> String {
        let name = String(describing: type(of: value))
        return String(name.prefix { $0 != "<" })
    }

    /// `PredicateExpressions.Arithmetic` for `FoundationEssentials.PredicateExpressions.Arithmetic<…>`.
    static func shortTypeName(_ value: Any) -> String {
        let qualified = _typeName(type(of: value), qualified: true).prefix { $0 != "<" }
        let parts = qualified.split(separator: ".")
        if parts.count >= 2, parts[parts.count - 2] == "PredicateExpressions" {
            return "PredicateExpressions.\(parts[parts.count - 1])"
        }
        return baseTypeName(value)
    }

    // MARK: Constants

    /// The stored form of a constant: any persistable scalar (optionals and enums included), a Character or
    /// a Substring (as a string); nil for anything else.
    static func storedValue(_ value: Any) -> Value? {
        if let scalar = value as? any _PersistableScalar { return scalar._rlmToStored.raw }
        if let character = value as? Character { return .string(String(character)) }
        if let substring = value as? Substring { return .string(String(substring)) }
        return nil
    }

    private static func string(_ value: Any) -> String? {
        switch value {
        case let string as String: string
        case let substring as Substring: String(substring)
        case let character as Character: String(character)
        default: nil
        }
    }

    /// The stored forms of a constant array or set of scalars (`["a", "b"].contains($0.name)`).
    private func constantElements(_ value: Any) -> [Value]? {
        guard !(value is String), !(value is Substring), let sequence = value as? any Sequence else { return nil }
        var values: [Value] = []
        for element in Self.elements(of: sequence) {
            guard let stored = Self.storedValue(element) else { return nil }
            values.append(stored)
        }
        return values
    }

    private static func elements<S: Sequence>(of sequence: S) -> [Any] { sequence.map { $0 } }
}

// MARK: Combining conditions

/// `parts` joined with AND: nested ANDs flattened, `true` dropped, `false` absorbing, duplicates dropped.
private func allOf(_ parts: [QueryPredicate]) -> QueryPredicate {
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
private func anyOf(_ parts: [QueryPredicate]) -> QueryPredicate {
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
private func negate(_ predicate: QueryPredicate) -> QueryPredicate {
    switch predicate {
    case .constant(let value): .constant(!value)
    case .not(let inner): inner
    default: .not(predicate)
    }
}

/// A fold for an ordering or equality operator on `T`.
private func comparisonFold<T: Comparable>(_: T.Type, _ op: QueryOperator) -> (Any, Any) -> Bool? {
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

// MARK: Types seen through the predicate

/// `Optional<Wrapped>`'s wrapped type, found at run time.
private protocol OptionalTypeMarker {
    static var wrappedType: Any.Type { get }
}

extension Optional: OptionalTypeMarker {
    fileprivate static var wrappedType: Any.Type { Wrapped.self }
}

/// `type` without any levels of `Optional`.
private func unwrappedType(_ type: Any.Type) -> Any.Type {
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

// MARK: Conformances

// `ActorStorePersistence.Value` is spelled out below: inside these extensions `Value` is
// `PredicateExpressions.Value`.

extension PredicateExpressions.Variable: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.variable(key, node: self)
    }
}

extension PredicateExpressions.KeyPath: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.member(translator.term(root), rootType: Root.Output.self, keyPath: keyPath, node: self)
    }
}

extension PredicateExpressions.Value: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .constant(PredicateTranslator.storedValue(value), value)
    }
}

extension PredicateExpressions.NilLiteral: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .constant(ActorStorePersistence.Value.null, Wrapped?.none as Any)
    }
}

extension PredicateExpressions.Conjunction: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(allOf([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

extension PredicateExpressions.Disjunction: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(anyOf([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

extension PredicateExpressions.Negation: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(negate(try translator.condition(wrapped)))
    }
}

extension PredicateExpressions.Equal: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(
            try translator.compare(translator.term(lhs), .equal, translator.term(rhs), in: self) { a, b in
                guard let a = a as? LHS.Output, let b = b as? LHS.Output else { return nil }
                return a == b
            })
    }
}

extension PredicateExpressions.NotEqual: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(
            try translator.compare(translator.term(lhs), .notEqual, translator.term(rhs), in: self) { a, b in
                guard let a = a as? LHS.Output, let b = b as? LHS.Output else { return nil }
                return a != b
            })
    }
}

extension PredicateExpressions.Comparison: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        // `if` rather than `switch`: `ComparisonOperator` may gain cases, and an unknown one must throw.
        let queryOp: QueryOperator
        if op == .lessThan {
            queryOp = .less
        } else if op == .lessThanOrEqual {
            queryOp = .lessOrEqual
        } else if op == .greaterThan {
            queryOp = .greater
        } else if op == .greaterThanOrEqual {
            queryOp = .greaterOrEqual
        } else {
            throw translator.unsupported(self, "uses an unknown comparison operator")
        }
        return .predicate(
            try translator.compare(
                translator.term(lhs), queryOp, translator.term(rhs), in: self,
                fold: comparisonFold(LHS.Output.self, queryOp)))
    }
}

extension PredicateExpressions.Conditional: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        guard If.Output.self == Bool.self else {
            throw translator.unsupported(self, "chooses between values; only a ternary of conditions translates")
        }
        let condition = try translator.condition(test)
        let whenTrue = try translator.condition(trueBranch)
        let whenFalse = try translator.condition(falseBranch)
        return .predicate(anyOf([allOf([condition, whenTrue]), allOf([negate(condition), whenFalse])]))
    }
}

extension PredicateExpressions.OptionalFlatMap: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.optionalChain(wrapped, variable: variable.key, transform: transform, node: self)
    }
}

extension PredicateExpressions.NilCoalesce: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .coalesce(try translator.term(lhs), try translator.term(rhs))
    }
}

extension PredicateExpressions.ForcedUnwrap: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        switch try translator.term(inner) {
        case .path(let path): return .path(path)
        case .optionalPredicate(let guardPath, let predicate):
            return .predicate(allOf([try translator.notNil(.path(guardPath), self), predicate]))
        default: throw translator.unsupported(self, "force-unwraps something that is not a property")
        }
    }
}

extension PredicateExpressions.SequenceContains: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        let isString = LHS.Output.self == String.self || LHS.Output.self == Substring.self
        return try translator.sequenceContains(sequence, element: element, sequenceIsString: isString, node: self)
    }
}

extension PredicateExpressions.SequenceContainsWhere: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.subqueryCondition(sequence, variable: variable.key, test: test, all: false, node: self)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.subqueryCondition(sequence, variable: variable.key, test: test, all: true, node: self)
    }
}

extension PredicateExpressions.Filter: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.filter(sequence, variable: variable.key, test: filter, node: self)
    }
}

extension PredicateExpressions.CollectionContainsCollection: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        guard Base.Output.self == String.self || Base.Output.self == Substring.self else {
            throw translator.unsupported(self, "searches for a run of elements; only strings translate (CONTAINS)")
        }
        return try translator.stringComparison(base, .contains, other, node: self) { $0.contains($1) }
    }
}

extension PredicateExpressions.SequenceStartsWith: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        guard Base.Output.self == String.self || Base.Output.self == Substring.self else {
            throw translator.unsupported(self, "tests a collection's prefix; only strings translate (BEGINSWITH)")
        }
        return try translator.stringComparison(base, .beginsWith, prefix, node: self) { $0.hasPrefix($1) }
    }
}

extension PredicateExpressions.SequenceMinimum: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.aggregate(elements, .min, node: self)
    }
}

extension PredicateExpressions.SequenceMaximum: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.aggregate(elements, .max, node: self)
    }
}

extension PredicateExpressions.ClosedRange: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .range(lower: try translator.term(lower), upper: try translator.term(upper), closed: true)
    }
}

extension PredicateExpressions.Range: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .range(lower: try translator.term(lower), upper: try translator.term(upper), closed: false)
    }
}

extension PredicateExpressions.RangeExpressionContains: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.rangeContains(range, element: element, node: self) { op in
            comparisonFold(Element.Output.self, op)
        }
    }
}
