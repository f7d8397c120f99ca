import Foundation

/// A non-owning view of one encoded row (see ``RowFormat``), typically inside the memory-mapped log.
///
/// Creating a view checks the header once (column count, offset width, end offsets); after that,
/// ``columnBytes(_:)`` is a couple of loads, and each accessor decodes only the column it is asked for.
/// Every accessor checks the column's bytes against its type and throws `.corrupted` on a mismatch:
/// a crafted file with a valid checksum cannot make a read trap.
///
/// The view is valid only while the bytes it points at are alive and unchanged; the caller guarantees it.
package struct RowView {
    /// The start of the row (the `columnCount` field).
    private let base: UnsafeRawPointer
    /// The start of the `data` section.
    private let data: UnsafeRawPointer
    /// The width of one end offset: 1, 2 or 4.
    private let offsetWidth: Int
    /// The number of columns the row stores.
    package let columnCount: Int
    /// The length of the encoded row: header plus data up to the last column's end. May be less than the
    /// buffer the view was created from.
    package let encodedLength: Int

    /// Creates a view of the row at the start of `bytes`, validating its header.
    ///
    /// `bytes` may extend past the row's end (``encodedLength`` tells where it ends).
    ///
    /// - Parameter bytes: The row's bytes.
    /// - Throws: `.corrupted` if the buffer is shorter than the header, the column count is over
    ///   ``RowFormat/maxColumns``, the offset width is not 1, 2 or 4, or the end offsets decrease or point
    ///   past the buffer.
    package init(_ bytes: UnsafeRawBufferPointer) throws(StorageError) {
        guard bytes.count >= RowFormat.fixedHeaderSize, let base = bytes.baseAddress else {
            throw corruptRow("it is \(bytes.count) bytes long, shorter than the 3-byte row header")
        }
        let columnCount = Int(UInt16(littleEndian: base.loadUnaligned(as: UInt16.self)))
        let offsetWidth = Int(base.load(fromByteOffset: 2, as: UInt8.self))
        guard columnCount <= RowFormat.maxColumns else {
            throw corruptRow("it claims \(columnCount) columns, over the limit of \(RowFormat.maxColumns)")
        }
        guard offsetWidth == 1 || offsetWidth == 2 || offsetWidth == 4 else {
            throw corruptRow("its offset width is \(offsetWidth); it must be 1, 2 or 4")
        }
        let headerSize = RowFormat.headerSize(columnCount: columnCount, offsetWidth: offsetWidth)
        guard headerSize <= bytes.count else {
            throw corruptRow("its header needs \(headerSize) bytes but only \(bytes.count) are present")
        }
        self.base = base
        self.data = base + headerSize
        self.offsetWidth = offsetWidth
        self.columnCount = columnCount
        let available = bytes.count - headerSize
        var previous = 0
        for i in 0..<columnCount {
            let end = Self.end(i, ends: base + RowFormat.fixedHeaderSize, width: offsetWidth)
            guard end >= previous, end <= available else {
                throw corruptRow(
                    "column \(i) ends at data offset \(end), outside \(previous)...\(available)")
            }
            previous = end
        }
        self.encodedLength = headerSize + previous
    }

    /// The length of the `data` section (the last column's end).
    package var dataLength: Int { encodedLength &- (base.distance(to: data)) }

    /// The encoded row: header and data, ``encodedLength`` bytes.
    package var encodedBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: encodedLength) }

    /// The width of one end offset in the header: 1, 2 or 4.
    package var endOffsetWidth: Int { offsetWidth }

    /// The end offset of column `i`, relative to the data section.
    @inline(__always)
    private static func end(_ i: Int, ends: UnsafeRawPointer, width: Int) -> Int {
        switch width {
        case 1: Int(ends.load(fromByteOffset: i, as: UInt8.self))
        case 2: Int(UInt16(littleEndian: ends.loadUnaligned(fromByteOffset: 2 &* i, as: UInt16.self)))
        default: Int(UInt32(littleEndian: ends.loadUnaligned(fromByteOffset: 4 &* i, as: UInt32.self)))
        }
    }

    /// The raw bytes of column `i` (a slice of the row; no copy).
    ///
    /// - Parameter i: The column's index in storage order.
    /// - Returns: The column's bytes, or nil if the row has fewer columns (or `i` is negative); the column
    ///   then reads as its type's ``ColumnType/defaultValue``.
    @inline(__always)
    package func columnBytes(_ i: Int) -> UnsafeRawBufferPointer? {
        guard i >= 0, i < columnCount else { return nil }
        let ends = base + RowFormat.fixedHeaderSize
        let start = i == 0 ? 0 : Self.end(i &- 1, ends: ends, width: offsetWidth)
        let end = Self.end(i, ends: ends, width: offsetWidth)
        return UnsafeRawBufferPointer(start: data + start, count: end &- start)
    }

    /// Decodes column `i` as `type`.
    ///
    /// - Parameters:
    ///   - i: The column's index in storage order.
    ///   - type: The column's type in the schema the row was written with.
    /// - Returns: The column's value; `type.defaultValue` if the row has fewer columns.
    /// - Throws: `.corrupted` if the column's bytes are not a valid encoding of `type`.
    package func value(at i: Int, type: ColumnType) throws(StorageError) -> Value {
        guard let bytes = columnBytes(i) else { return type.defaultValue }
        do {
            return try RowDecoding.column(bytes, type: type)
        } catch {
            throw corruptColumn(i, type: type, error)
        }
    }

    /// Reads an integer column (or a link, as its raw key) without boxing it in a ``Value``.
    ///
    /// - Parameters:
    ///   - i: The column's index.
    ///   - type: The column's scalar type: `int8`, `int16`, `int32`, `int64` or `link` (anything else is a
    ///     programming error and stops the process).
    ///   - optional: Whether the column is optional. When true (the default) a missing column reads as nil;
    ///     when false it reads as `0` and a zero-length slot is corruption.
    /// - Returns: The value sign-extended to `Int64`, or nil for null (or a missing optional column).
    /// - Throws: `.corrupted` if the column's length is not the type's width (or 0 when optional).
    package func int64(at i: Int, type: ScalarType, optional: Bool = true) throws(StorageError) -> Int64? {
        guard let bytes = try fixedSlot(i, width: Self.integerWidth(type), optional: optional, type: type) else {
            return optional ? nil : 0
        }
        let p = bytes.baseAddress.unsafelyUnwrapped
        switch type {
        case .int8: return Int64(p.load(as: Int8.self))
        case .int16: return Int64(Int16(littleEndian: p.loadUnaligned(as: Int16.self)))
        case .int32: return Int64(Int32(littleEndian: p.loadUnaligned(as: Int32.self)))
        default: return Int64(littleEndian: p.loadUnaligned(as: Int64.self))
        }
    }

    /// Reads a `double` column, or a `float` column widened to `Double`, or a `date` column as its
    /// `timeIntervalSinceReferenceDate` (the width stored tells float from double).
    ///
    /// - Parameters:
    ///   - i: The column's index.
    ///   - optional: Whether the column is optional. When true (the default) a missing column reads as nil;
    ///     when false it reads as `0`.
    /// - Returns: The value, or nil for null (or a missing optional column).
    /// - Throws: `.corrupted` if the column is neither 4 nor 8 bytes long (nor empty, when optional).
    package func double(at i: Int, optional: Bool = true) throws(StorageError) -> Double? {
        guard let bytes = columnBytes(i) else { return optional ? nil : 0 }
        switch bytes.count {
        case 8: return Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self)))
        case 4: return Double(Float(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self))))
        case 0 where optional: return nil
        default:
            throw corruptColumn(i, "a floating-point column is \(bytes.count) bytes long; expected 4 or 8")
        }
    }

    /// Reads a string column without boxing it in a ``Value``.
    ///
    /// - Parameters:
    ///   - i: The column's index.
    ///   - optional: Whether the column is optional (this changes the encoding: see ``RowFormat``).
    /// - Returns: The string; nil for null or a missing optional column, `""` for a missing required one.
    /// - Throws: `.corrupted` if an optional string lacks its 0x01 marker or the bytes are not valid UTF-8.
    package func string(at i: Int, optional: Bool) throws(StorageError) -> String? {
        guard let bytes = columnBytes(i) else { return optional ? nil : "" }
        guard optional else {
            return try decodeString(i, bytes)
        }
        if bytes.isEmpty { return nil }
        guard bytes.load(as: UInt8.self) == RowFormat.presentMarker else {
            throw corruptColumn(i, "an optional string starts with \(bytes.load(as: UInt8.self)); expected 1")
        }
        return try decodeString(i, UnsafeRawBufferPointer(rebasing: bytes[1...]))
    }

    /// Reads a `bool` column without boxing it in a ``Value``.
    ///
    /// - Parameters:
    ///   - i: The column's index.
    ///   - optional: Whether the column is optional. When true (the default) a missing column reads as nil;
    ///     when false it reads as `false`.
    /// - Returns: The value, or nil for null (or a missing optional column).
    /// - Throws: `.corrupted` if the column is not one byte 0 or 1 (or empty, when optional).
    package func bool(at i: Int, optional: Bool = true) throws(StorageError) -> Bool? {
        guard let bytes = try fixedSlot(i, width: 1, optional: optional, type: .bool) else {
            return optional ? nil : false
        }
        switch bytes.load(as: UInt8.self) {
        case 0: return false
        case 1: return true
        case let byte: throw corruptColumn(i, "a bool is stored as \(byte); expected 0 or 1")
        }
    }

    /// Reads a single `link` column.
    ///
    /// - Parameter i: The column's index.
    /// - Returns: The target's key, or nil for null or a missing column.
    /// - Throws: `.corrupted` if the column is neither 0 nor 8 bytes long.
    package func link(at i: Int) throws(StorageError) -> ObjectKey? {
        guard let bytes = try fixedSlot(i, width: 8, optional: true, type: .link) else { return nil }
        return ObjectKey(Int64(littleEndian: bytes.loadUnaligned(as: Int64.self)))
    }

    /// The bytes of a fixed-width single column, or nil for null/missing, after checking the length.
    @inline(__always)
    private func fixedSlot(
        _ i: Int, width: Int, optional: Bool, type: ScalarType
    ) throws(StorageError)
        -> UnsafeRawBufferPointer?
    {
        guard let bytes = columnBytes(i) else { return nil }
        if bytes.count == width { return bytes }
        if bytes.isEmpty && optional { return nil }
        throw corruptColumn(
            i, "a \(optional ? "" : "required ")\(type) column is \(bytes.count) bytes long; expected \(width)")
    }

    /// The width of an integer type, for ``int64(at:type:optional:)``.
    @inline(__always)
    private static func integerWidth(_ type: ScalarType) -> Int {
        switch type {
        case .int8: 1
        case .int16: 2
        case .int32: 4
        case .int64, .link: 8
        default: preconditionFailure("RowView.int64(at:type:) reads integer columns, not \(type)")
        }
    }

    /// Decodes validated-length UTF-8, throwing `.corrupted` for column `i` if it is not valid.
    @inline(__always)
    private func decodeString(_ i: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError) -> String {
        do {
            return try RowDecoding.utf8(bytes)
        } catch {
            throw corruptColumn(i, error.message)
        }
    }

    /// A `.corrupted` error about column `i`.
    func corruptColumn(_ i: Int, _ problem: String) -> StorageError {
        StorageError(.corrupted, "Column \(i) of a stored object is malformed: \(problem).")
    }

    /// A `.corrupted` error about column `i` of type `type`, wrapping a decoding error.
    func corruptColumn(_ i: Int, type: ColumnType, _ error: StorageError) -> StorageError {
        StorageError(.corrupted, "Column \(i) (\(type)) of a stored object is malformed: \(error.message).")
    }
}

/// A `.corrupted` error about a row header.
private func corruptRow(_ problem: String) -> StorageError {
    StorageError(.corrupted, "A stored object is malformed: \(problem).")
}
