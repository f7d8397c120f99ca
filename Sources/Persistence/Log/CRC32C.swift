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

    /// The checksum of bytes `a` followed by bytes `b`, from the checksum of each and the length of `b`:
    /// for a record whose first bytes are known only after the rest was checksummed. O(log `lengthOfB`).
    ///
    /// The math: appending `n` bytes to `a` multiplies its remainder by x^(8n) modulo the polynomial, and
    /// the pre- and post-inversions of the two checksums cancel out, so the result is
    /// `crcA · x^(8n) mod P  ⊕  crcB`, with x^(8n) built from the squares x^(2^k).
    package static func combine(_ crcA: UInt32, _ crcB: UInt32, lengthOfB: Int) -> UInt32 {
        guard lengthOfB > 0 else { return crcA }
        var power: UInt32 = 1 << 31  // x^0, in the reflected bit order
        var n = lengthOfB
        var k = 3  // 8n bits: x^(8n) = product of x^(2^k) over the bits of n, starting at 2^3
        while n != 0 {
            if n & 1 != 0 { power = multiply(squares[k], power) }
            n >>= 1
            k += 1
        }
        return multiply(power, crcA) ^ crcB
    }

    /// `a · b` modulo the polynomial, both in the reflected bit order (bit 31 is x^0).
    private static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var b = b
        var product: UInt32 = 0
        var mask: UInt32 = 1 << 31
        while mask != 0 {
            if a & mask != 0 { product ^= b }
            mask >>= 1
            b = b & 1 != 0 ? (b >> 1) ^ 0x82F6_3B78 : b >> 1
        }
        return product
    }

    /// x^(2^k) modulo the polynomial for k in 0..<67: enough for the 8n bits of any length n an `Int` holds.
    private static let squares: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 67)
        table[0] = 1 << 30  // x^1
        for k in 1..<67 { table[k] = multiply(table[k - 1], table[k - 1]) }
        return table
    }()

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
