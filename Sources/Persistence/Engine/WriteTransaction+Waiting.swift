/// What a write transaction keeps waiting before it applies it (see ``WriteTransaction/deferred``,
/// ``WriteTransaction/deferredInserts``) or records it in its change set (``WriteTransaction/pendingModified``,
/// ``WriteTransaction/pendingInserted``).
extension WriteTransaction {
    /// Rows recorded modified but not yet in ``changes``, in the order written: all of one table, each
    /// modified in exactly the same columns. One stored property, so that adding a row costs one access
    /// of the transaction's fields.
    struct PendingModifications {
        var keys: [ObjectKey] = []
        var table = TableID(rawValue: 0)
        var columns = ColumnSet()

        /// Adds row `key` of `table`, modified in `columns`, unless other rows wait with another table or
        /// other columns: then returns false, adding nothing.
        mutating func add(_ table: TableID, _ key: ObjectKey, _ columns: ColumnSet) -> Bool {
            if keys.isEmpty {
                self.table = table
                self.columns = columns
            } else if table != self.table || columns != self.columns {
                return false
            }
            keys.append(key)
            return true
        }
    }

    /// Rows deleted but not yet recorded in ``changes`` (see ``pendingDeleted``): keys of `table`, in the
    /// order deleted.
    struct PendingDeletes {
        var keys: [ObjectKey] = []
        var table = TableID(rawValue: 0)
    }

    /// Rows inserted but not yet recorded in ``changes`` (see ``pendingInserted``): `count` consecutive keys
    /// of `table` from `first`.
    struct PendingInserts {
        var table = TableID(rawValue: 0)
        var first = ObjectKey(0)
        var count = 0

        /// Adds row `key` of `table` if it continues the waiting keys (or none wait); otherwise returns false,
        /// adding nothing.
        mutating func add(_ table: TableID, _ key: ObjectKey) -> Bool {
            if count == 0 {
                self.table = table
                first = key
            } else if table != self.table || key.rawValue != first.rawValue &+ Int64(count) {
                return false
            }
            count &+= 1
            return true
        }
    }

    /// Inserts appended to the record but not applied to the trees yet (see ``deferredInserts``): rows of
    /// `table` with new keys, ascending, in the order written, and (when the table has a primary key) their
    /// primary keys, strictly ascending, all integers or none, the first above every key of the table's
    /// primary index (so none of them is taken).
    struct DeferredInserts {
        var table = TableID(rawValue: 0)
        var rows: [(key: ObjectKey, value: RowLocation)] = []
        /// The primary keys of `rows`, when they are integers (kept apart: an `IndexKey` holding a string
        /// is copied and destroyed with reference counting).
        var integerKeys: [Int64] = []
        /// The primary keys of `rows`, when they are not integers.
        var otherKeys: [IndexKey] = []

        /// Whether a row with primary key `key` may join the waiting rows (some wait, of its table): `key` is
        /// above the last waiting one, in the same tree of the primary index.
        func follows(_ key: IndexKey) -> Bool {
            if case .int(let value) = key { return integerKeys.last.map { $0 < value } ?? false }
            return otherKeys.last.map { $0 < key } ?? false
        }

        mutating func add(_ table: TableID, _ key: ObjectKey, at location: RowLocation, primaryKey: IndexKey?) {
            self.table = table
            rows.append((key, location))
            if case .int(let value) = primaryKey {
                integerKeys.append(value)
            } else if let primaryKey {
                otherKeys.append(primaryKey)
            }
        }

        /// Empties it, keeping the arrays' storage for the next inserts.
        mutating func removeAll() {
            rows.removeAll(keepingCapacity: true)
            integerKeys.removeAll(keepingCapacity: true)
            otherKeys.removeAll(keepingCapacity: true)
        }
    }

    /// Updates appended to the record but not applied to the trees yet (see ``deferred``): all of one
    /// table, in the order written, with every column some of them changed.
    struct DeferredRows {
        var rows: [(key: ObjectKey, value: RowLocation)] = []
        var table = TableID(rawValue: 0)
        var changed = ColumnSet()

        /// Adds an update of row `key` of `table` and returns how many wait now; or returns nil, adding
        /// nothing, when updates of another table wait.
        mutating func add(_ table: TableID, _ key: ObjectKey, at location: RowLocation, changed: ColumnSet) -> Int? {
            if rows.isEmpty {
                self.table = table
            } else if table != self.table {
                return nil
            }
            rows.append((key, location))
            self.changed.formUnion(changed)
            return rows.count
        }
    }
}
