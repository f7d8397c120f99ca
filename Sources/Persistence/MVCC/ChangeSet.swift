/// A set of column numbers, compact for the common case of fewer than 64 columns.
package struct ColumnSet: Hashable, Sendable, Sequence {
    private var low: UInt64 = 0
    private var high: Set<Int> = []

    package init() {}
    package init<S: Sequence>(_ columns: S) where S.Element == Int {
        for c in columns { insert(c) }
    }

    package mutating func insert(_ column: Int) {
        if column < 64 { low |= 1 << UInt64(column) } else { high.insert(column) }
    }
    package mutating func formUnion(_ other: ColumnSet) {
        low |= other.low
        high.formUnion(other.high)
    }
    package func contains(_ column: Int) -> Bool {
        column < 64 ? (low >> UInt64(column)) & 1 == 1 : high.contains(column)
    }
    package var isEmpty: Bool { low == 0 && high.isEmpty }
    /// Whether the two sets share a column.
    package func intersects(_ other: ColumnSet) -> Bool {
        (low & other.low) != 0 || !high.isDisjoint(with: other.high)
    }

    package func makeIterator() -> IndexingIterator<[Int]> {
        ((0..<64).filter { (low >> UInt64($0)) & 1 == 1 } + high.sorted()).makeIterator()
    }
}

/// What one commit changed in one table.
///
/// Net effect of the transaction: an object inserted and deleted in the same commit appears nowhere; an
/// object inserted and then modified is only inserted; a modified then deleted object is only deleted.
package struct TableChanges: Sendable, Equatable {
    package var inserted = KeyRangeSet()
    package var deleted = KeyRangeSet()
    /// Modified objects (that existed before the commit and still exist) with the columns that changed.
    package var modified: [ObjectKey: ColumnSet] = [:]

    package init() {}

    package var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && modified.isEmpty }

    mutating func recordInsert(_ key: ObjectKey) { inserted.insert(key) }

    mutating func recordModify(_ key: ObjectKey, _ columns: ColumnSet) {
        guard !inserted.contains(key), !columns.isEmpty else { return }
        modified[key, default: ColumnSet()].formUnion(columns)
    }

    mutating func recordDelete(_ key: ObjectKey) {
        if inserted.remove(key) == nil { deleted.insert(key) }
        modified.removeValue(forKey: key)
    }

    /// Adds the net effect of a later commit, so that `self` becomes the net effect of both. Keys are never
    /// reused, so a key the later commit inserts is new to both.
    package mutating func merge(_ later: TableChanges) {
        if isEmpty {
            self = later
            return
        }
        for key in later.inserted { inserted.insert(key) }
        for (key, columns) in later.modified { recordModify(key, columns) }
        for key in later.deleted { recordDelete(key) }
    }
}

/// What one commit changed, by table. Empty tables are omitted.
package struct ChangeSet: Sendable, Equatable {
    package var tables: [TableID: TableChanges] = [:]
    /// Whether the commit changed the schema.
    package var schemaChanged = false

    package init() {}

    package var isEmpty: Bool { tables.values.allSatisfy(\.isEmpty) && !schemaChanged }

    /// Adds the net effect of a later commit (see ``TableChanges/merge(_:)``).
    package mutating func merge(_ later: ChangeSet) {
        schemaChanged = schemaChanged || later.schemaChanged
        for (table, changes) in later.tables where !changes.isEmpty {
            tables[table, default: TableChanges()].merge(changes)
        }
    }
}

/// The result of a successful commit.
package struct CommitResult: Sendable {
    /// The version the commit created (durable per the engine's durability when this is returned).
    package var version: Version
    package var changes: ChangeSet
}
