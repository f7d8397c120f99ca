import Foundation

/// Turns validated column values into the bytes of one row (see ``RowFormat`` for the layout).
///
/// Encoding makes two passes over the values: the first adds up the column sizes (so the offset width
/// and the total length are known), the second writes the header and the columns straight into the
/// caller's buffer. Nothing is allocated besides growing that buffer.
package enum RowEncoder {
    /// Appends the encoding of a row to `buffer`.
    ///
    /// The values must have been checked with ``validate(_:for:column:)`` (or ``validateRow(_:columns:)``):
    /// a value that does not match its column's type, or a row whose data exceeds ``RowFormat/maxDataBytes``
    /// (``validateRow(_:columns:)`` checks the total), is a programming error and stops the process rather
    /// than writing bytes that would not read back.
    ///
    /// - Parameters:
    ///   - values: One validated value per column, in storage order (`values.count == types.count`,
    ///     at most ``RowFormat/maxColumns``).
    ///   - types: The column types, in storage order.
    ///   - buffer: The bytes to append to.
    package static func encode(_ values: [Value], types: [ColumnType], into buffer: inout [UInt8]) {
        let layout = Layout(values, types)
        let start = buffer.count
        appendZeros(layout.encodedLength, to: &buffer)
        buffer.withUnsafeMutableBytes { raw in
            write(values, types, layout, at: raw.baseAddress.unsafelyUnwrapped + start)
        }
    }

    /// Appends the encoding of a row to a record being built, written in place (no intermediate array),
    /// and returns its length. Requirements as ``encode(_:types:into:)``.
    package static func encode(_ values: [Value], types: [ColumnType], into buffer: RecordBuffer) -> Int {
        let layout = Layout(values, types)
        buffer.append(count: layout.encodedLength) { row in write(values, types, layout, at: row) }
        return layout.encodedLength
    }

    /// Appends the encoding of a row whose data length is already known to a record being built, and returns
    /// its length: ``encode(_:types:into:)-(_,_,RecordBuffer)`` without the pass that adds up the column
    /// sizes. `dataLength` is what ``validateRowMeasuring(_:columns:)`` returned for these values (checked
    /// against the row-size limits there); the encoding stops the process if the columns do not add up to it.
    package static func encode(
        _ values: [Value], types: [ColumnType], dataLength: Int, into buffer: RecordBuffer
    ) -> Int {
        let layout = Layout(values.count, types.count, dataLength: dataLength)
        buffer.append(count: layout.encodedLength) { row in write(values, types, layout, at: row) }
        return layout.encodedLength
    }

    /// The sizes of a row's encoding: the first of the two passes.
    private struct Layout {
        let dataLength: Int
        let offsetWidth: Int
        let headerSize: Int
        var encodedLength: Int { headerSize + dataLength }

        @inline(__always)
        init(_ values: [Value], _ types: [ColumnType]) {
            let columnCount = values.count
            precondition(
                columnCount == types.count, "RowEncoder.encode: \(columnCount) values for \(types.count) columns")
            precondition(
                columnCount <= RowFormat.maxColumns, "RowEncoder.encode: \(columnCount) columns is over the limit")
            var dataLength = 0
            for i in 0..<columnCount {
                dataLength += columnSize(values[i], type: types[i])
            }
            self.init(columnCount, types.count, dataLength: dataLength)
        }

        /// The layout of a row of `columnCount` values whose data takes `dataLength` bytes (known from
        /// validation: the second pass checks that the columns add up to it).
        @inline(__always)
        init(_ columnCount: Int, _ typeCount: Int, dataLength: Int) {
            precondition(
                columnCount == typeCount, "RowEncoder.encode: \(columnCount) values for \(typeCount) columns")
            precondition(
                columnCount <= RowFormat.maxColumns, "RowEncoder.encode: \(columnCount) columns is over the limit")
            precondition(dataLength <= RowFormat.maxDataBytes, "RowEncoder.encode: row data of \(dataLength) bytes")
            self.dataLength = dataLength
            offsetWidth = RowFormat.offsetWidth(forDataLength: dataLength)
            headerSize = RowFormat.headerSize(columnCount: columnCount, offsetWidth: offsetWidth)
        }
    }

    /// The second pass: writes every one of the `layout.encodedLength` bytes at `row` (the data through a
    /// sequential writer whose final offset is checked to be the data length, so none is left unwritten).
    @inline(__always)
    private static func write(
        _ values: [Value], _ types: [ColumnType], _ layout: Layout, at row: UnsafeMutableRawPointer
    ) {
        let columnCount = values.count
        let width = layout.offsetWidth
        row.storeBytes(of: UInt16(columnCount).littleEndian, as: UInt16.self)
        row.storeBytes(of: UInt8(width), toByteOffset: 2, as: UInt8.self)
        let ends = row + RowFormat.fixedHeaderSize
        var writer = RowByteWriter(base: row + layout.headerSize, limit: layout.dataLength)
        for i in 0..<columnCount {
            writeColumn(values[i], type: types[i], into: &writer)
            storeEnd(writer.offset, of: i, in: ends, width: width)
        }
        precondition(writer.offset == layout.dataLength, "RowEncoder.encode: column sizes changed while encoding")
    }

    /// Writes the end offset of column `i` into a row header's table of ends.
    @inline(__always)
    static func storeEnd(_ end: Int, of i: Int, in ends: UnsafeMutableRawPointer, width: Int) {
        switch width {
        case 1: ends.storeBytes(of: UInt8(truncatingIfNeeded: end), toByteOffset: i, as: UInt8.self)
        case 2:
            ends.storeBytes(of: UInt16(truncatingIfNeeded: end).littleEndian, toByteOffset: 2 * i, as: UInt16.self)
        default:
            ends.storeBytes(of: UInt32(truncatingIfNeeded: end).littleEndian, toByteOffset: 4 * i, as: UInt32.self)
        }
    }

    /// A block of zeros to grow output buffers from.
    private static let zeros = [UInt8](repeating: 0, count: 4096)

    /// Appends `count` zero bytes to `buffer` (the space a row is then written into).
    ///
    /// Copying from a block of zeros is a `memcpy` even in debug builds, where appending
    /// `repeatElement(0, count:)` goes element by element through unspecialized generics.
    private static func appendZeros(_ count: Int, to buffer: inout [UInt8]) {
        var remaining = count
        if buffer.capacity - buffer.count < remaining {
            buffer.reserveCapacity(Swift.max(buffer.count + remaining, 2 * buffer.capacity))
        }
        zeros.withUnsafeBufferPointer { zeros in
            while remaining > 0 {
                let chunk = Swift.min(remaining, zeros.count)
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: zeros[0..<chunk]))
                remaining -= chunk
            }
        }
    }

    /// The number of bytes ``encode(_:types:into:)`` appends for these values.
    ///
    /// - Parameters:
    ///   - values: One validated value per column.
    ///   - types: The column types.
    /// - Returns: Header plus data length.
    package static func encodedSize(_ values: [Value], types: [ColumnType]) -> Int {
        precondition(
            values.count == types.count, "RowEncoder.encodedSize: \(values.count) values for \(types.count) columns")
        let data = dataSize(values, types: types)
        return RowFormat.headerSize(columnCount: values.count, offsetWidth: RowFormat.offsetWidth(forDataLength: data))
            + data
    }

    /// The length of the `data` section of a row holding these values.
    ///
    /// - Parameters:
    ///   - values: One validated value per column.
    ///   - types: The column types.
    /// - Returns: The sum of the column sizes.
    package static func dataSize(_ values: [Value], types: [ColumnType]) -> Int {
        var total = 0
        for i in 0..<min(values.count, types.count) {
            total += columnSize(values[i], type: types[i])
        }
        return total
    }

    /// The encoded size of one column value.
    ///
    /// - Parameters:
    ///   - value: A value valid for `type`.
    ///   - type: The column's type.
    /// - Returns: The number of bytes the column occupies in the data section.
    @inline(__always)
    package static func columnSize(_ value: Value, type: ColumnType) -> Int {
        switch type.collection {
        case .single:
            if case .null = value { return 0 }
            if type.scalar == .mixed { return mixedSize(value) }
            if let width = type.scalar.fixedWidth { return width }
            return variableLength(value) + (type.isOptional ? 1 : 0)
        case .list, .set:
            switch value {
            case .list(let elements), .set(let elements):
                return 4 + elementsSize(elements, type: type)
            default:
                mismatch(value, type)
            }
        case .map:
            guard case .map(let entries) = value else { mismatch(value, type) }
            var size = 4
            for entry in entries {
                size += 4 + entry.key.utf8.count + elementSize(entry.value, type: type)
            }
            return size
        }
    }

    /// The total size of the elements of a list or set (without the count).
    private static func elementsSize(_ elements: [Value], type: ColumnType) -> Int {
        if let width = type.scalar.fixedWidth, !type.isOptional { return elements.count * width }
        var size = 0
        for element in elements {
            size += elementSize(element, type: type)
        }
        return size
    }

    /// The size of one collection element or map value.
    @inline(__always)
    private static func elementSize(_ element: Value, type: ColumnType) -> Int {
        if type.scalar == .mixed { return mixedSize(element) }
        if let width = type.scalar.fixedWidth {
            guard type.isOptional else { return width }
            if case .null = element { return 1 }
            return 1 + width
        }
        if case .null = element { return 4 }
        return 4 + variableLength(element)
    }

    /// The byte length of a string's UTF-8 or a data value.
    @inline(__always)
    private static func variableLength(_ value: Value) -> Int {
        switch value {
        case .string(let s): return s.utf8.count
        case .data(let d): return d.count
        default: return 0  // A mismatch: the writing pass reports it.
        }
    }

    /// Writes one column's bytes.
    @inline(__always)
    static func writeColumn(_ value: Value, type: ColumnType, into writer: inout RowByteWriter) {
        switch type.collection {
        case .single:
            if case .null = value {
                precondition(type.isOptional, "RowEncoder.encode: null in required column of type \(type)")
                return
            }
            if type.scalar == .mixed { return writeMixed(value, into: &writer) }
            if type.scalar.fixedWidth == nil && type.isOptional { writer.u8(RowFormat.presentMarker) }
            writeScalar(value, scalar: type.scalar, into: &writer)
        case .list, .set:
            switch value {
            case .list(let elements), .set(let elements):
                writer.u32(UInt32(elements.count))
                for element in elements {
                    writeElement(element, type: type, into: &writer)
                }
            default:
                mismatch(value, type)
            }
        case .map:
            guard case .map(let entries) = value else { mismatch(value, type) }
            writer.u32(UInt32(entries.count))
            for entry in entries {
                writer.u32(UInt32(entry.key.utf8.count))
                writer.string(entry.key)
                writeElement(entry.value, type: type, into: &writer)
            }
        }
    }

    /// Writes one collection element or map value.
    @inline(__always)
    private static func writeElement(_ element: Value, type: ColumnType, into writer: inout RowByteWriter) {
        if type.scalar == .mixed { return writeMixed(element, into: &writer) }
        let isNull = element.isNull
        precondition(!isNull || type.isOptional, "RowEncoder.encode: null element in \(type)")
        if type.scalar.fixedWidth != nil {
            if type.isOptional { writer.u8(isNull ? RowFormat.nullMarker : RowFormat.presentMarker) }
            if !isNull { writeScalar(element, scalar: type.scalar, into: &writer) }
        } else if isNull {
            writer.u32(RowFormat.nullLength)
        } else {
            writer.u32(UInt32(variableLength(element)))
            writeScalar(element, scalar: type.scalar, into: &writer)
        }
    }

    /// Writes the bytes of one non-null scalar (without any length or presence prefix).
    @inline(__always)
    private static func writeScalar(_ value: Value, scalar: ScalarType, into writer: inout RowByteWriter) {
        switch (scalar, value) {
        case (.bool, .bool(let b)):
            writer.u8(b ? 1 : 0)
        case (.int8, .int(let v)):
            precondition(Int64(Int8.min)...Int64(Int8.max) ~= v, "RowEncoder.encode: \(v) out of int8 range")
            writer.u8(UInt8(truncatingIfNeeded: v))
        case (.int16, .int(let v)):
            precondition(Int64(Int16.min)...Int64(Int16.max) ~= v, "RowEncoder.encode: \(v) out of int16 range")
            writer.u16(UInt16(truncatingIfNeeded: v))
        case (.int32, .int(let v)):
            precondition(Int64(Int32.min)...Int64(Int32.max) ~= v, "RowEncoder.encode: \(v) out of int32 range")
            writer.u32(UInt32(truncatingIfNeeded: v))
        case (.int64, .int(let v)):
            writer.u64(UInt64(bitPattern: v))
        case (.float, .float(let v)):
            writer.u32(v.bitPattern)
        case (.double, .double(let v)):
            writer.u64(v.bitPattern)
        case (.date, .date(let v)):
            writer.u64(v.timeIntervalSinceReferenceDate.bitPattern)
        case (.string, .string(let s)):
            writer.string(s)
        case (.data, .data(let d)):
            d.withUnsafeBytes { writer.bytes($0) }
        case (.uuid, .uuid(let u)):
            withUnsafeBytes(of: u.uuid) { writer.bytes($0) }
        case (.objectId, .objectId(let o)):
            writer.u64BigEndian(o.high)
            writer.u32BigEndian(o.low)
        case (.decimal128, .decimal128(let d)):
            writer.u64(d.low)
            writer.u64(d.high)
        case (.link, .link(let key)):
            writer.u64(UInt64(bitPattern: key.rawValue))
        default:
            preconditionFailure("RowEncoder.encode: \(value) does not fit a \(scalar) column; validate values first")
        }
    }

    /// The encoded size of one mixed value: its tag and payload (see ``RowFormat``).
    @inline(__always)
    private static func mixedSize(_ value: Value) -> Int {
        switch value {
        case .null: return 1
        case .bool: return 2
        case .float: return 5
        case .int, .double, .date: return 9
        case .objectId: return 13
        case .uuid, .decimal128: return 17
        case .string(let s): return 5 + s.utf8.count
        case .data(let d): return 5 + d.count
        case .typedLink(let table, _): return 10 + table.utf8.count
        case .link, .list, .set, .map: return 0  // A mismatch: the writing pass reports it.
        }
    }

    /// Writes one mixed value: `tag: u8` (a ``ScalarType`` raw value, 0 for null), then the payload.
    @inline(__always)
    private static func writeMixed(_ value: Value, into writer: inout RowByteWriter) {
        switch value {
        case .null:
            writer.u8(RowFormat.mixedNullTag)
        case .bool: writeTagged(value, .bool, into: &writer)
        case .int: writeTagged(value, .int64, into: &writer)
        case .float: writeTagged(value, .float, into: &writer)
        case .double: writeTagged(value, .double, into: &writer)
        case .date: writeTagged(value, .date, into: &writer)
        case .uuid: writeTagged(value, .uuid, into: &writer)
        case .objectId: writeTagged(value, .objectId, into: &writer)
        case .decimal128: writeTagged(value, .decimal128, into: &writer)
        case .string(let s):
            writer.u8(ScalarType.string.rawValue)
            writer.u32(UInt32(s.utf8.count))
            writer.string(s)
        case .data(let d):
            writer.u8(ScalarType.data.rawValue)
            writer.u32(UInt32(d.count))
            d.withUnsafeBytes { writer.bytes($0) }
        case .typedLink(let table, let key):
            writer.u8(ScalarType.link.rawValue)
            writer.u8(UInt8(table.utf8.count))
            writer.string(table)
            writer.u64(UInt64(bitPattern: key.rawValue))
        case .link, .list, .set, .map:
            preconditionFailure("RowEncoder.encode: \(value) does not fit a mixed column; validate values first")
        }
    }

    /// Writes a fixed-width mixed value: its tag, then its bytes as in a column of that type.
    @inline(__always)
    private static func writeTagged(_ value: Value, _ scalar: ScalarType, into writer: inout RowByteWriter) {
        writer.u8(scalar.rawValue)
        writeScalar(value, scalar: scalar, into: &writer)
    }

    /// Stops on a value whose shape does not match its column type (encode requires validated values).
    private static func mismatch(_ value: Value, _ type: ColumnType) -> Never {
        preconditionFailure("RowEncoder.encode: \(value) does not fit a \(type) column; validate values first")
    }
}

/// Writes little-endian integers and raw bytes into a pre-sized region, checking every write against
/// the region's end (so a size miscalculation stops the process instead of overrunning the buffer).
struct RowByteWriter {
    /// The start of the region.
    let base: UnsafeMutableRawPointer
    /// The region's length.
    let limit: Int
    /// The number of bytes written so far.
    private(set) var offset = 0

    /// Creates a writer over `limit` bytes at `base`.
    init(base: UnsafeMutableRawPointer, limit: Int) {
        self.base = base
        self.limit = limit
    }

    /// Claims `count` bytes and returns their offset.
    @inline(__always)
    private mutating func claim(_ count: Int) -> Int {
        precondition(count <= limit &- offset, "RowEncoder: write past the end of the row")
        let at = offset
        offset &+= count
        return at
    }

    /// Writes one byte.
    @inline(__always) mutating func u8(_ v: UInt8) {
        base.storeBytes(of: v, toByteOffset: claim(1), as: UInt8.self)
    }

    /// Writes a little-endian `UInt16`.
    @inline(__always) mutating func u16(_ v: UInt16) {
        base.storeBytes(of: v.littleEndian, toByteOffset: claim(2), as: UInt16.self)
    }

    /// Writes a little-endian `UInt32`.
    @inline(__always) mutating func u32(_ v: UInt32) {
        base.storeBytes(of: v.littleEndian, toByteOffset: claim(4), as: UInt32.self)
    }

    /// Writes a little-endian `UInt64`.
    @inline(__always) mutating func u64(_ v: UInt64) {
        base.storeBytes(of: v.littleEndian, toByteOffset: claim(8), as: UInt64.self)
    }

    /// Writes a big-endian `UInt32`.
    @inline(__always) mutating func u32BigEndian(_ v: UInt32) {
        base.storeBytes(of: v.bigEndian, toByteOffset: claim(4), as: UInt32.self)
    }

    /// Writes a big-endian `UInt64`.
    @inline(__always) mutating func u64BigEndian(_ v: UInt64) {
        base.storeBytes(of: v.bigEndian, toByteOffset: claim(8), as: UInt64.self)
    }

    /// Copies raw bytes.
    @inline(__always) mutating func bytes(_ source: UnsafeRawBufferPointer) {
        let at = claim(source.count)
        if let from = source.baseAddress, source.count > 0 {
            (base + at).copyMemory(from: from, byteCount: source.count)
        }
    }

    /// Copies a string's UTF-8 bytes.
    @inline(__always) mutating func string(_ s: String) {
        let utf8 = s.utf8
        let copied: Void? = utf8.withContiguousStorageIfAvailable { bytes(UnsafeRawBufferPointer($0)) }
        if copied == nil {
            let at = claim(utf8.count)
            var i = at
            for byte in utf8 {
                base.storeBytes(of: byte, toByteOffset: i, as: UInt8.self)
                i += 1
            }
        }
    }
}
