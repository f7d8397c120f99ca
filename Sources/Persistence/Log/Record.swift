/// One self-delimiting record of the log: the unit of atomicity. One commit is exactly one record.
///
/// ```text
///  record := header (24 bytes) | payload (length bytes) | footer (16 bytes)
///
///  header
///   +0   4  magic 0x31_52_53_41 ("ASR1")
///   +4   1  kind            (Record.Kind: 1 = commit)
///   +5   1  flags           (bit 0: payload transformed by the encryption hook — reserved)
///   +6   2  reserved, zero
///   +8   8  length          (UInt64 LE, payload bytes)
///   +16  4  payload CRC-32C (UInt32 LE)
///   +20  4  header CRC-32C  (UInt32 LE, over header bytes +0..<+20)
///
///  footer
///   +0   8  length          (copy of the header's)
///   +8   4  payload CRC-32C (copy of the header's)
///   +12  4  footer CRC-32C  (over footer bytes +0..<+12, xor 0xA5A5_A5A5 so a footer never reads as a header)
/// ```
/// A record is *committed* when its header and payload are on disk with valid checksums. The footer is
/// redundancy that lets recovery tell a torn write (the tail of the file is incomplete: truncate it) from
/// corruption (a complete record with a bad byte: refuse to open, name the offset). See ``LogScanner``.
///
/// All integers are little-endian. The header's flags byte (like the file header's `encrypted` flag) is
/// reserved for encryption: rows are read in place from the file mapping, so an encrypted store will
/// need a read path that decrypts a record before its rows are read. Until then a record with any flag
/// set is refused at open (`unsupportedFormat`) rather than misread.
package enum Record {
    package static let headerSize = 24
    package static let footerSize = 16
    package static let overhead = headerSize + footerSize
    package static let magic: UInt32 = 0x3152_5341
    package static let footerSeed: UInt32 = 0xA5A5_A5A5
    /// Largest payload accepted (1 TiB): a length above it is never trusted, even with a valid header CRC.
    package static let maxPayload: UInt64 = 1 << 40

    /// What a record holds. Raw values are part of the file format.
    package enum Kind: UInt8, Sendable {
        /// A commit: the version number, then operations (see ``CommitPayload``).
        case commit = 1
    }

    /// Builds the complete bytes of a record around `payload`: header, payload, footer.
    package static func frame(kind: Kind, payload: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        let payloadCRC = CRC32C.checksum(payload)
        out.reserveCapacity(out.count + overhead + payload.count)
        out.append(contentsOf: header(kind: kind, length: UInt64(payload.count), payloadCRC: payloadCRC))
        out.append(contentsOf: payload)
        out.append(contentsOf: footer(length: UInt64(payload.count), payloadCRC: payloadCRC))
    }

    /// The header bytes for a payload of `length` bytes with checksum `payloadCRC`.
    package static func header(kind: Kind, length: UInt64, payloadCRC: UInt32) -> [UInt8] {
        var header = ByteWriter(capacity: headerSize)
        header.append(magic)
        header.append(kind.rawValue)
        header.append(UInt8(0))
        header.append(UInt16(0))
        header.append(length)
        header.append(payloadCRC)
        header.append(CRC32C.checksum(header.bytes))
        return header.bytes
    }

    /// The footer bytes for a payload of `length` bytes with checksum `payloadCRC`.
    package static func footer(length: UInt64, payloadCRC: UInt32) -> [UInt8] {
        var footer = ByteWriter(capacity: footerSize)
        footer.append(length)
        footer.append(payloadCRC)
        footer.append(CRC32C.checksum(footer.bytes) ^ footerSeed)
        return footer.bytes
    }

    /// A parsed, checksum-verified record header.
    package struct Header: Sendable, Equatable {
        package var kind: UInt8
        package var flags: UInt8
        package var length: UInt64
        package var payloadCRC: UInt32
    }

    /// Parses a header; nil unless the magic and header CRC are valid and the length is plausible.
    package static func parseHeader(_ raw: UnsafeRawBufferPointer) -> Header? {
        guard raw.count >= headerSize else { return nil }
        var r = ByteReader(raw)
        guard r.uint32() == magic else { return nil }
        let kind = r.uint8()
        let flags = r.uint8()
        _ = r.uint16()
        let length = r.uint64()
        let payloadCRC = r.uint32()
        let headerCRC = r.uint32()
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[..<20])) == headerCRC, length <= maxPayload
        else { return nil }
        return Header(kind: kind, flags: flags, length: length, payloadCRC: payloadCRC)
    }

    /// Parses a footer; nil unless its CRC is valid.
    package static func parseFooter(_ raw: UnsafeRawBufferPointer) -> (length: UInt64, payloadCRC: UInt32)? {
        guard raw.count >= footerSize else { return nil }
        var r = ByteReader(raw)
        let length = r.uint64()
        let payloadCRC = r.uint32()
        let crc = r.uint32()
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[..<12])) ^ footerSeed == crc else { return nil }
        return (length, payloadCRC)
    }
}
