import ActorStorePersistence
import Foundation

// The protocols in this file are public only because generic signatures (`Persisted<Value: _Persistable>`)
// must name them. Their requirements use opaque carrier types whose members are internal, so user code can
// neither call nor implement them; the one supported way to make a new type persistable is
// ``PersistableEnum``.

/// A stored value, opaque outside ActorStore.
public struct _StoredValue {
    var raw: Value
    init(_ raw: Value) { self.raw = raw }
}

/// The stored shape of a property or collection element, opaque outside ActorStore.
public struct _PropertyKind {
    var scalar: ScalarType
    var collection: CollectionKind = .single
    var isOptional = false
    /// For links: the class linked to.
    var linkTarget: ObjectBase.Type?
    /// `LinkingObjects`: computed from backlinks, not stored.
    var isLinkingObjects = false
    /// The Swift type, for error messages.
    var swiftType: Any.Type
    /// Set when the type cannot be stored (a collection of collections); reported at schema validation.
    var problem: String?

    var columnType: ColumnType { ColumnType(scalar, collection, optional: isOptional) }
}

/// Resolves stored links into objects while reading, opaque outside ActorStore.
public struct _Decoder {
    let context: RealmContext?
}

/// Turns linked objects into stored links while writing (adding unmanaged ones), opaque outside ActorStore.
public struct _Encoder {
    let session: WriteSession?
}

/// A type that can be the type of a `@Persisted` property. Conformances are provided by ActorStore for the
/// supported types; make an enum persistable with ``PersistableEnum``.
public protocol _Persistable {
    static var _rlmKind: _PropertyKind { get }
    /// The value of a property declared without an initial value (`0`, `""`, `nil`, an empty list).
    static var _rlmDefault: Self { get }
    static func _rlmDecode(_ stored: _StoredValue, _ decoder: _Decoder) -> Self?
    /// `_rlmDecode`, or `_rlmDefault` where it gives nil. A requirement, so that generic code calling it
    /// reaches an implementation specialized for the type, instead of handling a `Self?` of unknown layout
    /// (which looks the optional's metadata up on every call).
    static func _rlmDecodeOrDefault(_ stored: _StoredValue, _ decoder: _Decoder) -> Self
    func _rlmEncode(_ encoder: _Encoder) -> _StoredValue
    /// Converts a value given to `create(_:value:)`, `init(value:)` or `setValue(_:forKey:)`.
    static func _rlmFromAny(_ value: Any) -> Self?
    /// `_rlmFromAny`, boxed: a requirement for the same reason as `_rlmDecodeOrDefault`.
    static func _rlmFromAnyBoxed(_ value: Any) -> (any _Persistable)?
    static func _rlmGet(_ object: ObjectBase, _ ordinal: Int) -> Self
    static func _rlmSet(_ object: ObjectBase, _ ordinal: Int, _ value: Self)
    /// The bytes this value takes in the data of its row, for a type whose values an insert writes straight
    /// into the row (see `DirectInsertPlan`).
    func _rlmDirectLength() -> Int
    /// Writes this value as the next column of a row, for a type whose values an insert writes straight into
    /// the row (see `DirectInsertPlan`).
    func _rlmWriteDirect(_ writer: inout _ColumnWriter)
}

extension _Persistable {
    public static func _rlmDecodeOrDefault(_ stored: _StoredValue, _ decoder: _Decoder) -> Self {
        _rlmDecode(stored, decoder) ?? _rlmDefault
    }
    public static func _rlmFromAnyBoxed(_ value: Any) -> (any _Persistable)? { _rlmFromAny(value) }
    public static func _rlmGet(_ object: ObjectBase, _ ordinal: Int) -> Self {
        let stored = object._managedValue(ordinal)
        return _rlmDecode(_StoredValue(stored), _Decoder(context: object._managed?.context)) ?? _rlmDefault
    }
    public static func _rlmSet(_ object: ObjectBase, _ ordinal: Int, _ value: Self) {
        object._managedSet(ordinal) { session in value._rlmEncode(_Encoder(session: session)).raw }
    }
}

/// A type that can be an element of a `List` or `MutableSet`: the scalar types, their optionals, and
/// `Object` subclasses.
public protocol _RealmCollectionValue {
    static var _rlmElementKind: _PropertyKind { get }
    static func _rlmDecodeElement(_ stored: _StoredValue, _ decoder: _Decoder) -> Self?
    func _rlmEncodeElement(_ encoder: _Encoder) -> _StoredValue
    static func _rlmElementFromAny(_ value: Any) -> Self?
    /// What an element that cannot be read (an enum case no longer declared) reads as; nil for objects.
    static var _rlmElementFallback: Self? { get }
}

/// A persistable value type (not a link or collection): numbers, `Bool`, `String`, `Data`, `Date`, `UUID`,
/// ``ObjectId``, ``Decimal128``, ``PersistableEnum`` types, and optionals of these.
public protocol _PersistableScalar: _Persistable, _RealmCollectionValue, _OptionalPersistable, Sendable {
    static var _rlmScalarKind: _PropertyKind { get }
    static func _rlmFromStored(_ stored: _StoredValue) -> Self?
    var _rlmToStored: _StoredValue { get }
    static var _rlmScalarDefault: Self { get }
    static func _rlmScalarFromAny(_ value: Any) -> Self?
}

extension _PersistableScalar {
    /// ``_Persistable/_rlmGet(_:_:)`` of a value type: as the general one, without the decoder (only links
    /// need one), whose reference to the realm cost a retain and a release on every property read.
    public static func _rlmGet(_ object: ObjectBase, _ ordinal: Int) -> Self {
        _rlmFromStored(_StoredValue(object._managedValue(ordinal))) ?? _rlmScalarDefault
    }
    /// ``_Persistable/_rlmSet(_:_:_:)`` of a value type: its stored value needs no write session to encode
    /// (there is no object to add), so it goes to the session's update directly.
    public static func _rlmSet(_ object: ObjectBase, _ ordinal: Int, _ value: Self) {
        object._managedSetValue(ordinal, value._rlmToStored.raw)
    }
    public static var _rlmKind: _PropertyKind { _rlmScalarKind }
    public static var _rlmDefault: Self { _rlmScalarDefault }
    public static func _rlmDecode(_ stored: _StoredValue, _ decoder: _Decoder) -> Self? { _rlmFromStored(stored) }
    public func _rlmEncode(_ encoder: _Encoder) -> _StoredValue { _rlmToStored }
    public static func _rlmFromAny(_ value: Any) -> Self? { _rlmScalarFromAny(value) }
    public static var _rlmElementKind: _PropertyKind { _rlmScalarKind }
    public static func _rlmDecodeElement(_ stored: _StoredValue, _ decoder: _Decoder) -> Self? {
        _rlmFromStored(stored)
    }
    public func _rlmEncodeElement(_ encoder: _Encoder) -> _StoredValue { _rlmToStored }
    public static func _rlmElementFromAny(_ value: Any) -> Self? { _rlmScalarFromAny(value) }
    public static func _rlmScalarFromAny(_ value: Any) -> Self? { value as? Self }
    public static var _rlmElementFallback: Self? { _rlmScalarDefault }
}

/// Numbers given as another numeric type (`2` for a `Double` property, `NSNumber`) convert when exact.
private func numeric<T: BinaryInteger>(_ value: Any, as: T.Type) -> T? {
    switch value {
    case let v as T: v
    case let v as Int: T(exactly: v)
    case let v as Int64: T(exactly: v)
    case let v as Int32: T(exactly: v)
    case let v as Int16: T(exactly: v)
    case let v as Int8: T(exactly: v)
    case let v as Double: T(exactly: v)
    case let v as NSNumber: T(exactly: v.int64Value)
    default: nil
    }
}

private func floating<T: BinaryFloatingPoint>(_ value: Any, as: T.Type) -> T? {
    switch value {
    case let v as T: v
    case let v as Double: T(v)
    case let v as Float: T(v)
    case let v as Int: T(v)
    case let v as NSNumber: T(v.doubleValue)
    default: nil
    }
}

extension Bool: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .bool, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> Bool? { if case .bool(let v) = s.raw { v } else { nil } }
    public var _rlmToStored: _StoredValue { _StoredValue(.bool(self)) }
    public static var _rlmScalarDefault: Bool { false }
}

/// Integers share one stored representation (`Int64`); the column's width decides the encoding.
public protocol _PersistableInteger: _PersistableScalar, FixedWidthInteger {
    static var _rlmScalarType: _PropertyKind { get }
}

extension _PersistableInteger {
    public static var _rlmScalarKind: _PropertyKind { _rlmScalarType }
    public static func _rlmFromStored(_ s: _StoredValue) -> Self? {
        if case .int(let v) = s.raw { Self(exactly: v) } else { nil }
    }
    public var _rlmToStored: _StoredValue { _StoredValue(.int(Int64(self))) }
    public static var _rlmScalarDefault: Self { 0 }
    public static func _rlmScalarFromAny(_ value: Any) -> Self? { numeric(value, as: Self.self) }
}

extension Int: _PersistableInteger {
    public static var _rlmScalarType: _PropertyKind { _PropertyKind(scalar: .int64, swiftType: Self.self) }
}
extension Int8: _PersistableInteger {
    public static var _rlmScalarType: _PropertyKind { _PropertyKind(scalar: .int8, swiftType: Self.self) }
}
extension Int16: _PersistableInteger {
    public static var _rlmScalarType: _PropertyKind { _PropertyKind(scalar: .int16, swiftType: Self.self) }
}
extension Int32: _PersistableInteger {
    public static var _rlmScalarType: _PropertyKind { _PropertyKind(scalar: .int32, swiftType: Self.self) }
}
extension Int64: _PersistableInteger {
    public static var _rlmScalarType: _PropertyKind { _PropertyKind(scalar: .int64, swiftType: Self.self) }
}

extension Float: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .float, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> Float? {
        if case .float(let v) = s.raw { v } else { nil }
    }
    public var _rlmToStored: _StoredValue { _StoredValue(.float(self)) }
    public static var _rlmScalarDefault: Float { 0 }
    public static func _rlmScalarFromAny(_ value: Any) -> Float? { floating(value, as: Float.self) }
}

extension Double: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .double, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> Double? {
        if case .double(let v) = s.raw { v } else { nil }
    }
    public var _rlmToStored: _StoredValue { _StoredValue(.double(self)) }
    public static var _rlmScalarDefault: Double { 0 }
    public static func _rlmScalarFromAny(_ value: Any) -> Double? { floating(value, as: Double.self) }
}

extension String: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .string, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> String? {
        if case .string(let v) = s.raw { v } else { nil }
    }
    public var _rlmToStored: _StoredValue { _StoredValue(.string(self)) }
    public static var _rlmScalarDefault: String { "" }
    public static func _rlmScalarFromAny(_ value: Any) -> String? {
        if let s = value as? String { return s }
        if let s = value as? Substring { return String(s) }
        return nil
    }
}

extension Data: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .data, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> Data? { if case .data(let v) = s.raw { v } else { nil } }
    public var _rlmToStored: _StoredValue { _StoredValue(.data(self)) }
    public static var _rlmScalarDefault: Data { Data() }
}

extension Date: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .date, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> Date? { if case .date(let v) = s.raw { v } else { nil } }
    public var _rlmToStored: _StoredValue { _StoredValue(.date(self)) }
    /// Realm's default for a non-optional `Date`: the reference date's Unix epoch, 1970-01-01.
    public static var _rlmScalarDefault: Date { Date(timeIntervalSince1970: 0) }
}

extension UUID: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .uuid, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> UUID? { if case .uuid(let v) = s.raw { v } else { nil } }
    public var _rlmToStored: _StoredValue { _StoredValue(.uuid(self)) }
    /// The all-zero UUID, as Realm.
    public static var _rlmScalarDefault: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
    public static func _rlmScalarFromAny(_ value: Any) -> UUID? {
        if let v = value as? UUID { return v }
        if let s = value as? String { return UUID(uuidString: s) }
        return nil
    }
}

extension ObjectId: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .objectId, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> ObjectId? {
        if case .objectId(let v) = s.raw { ObjectId(storage: v) } else { nil }
    }
    public var _rlmToStored: _StoredValue { _StoredValue(.objectId(storage)) }
    public static var _rlmScalarDefault: ObjectId { ObjectId() }
    public static func _rlmScalarFromAny(_ value: Any) -> ObjectId? {
        if let v = value as? ObjectId { return v }
        if let s = value as? String { return ObjectId(s) }
        return nil
    }
}

extension Decimal128: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind { _PropertyKind(scalar: .decimal128, swiftType: Self.self) }
    public static func _rlmFromStored(_ s: _StoredValue) -> Decimal128? {
        if case .decimal128(let v) = s.raw { Decimal128(bits: v) } else { nil }
    }
    public var _rlmToStored: _StoredValue { _StoredValue(.decimal128(bits)) }
    public static var _rlmScalarDefault: Decimal128 { Decimal128() }
    public static func _rlmScalarFromAny(_ value: Any) -> Decimal128? {
        switch value {
        case let v as Decimal128: v
        case let v as Int: Decimal128(v)
        case let v as Double: Decimal128(v)
        case let v as Decimal: Decimal128(v)
        case let v as String: Decimal128(v)
        default: nil
        }
    }
}

/// Optionals of value types: stored as the same column, nullable. The default is `nil`.
extension Optional: _PersistableScalar where Wrapped: _PersistableScalar {
    public static var _rlmScalarKind: _PropertyKind {
        var kind = Wrapped._rlmScalarKind
        kind.isOptional = true
        kind.swiftType = Self.self
        return kind
    }
    public static func _rlmFromStored(_ s: _StoredValue) -> Self? {
        if case .null = s.raw { return .some(.none) }
        return Wrapped._rlmFromStored(s).map { .some($0) }
    }
    public var _rlmToStored: _StoredValue { self?._rlmToStored ?? _StoredValue(.null) }
    public static var _rlmScalarDefault: Self { nil }
    public static func _rlmScalarFromAny(_ value: Any) -> Self? {
        if value is NSNull { return .some(nil) }
        if let v = value as? Self { return .some(v) }
        return Wrapped._rlmScalarFromAny(value).map { .some($0) }
    }
}

extension Optional: _RealmCollectionValue where Wrapped: _PersistableScalar {}
extension Optional: _OptionalPersistable where Wrapped: _PersistableScalar {}

/// Optional links (`var owner: Person?`) and optional values share one conformance.
extension Optional: _Persistable where Wrapped: _OptionalPersistable {
    public static var _rlmKind: _PropertyKind { Wrapped._rlmOptionalKind }
    public static var _rlmDefault: Self { nil }
    public static func _rlmDecode(_ stored: _StoredValue, _ decoder: _Decoder) -> Self? {
        if case .null = stored.raw { return .some(.none) }
        return Wrapped._rlmDecodeWrapped(stored, decoder).map { .some($0) }
    }
    public func _rlmEncode(_ encoder: _Encoder) -> _StoredValue {
        self?._rlmEncodeWrapped(encoder) ?? _StoredValue(.null)
    }
    /// An optional value's setter goes to the session's update directly, as a value type's does (see
    /// `_PersistableScalar`); an optional link's is the general one (setting it may add the object).
    public static func _rlmSet(_ object: ObjectBase, _ ordinal: Int, _ value: Self) {
        if Wrapped.self is ObjectBase.Type {
            object._managedSet(ordinal) { session in value._rlmEncode(_Encoder(session: session)).raw }
        } else {
            object._managedSetValue(ordinal, value._rlmEncode(_Encoder(session: nil)).raw)
        }
    }
    public static func _rlmFromAny(_ value: Any) -> Self? {
        if value is NSNull { return .some(nil) }
        if let v = value as? Self { return .some(v) }
        return Wrapped._rlmWrappedFromAny(value).map { .some($0) }
    }
}

/// What `Optional<Wrapped>` needs of `Wrapped` to be persistable: value types and `Object` subclasses.
public protocol _OptionalPersistable {
    static var _rlmOptionalKind: _PropertyKind { get }
    static func _rlmDecodeWrapped(_ stored: _StoredValue, _ decoder: _Decoder) -> Self?
    func _rlmEncodeWrapped(_ encoder: _Encoder) -> _StoredValue
    static func _rlmWrappedFromAny(_ value: Any) -> Self?
}

extension _PersistableScalar {
    public static var _rlmOptionalKind: _PropertyKind { Optional<Self>._rlmScalarKind }
    public static func _rlmDecodeWrapped(_ stored: _StoredValue, _ decoder: _Decoder) -> Self? {
        _rlmFromStored(stored)
    }
    public func _rlmEncodeWrapped(_ encoder: _Encoder) -> _StoredValue { _rlmToStored }
    public static func _rlmWrappedFromAny(_ value: Any) -> Self? { _rlmScalarFromAny(value) }
}

/// An enum stored as its raw value: `enum Taste: String, PersistableEnum { case sweet, sour }`, then
/// `@Persisted var taste = Taste.sweet`. The default of a property without an initial value is the first case.
public protocol PersistableEnum: _PersistableScalar, RawRepresentable, CaseIterable
where RawValue: _PersistableScalar {}

extension PersistableEnum {
    public static var _rlmScalarKind: _PropertyKind {
        var kind = RawValue._rlmScalarKind
        kind.swiftType = Self.self
        return kind
    }
    public static func _rlmFromStored(_ s: _StoredValue) -> Self? { RawValue._rlmFromStored(s).flatMap(Self.init) }
    public var _rlmToStored: _StoredValue { rawValue._rlmToStored }
    public static var _rlmScalarDefault: Self {
        guard let first = allCases.first else {
            preconditionFailure("\(Self.self) has no cases, so a property of this type has no default value.")
        }
        return first
    }
    public static func _rlmScalarFromAny(_ value: Any) -> Self? {
        if let v = value as? Self { return v }
        return RawValue._rlmScalarFromAny(value).flatMap(Self.init)
    }
}
