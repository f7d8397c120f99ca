import ActorStorePersistence
import Foundation

/// How `Encodable` frozen objects write their links to other objects. Set it in the encoder's `userInfo`
/// under `CodingUserInfoKey.actorStoreLinks`; without it, links are written as primary keys.
///
/// ```swift
/// let encoder = JSONEncoder()
/// encoder.userInfo[.actorStoreLinks] = LinkEncoding.nested(depth: 2)
/// let json = try encoder.encode(frozenPeople)            // FrozenResults<Person>: an array
/// ```
///
/// Embedded objects are always written nested: they are part of their parent. A link past the depth is
/// written as its target's primary key, or `null` when the target's class has none.
public enum LinkEncoding: Sendable, Hashable {
    /// Each link as the primary key of its target (`null` for a class without one).
    case primaryKeys
    /// Links as nested objects, up to `depth` levels of links; deeper ones as primary keys.
    case nested(depth: Int)

    /// The levels of links still written as nested objects.
    var depth: Int {
        switch self {
        case .primaryKeys: 0
        case .nested(let depth): max(0, depth)
        }
    }
}

extension CodingUserInfoKey {
    /// The `userInfo` key of a ``LinkEncoding`` for encoding frozen objects.
    public static let actorStoreLinks = CodingUserInfoKey(rawValue: "ActorStore.links")!
}

/// A property name as a coding key.
struct PropertyCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Frozen: Encodable {
    /// Writes the object's `@Persisted` properties by name (`LinkingObjects` are computed, and left out).
    ///
    /// Values are written as their Swift types, so the encoder's strategies apply to `Date` and `Data`;
    /// `ObjectId` and `Decimal128` are strings, an `AnyRealmValue` its plain value. Links follow the
    /// ``LinkEncoding`` in `encoder.userInfo[.actorStoreLinks]` (primary keys by default).
    ///
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        let links = encoder.userInfo[.actorStoreLinks] as? LinkEncoding ?? .primaryKeys
        try FrozenEncoding(context: context).encodeObject(binding.tableID, key, depth: links.depth, to: encoder)
    }
}

extension FrozenResults: Encodable {
    /// Writes the objects as an array, each as `Frozen` writes it.
    ///
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for object in self { try container.encode(object) }
    }
}

/// Writes stored objects of one frozen version through an `Encoder`, from the stored schema.
struct FrozenEncoding {
    let context: FrozenContext

    private var snapshot: Snapshot { context.snapshot }

    func encodeObject(_ table: TableID, _ key: ObjectKey, depth: Int, to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: PropertyCodingKey.self)
        guard let schema = snapshot.tableSchema(table), let location = snapshot.state.rowLocation(table, key) else {
            return
        }
        for (index, column) in schema.columns.enumerated() where !SchemaCheck.isRetired(column.name) {
            let value = context.value(at: location, column: index, type: column.type)
            let codingKey = PropertyCodingKey(column.name)
            switch value {
            case .list(let items), .set(let items):
                var nested = container.nestedUnkeyedContainer(forKey: codingKey)
                for item in items {
                    try encodeValue(item, column, depth: depth, to: nested.superEncoder())
                }
            case .map(let entries):
                var nested = container.nestedContainer(keyedBy: PropertyCodingKey.self, forKey: codingKey)
                for entry in entries {
                    try encodeValue(
                        entry.value, column, depth: depth, to: nested.superEncoder(forKey: PropertyCodingKey(entry.key))
                    )
                }
            default:
                try encodeValue(value, column, depth: depth, to: container.superEncoder(forKey: codingKey))
            }
        }
    }

    /// Writes one value of `column` (a single value, an element, or a map value).
    private func encodeValue(_ value: Value, _ column: ColumnSchema, depth: Int, to encoder: any Encoder) throws {
        switch value {
        case .link(let key):
            guard let target = column.linkTarget, let targetID = snapshot.tableID(named: target) else {
                var single = encoder.singleValueContainer()
                return try single.encodeNil()
            }
            try encodeLink(targetID, key, depth: depth, to: encoder)
        case .typedLink(let table, let key):
            guard let targetID = snapshot.tableID(named: table), snapshot.state.rowLocation(targetID, key) != nil
            else {
                var single = encoder.singleValueContainer()
                return try single.encodeNil()
            }
            try encodeLink(targetID, key, depth: depth, to: encoder)
        default:
            var single = encoder.singleValueContainer()
            try Self.encodePlain(value, to: &single)
        }
    }

    /// A link: nested (embedded objects always, others while `depth` lasts), else the target's primary key.
    private func encodeLink(_ table: TableID, _ key: ObjectKey, depth: Int, to encoder: any Encoder) throws {
        guard let schema = snapshot.tableSchema(table) else {
            var single = encoder.singleValueContainer()
            return try single.encodeNil()
        }
        if schema.isEmbedded {
            return try encodeObject(table, key, depth: depth, to: encoder)
        }
        if depth > 0 {
            return try encodeObject(table, key, depth: depth - 1, to: encoder)
        }
        var single = encoder.singleValueContainer()
        guard let column = schema.primaryKeyColumn, let location = snapshot.state.rowLocation(table, key) else {
            return try single.encodeNil()
        }
        try Self.encodePlain(
            context.value(at: location, column: column, type: schema.columns[column].type), to: &single)
    }

    /// A value that is not a link, as its Swift type.
    static func encodePlain(_ value: Value, to container: inout any SingleValueEncodingContainer) throws {
        switch value {
        case .null: try container.encodeNil()
        case .bool(let v): try container.encode(v)
        case .int(let v): try container.encode(v)
        case .float(let v): try container.encode(v)
        case .double(let v): try container.encode(v)
        case .string(let v): try container.encode(v)
        case .data(let v): try container.encode(v)
        case .date(let v): try container.encode(v)
        case .uuid(let v): try container.encode(v)
        case .objectId(let v): try container.encode(ObjectId(storage: v).stringValue)
        case .decimal128(let v): try container.encode(Decimal128(bits: v).description)
        case .link, .typedLink, .list, .set, .map: try container.encodeNil()
        }
    }
}
