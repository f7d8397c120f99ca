/// Re-encoding a stored row with some of its columns replaced, copying the others' bytes as they are: what
/// an update writes, without decoding and re-encoding the columns it does not change.
extension RowEncoder {
    /// A column to replace and its new, validated value.
    package typealias Patch = (column: Int, value: Value)

    /// The length of the `data` section of `old` with `patches` applied and every column of `types` present
    /// (a column the old row does not store gets its type's default value, as a full decode and re-encode
    /// would give it), or nil if `old` stores more columns than `types` has.
    ///
    /// - Parameters:
    ///   - old: The stored row.
    ///   - patches: Distinct columns (each below `types.count`) and their validated values.
    ///   - types: The column types, in storage order.
    package static func patchedDataSize(_ old: RowView, _ patches: [Patch], types: [ColumnType]) -> Int? {
        guard old.columnCount <= types.count else { return nil }
        var size = old.dataLength
        for i in old.columnCount..<types.count where !patches.contains(where: { $0.column == i }) {
            size += columnSize(types[i].defaultValue, type: types[i])
        }
        for patch in patches {
            size += columnSize(patch.value, type: types[patch.column])
            if let bytes = old.columnBytes(patch.column) { size -= bytes.count }
        }
        return size
    }

    /// Appends `old` with `patches` applied to `buffer` and returns the row's length. `dataLength` is what
    /// ``patchedDataSize(_:_:types:)`` returned (checked against the row-size limit by the caller). The
    /// bytes `old` views must stay where they are while this appends: if they are in `buffer`, reserve the
    /// room first (``RecordBuffer/reserveCapacity(forAppending:)``) and take the view after.
    package static func encode(
        patching old: RowView, with patches: [Patch], types: [ColumnType], dataLength: Int,
        into buffer: RecordBuffer
    ) -> Int {
        let columnCount = types.count
        let width = RowFormat.offsetWidth(forDataLength: dataLength)
        if let length = encodeInPlace(patching: old, with: patches, types: types, width: width, into: buffer) {
            return length
        }
        let headerSize = RowFormat.headerSize(columnCount: columnCount, offsetWidth: width)
        buffer.append(count: headerSize + dataLength) { row in
            row.storeBytes(of: UInt16(columnCount).littleEndian, as: UInt16.self)
            row.storeBytes(of: UInt8(width), toByteOffset: 2, as: UInt8.self)
            let ends = row + RowFormat.fixedHeaderSize
            var writer = RowByteWriter(base: row + headerSize, limit: dataLength)
            for i in 0..<columnCount {
                if let patch = patches.first(where: { $0.column == i }) {
                    writeColumn(patch.value, type: types[i], into: &writer)
                } else if let bytes = old.columnBytes(i) {
                    writer.bytes(bytes)
                } else {
                    writeColumn(types[i].defaultValue, type: types[i], into: &writer)
                }
                storeEnd(writer.offset, of: i, in: ends, width: width)
            }
            precondition(writer.offset == dataLength, "RowEncoder.encode(patching:): the data length is not the sum")
        }
        return headerSize + dataLength
    }

    /// The common case of ``encode(patching:with:types:dataLength:into:)``: `old` stores every column, with
    /// end offsets `width` bytes wide, and each patch takes as many bytes as the value it replaces (a number
    /// replacing a number). Then no offset moves: the row is `old` copied as a whole, with the patched
    /// columns written over their bytes. Returns the row's length, or nil, appending nothing, in any other
    /// case.
    @inline(__always)
    static func encodeInPlace(
        patching old: RowView, with patches: [Patch], types: [ColumnType], width: Int, into buffer: RecordBuffer
    ) -> Int? {
        guard old.columnCount == types.count, old.endOffsetWidth == width else { return nil }
        for patch in patches {
            guard let bytes = old.columnBytes(patch.column),
                columnSize(patch.value, type: types[patch.column]) == bytes.count
            else { return nil }
        }
        let source = old.encodedBytes
        let base = source.baseAddress.unsafelyUnwrapped
        buffer.append(count: source.count) { row in
            row.copyMemory(from: base, byteCount: source.count)
            for patch in patches {
                // Checked above: the row stores the column, and the value takes its bytes exactly.
                let bytes = old.columnBytes(patch.column).unsafelyUnwrapped
                var writer = RowByteWriter(
                    base: row + base.distance(to: bytes.baseAddress.unsafelyUnwrapped), limit: bytes.count)
                writeColumn(patch.value, type: types[patch.column], into: &writer)
                precondition(writer.offset == bytes.count, "RowEncoder.encode(patching:): the column size changed")
            }
        }
        return source.count
    }
}
