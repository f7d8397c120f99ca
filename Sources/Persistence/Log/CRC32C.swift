/// CRC-32C (Castagnoli), the checksum of every header, record and footer in a store file.
///
/// Castagnoli's polynomial detects all burst errors up to 32 bits and every odd number of bit flips,
/// which covers the single-bit flips and torn writes the recovery scan must catch. Software
/// slicing-by-8: eight table lookups per 8 bytes, about 1–2 GB/s, fast enough that checksumming is a small
/// part of open and commit time.
package struct CRC32C: Sendable {
    package private(set) var value: UInt32 = 0

    package init() {}

    /// The checksum of `bytes`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc = CRC32C()
        crc.update(bytes)
        return crc.value
    }

    /// The checksum of `bytes`.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// Adds `bytes` to the running checksum.
    /// - Complexity: O(n).
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var p = bytes.baseAddress else { return }
        var n = bytes.count
        var crc = ~value
        let t = Self.tables
        t.withUnsafeBufferPointer { t in
            while n >= 8 {
                let word = p.loadUnaligned(as: UInt64.self).littleEndian ^ UInt64(crc)
                let lo = UInt32(truncatingIfNeeded: word)
                let hi = UInt32(truncatingIfNeeded: word >> 32)
                crc =
                    t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                p += 8
                n -= 8
            }
            while n > 0 {
                crc = t[Int((crc ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (crc >> 8)
                p += 1
                n -= 1
            }
        }
        value = ~crc
    }

    /// Eight 256-entry tables for the reflected polynomial 0x82F63B78.
    private static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 {
                let previous = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (previous >> 8) ^ t[Int(previous & 0xFF)]
            }
        }
        return t
    }()
}
