/// Checks a schema before it is stored, so that every rule violation is a clear error, not a later surprise.
package enum SchemaValidation {
    /// Longest table or column name, in UTF-8 bytes (Realm's limit for property names).
    package static let maxNameBytes = 63

    /// - Throws: `.schemaMismatch` naming the first problem found.
    package static func validate(_ tables: [TableSchema]) throws(StorageError) {
        var names = Set<String>()
        for table in tables {
            try checkName(table.name, what: "A table")
            guard names.insert(table.name).inserted else {
                throw StorageError(.schemaMismatch, "The schema has two tables named '\(table.name)'.")
            }
        }
        for table in tables {
            guard table.columns.count <= RowFormat.maxColumns else {
                throw StorageError(
                    .limitExceeded,
                    "'\(table.name)' has \(table.columns.count) properties; at most \(RowFormat.maxColumns) are supported."
                )
            }
            var columnNames = Set<String>()
            var primaryKeys = 0
            for column in table.columns {
                let label = "'\(table.name).\(column.name)'"
                try checkName(column.name, what: "A property of '\(table.name)'")
                guard columnNames.insert(column.name).inserted else {
                    throw StorageError(.schemaMismatch, "'\(table.name)' has two properties named '\(column.name)'.")
                }
                if column.isPrimaryKey {
                    primaryKeys += 1
                    guard !table.isEmbedded else {
                        throw StorageError(.schemaMismatch, "\(label): embedded objects cannot have a primary key.")
                    }
                    guard column.type.collection == .single, column.type.scalar != .link,
                        [.int8, .int16, .int32, .int64, .string, .uuid, .objectId].contains(column.type.scalar)
                    else {
                        throw StorageError(
                            .schemaMismatch,
                            "\(label) cannot be a primary key: primary keys must be Int, String, UUID or ObjectId "
                                + "(or optionals of them), not \(column.type).")
                    }
                }
                if column.isIndexed && !column.isPrimaryKey {
                    guard column.type.collection == .single, IndexKey.canIndex(column.type.scalar) else {
                        throw StorageError(
                            .schemaMismatch,
                            "\(label) cannot be indexed: indexes support Int, Bool, String, UUID, ObjectId and Date "
                                + "properties, not \(column.type).")
                    }
                }
                if column.type.scalar == .link {
                    guard let target = column.linkTarget, names.contains(target) else {
                        throw StorageError(
                            .schemaMismatch,
                            "\(label) links to '\(column.linkTarget ?? "")', which is not in the schema. Add that type "
                                + "to the schema.")
                    }
                } else if column.linkTarget != nil {
                    throw StorageError(.schemaMismatch, "\(label) is not a link but names a link target.")
                }
            }
            guard primaryKeys <= 1 else {
                throw StorageError(
                    .schemaMismatch, "'\(table.name)' declares \(primaryKeys) primary keys; at most one is allowed.")
            }
        }
    }

    private static func checkName(_ name: String, what: String) throws(StorageError) {
        guard !name.isEmpty else { throw StorageError(.schemaMismatch, "\(what) has an empty name.") }
        guard name.utf8.count <= maxNameBytes else {
            throw StorageError(
                .limitExceeded,
                "\(what) is named '\(name)', which is \(name.utf8.count) bytes long; names are limited "
                    + "to \(maxNameBytes) UTF-8 bytes.")
        }
    }
}
