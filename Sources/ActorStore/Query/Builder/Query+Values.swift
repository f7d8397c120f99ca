import ActorStorePersistence
import Foundation

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
}

extension Query where T: _QueryStringValues {
    /// Whether the string starts with `value` (on a collection of strings: whether any element does).
    public func starts(with value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.beginsWith, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string ends with `value` (on a collection of strings: whether any element does).
    public func ends(with value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.endsWith, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string equals `value` under `options` (`==` with options; on a collection of strings:
    /// whether any element does).
    public func equals(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.equal, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string differs from `value` under `options` (`!=` with options; on a collection of
    /// strings: whether any element does).
    public func notEquals(_ value: String, options: StringOptions = []) -> Query<Bool> {
        compare(.notEqual, .expression(constant(value)), options.queryOptions)
    }

    /// Whether the string matches the wildcard `pattern`: `?` matches one character, `*` any run of them
    /// (`"?bc*"` matches "abcde" and "cbc"). On a collection of strings: whether any element does.
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> Query<Bool> {
        compare(.like, .expression(constant(pattern)), caseInsensitive ? .caseInsensitive : [])
    }
}

extension Query where T: _QueryData {
    /// Whether the bytes contain `value`.
    public func contains(_ value: Data) -> Query<Bool> { compare(.contains, .expression(constant(value))) }
}

extension Query where T: _QueryDataValues {
    /// Whether the bytes start with `value` (on a collection of byte strings: whether any element does).
    public func starts(with value: Data) -> Query<Bool> { compare(.beginsWith, .expression(constant(value))) }

    /// Whether the bytes end with `value` (on a collection of byte strings: whether any element does).
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
