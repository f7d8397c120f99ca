import ActorStorePersistence

/// How an insert writes an object's row straight from its property slots into the record (see
/// `DirectRow`), without a `[Value]` row or checking each value against its column.
///
/// Made for a table when every column is a stored property of a single value that is neither a link nor
/// mixed, whose kind is exactly the column's type: such a value encodes without a session, to a value the
/// column accepts as it is (`_Persistable._rlmWriteDirect`). The only per-row check left is the size of
/// strings and data (an oversized one sends the object the usual way, which reports it). Tables with links
/// (whose targets may have to be added first) and objects added with an update policy go the usual way.
final class DirectInsertPlan: Sendable {
    /// The slot ordinal of each column, in column order.
    let ordinals: [Int]
    /// The ordinals of the slots whose size varies (strings, data, optionals): measured per row.
    let measured: [Int]
    /// The data length of the other columns, the same for every row.
    let fixedLength: Int

    /// The plan for `info`'s table with these columns, or nil if a column cannot be written directly.
    init?(info: ObjectSchemaInfo, plans: [ColumnPlan], types: [ColumnType]) {
        guard !info.hasLinks, types.count <= RowFormat.maxColumns else { return nil }
        var ordinals = [Int](repeating: -1, count: types.count)
        for plan in plans {
            guard ordinals[plan.column] == -1 else { return nil }
            ordinals[plan.column] = plan.ordinal
        }
        var measured: [Int] = []
        var fixedLength = 0
        for (column, ordinal) in ordinals.enumerated() {
            guard ordinal >= 0 else { return nil }  // a column no property writes (retired by a migration)
            let kind = info.properties[ordinal].kind
            guard kind.collection == .single, kind.problem == nil, kind.scalar != .link, kind.scalar != .mixed,
                !kind.isLinkingObjects, kind.columnType == types[column]
            else { return nil }
            if let width = kind.scalar.fixedWidth, !kind.isOptional {
                fixedLength += width
            } else {
                measured.append(ordinal)
            }
        }
        self.ordinals = ordinals
        self.measured = measured
        self.fixedLength = fixedLength
    }
}

/// An unmanaged object's row, written from its slots by the types of its properties.
private struct SlotRow: DirectRow {
    let slots: UnsafeMutableBufferPointer<any _Persistable>
    let plan: DirectInsertPlan
    let types: [ColumnType]
    let dataLength: Int

    func value(ofColumn column: Int) -> Value {
        slots[plan.ordinals[column]]._rlmEncode(_Encoder(session: nil)).raw
    }

    func write(_ writer: inout RowColumnWriter) {
        var columns = _ColumnWriter(raw: writer)
        let slots = slots.baseAddress.unsafelyUnwrapped  // the binding checked the ordinals against the slots
        for ordinal in plan.ordinals {
            // Moved out and back: a method called on the slot in place copied the value first (the compiler
            // cannot tell that writing the row leaves the slots alone).
            let value = (slots + ordinal).move()
            value._rlmWriteDirect(&columns)
            (slots + ordinal).initialize(to: value)
        }
        writer = columns.raw
    }
}

extension WriteSession {
    /// Inserts the object whose property values are `slots` by `plan` (see ``DirectInsertPlan``); `context` is
    /// the session's (read once by the caller: each read of the unowned reference retains it). Returns its
    /// key; `.some(nil)` if it failed (the failure recorded); nil, having changed nothing, if it must go the
    /// usual way: a string or data value over the size limit, or a table whose columns changed since it was
    /// bound.
    func insertDirect(
        _ context: RealmContext, _ binding: TableBinding, _ plan: DirectInsertPlan,
        _ slots: UnsafeMutableBufferPointer<any _Persistable>
    ) -> ObjectKey?? {
        var length = plan.fixedLength
        let values = slots.baseAddress.unsafelyUnwrapped  // the binding checked the ordinals against the slots
        for ordinal in plan.measured {
            let measured = values[ordinal]._rlmDirectLength()
            guard measured <= RowFormat.maxStringBytes else { return nil }
            length += measured
        }
        let row = SlotRow(slots: slots, plan: plan, types: binding.types, dataLength: length)
        defer { context.invalidateLocations() }
        do throws(StorageError) {
            guard let key = try transaction.insert(binding.tableID, direct: row) else { return nil }
            return .some(key)
        } catch {
            insertFailed(binding, error) {
                binding.info.primaryKey.map { row.value(ofColumn: binding.columns[$0.ordinal]) } ?? .null
            }
            return .some(nil)
        }
    }
}
