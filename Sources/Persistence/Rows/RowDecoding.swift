import Foundation

/// Decoding of column bytes into ``Value``s, shared by ``RowView``'s accessors.
///
/// Every function checks lengths against the bytes present before reading, and throws `.corrupted`
/// with a short description of the problem (no trailing period: ``RowView`` wraps it with the column).
enum RowDecoding {
    /// Decodes the bytes of one column as `type`.
    ///
    /// - Parameters:
    ///   - bytes: Exactly the column's bytes.
    ///   - type: The column's type.
    /// - Returns: The decoded value.
    /// - Throws: `.corrupted` if the bytes are not a valid encoding of `type`.
    static func column(_ bytes: UnsafeRawBufferPointer, type: ColumnType) throws(StorageError) -> Value {
        switch type.collection {
        case .single: return try single(bytes, type: type)
        case .list: return .list(try elements(bytes, type: type))
        case .set: return .set(try elements(bytes, type: type))
        case .map: return .map(try entries(bytes, type: type))
        }
    }

    /// Decodes a single (non-collection) column.
    private static func single(_ bytes: UnsafeRawBufferPointer, type: ColumnType) throws(StorageError) -> Value {
        if type.scalar == .mixed {
            if bytes.isEmpty { return .null }
            var reader = RowByteReader(bytes)
            let value = try mixed(&reader)
            try reader.expectEnd()
            return value
        }
        if let width = type.scalar.fixedWidth {
            if bytes.count == width { return try fixed(type.scalar, bytes) }
            if bytes.isEmpty && type.isOptional { return .null }
            throw corrupt("\(bytes.count) bytes instead of \(width)")
        }
        var payload = bytes
        if type.isOptional {
            if bytes.isEmpty { return .null }
            let marker = bytes.load(as: UInt8.self)
            guard marker == RowFormat.presentMarker else { throw corrupt("presence marker \(marker) instead of 1") }
            payload = UnsafeRawBufferPointer(rebasing: bytes[1...])
        }
        return try variable(type.scalar, payload)
    }

    /// Decodes a string or data value from exactly its bytes.
    static func variable(_ scalar: ScalarType, _ bytes: UnsafeRawBufferPointer) throws(StorageError) -> Value {
        if scalar == .string { return .string(try utf8(bytes)) }
        return .data(bytes.isEmpty ? Data() : Data(bytes: bytes.baseAddress.unsafelyUnwrapped, count: bytes.count))
    }

    /// Decodes a fixed-width scalar from exactly `scalar.fixedWidth` bytes.
    ///
    /// - Throws: `.corrupted` for a bool byte other than 0 or 1.
    static func fixed(_ scalar: ScalarType, _ bytes: UnsafeRawBufferPointer) throws(StorageError) -> Value {
        switch scalar {
        case .bool:
            switch bytes.load(as: UInt8.self) {
            case 0: return .bool(false)
            case 1: return .bool(true)
            case let byte: throw corrupt("bool byte \(byte) instead of 0 or 1")
            }
        case .int8: return .int(Int64(bytes.load(as: Int8.self)))
        case .int16: return .int(Int64(Int16(littleEndian: bytes.loadUnaligned(as: Int16.self))))
        case .int32: return .int(Int64(Int32(littleEndian: bytes.loadUnaligned(as: Int32.self))))
        case .int64: return .int(Int64(littleEndian: bytes.loadUnaligned(as: Int64.self)))
        case .float: return .float(Float(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self))))
        case .double: return .double(Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))))
        case .date:
            let interval = Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self)))
            return .date(Date(timeIntervalSinceReferenceDate: interval))
        case .uuid:
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<16])) }
            return .uuid(UUID(uuid: uuid))
        case .objectId:
            let high = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
            let low = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            return .objectId(ObjectIDBytes(high: high, low: low))
        case .decimal128:
            let low = UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))
            let high = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            return .decimal128(Decimal128Bits(low: low, high: high))
        case .link: return .link(ObjectKey(Int64(littleEndian: bytes.loadUnaligned(as: Int64.self))))
        case .string, .data: return try variable(scalar, bytes)
        case .mixed:
            var reader = RowByteReader(bytes)
            let value = try mixed(&reader)
            try reader.expectEnd()
            return value
        }
    }

    /// Reads one mixed value (tag, then payload; see ``RowFormat``).
    ///
    /// - Throws: `.corrupted` for an unknown tag, a narrow integer tag, or a payload past the end.
    static func mixed(_ reader: inout RowByteReader) throws(StorageError) -> Value {
        let tag = try reader.u8()
        if tag == RowFormat.mixedNullTag { return .null }
        guard let scalar = ScalarType(rawValue: tag) else { throw corrupt("mixed value tag \(tag) is unknown") }
        switch scalar {
        case .int8, .int16, .int32, .mixed: throw corrupt("mixed value tag \(tag) is not a mixed type")
        case .string, .data:
            let length = try reader.u32()
            return try variable(scalar, try reader.take(Int(length)))
        case .link:
            let nameLength = try reader.u8()
            let table = try utf8(try reader.take(Int(nameLength)))
            return .typedLink(table: table, key: ObjectKey(try reader.i64()))
        case .bool, .int64, .float, .double, .date, .uuid, .objectId, .decimal128:
            // Fixed-width: `fixedWidth` is non-nil for these.
            return try fixed(scalar, try reader.take(scalar.fixedWidth ?? 0))
        }
    }

    /// Decodes UTF-8 bytes into a `String`.
    ///
    /// `String(decoding:as:)` is the fast path of the standard library but repairs invalid input with
    /// U+FFFD; the result is byte-identical to the input exactly when the input was valid, so non-ASCII
    /// input is compared after decoding (ASCII input, checked 8 bytes at a time, is always valid).
    ///
    /// - Throws: `.corrupted` if the bytes are not valid UTF-8.
    static func utf8(_ bytes: UnsafeRawBufferPointer) throws(StorageError) -> String {
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return "" }
        let units = UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        let string = String(decoding: units, as: UTF8.self)
        if isASCII(bytes) { return string }
        let identical =
            string.utf8.withContiguousStorageIfAvailable { decoded in
                decoded.count == units.count && memcmp(decoded.baseAddress.unsafelyUnwrapped, start, units.count) == 0
            } ?? string.utf8.elementsEqual(units)
        guard identical else { throw corrupt("\(bytes.count) bytes of string are not valid UTF-8") }
        return string
    }

    /// Whether every byte is below 0x80 (checked a word at a time).
    @inline(__always)
    private static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var i = 0
        var bits: UInt64 = 0
        while i &+ 8 <= count {
            bits |= bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i &+= 8
        }
        while i < count {
            bits |= UInt64(bytes.load(fromByteOffset: i, as: UInt8.self))
            i &+= 1
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }

    /// A `.corrupted` error with a short description of the problem.
    static func corrupt(_ problem: String) -> StorageError {
        StorageError(.corrupted, problem)
    }
}

/// Reads a column's bytes front to back, checking every read against the end.
struct RowByteReader {
    /// The bytes being read.
    let bytes: UnsafeRawBufferPointer
    /// The position of the next read.
    private(set) var offset = 0

    /// Creates a reader at the start of `bytes`.
    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The number of bytes not yet read.
    var remaining: Int { bytes.count &- offset }

    /// Reads one byte.
    ///
    /// - Throws: `.corrupted` at the end of the bytes.
    @inline(__always)
    mutating func u8() throws(StorageError) -> UInt8 {
        guard remaining >= 1 else { throw truncated(1) }
        defer { offset &+= 1 }
        return bytes.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// Reads a little-endian `UInt32`.
    ///
    /// - Throws: `.corrupted` if fewer than 4 bytes remain.
    @inline(__always)
    mutating func u32() throws(StorageError) -> UInt32 {
        guard remaining >= 4 else { throw truncated(4) }
        defer { offset &+= 4 }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// Reads a little-endian `Int64`.
    ///
    /// - Throws: `.corrupted` if fewer than 8 bytes remain.
    @inline(__always)
    mutating func i64() throws(StorageError) -> Int64 {
        guard remaining >= 8 else { throw truncated(8) }
        defer { offset &+= 8 }
        return Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int64.self))
    }

    /// Returns the next `count` bytes (no copy) and moves past them.
    ///
    /// - Throws: `.corrupted` if fewer than `count` bytes remain.
    @inline(__always)
    mutating func take(_ count: Int) throws(StorageError) -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else { throw truncated(count) }
        defer { offset &+= count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset &+ count)])
    }

    /// Moves past `count` bytes.
    ///
    /// - Throws: `.corrupted` if fewer than `count` bytes remain.
    @inline(__always)
    mutating func skip(_ count: Int) throws(StorageError) {
        guard count >= 0, remaining >= count else { throw truncated(count) }
        offset &+= count
    }

    /// Throws `.corrupted` unless every byte has been read.
    mutating func expectEnd() throws(StorageError) {
        guard remaining == 0 else { throw RowDecoding.corrupt("\(remaining) unexpected bytes after the last element") }
    }

    /// The error for a read past the end.
    private func truncated(_ wanted: Int) -> StorageError {
        RowDecoding.corrupt("needs \(wanted) bytes at offset \(offset) but only \(remaining) remain")
    }
}
