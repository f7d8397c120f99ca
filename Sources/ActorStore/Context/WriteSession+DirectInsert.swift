import ActorStorePersistence
import Foundation

/// How an insert writes an object's row straight from its property slots into the record (see
/// `DirectRow`), without a `[Value]` row or checking each value against its column.
///
/// Made for a table when every column is a stored property whose type is one of ActorStore's own single
/// values (a number, `Bool`, `String`, `Data`, `Date`, `UUID`, ``ObjectId``, ``Decimal128``, or an optional
/// of one) and whose kind is exactly the column's type: such a value encodes without a session, to a value
/// the column accepts as it is (`_Persistable._rlmWriteDirect`), and its write runs no code of the app's, so
/// it is measured and written the same (a `PersistableEnum`'s `rawValue` getter is the app's code: tables
/// with one go the usual way, which reads each value once). The only per-row check left is the size of
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
            guard libraryValueTypes.contains(ObjectIdentifier(kind.swiftType)), kind.collection == .single,
                kind.problem == nil, kind.columnType == types[column]
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

/// ActorStore's own single-value property types and their optionals (see ``DirectInsertPlan``).
private let libraryValueTypes: Set<ObjectIdentifier> = {
    func withOptional<T>(_: T.Type) -> [ObjectIdentifier] { [ObjectIdentifier(T.self), ObjectIdentifier(T?.self)] }
    return Set(
        [
            withOptional(Bool.self), withOptional(Int.self), withOptional(Int8.self), withOptional(Int16.self),
            withOptional(Int32.self), withOptional(Int64.self), withOptional(Float.self), withOptional(Double.self),
            withOptional(String.self), withOptional(Data.self), withOptional(Date.self), withOptional(UUID.self),
            withOptional(ObjectId.self), withOptional(Decimal128.self),
        ].joined())
}()

/// What ``WriteSession/insertDirect(_:_:_:_:)`` did.
enum DirectInsert {
    /// The row was inserted with this key.
    case inserted(ObjectKey)
    /// The insert failed; the failure is recorded in the session.
    case failed
    /// Nothing was done: the object must be inserted the usual way.
    case declined
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
        // The slots' count is the class's (checked by the caller), and the plan's ordinals are the class's.
        let slots = slots.baseAddress.unsafelyUnwrapped
        for ordinal in plan.ordinals {
            // Moved out and back: a method called on the slot in place copies the value first (the compiler
            // cannot tell that writing the row leaves the slots alone). Safe: the write is ActorStore's code
            // alone (see `DirectInsertPlan`), which never reads the object.
            let slot = slots + ordinal
            let value = slot.move()
            value._rlmWriteDirect(&columns)
            slot.initialize(to: value)
        }
        writer = columns.raw
    }
}

extension WriteSession {
    /// Inserts the object whose property values are `slots` by `plan` (see ``DirectInsertPlan``); `context` is
    /// the session's (read once by the caller: each read of the unowned reference retains it). Declines,
    /// changing nothing, for a string or data value over the size limit, or a table whose column types are no
    /// longer the binding's: the usual way then reports or handles them.
    func insertDirect(
        _ context: RealmContext, _ binding: TableBinding, _ plan: DirectInsertPlan,
        _ slots: UnsafeMutableBufferPointer<any _Persistable>
    ) -> DirectInsert {
        var length = plan.fixedLength
        // The slots' count is the class's (checked by the caller), and the plan's ordinals are the class's.
        let values = slots.baseAddress.unsafelyUnwrapped
        for ordinal in plan.measured {
            let measured = values[ordinal]._rlmDirectLength()
            guard measured <= RowFormat.maxStringBytes else { return .declined }
            length += measured
        }
        let row = SlotRow(slots: slots, plan: plan, types: binding.types, dataLength: length)
        defer { context.invalidateLocations() }
        do throws(StorageError) {
            guard let key = try transaction.insert(binding.tableID, direct: row) else { return .declined }
            return .inserted(key)
        } catch {
            insertFailed(binding, error) {
                binding.info.primaryKey.map { row.value(ofColumn: binding.columns[$0.ordinal]) } ?? .null
            }
            return .failed
        }
    }
}
