import ActorStorePersistence

/// The classes of a realm and their properties: what ``Realm/schema`` reports of a file, what
/// ``ObjectBase/objectSchema`` reports of a model class, and what a ``Migration`` sees before and after.
///
/// ```swift
/// let schema = await realm.schema
/// for objectSchema in schema.objectSchema {
///     print(objectSchema.className, objectSchema.properties.map(\.name))
/// }
/// ```
public struct Schema: Sendable, Equatable, CustomStringConvertible {
    /// One entry per class, sorted by class name.
    public let objectSchema: [ObjectSchema]

    /// A schema of the classes given.
    public init(objectSchema: [ObjectSchema]) {
        self.objectSchema = objectSchema.sorted { $0.className < $1.className }
    }

    /// The class named `className`, or nil.
    public subscript(className: String) -> ObjectSchema? { objectSchema.first { $0.className == className } }

    /// The classes and their properties, one class a line.
    public var description: String { objectSchema.map(\.description).joined(separator: "\n") }

    /// The schema stored in a file: its tables without the columns of removed properties.
    init(stored tables: [TableSchema]) {
        self.init(objectSchema: tables.map(ObjectSchema.init(stored:)))
    }
}

/// One class of a ``Schema``: its name, properties and primary key.
public struct ObjectSchema: Sendable, Equatable, CustomStringConvertible {
    /// The class name (``ObjectBase/className()``), which is also the name of its table in the file.
    public let className: String
    /// The properties, in the order they are stored (model classes: declaration order).
    public let properties: [Property]
    /// Whether the class is an ``EmbeddedObject``.
    public let isEmbedded: Bool

    /// A class schema from its parts.
    public init(className: String, properties: [Property], isEmbedded: Bool = false) {
        self.className = className
        self.properties = properties
        self.isEmbedded = isEmbedded
    }

    /// The primary key property, or nil.
    public var primaryKeyProperty: Property? { properties.first { $0.isPrimary } }

    /// The property named `propertyName`, or nil.
    public subscript(propertyName: String) -> Property? { properties.first { $0.name == propertyName } }

    /// `Dog { name: string, age: int, owner: Person? }`.
    public var description: String {
        "\(className)\(isEmbedded ? " (embedded)" : "") { "
            + properties.map(\.description).joined(separator: ", ") + " }"
    }

    init(stored table: TableSchema) {
        self.init(
            className: table.name,
            properties: table.columns.filter { !SchemaCheck.isRetired($0.name) }.map(Property.init(stored:)),
            isEmbedded: table.isEmbedded)
    }

    init(_ info: ObjectSchemaInfo) {
        self.init(
            className: info.className, properties: info.declarationOrder.map(Property.init(info:)),
            isEmbedded: info.isEmbedded)
    }
}

/// One property of an ``ObjectSchema``.
public struct Property: Sendable, Equatable, CustomStringConvertible {
    /// The property's name.
    public let name: String
    /// The type of the value (of each element, for a collection).
    public let type: PropertyType
    /// Whether the value (or, for a collection, each element) may be nil.
    public let isOptional: Bool
    /// Whether the property has a search index (primary keys always do).
    public let isIndexed: Bool
    /// Whether the property is its class's primary key.
    public let isPrimary: Bool
    /// For ``PropertyType/object`` and ``PropertyType/linkingObjects``: the class linked to.
    public let objectClassName: String?
    /// For ``PropertyType/linkingObjects``: the property of ``objectClassName`` that links here.
    public let linkOriginPropertyName: String?
    /// Whether the property is a `List`.
    public let isArray: Bool
    /// Whether the property is a `MutableSet`.
    public let isSet: Bool
    /// Whether the property is a `Map` (String keys).
    public let isMap: Bool

    /// `age: int`, `owner: Person?`, `dogs: list<Dog>`.
    public var description: String {
        let element = (objectClassName ?? "\(type)") + (isOptional && !isArray && !isSet ? "?" : "")
        let shape =
            isArray ? "list<\(element)>" : isSet ? "set<\(element)>" : isMap ? "map<string, \(element)>" : element
        return "\(name): \(shape)\(isPrimary ? " (primary key)" : isIndexed ? " (indexed)" : "")"
    }

    init(stored column: ColumnSchema) {
        self.name = column.name
        self.type = PropertyType(column.type.scalar)
        self.isOptional = column.type.isOptional
        self.isIndexed = column.isIndexed
        self.isPrimary = column.isPrimaryKey
        self.objectClassName = column.linkTarget
        self.linkOriginPropertyName = nil
        self.isArray = column.type.collection == .list
        self.isSet = column.type.collection == .set
        self.isMap = column.type.collection == .map
    }

    init(info property: PropertyInfo) {
        let kind = property.kind
        self.name = property.name
        self.type = kind.isLinkingObjects ? .linkingObjects : PropertyType(kind.scalar)
        self.isOptional = kind.isLinkingObjects ? false : kind.columnType.isOptional
        self.isIndexed = property.options.indexed || property.options.primaryKey
        self.isPrimary = property.options.primaryKey
        self.objectClassName = kind.linkTarget.map { ClassRegistry.info(for: $0).className }
        self.linkOriginPropertyName = property.originProperty
        self.isArray = kind.collection == .list && !kind.isLinkingObjects
        self.isSet = kind.collection == .set
        self.isMap = kind.collection == .map
    }
}

/// The type of a ``Property``'s values, in Realm's names.
public enum PropertyType: String, Sendable, Equatable, CustomStringConvertible {
    /// Any integer width (`Int`, `Int8`, `Int16`, `Int32`, `Int64`).
    case int
    /// `Bool`.
    case bool
    /// `Float`.
    case float
    /// `Double`.
    case double
    /// `String`.
    case string
    /// `Data`.
    case data
    /// `Date`.
    case date
    /// ``ObjectId``.
    case objectId
    /// ``Decimal128``.
    case decimal128
    /// `UUID`.
    case uuid
    /// A link to an object (``Property/objectClassName`` names its class).
    case object
    /// ``AnyRealmValue``: a value of any of the other types, or a link to an object of any class.
    case any
    /// `LinkingObjects`: computed from the links of another class, not stored.
    case linkingObjects

    /// The type's name, as in `rawValue`.
    public var description: String { rawValue }

    init(_ scalar: ScalarType) {
        switch scalar {
        case .bool: self = .bool
        case .int8, .int16, .int32, .int64: self = .int
        case .float: self = .float
        case .double: self = .double
        case .string: self = .string
        case .data: self = .data
        case .date: self = .date
        case .uuid: self = .uuid
        case .objectId: self = .objectId
        case .decimal128: self = .decimal128
        case .link: self = .object
        case .mixed: self = .any
        }
    }
}
