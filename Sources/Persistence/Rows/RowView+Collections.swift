import Foundation

extension RowDecoding {
    /// Decodes the elements of a list or set column.
    ///
    /// - Parameters:
    ///   - bytes: Exactly the column's bytes.
    ///   - type: The column's type (its scalar and element optionality are used).
    /// - Returns: The elements in stored order.
    /// - Throws: `.corrupted` if the count does not fit the bytes, an element is malformed, or bytes are
    ///   left over.
    static func elements(_ bytes: UnsafeRawBufferPointer, type: ColumnType) throws(StorageError) -> [Value] {
        var reader = RowByteReader(bytes)
        let count = try checkedCount(&reader, minimumEntrySize: minimumElementSize(type))
        var elements: [Value] = []
        elements.reserveCapacity(count)
        for _ in 0..<count {
            elements.append(try element(&reader, type: type))
        }
        try reader.expectEnd()
        return elements
    }

    /// Decodes the entries of a map column.
    ///
    /// - Parameters:
    ///   - bytes: Exactly the column's bytes.
    ///   - type: The column's type (its scalar and value optionality are used).
    /// - Returns: The entries in stored order (sorted by key when written by ``RowEncoder``).
    /// - Throws: `.corrupted` if the count does not fit the bytes, a key is not valid UTF-8, a value is
    ///   malformed, or bytes are left over.
    static func entries(_ bytes: UnsafeRawBufferPointer, type: ColumnType) throws(StorageError) -> [Value.MapEntry] {
        var reader = RowByteReader(bytes)
        let count = try checkedCount(&reader, minimumEntrySize: 4 + minimumElementSize(type))
        var entries: [Value.MapEntry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let keyLength = try reader.u32()
            let key = try utf8(try reader.take(Int(keyLength)))
            entries.append(Value.MapEntry(key, try element(&reader, type: type)))
        }
        try reader.expectEnd()
        return entries
    }

    /// Reads a collection's `count: u32` and checks that that many entries of at least
    /// `minimumEntrySize` bytes fit in the remaining bytes (so a crafted count cannot make the reader
    /// reserve gigabytes).
    private static func checkedCount(_ reader: inout RowByteReader, minimumEntrySize: Int) throws(StorageError) -> Int {
        let count = Int(try reader.u32())
        guard count <= reader.remaining / minimumEntrySize else {
            throw corrupt(
                "a count of \(count) needs at least \(count * minimumEntrySize) bytes but only \(reader.remaining) remain"
            )
        }
        return count
    }

    /// The fewest bytes one element (or map value) of `type` can take.
    private static func minimumElementSize(_ type: ColumnType) -> Int {
        if type.scalar == .mixed { return 1 }
        guard let width = type.scalar.fixedWidth else { return 4 }
        return type.isOptional ? 1 : width
    }

    /// Reads one list/set element or map value.
    private static func element(_ reader: inout RowByteReader, type: ColumnType) throws(StorageError) -> Value {
        if type.scalar == .mixed { return try mixed(&reader) }
        if let width = type.scalar.fixedWidth {
            if type.isOptional {
                switch try reader.u8() {
                case RowFormat.nullMarker: return .null
                case RowFormat.presentMarker: break
                case let marker: throw corrupt("element presence marker \(marker) instead of 0 or 1")
                }
            }
            return try fixed(type.scalar, try reader.take(width))
        }
        let length = try reader.u32()
        if length == RowFormat.nullLength {
            guard type.isOptional else { throw corrupt("a null element in a collection of required \(type.scalar)") }
            return .null
        }
        return try variable(type.scalar, try reader.take(Int(length)))
    }
}

extension RowView {
    /// All object keys a link column refers to, in stored order, nulls skipped.
    ///
    /// Works for a single link and for lists, sets and maps of links, without building ``Value``s (map
    /// keys are skipped, not decoded).
    ///
    /// - Parameters:
    ///   - i: The column's index.
    ///   - type: The column's type. A type whose scalar is not `link` yields `[]`.
    /// - Returns: The keys; `[]` for a missing column.
    /// - Throws: `.corrupted` if the column's bytes are not a valid encoding of `type`.
    package func links(at i: Int, type: ColumnType) throws(StorageError) -> [ObjectKey] {
        guard type.scalar == .link, let bytes = columnBytes(i) else { return [] }
        do {
            return try RowDecoding.links(bytes, type: type)
        } catch {
            throw corruptColumn(i, type: type, error)
        }
    }

    /// The number of elements of a list, set or map column, read from its header without decoding them.
    ///
    /// - Parameters:
    ///   - i: The column's index.
    ///   - type: The column's type; for a single column the result is 1, or 0 when null.
    /// - Returns: The element count; 0 for a missing column.
    /// - Throws: `.corrupted` if the column is too short to hold its count.
    package func collectionCount(at i: Int, type: ColumnType) throws(StorageError) -> Int {
        guard let bytes = columnBytes(i) else { return type.collection == .single && !type.isOptional ? 1 : 0 }
        if type.collection == .single { return bytes.isEmpty && type.isOptional ? 0 : 1 }
        var reader = RowByteReader(bytes)
        do {
            return Int(try reader.u32())
        } catch {
            throw corruptColumn(i, type: type, error)
        }
    }
}

extension RowDecoding {
    /// The object keys in a link column's bytes, nulls skipped.
    ///
    /// - Throws: `.corrupted` if the bytes are not a valid encoding of `type`.
    static func links(_ bytes: UnsafeRawBufferPointer, type: ColumnType) throws(StorageError) -> [ObjectKey] {
        if type.collection == .single {
            switch bytes.count {
            case 0: return []
            case 8: return [ObjectKey(Int64(littleEndian: bytes.loadUnaligned(as: Int64.self)))]
            default: throw corrupt("\(bytes.count) bytes instead of 8")
            }
        }
        var reader = RowByteReader(bytes)
        let isMap = type.collection == .map
        let count = try checkedCount(
            &reader, minimumEntrySize: (isMap ? 4 : 0) + (type.isOptional ? 1 : 8))
        var keys: [ObjectKey] = []
        keys.reserveCapacity(count)
        for _ in 0..<count {
            if isMap { try reader.skip(Int(try reader.u32())) }
            if type.isOptional {
                switch try reader.u8() {
                case RowFormat.nullMarker: continue
                case RowFormat.presentMarker: break
                case let marker: throw corrupt("element presence marker \(marker) instead of 0 or 1")
                }
            }
            keys.append(ObjectKey(try reader.i64()))
        }
        try reader.expectEnd()
        return keys
    }
}
