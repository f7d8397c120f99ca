import Foundation

/// A row that its owner writes column by column straight into a record, instead of handing over one
/// ``Value`` per column: the object layer writes an unmanaged object's property values this way when it
/// adds the object (see ``WriteTransaction/insert(_:direct:)``). No value array is built, and no value is
/// checked against its column: the owner guarantees that each value fits its column's type.
package protocol DirectRow {
    /// The column types the row's values were made for, in column order. The insert compares them with the
    /// table's, and declines a row made for other columns.
    var types: [ColumnType] { get }
    /// The length of the row's data section: the sum of ``RowEncoder/columnSize(_:type:)`` over its values.
    var dataLength: Int { get }
    /// The value of column `column` (read for the primary key).
    func value(ofColumn column: Int) -> Value
    /// Writes every column, in column order, through `writer`.
    func write(_ writer: inout RowColumnWriter)
}

/// Writes the columns of one row in order, each as ``RowEncoder`` writes a ``Value`` of its column's type,
/// recording where each ends. Made by ``RowEncoder/encode(_:into:)``; every write checks that it stays
/// within the row's measured data length.
package struct RowColumnWriter {
    private var bytes: RowByteWriter
    /// The row header's table of column ends.
    private let ends: UnsafeMutableRawPointer
    /// The width of an entry of `ends`.
    private let width: Int
    private let types: [ColumnType]
    /// The column written next.
    private(set) var column = 0

    fileprivate init(bytes: RowByteWriter, ends: UnsafeMutableRawPointer, width: Int, types: [ColumnType]) {
        self.bytes = bytes
        self.ends = ends
        self.width = width
        self.types = types
    }

    /// Writes the next column's value. It must fit the column's type (as ``RowEncoder/encode(_:types:into:)``
    /// requires).
    @inline(__always) package mutating func write(_ value: Value) {
        RowEncoder.writeColumn(value, type: types[column], into: &bytes)
        endColumn()
    }

    /// Writes the next column, a non-optional `bool`.
    @inline(__always) package mutating func writeBool(_ value: Bool) {
        check(.bool)
        bytes.u8(value ? 1 : 0)
        endColumn()
    }

    /// Writes the next column, a non-optional `int8`, `int16`, `int32` or `int64`, from a value in its range.
    @inline(__always) package mutating func writeInteger(_ value: Int64) {
        let type = types[column]
        precondition(
            !type.isOptional && type.collection == .single, "RowColumnWriter: an integer for a \(type) column")
        switch type.scalar {
        case .int8:
            precondition(Int64(Int8.min)...Int64(Int8.max) ~= value, "RowColumnWriter: \(value) out of int8 range")
            bytes.u8(UInt8(truncatingIfNeeded: value))
        case .int16:
            precondition(Int64(Int16.min)...Int64(Int16.max) ~= value, "RowColumnWriter: \(value) out of int16 range")
            bytes.u16(UInt16(truncatingIfNeeded: value))
        case .int32:
            precondition(Int64(Int32.min)...Int64(Int32.max) ~= value, "RowColumnWriter: \(value) out of int32 range")
            bytes.u32(UInt32(truncatingIfNeeded: value))
        case .int64:
            bytes.u64(UInt64(bitPattern: value))
        default:
            preconditionFailure("RowColumnWriter: an integer for a \(type) column")
        }
        endColumn()
    }

    /// Writes the next column, a non-optional `double`.
    @inline(__always) package mutating func writeDouble(_ value: Double) {
        check(.double)
        bytes.u64(value.bitPattern)
        endColumn()
    }

    /// Writes the next column, a non-optional `string`.
    @inline(__always) package mutating func writeString(_ value: String) {
        check(.string)
        bytes.string(value)
        endColumn()
    }

    /// Stops on a typed write to a column of another type (the row's owner matched its values to the
    /// columns: a mismatch is a programming error, never a value to store).
    @inline(__always) private func check(_ scalar: ScalarType) {
        let type = types[column]
        precondition(
            type.scalar == scalar && !type.isOptional && type.collection == .single,
            "RowColumnWriter: a \(scalar) value for a \(type) column")
    }

    @inline(__always) private mutating func endColumn() {
        RowEncoder.storeEnd(bytes.offset, of: column, in: ends, width: width)
        column &+= 1
    }

    /// The number of data bytes written.
    fileprivate var offset: Int { bytes.offset }
}

extension RowEncoder {
    /// Appends the encoding of `row` to a record being built, written in place by the row's owner, and
    /// returns its length. The bytes are those ``encode(_:types:into:)-(_,_,RecordBuffer)`` writes for the
    /// row's values; the process stops if the columns written are not the row's columns, or do not add up to
    /// its ``DirectRow/dataLength`` (checked against the size limits with ``checkRowSize(dataSize:columnCount:)``
    /// first).
    package static func encode(_ row: some DirectRow, into buffer: RecordBuffer) -> Int {
        let types = row.types
        let dataLength = row.dataLength
        precondition(types.count <= RowFormat.maxColumns, "RowEncoder.encode: \(types.count) columns is over the limit")
        precondition(dataLength <= RowFormat.maxDataBytes, "RowEncoder.encode: row data of \(dataLength) bytes")
        let width = RowFormat.offsetWidth(forDataLength: dataLength)
        let headerSize = RowFormat.headerSize(columnCount: types.count, offsetWidth: width)
        buffer.append(count: headerSize + dataLength) { at in
            at.storeBytes(of: UInt16(types.count).littleEndian, as: UInt16.self)
            at.storeBytes(of: UInt8(width), toByteOffset: 2, as: UInt8.self)
            var writer = RowColumnWriter(
                bytes: RowByteWriter(base: at + headerSize, limit: dataLength), ends: at + RowFormat.fixedHeaderSize,
                width: width, types: types)
            row.write(&writer)
            precondition(
                writer.column == types.count && writer.offset == dataLength,
                "RowEncoder.encode: the row wrote \(writer.column) of \(types.count) columns, \(writer.offset) of "
                    + "\(dataLength) bytes")
        }
        return headerSize + dataLength
    }
}
