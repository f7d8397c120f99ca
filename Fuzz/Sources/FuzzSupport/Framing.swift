// A small re-implementation of the store's framing (Sources/Persistence/Log: FileHeader.swift, Record.swift,
// CRC32C.swift), whose declarations are `package` and so not visible here. It lets fuzz-open make arbitrary
// bytes checksum-valid, so that mutations reach replay and row decoding instead of the checksum checks.

/// CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, as the file format uses.
public enum FuzzCRC32C {
    private static let table: [UInt32] = (0..<256).map { i -> UInt32 in
        var c = UInt32(i)
        for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        return c
    }

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var c: UInt32 = ~0
        for x in bytes { c = table[Int((c ^ UInt32(x)) & 0xFF)] ^ (c >> 8) }
        return ~c
    }
}

/// The file layout constants (FileHeader.swift and Record.swift).
public enum FuzzFraming {
    /// Bytes of the file header; its CRC is at +60, over bytes 0..<60.
    public static let fileHeaderSize = 64
    /// "ACTSTORE".
    public static let fileMagic: [UInt8] = Array("ACTSTORE".utf8)
    /// The format without checkpoints (commit records only), and the one with them (node and checkpoint
    /// records, kinds 2 and 3).
    public static let formatVersion: UInt32 = 1
    public static let checkpointFormatVersion: UInt32 = 2
    /// "ASR1", little-endian.
    public static let recordMagic: UInt32 = 0x3152_5341
    /// Record header: magic, kind, flags, reserved, length (8), payload CRC, header CRC.
    public static let recordHeaderSize = 24
    /// Record footer: length (8), payload CRC, footer CRC xor `footerSeed`.
    public static let recordFooterSize = 16
    /// Xored into the footer CRC so that a footer never reads as a header.
    public static let footerSeed: UInt32 = 0xA5A5_A5A5

    /// Makes the file header and every record's header, payload and footer checksums valid.
    ///
    /// Forces the file magic, format version 1 and no flags (or the engine refuses the file before reading
    /// any record), and each record's magic, kind 1 (commit) and flags 0. A record's length is kept if it
    /// fits in the rest of the file, else reduced modulo what fits; the footer is written after the payload.
    /// Fewer than 40 bytes after the last record are left as they are (a torn tail, for the recovery scan).
    ///
    /// With `checkpoints`, the file is format 2 and each record keeps its kind (folded into 1...3: commit,
    /// nodes, checkpoint) with the watermark flag, so that mutations reach checkpoint decoding and open's walk
    /// back through the records.
    public static func fixChecksums(_ input: [UInt8], checkpoints: Bool = false) -> [UInt8] {
        var a = input
        guard a.count >= fileHeaderSize else { return a }
        for (i, m) in fileMagic.enumerated() { a[i] = m }
        put32(&a, 8, checkpoints ? checkpointFormatVersion : formatVersion)
        put32(&a, 12, 0)
        put32(&a, 60, FuzzCRC32C.checksum(a[0..<60]))
        var o = fileHeaderSize
        let overhead = recordHeaderSize + recordFooterSize
        while o + overhead <= a.count {
            put32(&a, o, recordMagic)
            a[o + 4] = checkpoints ? a[o + 4] % 3 + 1 : 1
            a[o + 5] = checkpoints ? 2 : 0
            var length = get64(a, o + 8)
            let room = UInt64(a.count - o - overhead)
            if length > room { length %= room + 1 }
            put64(&a, o + 8, length)
            let end = o + recordHeaderSize + Int(length)
            let payloadCRC = FuzzCRC32C.checksum(a[(o + recordHeaderSize)..<end])
            put32(&a, o + 16, payloadCRC)
            put32(&a, o + 20, FuzzCRC32C.checksum(a[o..<(o + 20)]))
            put64(&a, end, length)
            put32(&a, end + 8, payloadCRC)
            put32(&a, end + 12, FuzzCRC32C.checksum(a[end..<(end + 12)]) ^ footerSeed)
            o = end + recordFooterSize
        }
        return a
    }

    private static func put32(_ a: inout [UInt8], _ at: Int, _ v: UInt32) {
        for i in 0..<4 { a[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) }
    }

    private static func put64(_ a: inout [UInt8], _ at: Int, _ v: UInt64) {
        for i in 0..<8 { a[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))) }
    }

    private static func get64(_ a: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(a[at + $1]) << (8 * UInt64($1)) }
    }
}
