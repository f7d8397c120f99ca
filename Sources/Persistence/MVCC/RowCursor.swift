/// Non-generic entry points to the row index, for the object layer.
///
/// `PersistentBTree` is generic; called from another module it runs unspecialised (type metadata built at
/// run time, comparisons through protocol witnesses), which made iterating and looking up rows several
/// times slower from ActorStore than from inside the engine. These concrete wrappers are compiled — and
/// specialised — here.
package struct RowCursor {
    private var iterator: PersistentBTree<ObjectKey, RowLocation>.Iterator

    package init(_ rows: PersistentBTree<ObjectKey, RowLocation>) { iterator = rows.makeIterator() }

    /// The next row in key order, or nil at the end.
    package mutating func next() -> (key: ObjectKey, location: RowLocation)? {
        guard let (key, location) = iterator.next() else { return nil }
        return (key, location)
    }
}

extension DatabaseState {
    /// Where row `key` of `table` is, or nil if there is no such row. O(log n).
    package func rowLocation(_ table: TableID, _ key: ObjectKey) -> RowLocation? {
        tables.rowLocation(table, key)
    }

    /// The number of rows of `table` (0 if there is no such table). O(1).
    package func rowCount(_ table: TableID) -> Int { tables.rowCount(table) }

    /// The rows of `table` in key order (empty if there is no such table).
    package func rowCursor(_ table: TableID) -> RowCursor {
        RowCursor(tables[table]?.rows ?? PersistentBTree())
    }

    /// The row at rank `offset` of `table` (0-based, key order). O(log n).
    package func row(_ table: TableID, at offset: Int) -> (key: ObjectKey, location: RowLocation)? {
        tables.row(table, at: offset)
    }

    /// The rank of row `key` in `table`, or nil. O(log n).
    package func rowOffset(_ table: TableID, _ key: ObjectKey) -> Int? {
        tables.rowOffset(table, key)
    }

    /// The object whose primary key is `value`, or nil. O(log n).
    package func object(_ table: TableID, primaryKey value: Value) -> ObjectKey? {
        guard let key = IndexKey(value) else { return nil }
        return tables.object(table, primaryKey: key)?.object
    }
}
