import ActorStorePersistence
import Foundation

// The string front end's arguments: how a Swift value given for `%@` (or `$0`, `%K`) becomes a query constant.

extension PredicateParser {
    /// Converts one Swift argument (`%@`) into a query constant.
    ///
    /// `nil`, `NSNull` and empty optionals become `.value(.null)`; the persistable scalars (integers, `Float`,
    /// `Double`, `Bool`, `String`, `Data`, `Date`, `UUID`, ``ObjectId``, ``Decimal128``, ``PersistableEnum``
    /// values and their optionals) their stored value; a Foundation `Decimal` a decimal128; a managed object
    /// or a ``Frozen`` object `.object`; an array, set or other sequence a `.list` of its converted elements.
    /// Anything else (an unmanaged object, a dictionary, a range, an unsupported type) throws
    /// `RealmError.invalidQuery` naming the type.
    static func argument(_ value: Any) throws(RealmError) -> QueryExpression {
        try convert(value, depth: 0)
    }
}

/// Reads an `Optional` held in an `Any` without knowing its wrapped type.
private protocol OptionalArgument {
    /// The wrapped value, or nil for `.none`.
    var wrappedArgument: Any? { get }
}

extension Optional: OptionalArgument {
    fileprivate var wrappedArgument: Any? {
        switch self {
        case .some(let wrapped): wrapped
        case .none: nil
        }
    }
}

/// Marks dictionaries, which are sequences of pairs but not valid arguments.
private protocol DictionaryArgument {}
extension Dictionary: DictionaryArgument {}

/// Reads the bounds of a `ClosedRange` (for `BETWEEN %@`) without knowing its bound type.
protocol ClosedRangeArgument {
    /// The lower and upper bounds.
    var argumentBounds: (lower: Any, upper: Any) { get }
}

extension ClosedRange: ClosedRangeArgument {
    var argumentBounds: (lower: Any, upper: Any) { (lowerBound, upperBound) }
}

/// Lets a ``Frozen`` object be a query argument (`owner == %@`) without knowing its type parameter.
protocol FrozenObjectArgument {
    /// The class name of the object's table.
    var queryClassName: String { get }
    /// The object's key in its table.
    var queryObjectKey: ObjectKey { get }
}

extension Frozen: FrozenObjectArgument {
    var queryClassName: String { binding.info.className }
    var queryObjectKey: ObjectKey { key }
}

extension PredicateParser {
    private static let supportedArguments =
        "supported are nil, Bool, integers, Float, Double, Decimal, Decimal128, String, Data, Date, UUID, "
        + "ObjectId, PersistableEnum values, managed or frozen objects, and arrays or sets of these"

    /// `argument(_:)`, with the nesting depth of arrays so far.
    private static func convert(_ value: Any, depth: Int) throws(RealmError) -> QueryExpression {
        if let optional = value as? any OptionalArgument {
            guard let wrapped = optional.wrappedArgument else { return .value(.null) }
            return try convert(wrapped, depth: depth)
        }
        if value is NSNull { return .value(.null) }
        if let expression = value as? QueryExpression { return expression }
        if let stored = value as? Value { return .value(stored) }
        if let scalar = value as? any _PersistableScalar { return .value(scalar._rlmToStored.raw) }
        if let mixed = value as? AnyRealmValue { return mixed.queryExpression }
        if let decimal = value as? Decimal {
            guard !decimal.isNaN else {
                throw RealmError(.invalidQuery, "A NaN Decimal cannot be a query argument: Decimal128 has no NaN.")
            }
            return .value(.decimal128(Decimal128(decimal).bits))
        }
        if let object = value as? ObjectBase {
            guard let managed = object._managed else {
                throw RealmError(
                    .invalidQuery,
                    "An unmanaged \(type(of: object)) cannot be a query argument: objects are matched by identity, "
                        + "so add it to a realm first.")
            }
            return .object(className: managed.table.info.className, key: managed.key)
        }
        if let dynamic = value as? DynamicObject { return .object(className: dynamic.className, key: dynamic.key) }
        if let frozen = value as? any FrozenObjectArgument {
            return .object(className: frozen.queryClassName, key: frozen.queryObjectKey)
        }
        if let substring = value as? Substring { return .value(.string(String(substring))) }
        if let integer = value as? any BinaryInteger {
            guard let exact = Int64(exactly: integer) else {
                throw RealmError(
                    .invalidQuery, "The \(type(of: value)) argument \(integer) does not fit in a 64-bit integer.")
            }
            return .value(.int(exact))
        }
        if let number = value as? NSNumber {
            let integer = number.int64Value
            return Double(integer) == number.doubleValue ? .value(.int(integer)) : .value(.double(number.doubleValue))
        }
        if type(of: value) == AnyHashable.self, let hashable = value as? AnyHashable {
            return try convert(hashable.base, depth: depth)
        }
        if value is any RangeExpression {
            throw RealmError(
                .invalidQuery,
                "A range (\(type(of: value))) cannot be a query argument here: use `BETWEEN %@` with a closed "
                    + "range (a...b), or pass an array for IN.")
        }
        if value is any DictionaryArgument {
            throw RealmError(
                .invalidQuery,
                "A dictionary (\(type(of: value))) cannot be a query argument: pass an array of its keys or values.")
        }
        if let sequence = value as? any Sequence { return try convertSequence(sequence, depth: depth + 1) }
        throw RealmError(
            .invalidQuery, "A value of type \(type(of: value)) cannot be a query argument; \(supportedArguments).")
    }

    /// Converts the elements of an array, set or other sequence given as an argument.
    private static func convertSequence<S: Sequence>(_ sequence: S, depth: Int) throws(RealmError) -> QueryExpression {
        guard depth <= maximumDepth else {
            throw RealmError(
                .invalidQuery, "An argument nests arrays deeper than \(maximumDepth) levels; flatten it.")
        }
        var items: [QueryExpression] = []
        for element in sequence {
            guard items.count < maximumArgumentElements else {
                throw RealmError(
                    .invalidQuery,
                    "A \(S.self) argument has more than \(maximumArgumentElements) elements (or never ends).")
            }
            items.append(try convert(element, depth: depth))
        }
        return .list(items)
    }
}
