/// The stored description of one column.
package struct ColumnSchema: Hashable, Sendable {
    package var name: String
    package var type: ColumnType
    /// For `link` columns (single or collection), the name of the target table.
    package var linkTarget: String?
    /// Maintain a secondary index for equality and `IN` lookups (single, non-link columns only).
    package var isIndexed: Bool
    /// The column is the table's primary key: unique, indexed, never changed after insert.
    package var isPrimaryKey: Bool

    package init(
        _ name: String, _ type: ColumnType, linkTarget: String? = nil, indexed: Bool = false, primaryKey: Bool = false
    ) {
        self.name = name
        self.type = type
        self.linkTarget = linkTarget
        self.isIndexed = indexed || primaryKey
        self.isPrimaryKey = primaryKey
    }
}

/// The stored description of one table: its name and its columns in storage order.
package struct TableSchema: Hashable, Sendable {
    package var name: String
    package var columns: [ColumnSchema]
    /// Rows of an embedded table are owned by one parent row and have no primary key.
    package var isEmbedded: Bool

    package init(_ name: String, columns: [ColumnSchema], isEmbedded: Bool = false) {
        self.name = name
        self.columns = columns
        self.isEmbedded = isEmbedded
    }

    package func columnIndex(named name: String) -> Int? { columns.firstIndex { $0.name == name } }
    package var primaryKeyColumn: Int? { columns.firstIndex { $0.isPrimaryKey } }
}
