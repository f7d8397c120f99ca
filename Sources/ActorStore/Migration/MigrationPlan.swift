import ActorStorePersistence

/// The schema a migration gives the file, worked out from the transaction's current schema, the model
/// classes and the renames asked for.
///
/// Rows are positional and a column's bytes are read with its type, so columns never move or change
/// type: a property whose type changes gets a new column at the end (its old column is retired, and old
/// objects keep reading it), a removed property's column is retired (renamed out of the way; its bytes
/// stay until the row is rewritten), and added properties become new columns at the end, which rows
/// written before read as their type's default. Renames only rename a column. So the plan never needs a
/// row rewritten, except to convert the values of a property that became optional or required.
struct MigrationPlan {
    /// One column whose values are copied into a new column (the same values, nil-ability changed).
    struct Conversion {
        let from: Int
        let to: Int
    }

    /// Every table of the new schema.
    private(set) var tables: [TableSchema] = []
    /// Per table name, the columns to convert.
    private(set) var conversions: [String: [Conversion]] = [:]
    /// The changes that need the migration block to fill in values (a property's type changed).
    private(set) var typeChanges: [String] = []

    /// Whether two columns store their values the same way, but for nil-ability (so a rename may keep them).
    static func sameStorage(_ a: ColumnSchema, _ b: ColumnSchema) -> Bool {
        a.type.scalar == b.type.scalar && a.type.collection == b.type.collection && a.linkTarget == b.linkTarget
    }

    /// - Parameters:
    ///   - current: the transaction's schema (the stored one, or the one an earlier step of this migration set).
    ///   - classes: the model classes, by class name.
    ///   - renames: renames not yet applied, in the order asked.
    ///   - dropped: tables to remove (their data was deleted and no class keeps them).
    ///   - version: the schema version being migrated to (names retired columns uniquely).
    ///   - oldTables: the tables as stored before the migration (a rename may name a column by its old name
    ///     after an earlier step retired it).
    init(
        current: [TableSchema], classes: [String: ObjectSchemaInfo],
        renames: [(type: String, from: String, to: String)],
        dropped: Set<String>, version: UInt64, oldTables: [String: TableSchema]
    ) {
        for stored in current where !dropped.contains(stored.name) {
            var columns = stored.columns
            for rename in renames where rename.type == stored.name {
                Self.rename(&columns, rename.from, rename.to, old: oldTables[stored.name], version: version)
            }
            guard let info = classes[stored.name] else {
                tables.append(TableSchema(stored.name, columns: columns, isEmbedded: stored.isEmbedded))
                continue
            }
            let expected = info.tableSchema
            var placed = Set<String>()
            var pending: [(expected: ColumnSchema, from: Int?)] = []
            for index in columns.indices where !SchemaCheck.isRetired(columns[index].name) {
                let column = columns[index]
                guard let target = expected.columns.first(where: { $0.name == column.name }),
                    !placed.contains(column.name)
                else {
                    columns[index] = Self.retired(column, index, version)
                    continue
                }
                placed.insert(column.name)
                if target.type == column.type && target.linkTarget == column.linkTarget {
                    columns[index] = target
                } else {
                    columns[index] = Self.retired(column, index, version)
                    if Self.sameStorage(column, target) {
                        pending.append((target, index))
                    } else {
                        typeChanges.append(
                            "property '\(stored.name).\(column.name)' changed type from \(column.type) to \(target.type)"
                        )
                        pending.append((target, nil))
                    }
                }
            }
            pending += expected.columns.filter { !placed.contains($0.name) }.map { ($0, nil) }
            for (column, from) in pending {
                if let from { conversions[stored.name, default: []].append(Conversion(from: from, to: columns.count)) }
                columns.append(column)
            }
            tables.append(TableSchema(stored.name, columns: columns, isEmbedded: expected.isEmbedded))
        }
        let present = Set(current.map(\.name))
        for info in classes.values.sorted(by: { $0.className < $1.className }) where !present.contains(info.className) {
            tables.append(info.tableSchema)
        }
    }

    /// Renames the live column `from` (or the column an earlier step retired that was `from` before the
    /// migration) to `to`; a live column already named `to` (added by an earlier step) is retired.
    private static func rename(
        _ columns: inout [ColumnSchema], _ from: String, _ to: String, old: TableSchema?, version: UInt64
    ) {
        let index =
            columns.firstIndex { $0.name == from }
            ?? old?.columnIndex(named: from).flatMap { columns.indices.contains($0) ? $0 : nil }
        guard let index else { return }
        if let existing = columns.firstIndex(where: { $0.name == to }), existing != index {
            columns[existing] = retired(columns[existing], existing, version)
        }
        columns[index].name = to
    }

    /// A column no property maps to: renamed out of the way, without index or primary key.
    private static func retired(_ column: ColumnSchema, _ index: Int, _ version: UInt64) -> ColumnSchema {
        var retired = column
        if !SchemaCheck.isRetired(column.name) { retired.name = "\(SchemaCheck.retiredPrefix)\(index)_v\(version)" }
        retired.isIndexed = false
        retired.isPrimaryKey = false
        return retired
    }
}
