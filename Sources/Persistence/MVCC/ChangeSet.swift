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
        if !other.high.isEmpty { high.formUnion(other.high) }
    }
    package func contains(_ column: Int) -> Bool {
        column < 64 ? (low >> UInt64(column)) & 1 == 1 : high.contains(column)
    }
    package var isEmpty: Bool { low == 0 && high.isEmpty }

    /// Compares the common case, no column past 63, without comparing sets.
    package static func == (lhs: ColumnSet, rhs: ColumnSet) -> Bool {
        lhs.low == rhs.low && (lhs.high.isEmpty ? rhs.high.isEmpty : lhs.high == rhs.high)
    }
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
    package var modified = ModifiedObjects()

    package init() {}

    package var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && modified.isEmpty }

    mutating func recordInsert(_ key: ObjectKey) { inserted.insert(key) }

    mutating func recordModify(_ key: ObjectKey, _ columns: ColumnSet) {
        guard !inserted.contains(key), !columns.isEmpty else { return }
        modified.formUnion(key, columns)
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

/// Modified objects and the columns that changed in each: a map from key to ``ColumnSet``.
///
/// A bulk update (every object of a query, one property) modifies many keys, mostly ascending, all with the
/// same columns: those are kept as ranges of keys with one shared column set (no hashing, no entry per
/// object); any other key is kept in a dictionary. A key is in one of the two, never both. Equality compares
/// the maps, not how they are kept.
package struct ModifiedObjects: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// Keys whose columns are exactly `sharedColumns`.
    private var shared = KeyRangeSet()
    private var sharedColumns = ColumnSet()
    private var others: [ObjectKey: ColumnSet] = [:]

    package init() {}

    package init(dictionaryLiteral elements: (ObjectKey, ColumnSet)...) {
        for (key, columns) in elements { self[key] = columns }
    }

    package var count: Int { shared.count + others.count }
    package var isEmpty: Bool { shared.isEmpty && others.isEmpty }

    /// The columns that changed in `key`, or nil when it was not modified; setting nil removes it.
    package subscript(key: ObjectKey) -> ColumnSet? {
        get { shared.contains(key) ? sharedColumns : others[key] }
        set {
            removeValue(forKey: key)
            if let newValue, !newValue.isEmpty { formUnion(key, newValue) }
        }
    }

    /// Adds `columns` to the columns that changed in `key`.
    package mutating func formUnion(_ key: ObjectKey, _ columns: ColumnSet) {
        if shared.isEmpty, others.isEmpty {
            sharedColumns = columns
        }
        if shared.contains(key) {
            var union = sharedColumns
            union.formUnion(columns)
            guard union != sharedColumns else { return }
            shared.remove(key)
            others[key] = union
        } else if !others.isEmpty, others[key] != nil {  // an empty dictionary is not hashed into
            others[key]!.formUnion(columns)
        } else if columns == sharedColumns {
            shared.insert(key)
        } else if shared.isEmpty {
            sharedColumns = columns
            shared.insert(key)
        } else {
            others[key] = columns
        }
    }

    @discardableResult
    package mutating func removeValue(forKey key: ObjectKey) -> ColumnSet? {
        if !shared.isEmpty, shared.remove(key) != nil { return sharedColumns }
        // Deletes call this for every row: an empty dictionary is not hashed into.
        return others.isEmpty ? nil : others.removeValue(forKey: key)
    }

    /// Whether some modified object's columns satisfy `predicate`.
    package func containsColumns(where predicate: (ColumnSet) -> Bool) -> Bool {
        (!shared.isEmpty && predicate(sharedColumns)) || others.values.contains(where: predicate)
    }

    package func makeIterator() -> AnyIterator<(key: ObjectKey, value: ColumnSet)> {
        let columns = sharedColumns
        let keys = shared.makeIterator()
        var rest = others.makeIterator()
        return AnyIterator {
            if let key = keys.next() { return (key, columns) }
            return rest.next()
        }
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.count == rhs.count && lhs.allSatisfy { rhs[$0.key] == $0.value }
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
    /// Whether the committing task suspended while it waited for the commit's sync (it gave its thread up,
    /// and was resumed once the commit was durable), so the caller need not give its thread up again.
    package var suspended = false
}
