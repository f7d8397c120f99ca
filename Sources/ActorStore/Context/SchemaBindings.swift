import ActorStorePersistence

/// Where one model class lives in one file: its table and the column of each property. Immutable.
final class TableBinding: Sendable {
    let info: ObjectSchemaInfo
    let tableID: TableID
    /// The table's schema in the file when the binding was made.
    let stored: TableSchema
    /// Column index by property ordinal; -1 for `LinkingObjects`.
    let columns: [Int]
    /// Column types by column index.
    let types: [ColumnType]
    let columnCount: Int
    /// A row of default values: the starting point of inserts, so columns no property maps to (retired by a
    /// migration) get a valid value.
    let defaultRow: [Value]
    /// How each stored property becomes its column's value, in ordinal order.
    let plans: [ColumnPlan]
    /// Whether the plans write every column: an insert then need not start from ``defaultRow``.
    let plansCoverEveryColumn: Bool
    /// Columns that link to embedded objects (their targets are owned and deleted with the row).
    let embeddedLinkColumns: [Int]
    /// How an insert writes a row straight from the object's slots, where it can; see ``DirectInsertPlan``.
    let direct: DirectInsertPlan?

    init(info: ObjectSchemaInfo, tableID: TableID, stored: TableSchema) {
        self.info = info
        self.tableID = tableID
        self.stored = stored
        self.columns = info.properties.map { property in
            property.kind.isLinkingObjects ? -1 : (stored.columnIndex(named: property.name) ?? -1)
        }
        self.types = stored.columns.map(\.type)
        self.columnCount = stored.columns.count
        self.defaultRow = stored.columns.map(\.type.defaultValue)
        self.plans = info.storedProperties.compactMap { property in
            guard let column = stored.columnIndex(named: property.name) else { return nil }
            return ColumnPlan(ordinal: property.ordinal, column: column, encode: property.accessor.encode)
        }
        self.plansCoverEveryColumn = Set(plans.map(\.column)).count == stored.columns.count
        self.embeddedLinkColumns = info.storedProperties.compactMap { property in
            guard let target = property.kind.linkTarget, target is EmbeddedObject.Type else { return nil }
            return stored.columnIndex(named: property.name)
        }
        self.direct = DirectInsertPlan(info: info, plans: plans, types: types)
    }
}

/// One stored property's slot, column and encoder: what an insert walks per property.
struct ColumnPlan: @unchecked Sendable {
    // @unchecked: `encode` captures only a metatype (see `PropertyAccessor`).
    let ordinal: Int
    let column: Int
    let encode: (any _Persistable, _Encoder) -> Value
}

/// The classes of one realm mapped to the tables of its file, as of one schema. Immutable; a realm
/// replaces its bindings when tables are added.
final class SchemaBindings: Sendable {
    let byClass: [ObjectIdentifier: TableBinding]
    let byName: [String: TableBinding]

    init(classes: [ObjectSchemaInfo], store: some ReadableStore) {
        var byClass: [ObjectIdentifier: TableBinding] = [:]
        var byName: [String: TableBinding] = [:]
        for info in classes {
            guard let id = store.tableID(named: info.className), let schema = store.tableSchema(id) else { continue }
            let binding = TableBinding(info: info, tableID: id, stored: schema)
            byClass[ObjectIdentifier(info.type)] = binding
            byName[info.className] = binding
        }
        self.byClass = byClass
        self.byName = byName
    }

    func binding(for type: ObjectBase.Type) -> TableBinding? { byClass[ObjectIdentifier(type)] }

    /// Whether these bindings are what `init(classes:store:)` would build now: every class bound to the same
    /// table with the same stored schema (or still without a table). Cheap when nothing changed — the
    /// schemas then share storage, so comparing them compares references — which lets a realm keep its
    /// bindings across the versions of ordinary commits.
    func describe(_ classes: [ObjectSchemaInfo], in store: some ReadableStore) -> Bool {
        var bound = 0
        for info in classes {
            let binding = byClass[ObjectIdentifier(info.type)]
            guard let id = store.tableID(named: info.className), let schema = store.tableSchema(id) else {
                if binding != nil { return false }
                continue
            }
            guard let binding, binding.info === info, binding.tableID == id, binding.stored == schema else {
                return false
            }
            bound += 1
        }
        return bound == byClass.count
    }
}
