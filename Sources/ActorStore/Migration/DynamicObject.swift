import ActorStorePersistence
import Foundation

/// An object read (and, inside a migration, written) by property name, without its model class: what
/// ``Migration/enumerateObjects(ofType:_:)`` hands out and ``Realm/dynamicObjects(_:)`` returns.
///
/// ```swift
/// migration.enumerateObjects(ofType: Person.className()) { oldObject, newObject in
///     let firstName = oldObject!["firstName"] as! String
///     let lastName = oldObject!["lastName"] as! String
///     newObject!["fullName"] = "\(firstName) \(lastName)"
/// }
/// ```
///
/// Values come back as Swift values: `Int` for every integer width, `String`, `Double`, `Bool`, `Date`,
/// `Data`, `UUID`, ``ObjectId``, ``Decimal128``; a link as another `DynamicObject`; a list or set as
/// `[Any]` (nil elements as `NSNull()`), a map as `[String: Any]`; nil for nil or an unknown name.
///
/// - Important: A dynamic object belongs to the realm or migration that made it, as live objects do: a
///   migration's objects are valid only inside its block, and a realm's only inside the realm's actor.
public final class DynamicObject: CustomStringConvertible {
    let source: any DynamicRowSource
    let table: TableID
    /// The schema property names resolve against: the old one for a migration's old objects.
    let tableSchema: TableSchema
    let key: ObjectKey
    let generation: DynamicGeneration
    /// For a migration's old object: where its row was before the migration (it stays there).
    let location: RowLocation?

    init(
        source: any DynamicRowSource, table: TableID, schema: TableSchema, key: ObjectKey,
        generation: DynamicGeneration, location: RowLocation? = nil
    ) {
        self.source = source
        self.table = table
        self.tableSchema = schema
        self.key = key
        self.generation = generation
        self.location = location
    }

    /// The name of the object's class.
    public var className: String { tableSchema.name }

    /// The class's properties, as this object sees them (a migration's old object: the old schema).
    public var objectSchema: ObjectSchema { ObjectSchema(stored: tableSchema) }

    /// Reads or writes the property `propertyName`; nil for an unknown name.
    ///
    /// Only the new objects of a running migration can be written. A value that does not fit the property
    /// (a `String` for an `Int`, nil for a required property) makes the migration fail with
    /// `RealmError.invalidValue`, leaving the file unchanged.
    public subscript(propertyName: String) -> Any? {
        get {
            guard let column = columnIndex(propertyName) else { return nil }
            let type = tableSchema.columns[column].type
            guard let stored = source.read(self, column: column, type: type) else { return nil }
            let target = tableSchema.columns[column].linkTarget
            return DynamicValues.swiftValue(
                stored, typedLink: { table, key in source.linkedObject(key, target: table, generation: generation) }
            ) { key in
                target.flatMap { source.linkedObject(key, target: $0, generation: generation) }
            }
        }
        set {
            precondition(
                generation == .new,
                "Cannot set '\(className).\(propertyName)': only the new objects of a migration can be written "
                    + "(the old object is read-only, and so are the objects of Realm.dynamicObjects).")
            guard let column = columnIndex(propertyName) else {
                return source.fail(
                    RealmError(
                        .invalidValue,
                        "\(className) has no property '\(propertyName)' in the new schema: add it to the model class, "
                            + "or set one of " + liveColumnNames + "."))
            }
            let schema = tableSchema.columns[column]
            let stored = DynamicValues.storedValue(newValue, type: schema.type) { given in
                guard let object = given as? DynamicObject, object.className == schema.linkTarget else { return nil }
                return object.key
            }
            guard let stored else {
                return source.fail(
                    RealmError(
                        .invalidValue,
                        "\(String(describing: newValue ?? "nil")) is not a valid value for '\(className).\(propertyName)' "
                            + "(\(schema.type)); convert it before setting it."))
            }
            source.write(self, column: column, value: stored)
        }
    }

    private var liveColumnNames: String {
        tableSchema.columns.filter { !SchemaCheck.isRetired($0.name) }.map { "'\($0.name)'" }.joined(separator: ", ")
    }

    private func columnIndex(_ name: String) -> Int? {
        guard !SchemaCheck.isRetired(name) else { return nil }
        return tableSchema.columnIndex(named: name)
    }

    /// Whether `other` is the same stored object.
    public func isSameObject(as other: DynamicObject?) -> Bool {
        guard let other else { return false }
        return other.source === source && other.className == className && other.key == key
    }

    /// The class name and every property's value.
    public var description: String {
        let fields = tableSchema.columns.filter { !SchemaCheck.isRetired($0.name) }.map { column -> String in
            if column.linkTarget != nil { return "\(column.name): <\(column.linkTarget ?? "")>" }
            return "\(column.name): \(self[column.name].map { String(describing: $0) } ?? "nil")"
        }
        return "\(className) { " + fields.joined(separator: ", ") + " }"
    }
}

@available(*, unavailable, message: "Dynamic objects stay inside their Realm actor or migration block")
extension DynamicObject: Sendable {}

/// The objects ``Migration/enumerateObjects(ofType:_:)`` hands out: as in Realm Swift, the same type as
/// ``DynamicObject``.
public typealias MigrationObject = DynamicObject

/// Which schema a dynamic object reads with.
enum DynamicGeneration {
    /// A migration's old object: the old schema, the row as it was before the migration, read-only.
    case old
    /// A migration's new object: the new schema, writable.
    case new
    /// An object of `Realm.dynamicObjects`: the file's schema, the realm's current version, read-only.
    case current
}

/// Where dynamic objects read and write their rows: a running migration, or a realm.
protocol DynamicRowSource: AnyObject {
    /// Column `column` of `object`'s row; nil if the object no longer exists.
    func read(_ object: DynamicObject, column: Int, type: ColumnType) -> Value?
    /// Writes a column of a new object (migrations only); a failure is recorded.
    func write(_ object: DynamicObject, column: Int, value: Value)
    /// The object of class `target` with key `key`, in the same generation, or nil.
    func linkedObject(_ key: ObjectKey, target: String, generation: DynamicGeneration) -> DynamicObject?
    /// Records an error the dynamic API cannot throw; the migration (or write) then fails with it.
    func fail(_ error: RealmError)
}
