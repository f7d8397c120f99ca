/// Appends little-endian integers and raw bytes to a growing buffer.
package struct ByteWriter {
    package var bytes: [UInt8]
    /// Bytes reserved at the start of `bytes` for a frame written around the content later (see
    /// ``init(reservingPrefix:capacity:)``); `count` does not include them.
    package let prefix: Int

    package init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
        prefix = 0
    }

    /// A writer whose first `prefix` bytes (zero) are room for a frame the caller writes around the content
    /// afterwards (``Record/frameInPlace(kind:watermark:_:)``), so the content is never copied into a frame.
    /// `count`, and so the positions content records of itself, start after them.
    package init(reservingPrefix prefix: Int, capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(prefix + capacity)
        bytes.append(contentsOf: repeatElement(0, count: prefix))
        self.prefix = prefix
    }

    /// The content's length: the bytes written after the reserved prefix.
    package var count: Int { bytes.count - prefix }

    @inline(__always) package mutating func append(_ value: UInt8) { bytes.append(value) }
    @inline(__always) package mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
    @inline(__always) package mutating func append(_ raw: [UInt8]) { bytes.append(contentsOf: raw) }
    @inline(__always) package mutating func append(_ raw: UnsafeRawBufferPointer) { bytes.append(contentsOf: raw) }
    /// A `UInt32` length followed by the UTF-8 bytes.
    package mutating func appendString(_ string: String) {
        var s = string
        s.withUTF8 { utf8 in
            append(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }
}

/// Reads little-endian integers from a buffer without trapping: reads past the end yield zero and set
/// `overrun`, which callers check once at the end of a structure (one branch instead of one per field).
package struct ByteReader {
    package let buffer: UnsafeRawBufferPointer
    package private(set) var position = 0
    package private(set) var overrun = false

    package init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    package var remaining: Int { buffer.count - position }
    package var isAtEnd: Bool { position >= buffer.count }

    @inline(__always)
    private mutating func load<T: FixedWidthInteger>(_: T.Type) -> T {
        let size = MemoryLayout<T>.size
        guard position + size <= buffer.count else {
            overrun = true
            position = buffer.count
            return 0
        }
        let value = buffer.loadUnaligned(fromByteOffset: position, as: T.self)
        position += size
        return T(littleEndian: value)
    }

    @inline(__always) package mutating func uint8() -> UInt8 { load(UInt8.self) }
    @inline(__always) package mutating func uint16() -> UInt16 { load(UInt16.self) }
    @inline(__always) package mutating func uint32() -> UInt32 { load(UInt32.self) }
    @inline(__always) package mutating func uint64() -> UInt64 { load(UInt64.self) }
    @inline(__always) package mutating func int64() -> Int64 { load(Int64.self) }

    package mutating func skip(_ count: Int) {
        guard count >= 0, position + count <= buffer.count else {
            overrun = true
            position = buffer.count
            return
        }
        position += count
    }

    /// The next `count` bytes, or an empty buffer (and `overrun`) if fewer remain.
    package mutating func bytes(_ count: Int) -> UnsafeRawBufferPointer {
        guard count >= 0, position + count <= buffer.count else {
            overrun = true
            position = buffer.count
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: buffer[position..<(position + count)])
    }

    /// A `UInt32` length followed by that many UTF-8 bytes (invalid UTF-8 is repaired, never trapped on).
    package mutating func string() -> String {
        let n = Int(uint32())
        return String(decoding: bytes(n), as: UTF8.self)
    }
}
