import ActorStorePersistence
import Foundation

/// Converts between stored values and the Swift values of the dynamic API (`object["name"]`), knowing only a
/// column's stored type: what migrations and ``DynamicObject``s need, as they work without model classes.
enum DynamicValues {
    /// The Swift value of a stored value: `Int` for every integer width, `String`, `Double`, `Date`, ...;
    /// nil for null; `[Any]` for lists and sets (null elements as `NSNull()`), `[String: Any]` for maps;
    /// `link` makes the object a link refers to; `typedLink` the object a mixed (`AnyRealmValue`) link refers to.
    static func swiftValue(
        _ value: Value, typedLink: (String, ObjectKey) -> Any? = { _, _ in nil }, link: (ObjectKey) -> Any?
    ) -> Any? {
        switch value {
        case .null: return nil
        case .bool(let v): return v
        case .int(let v): return Int(v)
        case .float(let v): return v
        case .double(let v): return v
        case .string(let v): return v
        case .data(let v): return v
        case .date(let v): return v
        case .uuid(let v): return v
        case .objectId(let v): return ObjectId(storage: v)
        case .decimal128(let v): return Decimal128(bits: v)
        case .link(let key): return link(key)
        case .typedLink(let table, let key): return typedLink(table, key)
        case .list(let items), .set(let items):
            return items.map { swiftValue($0, typedLink: typedLink, link: link) ?? NSNull() } as [Any]
        case .map(let entries):
            var result: [String: Any] = [:]
            for entry in entries {
                result[entry.key] = swiftValue(entry.value, typedLink: typedLink, link: link) ?? NSNull()
            }
            return result
        }
    }

    /// The stored value of a Swift value for a column of type `type`, or nil if it does not fit (a
    /// `String` for an `Int` column, nil for a required one). Numbers convert when exact, as in `create`.
    /// - Parameter link: the key of an object given for a link (nil if it is not an object of the target).
    static func storedValue(_ given: Any?, type: ColumnType, link: (Any) -> ObjectKey?) -> Value? {
        if case .single = type.collection, let given,
            let value = scalar(given, type.scalar, optional: type.isOptional, link: link)
        {
            // The common case, a plain value (a cast unwraps an `Optional` held in `Any` too): no look for nil.
            return value
        }
        let unwrapped = given.flatMap(unwrap)
        switch type.collection {
        case .single:
            guard let value = unwrapped else { return type.isOptional ? .null : nil }
            return scalar(value, type.scalar, optional: type.isOptional, link: link)
        case .list, .set:
            guard let value = unwrapped else { return type.collection == .list ? .list([]) : .set([]) }
            guard let items = value as? [Any] else { return nil }
            var stored: [Value] = []
            stored.reserveCapacity(items.count)
            for item in items {
                guard let element = element(item, type, link: link) else { return nil }
                stored.append(element)
            }
            return type.collection == .list ? .list(stored) : .set(stored)
        case .map:
            guard let value = unwrapped else { return .map([]) }
            guard let entries = value as? [String: Any] else { return nil }
            var stored: [Value.MapEntry] = []
            for (key, item) in entries {
                guard let element = element(item, type, link: link) else { return nil }
                stored.append(Value.MapEntry(key, element))
            }
            return .map(stored.sorted { $0.key < $1.key })
        }
    }

    private static func element(_ item: Any, _ type: ColumnType, link: (Any) -> ObjectKey?) -> Value? {
        guard let value = unwrap(item) else { return type.isOptional ? .null : nil }
        return scalar(value, type.scalar, optional: type.isOptional, link: link)
    }

    /// `value` without `Optional` wrapping; nil for `nil` and `NSNull()`.
    private static func unwrap(_ value: Any) -> Any? {
        if value is NSNull { return nil }
        if let optional = value as? any OptionalProtocol { return optional.wrappedAny.flatMap(unwrap) }
        return value
    }

    private static func scalar(_ value: Any, _ scalar: ScalarType, optional: Bool, link: (Any) -> ObjectKey?) -> Value?
    {
        switch scalar {
        case .bool: return Bool._rlmScalarFromAny(value).map(Value.bool)
        case .int8, .int16, .int32, .int64: return Int64._rlmScalarFromAny(value).map(Value.int)
        case .float: return Float._rlmScalarFromAny(value).map(Value.float)
        case .double: return Double._rlmScalarFromAny(value).map(Value.double)
        case .string: return String._rlmScalarFromAny(value).map(Value.string)
        case .data: return Data._rlmScalarFromAny(value).map(Value.data)
        case .date: return Date._rlmScalarFromAny(value).map(Value.date)
        case .uuid: return UUID._rlmScalarFromAny(value).map(Value.uuid)
        case .objectId: return ObjectId._rlmScalarFromAny(value).map { .objectId($0.storage) }
        case .decimal128: return Decimal128._rlmScalarFromAny(value).map { .decimal128($0.bits) }
        case .link: return link(value).map(Value.link)
        case .mixed: return mixed(value)
        }
    }

    /// The stored form of a value given for an `AnyRealmValue` column: an ``AnyRealmValue``, a plain value of
    /// a stored type, a managed object or a ``DynamicObject`` (a link); nil for anything else.
    private static func mixed(_ value: Any) -> Value? {
        if let any = value as? AnyRealmValue { return any.storedWithoutSession }
        if let dynamic = value as? DynamicObject { return .typedLink(table: dynamic.className, key: dynamic.key) }
        return AnyRealmValue._rlmFromAny(value)?.storedWithoutSession
    }

    /// `value` converted between two types that differ only in whether nil is allowed: nil becomes the
    /// type's default when it is not (Realm's rule when a property becomes required).
    static func converted(_ value: Value, to type: ColumnType) -> Value {
        switch value {
        case .null: return type.defaultValue
        case .list(let items) where !type.isOptional:
            return .list(items.map { $0 == .null ? elementDefault(type) : $0 })
        case .set(let items) where !type.isOptional:
            var seen = Set<Value>()
            return .set(items.map { $0 == .null ? elementDefault(type) : $0 }.filter { seen.insert($0).inserted })
        case .map(let entries) where !type.isOptional:
            return .map(entries.map { $0.value == .null ? Value.MapEntry($0.key, elementDefault(type)) : $0 })
        default: return value
        }
    }

    private static func elementDefault(_ type: ColumnType) -> Value {
        ColumnType(type.scalar).defaultValue
    }
}

/// Looks inside an `Optional` held in an `Any`.
private protocol OptionalProtocol {
    var wrappedAny: Any? { get }
}

extension Optional: OptionalProtocol {
    fileprivate var wrappedAny: Any? { self.map { $0 as Any } }
}
