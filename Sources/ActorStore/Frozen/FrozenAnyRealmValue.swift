import ActorStorePersistence
import Foundation

/// An ``AnyRealmValue`` read from a frozen object: the same cases, with a link as a frozen object of the
/// same version. `Sendable`, like every frozen value.
///
/// ```swift
/// let frozen = setting.freeze()
/// Task.detached {
///     switch frozen.value {
///     case .int(let n): print("a number", n)
///     case .object(let linked): print("a", linked.className, linked.as(Dog.self)?.name ?? "")
///     default: break
///     }
/// }
/// ```
public enum FrozenAnyRealmValue: Hashable, Sendable, CustomStringConvertible {
    /// No value (null), or a link to an object the version does not have.
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
    /// A link to an object, frozen at the same version.
    case object(AnyFrozenObject)
    /// An ``ObjectId``.
    case objectId(ObjectId)
    /// A ``Decimal128``.
    case decimal128(Decimal128)
    /// A `UUID`.
    case uuid(UUID)

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
        case .object(let v): "object(\(v.className))"
        case .objectId(let v): "objectId(\(v.stringValue))"
        case .decimal128(let v): "decimal128(\(v))"
        case .uuid(let v): "uuid(\(v.uuidString))"
        }
    }

    /// The value of a stored value, links resolved in `context`; nil for a value no mixed column holds.
    static func fromStored(_ value: Value, _ context: FrozenContext) -> FrozenAnyRealmValue? {
        switch value {
        case .null: return FrozenAnyRealmValue.none
        case .int(let v): return Int(exactly: v).map(FrozenAnyRealmValue.int)
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
            guard let id = context.snapshot.tableID(named: table), context.snapshot.state.rowLocation(id, key) != nil
            else { return FrozenAnyRealmValue.none }
            return .object(AnyFrozenObject(context: context, className: table, key: key))
        case .link, .list, .set, .map: return nil
        }
    }
}

/// An object of any class reached through an ``AnyRealmValue`` link of a frozen object, at the same version.
public struct AnyFrozenObject: Hashable, Sendable {
    let context: FrozenContext
    /// The name of the object's class.
    public let className: String
    let key: ObjectKey

    /// The object as its model class, or nil if it is not an object of `type`.
    ///
    /// - Parameter type: The model class expected.
    /// - Returns: The frozen object, at the same version.
    public func `as`<T: Object>(_ type: T.Type) -> Frozen<T>? {
        guard ClassRegistry.info(for: type).className == className else { return nil }
        return context.frozen(type, key)
    }

    public static func == (lhs: AnyFrozenObject, rhs: AnyFrozenObject) -> Bool {
        lhs.context === rhs.context && lhs.className == rhs.className && lhs.key == rhs.key
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(className)
        hasher.combine(key)
    }
}

extension Frozen {
    /// An ``AnyRealmValue`` property.
    public subscript(dynamicMember keyPath: KeyPath<T, AnyRealmValue>) -> FrozenAnyRealmValue {
        FrozenAnyRealmValue.fromStored(frozenStoredValue(keyPath), context) ?? FrozenAnyRealmValue.none
    }

    /// A list of ``AnyRealmValue``s.
    public subscript(dynamicMember keyPath: KeyPath<T, List<AnyRealmValue>>) -> [FrozenAnyRealmValue] {
        guard case .list(let values) = frozenStoredValue(keyPath) else { return [] }
        return values.map { FrozenAnyRealmValue.fromStored($0, context) ?? FrozenAnyRealmValue.none }
    }

    /// A set of ``AnyRealmValue``s.
    public subscript(dynamicMember keyPath: KeyPath<T, MutableSet<AnyRealmValue>>) -> [FrozenAnyRealmValue] {
        guard case .set(let values) = frozenStoredValue(keyPath) else { return [] }
        return values.map { FrozenAnyRealmValue.fromStored($0, context) ?? FrozenAnyRealmValue.none }
    }

    /// A map of ``AnyRealmValue``s.
    public subscript(dynamicMember keyPath: KeyPath<T, Map<String, AnyRealmValue>>) -> [String: FrozenAnyRealmValue] {
        guard case .map(let entries) = frozenStoredValue(keyPath) else { return [:] }
        var result: [String: FrozenAnyRealmValue] = [:]
        for entry in entries {
            result[entry.key] = FrozenAnyRealmValue.fromStored(entry.value, context) ?? FrozenAnyRealmValue.none
        }
        return result
    }
}
