import ActorStorePersistence

// Inserts write the values of an unmanaged object straight into the row, column by column, when every
// property's type can (see `DirectInsertPlan`): no value array is built, and nothing is checked per row
// that the binding checked once (each property's type stores exactly its column's type).

/// Writes the columns of a row being inserted, opaque outside ActorStore.
public struct _ColumnWriter {
    var raw: RowColumnWriter
}

extension _Persistable {
    // Through the stored value: what `DirectInsertPlan` admits (ActorStore's own single-value types)
    // encodes without a session, to a value of exactly its column's type.
    public func _rlmDirectLength() -> Int {
        RowEncoder.columnSize(_rlmEncode(_Encoder(session: nil)).raw, type: Self._rlmKind.columnType)
    }
    public func _rlmWriteDirect(_ writer: inout _ColumnWriter) {
        writer.raw.write(_rlmEncode(_Encoder(session: nil)).raw)
    }
}

// The types of most properties write themselves without a `Value` in between. (Fixed-width values are never
// measured: their length is the plan's.)

extension _PersistableInteger {
    public func _rlmWriteDirect(_ writer: inout _ColumnWriter) { writer.raw.writeInteger(Int64(self)) }
}

extension Bool {
    public func _rlmWriteDirect(_ writer: inout _ColumnWriter) { writer.raw.writeBool(self) }
}

extension Double {
    public func _rlmWriteDirect(_ writer: inout _ColumnWriter) { writer.raw.writeDouble(self) }
}

extension String {
    public func _rlmDirectLength() -> Int { utf8.count }
    public func _rlmWriteDirect(_ writer: inout _ColumnWriter) { writer.raw.writeString(self) }
}
