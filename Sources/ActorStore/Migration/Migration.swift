import ActorStorePersistence
import Foundation

/// The data of a realm file on its way from an older schema to the model classes: what
/// ``Realm/Configuration/migrationBlock`` receives.
///
/// ```swift
/// let config = Realm.Configuration(
///     schemaVersion: 3,
///     migrationBlock: { migration, oldSchemaVersion in
///         if oldSchemaVersion < 2 {
///             migration.enumerateObjects(ofType: Person.className()) { oldObject, newObject in
///                 let firstName = oldObject!["firstName"] as! String
///                 let lastName = oldObject!["lastName"] as! String
///                 newObject!["fullName"] = "\(firstName) \(lastName)"
///             }
///         }
///         if oldSchemaVersion < 3 {
///             migration.renameProperty(onType: Person.className(), from: "age", to: "yearsSinceBirth")
///         }
///     })
/// ```
///
/// Everything a migration does — the block's changes and the schema change — is one write transaction,
/// committed after the block returns: if the block throws, a value it sets does not fit, an Object class
/// that became an ``EmbeddedObject`` is left with objects that do not have exactly one parent, or the disk
/// fills, nothing is committed and the file keeps its old schema version, schema and data.
///
/// Write each schema version's step under its own `if oldSchemaVersion < N`, never nested: a file several
/// versions old then runs every step in order in one open (see <doc:Migrations>).
///
/// - Important: A migration and its objects are valid only while the block runs; they are not `Sendable`.
public final class Migration {
    let transaction: WriteTransaction
    /// The model classes of the new schema, by class name.
    private(set) var classes: [String: ObjectSchemaInfo]
    /// Without `objectTypes`, classes the open did not know yet join when the block names one (the seeds'
    /// `Person.className()` discovers `Person`).
    private let findsClasses: Bool
    /// The schema version the migration records.
    let newVersion: UInt64
    /// The tables as stored before the migration, in stored order.
    let oldTables: [TableSchema]
    private let oldTablesByName: [String: TableSchema]
    private let oldIDs: [String: TableID]
    /// Every row of every table before the migration (kept so that old objects read their old rows).
    private let oldRows: [String: PersistentBTree<ObjectKey, RowLocation>]
    /// Renames not yet applied to the transaction's schema.
    private var pendingRenames: [(type: String, from: String, to: String)] = []
    /// Types whose data `deleteData(forType:)` deleted: dropped from the file if no class keeps them.
    private var deletedTypes: Set<String> = []
    /// Whether this migration deleted objects (`delete`, `deleteData`).
    private var deletedAny = false
    /// Whether the transaction's schema is the new schema with every rename so far.
    private var materialized = false
    /// The first failure; the migration then commits nothing.
    private(set) var failure: RealmError?
    /// The state of the file before the migration (old objects are queried against it).
    private let oldState: DatabaseState
    /// Bumped by every change the migration makes: the matches of its dynamic results are then recomputed.
    private var mutations: UInt64 = 0

    /// The schema of the file before the migration.
    public let oldSchema: Schema
    /// The schema of the model classes the migration leads to.
    public let newSchema: Schema

    init(transaction: WriteTransaction, classes: [ObjectSchemaInfo], newVersion: UInt64, findsClasses: Bool) {
        self.transaction = transaction
        self.findsClasses = findsClasses
        var byName: [String: ObjectSchemaInfo] = [:]
        for info in classes { byName[info.className] = info }
        self.classes = byName
        self.newVersion = newVersion
        self.oldTables = transaction.state.schema
        self.oldState = transaction.state
        var tablesByName: [String: TableSchema] = [:]
        var ids: [String: TableID] = [:]
        var rows: [String: PersistentBTree<ObjectKey, RowLocation>] = [:]
        for table in oldTables {
            tablesByName[table.name] = table
            guard let id = transaction.tableID(named: table.name) else { continue }
            ids[table.name] = id
            rows[table.name] = transaction.keys(id)
        }
        self.oldTablesByName = tablesByName
        self.oldIDs = ids
        self.oldRows = rows
        self.oldSchema = Schema(stored: oldTables)
        var newTables = oldTables.filter { byName[$0.name] == nil }.map(ObjectSchema.init(stored:))
        newTables += classes.map(ObjectSchema.init)
        self.newSchema = Schema(objectSchema: newTables)
    }

    // MARK: The block's API

    /// Calls `block` for every object of the class named `typeName` that existed before the migration,
    /// with the object as it was (`oldObject`, in the old schema, read-only) and as it is now (`newObject`,
    /// in the new schema, writable).
    ///
    /// ```swift
    /// migration.enumerateObjects(ofType: Person.className()) { oldObject, newObject in
    ///     newObject!["age"] = "\(oldObject!["age"] ?? 0)"   // Int became String
    /// }
    /// ```
    ///
    /// `oldObject` is nil for a class that did not exist before; `newObject` is nil once the object was
    /// deleted in this migration, or when its class is no longer in the model. Rename properties before
    /// enumerating: the new objects of an enumeration that ran before a rename lose what they wrote to the
    /// renamed property's new name.
    /// - Parameters:
    ///   - typeName: the class name (``ObjectBase/className()``, as stored in the file).
    ///   - block: called once per object, in the order the objects were created.
    /// - Throws: what `block` throws (the migration then commits nothing).
    /// - Complexity: O(n) in the number of objects of the class.
    public func enumerateObjects(
        ofType typeName: String, _ block: (_ oldObject: MigrationObject?, _ newObject: MigrationObject?) throws -> Void
    ) rethrows {
        resolve(typeName, for: "enumerateObjects(ofType: \"\(typeName)\")")
        materialize()
        guard failure == nil, let rows = oldRows[typeName], let oldTable = oldTablesByName[typeName],
            let oldID = oldIDs[typeName]
        else { return }
        let newID = classes[typeName] == nil ? nil : transaction.tableID(named: typeName)
        let newTable = newID.flatMap { transaction.tableSchema($0) }
        for (key, location) in rows {
            let old = MigrationObject(
                source: self, table: oldID, schema: oldTable, key: key, generation: .old, location: location)
            var new: MigrationObject?
            // Rows that existed before still exist unless this migration deleted some (one lookup less per row).
            if let newID, let newTable, !deletedAny || transaction.contains(newID, key) {
                new = MigrationObject(source: self, table: newID, schema: newTable, key: key, generation: .new)
            }
            try block(old, new)
            if failure != nil { return }
        }
    }

    /// The objects of the class named `typeName` as they are now, in the new schema, to query: filter,
    /// sort and read them as ``DynamicResults``, and write them as the new objects of
    /// ``enumerateObjects(ofType:_:)``.
    ///
    /// ```swift
    /// for dog in try migration.newObjects(ofType: "Dog").filter("owner == nil") {
    ///     migration.delete(dog)
    /// }
    /// ```
    ///
    /// The results are live: they include the objects the migration created and not those it deleted. An
    /// unknown class gives empty results.
    public func newObjects(ofType typeName: String) -> DynamicResults {
        resolve(typeName, for: "newObjects(ofType: \"\(typeName)\")")
        return DynamicResults(source: self, className: typeName, generation: .new)
    }

    /// The objects of the class named `typeName` as they were before the migration, in the old schema
    /// (read-only), to query: `migration.oldObjects(ofType: "Person").filter("age > 17")`.
    ///
    /// The properties are the old schema's (a property the migration renames or removes is still there under
    /// its old name). An unknown class gives empty results.
    public func oldObjects(ofType typeName: String) -> DynamicResults {
        DynamicResults(source: self, className: typeName, generation: .old)
    }

    /// Renames a property, keeping its values (and its index or primary key, with the settings of the
    /// new model): use it instead of copying values to a new property.
    ///
    /// ```swift
    /// migration.renameProperty(onType: Person.className(), from: "age", to: "yearsSinceBirth")
    /// ```
    ///
    /// The model class must declare `newName` and not `oldName`. A property may also become optional or
    /// required as it is renamed (nil values of a property that becomes required read as its default).
    /// A problem (no such property, a type change) makes the migration fail with `schemaMismatch`.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) {
        guard failure == nil else { return }
        let label = "renameProperty(onType: \"\(typeName)\", from: \"\(oldName)\", to: \"\(newName)\")"
        resolve(typeName, for: label)
        guard let table = currentTable(typeName) else {
            return fail(RealmError(.schemaMismatch, "\(label): the file has no class named \(typeName)."))
        }
        guard
            let column = table.columns.first(where: { $0.name == oldName })
                ?? oldTablesByName[typeName]?.columns.first(where: { $0.name == oldName })
        else {
            return fail(
                RealmError(
                    .schemaMismatch,
                    "\(label): \(typeName) has no property '\(oldName)' (its properties are "
                        + table.columns.filter { !SchemaCheck.isRetired($0.name) }.map { "'\($0.name)'" }
                        .joined(separator: ", ") + ")."))
        }
        if let info = classes[typeName] {
            guard let target = info.tableSchema.columns.first(where: { $0.name == newName }) else {
                return fail(
                    RealmError(
                        .schemaMismatch,
                        "\(label): the model class \(typeName) has no property '\(newName)'; declare it (and remove "
                            + "'\(oldName)')."))
            }
            guard MigrationPlan.sameStorage(column, target) else {
                return fail(
                    RealmError(
                        .schemaMismatch,
                        "\(label): '\(typeName).\(oldName)' is \(column.type) but '\(newName)' is \(target.type); a "
                            + "rename keeps the values, so it cannot change the type. Enumerate the objects and convert "
                            + "the values instead."))
            }
        }
        pendingRenames.append((typeName, oldName, newName))
        materialized = false
        mutations &+= 1  // the new objects read the renamed property now: results made before must run again
    }

    /// Creates an object of the class named `typeName` (of the new schema) from a dictionary of property
    /// values, or an array of them in the order of the class's properties.
    ///
    /// A value that does not fit makes the migration fail with `invalidValue`.
    /// - Returns: the new object (its `oldObject` does not exist).
    @discardableResult
    public func create(_ typeName: String, value: Any = [String: Any]()) -> MigrationObject {
        resolve(typeName, for: "create(\"\(typeName)\", value:)")
        materialize()
        guard failure == nil, let id = transaction.tableID(named: typeName), let table = transaction.tableSchema(id)
        else {
            if failure == nil {
                fail(
                    RealmError(
                        .schemaMismatch,
                        "create(\"\(typeName)\", value:) in a migration: the new schema has no class named \(typeName)."
                    ))
            }
            return placeholder(typeName)
        }
        var row = table.columns.map(\.type.defaultValue)
        let live = table.columns.indices.filter { !SchemaCheck.isRetired(table.columns[$0].name) }
        var given: [(Int, Any?)] = []
        if let dictionary = value as? [String: Any] {
            for (name, item) in dictionary {
                guard let column = table.columnIndex(named: name), !SchemaCheck.isRetired(name) else {
                    fail(
                        RealmError(
                            .invalidValue, "create(\"\(typeName)\", value:): \(typeName) has no property '\(name)'."))
                    return placeholder(typeName)
                }
                given.append((column, item))
            }
        } else if let array = value as? [Any] {
            let order =
                classes[typeName].map { info in
                    info.declarationOrder.compactMap { property in table.columnIndex(named: property.name) }
                } ?? live
            given = zip(order, array).map { ($0, $1) }
        } else {
            fail(
                RealmError(
                    .invalidValue,
                    "create(\"\(typeName)\", value:) takes a dictionary of property values or an array of them, not "
                        + "\(type(of: value))."))
            return placeholder(typeName)
        }
        for (column, item) in given {
            let schema = table.columns[column]
            guard let stored = storedValue(item, schema) else {
                fail(
                    RealmError(
                        .invalidValue,
                        "\(String(describing: item ?? "nil")) is not a valid value for '\(typeName).\(schema.name)' "
                            + "(\(schema.type))."))
                return placeholder(typeName)
            }
            row[column] = stored
        }
        do throws(StorageError) {
            let key = try transaction.insert(id, row)
            mutations &+= 1
            return MigrationObject(source: self, table: id, schema: table, key: key, generation: .new)
        } catch {
            fail(RealmError(error))
            return placeholder(typeName)
        }
    }

    /// Deletes an object (a new object of an enumeration, or one ``create(_:value:)`` made), with the
    /// embedded objects it owns. Links to it become nil.
    public func delete(_ object: MigrationObject) {
        materialize()
        guard failure == nil else { return }
        guard object.source === self, object.generation == .new else {
            return fail(
                RealmError(
                    .invalidObject,
                    "delete(_:) in a migration takes a new object (the second argument of enumerateObjects, or "
                        + "what create returned), not an old one."))
        }
        deletedAny = true
        mutations &+= 1
        do throws(StorageError) {
            try deleteCascading(object.table, object.key)
        } catch {
            fail(RealmError(error))
        }
    }

    /// Deletes every object of the class named `typeName`; if the new model has no such class, its table
    /// is removed from the file too (Realm's way to remove a class with its data).
    /// - Returns: whether the file had such a class.
    @discardableResult
    public func deleteData(forType typeName: String) -> Bool {
        guard failure == nil, let id = transaction.tableID(named: typeName) else { return false }
        deletedAny = true
        mutations &+= 1
        do throws(StorageError) {
            try transaction.deleteAll(id)
        } catch {
            fail(RealmError(error))
        }
        deletedTypes.insert(typeName)
        if classes[typeName] == nil { materialized = false }
        return true
    }

    // MARK: Running

    /// Applies what the block left pending and checks the result; the caller then commits.
    /// - Throws: the first failure recorded; `schemaMismatch` for embedded objects without exactly one parent.
    func finish() throws(RealmError) {
        materialize()
        if let failure { throw failure }
        try checkEmbeddedParents()
        if let failure { throw failure }
    }

    /// Without `objectTypes`: finds the model class named `typeName` among the classes this process has used
    /// (naming it with `className()` is enough), so that the migration knows its new schema. A name no class
    /// or several classes have fails the migration: the new schema would be a guess.
    private func resolve(_ typeName: String, for call: String) {
        guard findsClasses, classes[typeName] == nil, failure == nil, oldTablesByName[typeName] != nil else { return }
        let candidates = ClassRegistry.allDiscovered.filter { $0.className == typeName }
        guard candidates.count == 1, let info = candidates.first, info.problems.isEmpty else {
            return fail(
                RealmError(
                    .schemaMismatch,
                    "\(call): the model class of \(typeName) is "
                        + (candidates.isEmpty ? "unknown" : "ambiguous (\(candidates.count) classes have that name)")
                        + ", so the migration cannot know its new schema. List the model classes in "
                        + "Configuration.objectTypes."))
        }
        classes[typeName] = info
        materialized = false
    }

    /// Brings the transaction's schema to the new schema with every rename so far (and converts the values
    /// of properties that became optional or required). Failures are recorded.
    private func materialize() {
        guard !materialized, failure == nil else { return }
        materialized = true
        mutations &+= 1
        do throws(StorageError) {
            let plan = MigrationPlan(
                current: transaction.state.schema, classes: classes, renames: pendingRenames,
                dropped: deletedTypes.filter { classes[$0] == nil }, version: newVersion, oldTables: oldTablesByName)
            pendingRenames = []
            try transaction.setSchema(plan.tables, version: newVersion)
            for (name, conversions) in plan.conversions where !conversions.isEmpty {
                guard let id = transaction.tableID(named: name), let table = transaction.tableSchema(id) else {
                    continue
                }
                for (key, _) in transaction.keys(id) {
                    guard let values = try transaction.values(id, key) else { continue }
                    let changes = conversions.map { conversion in
                        (
                            column: conversion.to,
                            value: DynamicValues.converted(
                                values[conversion.from], to: table.columns[conversion.to].type)
                        )
                    }
                    try transaction.update(id, key, changes)
                }
            }
        } catch {
            fail(RealmError(error))
        }
    }

    /// Every object of a class that became embedded must have exactly one parent.
    private func checkEmbeddedParents() throws(RealmError) {
        for table in transaction.state.schema where table.isEmbedded && oldTablesByName[table.name]?.isEmbedded == false
        {
            guard let id = transaction.tableID(named: table.name) else { continue }
            var orphans = 0
            var shared = 0
            for (key, _) in transaction.keys(id) {
                // Links kept in retired columns (a removed link property's bytes) are no parents.
                let parents = transaction.backlinks(to: id, key).reduce(0) { total, link in
                    let column = transaction.tableSchema(link.source)?.columns[safeIndex: link.column]
                    return column.map { SchemaCheck.isRetired($0.name) } ?? true ? total : total + link.count
                }
                if parents == 0 { orphans += 1 } else if parents > 1 { shared += 1 }
            }
            guard orphans > 0 || shared > 0 else { continue }
            var problems: [String] = []
            if orphans > 0 {
                problems.append(
                    "\(orphans) \(orphans == 1 ? "object has" : "objects have") no parent (at least one object does not "
                        + "have a backlink: data would get lost)")
            }
            if shared > 0 {
                problems.append(
                    "\(shared) \(shared == 1 ? "object has" : "objects have") several parents (at least one object does "
                        + "have multiple backlinks)")
            }
            throw RealmError(
                .schemaMismatch,
                "\(table.name) became an EmbeddedObject, but " + problems.joined(separator: " and ")
                    + ". An embedded object must have exactly one parent: in the migration block, delete the objects "
                    + "no parent links to (migration.delete), and give each further parent its own copy "
                    + "(migration.create). The file was not changed.")
        }
    }

    /// Deletes a row and, first, the embedded rows it owns.
    private func deleteCascading(_ id: TableID, _ key: ObjectKey) throws(StorageError) {
        guard let table = transaction.tableSchema(id), let values = try transaction.values(id, key) else { return }
        var owned: [(TableID, ObjectKey)] = []
        for (column, schema) in table.columns.enumerated() where !SchemaCheck.isRetired(schema.name) {
            guard let target = schema.linkTarget, let targetID = transaction.tableID(named: target),
                transaction.tableSchema(targetID)?.isEmbedded == true
            else { continue }
            switch values[column] {
            case .link(let k): owned.append((targetID, k))
            case .list(let items), .set(let items):
                for case .link(let k) in items { owned.append((targetID, k)) }
            case .map(let entries):
                for entry in entries { if case .link(let k) = entry.value { owned.append((targetID, k)) } }
            default: break
            }
        }
        try transaction.deleteIfPresent(id, key)
        for (targetID, k) in owned where transaction.contains(targetID, k) { try deleteCascading(targetID, k) }
    }

    private func currentTable(_ name: String) -> TableSchema? {
        transaction.tableID(named: name).flatMap { transaction.tableSchema($0) }
    }

    private func storedValue(_ item: Any?, _ schema: ColumnSchema) -> Value? {
        DynamicValues.storedValue(item, type: schema.type) { given in
            guard let object = given as? DynamicObject, object.className == schema.linkTarget else { return nil }
            return object.key
        }
    }

    /// What a failed `create` returns: an object of no table, whose reads are nil.
    private func placeholder(_ typeName: String) -> MigrationObject {
        MigrationObject(
            source: self, table: TableID(0), schema: TableSchema(typeName, columns: []), key: ObjectKey(-1),
            generation: .new)
    }
}

@available(*, unavailable, message: "A Migration is valid only inside its migration block")
extension Migration: Sendable {}

extension Migration: DynamicRowSource {
    func read(_ object: DynamicObject, column: Int, type: ColumnType) -> Value? {
        if let location = object.location {
            return try? transaction.withRowBytes(at: location) { (row) throws(StorageError) in
                try row.value(at: column, type: type)
            }
        }
        guard object.tableSchema.columns.indices.contains(column) else { return nil }
        return try? transaction.value(object.table, object.key, column: column)
    }

    func write(_ object: DynamicObject, column: Int, value: Value) {
        guard failure == nil else { return }
        mutations &+= 1
        do throws(StorageError) {
            try transaction.update(object.table, object.key, [(column: column, value: value)])
        } catch {
            fail(RealmError(error))
        }
    }

    func linkedObject(_ key: ObjectKey, target: String, generation: DynamicGeneration) -> DynamicObject? {
        if generation == .old {
            guard let id = oldIDs[target], let table = oldTablesByName[target],
                let location = oldRows[target]?.value(forKey: key)
            else { return nil }
            return DynamicObject(source: self, table: id, schema: table, key: key, generation: .old, location: location)
        }
        guard let id = transaction.tableID(named: target), let table = transaction.tableSchema(id),
            transaction.contains(id, key)
        else { return nil }
        return DynamicObject(source: self, table: id, schema: table, key: key, generation: .new)
    }

    func fail(_ error: RealmError) {
        if failure == nil { failure = error }
    }
}

extension Migration: DynamicQuerySource {
    func runDynamicQuery<R, E: Error>(
        _ className: String, _ generation: DynamicGeneration, _ body: (QueryExecutor) throws(E) -> R
    ) throws(E) -> R {
        let store: any ReadableStore
        if generation == .old {
            store = OldVersionStore(state: oldState, transaction: transaction)
        } else {
            materialize()
            store = transaction
        }
        return try body(
            QueryExecutor(store: store, bindings: SchemaBindings(classes: [], store: store), className: className))
    }

    var dynamicStamp: UInt64 { mutations }
}

/// The file before a migration, read inside the migration's transaction (the old rows stay where they were).
private struct OldVersionStore: ReadableStore {
    let state: DatabaseState
    let transaction: WriteTransaction

    func withRowBytes<R>(
        at location: RowLocation, _ body: (RowView) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        try transaction.withRowBytes(at: location, body)
    }
}

extension Array {
    /// The element at `index`, or nil when it is out of range.
    fileprivate subscript(safeIndex index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
