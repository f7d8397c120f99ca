import ActorStorePersistence
import Foundation

/// The property values of a model object read by any `Decoder` (JSON, property lists, ...): the `Decodable`
/// import path. Decode it, then create the object in a write.
///
/// ```swift
/// let people = try JSONDecoder().decode([DecodedObject<Person>].self, from: data)
/// try await realm.write { realm in
///     for person in people { try realm.create(Person.self, from: person, update: .modified) }
/// }
/// ```
///
/// Each `@Persisted` property is read by its name with its own type (the decoder's strategies apply to
/// `Date` and `Data`); `ObjectId` and `Decimal128` are strings (a `Decimal128` may also be a number); a
/// missing property gets its default. A link is either a nested object (created with the object, or
/// updated by primary key under `.modified`/`.all`) or the primary key of an object already in the realm.
/// An `AnyRealmValue` reads `null`, a `Bool`, an integer, a `Double` or a `String` (JSON does not say more).
/// The reverse of `Frozen`'s `Encodable` conformance.
public struct DecodedObject<T: Object>: Decodable, Sendable {
    /// The values decoded, by property name.
    let values: [String: DecodedValue]

    /// An object of `values` (for copies with some values left out).
    init(values: [String: DecodedValue]) { self.values = values }

    /// Reads the properties of `T` from `decoder`.
    ///
    /// - Throws: `DecodingError` for a property whose value does not have the property's type.
    public init(from decoder: any Decoder) throws {
        values = try DecodedValue.decodeObject(ClassRegistry.info(for: T.self), from: decoder)
    }
}

/// A decoded value, kept `Sendable` until the object is created.
enum DecodedValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case uuid(UUID)
    case array([DecodedValue])
    case object([String: DecodedValue])

    /// The properties of a class `info` from a keyed container.
    static func decodeObject(_ info: ObjectSchemaInfo, from decoder: any Decoder) throws -> [String: DecodedValue] {
        let container = try decoder.container(keyedBy: PropertyCodingKey.self)
        var values: [String: DecodedValue] = [:]
        for property in info.storedProperties {
            let key = PropertyCodingKey(property.name)
            guard container.contains(key) else { continue }
            let kind = property.kind
            switch kind.collection {
            case .single:
                values[property.name] = try element(kind, from: container.superDecoder(forKey: key))
            case .list, .set:
                var items = try container.nestedUnkeyedContainer(forKey: key)
                var decoded: [DecodedValue] = []
                while !items.isAtEnd { decoded.append(try element(kind, from: items.superDecoder())) }
                values[property.name] = .array(decoded)
            case .map:
                let entries = try container.nestedContainer(keyedBy: PropertyCodingKey.self, forKey: key)
                var decoded: [String: DecodedValue] = [:]
                for entryKey in entries.allKeys {
                    decoded[entryKey.stringValue] = try element(kind, from: entries.superDecoder(forKey: entryKey))
                }
                values[property.name] = .object(decoded)
            }
        }
        return values
    }

    /// One value of a property of `kind` (a single value, an element, or a map value).
    private static func element(_ kind: _PropertyKind, from decoder: any Decoder) throws -> DecodedValue {
        if kind.scalar == .link, let target = kind.linkTarget {
            if let nested = try? decodeObject(ClassRegistry.info(for: target), from: decoder) { return .object(nested) }
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() { return .null }
        switch kind.scalar {
        case .bool: return .bool(try single.decode(Bool.self))
        case .int8, .int16, .int32, .int64: return .int(try single.decode(Int64.self))
        case .float, .double: return .double(try single.decode(Double.self))
        case .string, .objectId: return .string(try single.decode(String.self))
        case .data: return .data(try single.decode(Data.self))
        case .date: return .date(try single.decode(Date.self))
        case .uuid: return .uuid(try single.decode(UUID.self))
        case .decimal128:
            if let text = try? single.decode(String.self) { return .string(text) }
            return .double(try single.decode(Double.self))
        case .mixed:
            if let v = try? single.decode(Bool.self) { return .bool(v) }
            if let v = try? single.decode(Int64.self) { return .int(v) }
            if let v = try? single.decode(Double.self) { return .double(v) }
            return .string(try single.decode(String.self))
        case .link:
            // A primary key: an integer or a string (ObjectId and UUID keys are strings).
            if let v = try? single.decode(Int64.self) { return .int(v) }
            return .string(try single.decode(String.self))
        }
    }

    /// The value in the form `create(_:value:)` takes, a primary key of a link resolved by `link`.
    func createValue(
        _ kind: _PropertyKind, link: (ObjectBase.Type, DecodedValue) throws(RealmError) -> Any
    )
        throws(RealmError) -> Any
    {
        switch (kind.collection, self) {
        case (.list, .array(let items)), (.set, .array(let items)):
            var result: [Any] = []
            for item in items { result.append(try item.elementValue(kind, link: link)) }
            return result
        case (.map, .object(let entries)):
            var result: [String: Any] = [:]
            for (key, item) in entries { result[key] = try item.elementValue(kind, link: link) }
            return result
        default:
            return try elementValue(kind, link: link)
        }
    }

    private func elementValue(
        _ kind: _PropertyKind, link: (ObjectBase.Type, DecodedValue) throws(RealmError) -> Any
    )
        throws(RealmError) -> Any
    {
        if kind.scalar == .link, let target = kind.linkTarget {
            switch self {
            case .null: return NSNull()
            case .object(let values):
                let info = ClassRegistry.info(for: target)
                var result: [String: Any] = [:]
                for (name, value) in values {
                    guard let property = info.property(named: name) else { continue }
                    result[name] = try value.createValue(property.kind, link: link)
                }
                return result
            default: return try link(target, self)
            }
        }
        switch self {
        case .null: return NSNull()
        case .bool(let v): return v
        case .int(let v): return Int(v)
        case .double(let v):
            if kind.scalar == .float { return Float(v) }
            return v
        case .string(let v):
            if kind.scalar == .objectId, let id = ObjectId(v) { return id }
            if kind.scalar == .decimal128, let decimal = Decimal128(v) { return decimal }
            return v
        case .data(let v): return v
        case .date(let v): return v
        case .uuid(let v): return v
        case .array(let items): return items.map { $0.plainValue }
        case .object(let entries): return entries.mapValues { $0.plainValue }
        }
    }

    /// The value with no property to direct it.
    private var plainValue: Any {
        switch self {
        case .null: NSNull()
        case .bool(let v): v
        case .int(let v): Int(v)
        case .double(let v): v
        case .string(let v): v
        case .data(let v): v
        case .date(let v): v
        case .uuid(let v): v
        case .array(let items): items.map(\.plainValue)
        case .object(let entries): entries.mapValues(\.plainValue)
        }
    }
}

extension Realm {
    /// Creates an object from values read by a `Decoder` (see ``DecodedObject``).
    ///
    /// ```swift
    /// struct Import: Decodable {
    ///     let person: DecodedObject<Person>
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The class to create.
    ///   - decoded: The values.
    ///   - update: What to do when an object with the same primary key exists (as `create(_:value:update:)`).
    /// - Returns: The managed object.
    /// - Throws: `RealmError.invalidObject` for a link given as the primary key of an object the realm does
    ///   not have, or whose class has no primary key. Other problems (a value that does not fit) make the
    ///   enclosing `write` throw, as `create(_:value:update:)` does.
    @discardableResult
    public func create<T: Object>(
        _ type: T.Type, from decoded: DecodedObject<T>, update: UpdatePolicy = .error
    ) throws(RealmError) -> T {
        let info = ClassRegistry.info(for: type)
        var value: [String: Any] = [:]
        for (name, item) in decoded.values {
            guard let property = info.property(named: name) else { continue }
            value[name] = try item.createValue(property.kind) { (target, key) throws(RealmError) in
                try linkedObject(target, primaryKey: key)
            }
        }
        return create(type, value: value, update: update)
    }

    /// Creates an object from the values `decoder` reads (``DecodedObject``): Realm's
    /// `create(_:value:)` from any `Decoder`. Call it from a `Decodable` type's `init(from:)` inside a write,
    /// or decode a ``DecodedObject`` first (decoders cannot cross into a write closure).
    ///
    /// - Throws: `DecodingError` from the decoder, and what ``create(_:from:update:)-(_,DecodedObject<T>,_)``
    ///   throws.
    @discardableResult
    public func create<T: Object>(_ type: T.Type, from decoder: any Decoder, update: UpdatePolicy = .error) throws -> T
    {
        try create(type, from: DecodedObject<T>(from: decoder), update: update)
    }

    /// The object of class `target` whose primary key is `key`.
    private func linkedObject(_ target: ObjectBase.Type, primaryKey key: DecodedValue) throws(RealmError) -> Any {
        let info = ClassRegistry.info(for: target)
        let given: Any
        switch key {
        case .int(let v): given = Int(v)
        case .string(let v): given = v
        default: given = NSNull()
        }
        guard let primaryKey = info.primaryKey else {
            throw RealmError(
                .invalidObject,
                "\(info.className) has no primary key, so a link to one must be a nested object, not \(given).")
        }
        guard let binding = context.binding(for: target), let converted = primaryKey.accessor.fromAny(given),
            let indexKey = IndexKey(primaryKey.accessor.encode(converted, _Encoder(session: nil))),
            let object = context.object(binding, primaryKey: indexKey)
        else {
            throw RealmError(
                .invalidObject,
                "There is no \(info.className) with primary key \(given) to link to: add it first, or give the "
                    + "linked object's values.")
        }
        return object
    }
}
