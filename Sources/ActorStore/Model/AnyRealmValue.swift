import ActorStorePersistence
import Foundation

/// A value of any stored type, or a link to an object of any class: Realm's mixed type.
///
/// Declare a property, or the elements of a `List`, `MutableSet` or `Map`, as `AnyRealmValue` when what it
/// holds varies from object to object; each value keeps its own type.
///
/// ```swift
/// final class Setting: Object {
///     @Persisted var name = ""
///     @Persisted var value: AnyRealmValue
///     @Persisted var history: List<AnyRealmValue>
/// }
/// try await realm.write { realm in
///     let s = realm.create(Setting.self, value: ["name": "volume", "value": AnyRealmValue.int(7)])
///     s.history.append(.string("loud"))
///     s.value = .object(someDog)                      // a link to any object of the realm
/// }
/// realm.objects(Setting.self).filter("value > 5")      // numbers compare across Int, Float, Double
/// ```
///
/// Integers of every width are stored as `Int`. Queries compare values of the same type (numbers across
/// widths, `Int` 3 equals `Double` 3.0); values of different types are unequal and unordered. A link to an
/// object that has been deleted reads as `.none`. A `MutableSet<AnyRealmValue>` keeps values of different
/// types apart (`.int(1)` and `.double(1)` are two elements). Embedded objects cannot be linked from an
/// `AnyRealmValue` (they have one owner, a property of their own class).
///
/// - Important: `AnyRealmValue` holds live objects, so it is not `Sendable`: it stays inside its realm's
///   actor, like the object it belongs to. A frozen object reads it as ``FrozenAnyRealmValue``.
public enum AnyRealmValue: Hashable, CustomStringConvertible {
    /// No value (null).
    case none
    /// An integer.
    case int(Int)
    /// A `Bool`.
    case bool(Bool)
    /// A `Float`.
    case float(Float)
    /// A `Double`.
    case double(Double)
    /// A `String`.
    case string(String)
    /// A `Data`.
    case data(Data)
    /// A `Date`.
    case date(Date)
    /// A link to an object (not an embedded object).
    case object(Object)
    /// An ``ObjectId``.
    case objectId(ObjectId)
    /// A ``Decimal128``.
    case decimal128(Decimal128)
    /// A `UUID`.
    case uuid(UUID)

    /// The integer held, or nil.
    public var intValue: Int? { if case .int(let v) = self { v } else { nil } }
    /// The `Bool` held, or nil.
    public var boolValue: Bool? { if case .bool(let v) = self { v } else { nil } }
    /// The `Float` held, or nil.
    public var floatValue: Float? { if case .float(let v) = self { v } else { nil } }
    /// The `Double` held, or nil.
    public var doubleValue: Double? { if case .double(let v) = self { v } else { nil } }
    /// The `String` held, or nil.
    public var stringValue: String? { if case .string(let v) = self { v } else { nil } }
    /// The `Data` held, or nil.
    public var dataValue: Data? { if case .data(let v) = self { v } else { nil } }
    /// The `Date` held, or nil.
    public var dateValue: Date? { if case .date(let v) = self { v } else { nil } }
    /// The ``ObjectId`` held, or nil.
    public var objectIdValue: ObjectId? { if case .objectId(let v) = self { v } else { nil } }
    /// The ``Decimal128`` held, or nil.
    public var decimal128Value: Decimal128? { if case .decimal128(let v) = self { v } else { nil } }
    /// The `UUID` held, or nil.
    public var uuidValue: UUID? { if case .uuid(let v) = self { v } else { nil } }

    /// The object linked to, if it is of class `type`.
    ///
    /// - Parameter type: The class expected.
    /// - Returns: The object, or nil when the value is not a link to an object of that class.
    public func object<T: Object>(_ type: T.Type) -> T? {
        if case .object(let v) = self { v as? T } else { nil }
    }

    public var description: String {
        switch self {
        case .none: "none"
        case .int(let v): "int(\(v))"
        case .bool(let v): "bool(\(v))"
        case .float(let v): "float(\(v))"
        case .double(let v): "double(\(v))"
        case .string(let v): "string(\"\(v)\")"
        case .data(let v): "data(\(v.count) bytes)"
        case .date(let v): "date(\(v))"
        case .object(let v): "object(\(type(of: v)))"
        case .objectId(let v): "objectId(\(v.stringValue))"
        case .decimal128(let v): "decimal128(\(v))"
        case .uuid(let v): "uuid(\(v.uuidString))"
        }
    }

    // MARK: Stored form

    /// The stored value; a link needs `session` to add an unmanaged object (without one, only a managed
    /// object is a link, and an unmanaged one stores as null).
    func stored(_ session: WriteSession?) -> Value {
        switch self {
        case .none: return .null
        case .int(let v): return .int(Int64(v))
        case .bool(let v): return .bool(v)
        case .float(let v): return .float(v)
        case .double(let v): return .double(v)
        case .string(let v): return .string(v)
        case .data(let v): return .data(v)
        case .date(let v): return .date(v)
        case .objectId(let v): return .objectId(v.storage)
        case .decimal128(let v): return .decimal128(v.bits)
        case .uuid(let v): return .uuid(v)
        case .object(let object):
            let key: ObjectKey?
            if let session { key = session.key(for: object) } else { key = object._managed?.key }
            guard let key else { return .null }
            let className = object._managed?.table.info.className ?? ClassRegistry.info(for: type(of: object)).className
            return .typedLink(table: className, key: key)
        }
    }

    /// The stored value of a value that is not a link to an unmanaged object (query constants, the dynamic API).
    var storedWithoutSession: Value { stored(nil) }

    /// The value of a stored value; a link resolves through `context` (nil, or `.none` if its object is gone).
    static func fromStored(_ value: Value, _ context: RealmContext?) -> AnyRealmValue? {
        switch value {
        case .null: return AnyRealmValue.none
        case .int(let v): return Int(exactly: v).map(AnyRealmValue.int)
        case .bool(let v): return .bool(v)
        case .float(let v): return .float(v)
        case .double(let v): return .double(v)
        case .string(let v): return .string(v)
        case .data(let v): return .data(v)
        case .date(let v): return .date(v)
        case .objectId(let v): return .objectId(ObjectId(storage: v))
        case .decimal128(let v): return .decimal128(Decimal128(bits: v))
        case .uuid(let v): return .uuid(v)
        case .typedLink(let table, let key):
            guard let object = context?.object(table: table, key: key) as? Object else { return AnyRealmValue.none }
            return .object(object)
        case .link, .list, .set, .map: return nil
        }
    }

    /// The query expression of a value given as a query argument: a link matches by identity.
    var queryExpression: QueryExpression {
        if case .object(let object) = self, let managed = object._managed {
            return .object(className: managed.table.info.className, key: managed.key)
        }
        return .value(storedWithoutSession)
    }
}

extension AnyRealmValue: _Persistable, _RealmCollectionValue {
    public static var _rlmKind: _PropertyKind {
        _PropertyKind(scalar: .mixed, isOptional: true, swiftType: AnyRealmValue.self)
    }
    public static var _rlmDefault: AnyRealmValue { AnyRealmValue.none }
    public static func _rlmDecode(_ stored: _StoredValue, _ decoder: _Decoder) -> AnyRealmValue? {
        fromStored(stored.raw, decoder.context)
    }
    public func _rlmEncode(_ encoder: _Encoder) -> _StoredValue { _StoredValue(stored(encoder.session)) }
    public static func _rlmFromAny(_ value: Any) -> AnyRealmValue? {
        switch value {
        case let v as AnyRealmValue: v
        case is NSNull: AnyRealmValue.none
        case let v as Bool: .bool(v)
        case let v as Int: .int(v)
        case let v as Int8: .int(Int(v))
        case let v as Int16: .int(Int(v))
        case let v as Int32: .int(Int(v))
        case let v as Int64: Int(exactly: v).map(AnyRealmValue.int)
        case let v as Float: .float(v)
        case let v as Double: .double(v)
        case let v as String: .string(v)
        case let v as Substring: .string(String(v))
        case let v as Data: .data(v)
        case let v as Date: .date(v)
        case let v as ObjectId: .objectId(v)
        case let v as Decimal128: .decimal128(v)
        case let v as UUID: .uuid(v)
        case let v as Object: .object(v)
        default: nil
        }
    }

    public static var _rlmElementKind: _PropertyKind { _rlmKind }
    public static func _rlmDecodeElement(_ stored: _StoredValue, _ decoder: _Decoder) -> AnyRealmValue? {
        fromStored(stored.raw, decoder.context)
    }
    public func _rlmEncodeElement(_ encoder: _Encoder) -> _StoredValue { _rlmEncode(encoder) }
    public static func _rlmElementFromAny(_ value: Any) -> AnyRealmValue? { _rlmFromAny(value) }
    public static var _rlmElementFallback: AnyRealmValue? { AnyRealmValue.none }
}

extension RealmContext {
    /// The object `key` of the table named `table`, as its model class, or nil if the realm has no such
    /// class or object in its current version.
    func object(table: String, key: ObjectKey) -> ObjectBase? {
        guard let binding = bindings.byName[table], let location = location(binding.tableID, key) else { return nil }
        return makeObject(binding, key, location: location)
    }
}
