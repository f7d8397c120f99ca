/// One self-delimiting record of the log: the unit of atomicity. One commit is exactly one record.
///
/// ```text
///  record := header (24 bytes) | payload (length bytes) | footer (16 bytes)
///
///  header
///   +0   4  magic 0x31_52_53_41 ("ASR1")
///   +4   1  kind            (Record.Kind: 1 = commit; format 2: 2 = nodes, 3 = checkpoint)
///   +5   1  flags           (bit 0: the payload is sealed, see ``EncryptedRecord``;
///                            bit 1: the payload starts with a durability watermark)
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
/// **The durability watermark** (flag bit 1, written by every record since it was introduced): the payload's
/// first 8 bytes (UInt64 LE, covered by the payload CRC) are the file offset up to which a completed
/// `fdatasync` had made the log durable when the record was written. A record therefore vouches that every
/// byte before its watermark was on disk: damage there is corruption, never a crash. Damage past every
/// watermark that later records carry can be a power loss that persisted some pages of unacknowledged
/// records and not others, and recovery may cut the log there (see ``LogScanner``). Records without the flag
/// (files written before the watermark existed) vouch for nothing. The commit body (``CommitPayload``)
/// follows the watermark; ``LogScanner/Entry/payload`` is the body's range.
///
/// All integers are little-endian. A record of an encrypted store (``FileHeader/Flags/encrypted``) has flag
/// bit 0 and a sealed payload after its watermark (see ``EncryptedRecord``); its framing (header, footer,
/// watermark) is the same, so recovery works on it without the key.
package enum Record {
    package static let headerSize = 24
    package static let footerSize = 16
    package static let overhead = headerSize + footerSize
    package static let magic: UInt32 = 0x3152_5341
    package static let footerSeed: UInt32 = 0xA5A5_A5A5
    /// Largest payload accepted (1 TiB): a length above it is never trusted, even with a valid header CRC.
    package static let maxPayload: UInt64 = 1 << 40
    /// Size of the durability watermark that starts the payload of a record flagged ``Flags/watermark``.
    package static let watermarkSize = 8

    /// The header's flags byte. Raw values are part of the file format.
    package struct Flags: OptionSet, Sendable, Hashable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The payload starts with the durability watermark (see the type's documentation).
        package static let watermark = Flags(rawValue: 1 << 1)
        /// The payload after the watermark is sealed (an encrypted store's records, and only theirs).
        package static let encrypted = Flags(rawValue: 1 << 0)
        /// The flags this version of ActorStore reads.
        package static let known: Flags = [.watermark, .encrypted]
    }

    /// What a record holds. Raw values are part of the file format.
    package enum Kind: UInt8, Sendable {
        /// A commit: the version number, then operations (see ``CommitPayload``).
        case commit = 1
        /// The B+tree nodes a checkpoint wrote (format 2; see ``BTreeNodeFormat`` and ``Checkpoint``).
        case nodes = 2
        /// The roots of a checkpoint (format 2; see ``Checkpoint``).
        case checkpoint = 3
    }

    /// Builds the complete bytes of a record around the commit body `payload`: header, payload, footer; with
    /// `watermark`, the payload is prefixed by it and the record flagged ``Flags/watermark``, as the engine
    /// writes records (without, a record as files written before the watermark existed hold).
    package static func frame(
        kind: Kind, payload: UnsafeRawBufferPointer, watermark: UInt64? = nil, into out: inout [UInt8]
    ) {
        var body: [UInt8] = []
        if let watermark { withUnsafeBytes(of: watermark.littleEndian) { body.append(contentsOf: $0) } }
        body.append(contentsOf: payload)
        let payloadCRC = CRC32C.checksum(body)
        let flags: Flags = watermark == nil ? [] : .watermark
        out.reserveCapacity(out.count + overhead + body.count)
        out.append(contentsOf: header(kind: kind, flags: flags, length: UInt64(body.count), payloadCRC: payloadCRC))
        out.append(contentsOf: body)
        out.append(contentsOf: footer(length: UInt64(body.count), payloadCRC: payloadCRC))
    }

    /// Frames a record around a body already in place: `bytes` starts with ``headerSize`` +
    /// ``watermarkSize`` reserved bytes (``ByteWriter/init(reservingPrefix:capacity:)``) followed by the body.
    /// Writes the header and the watermark into the reserved bytes and appends the footer, giving the same
    /// bytes as ``frame(kind:payload:watermark:into:)`` with `watermark`, without copying the body (a
    /// checkpoint's nodes record can be tens of megabytes).
    package static func frameInPlace(kind: Kind, watermark: UInt64, _ bytes: inout [UInt8]) {
        precondition(bytes.count >= headerSize + watermarkSize, "frameInPlace needs the reserved prefix")
        withUnsafeBytes(of: watermark.littleEndian) {
            bytes.replaceSubrange(headerSize..<headerSize + watermarkSize, with: $0)
        }
        let length = bytes.count - headerSize
        let payloadCRC = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[headerSize...])) }
        let head = header(kind: kind, flags: .watermark, length: UInt64(length), payloadCRC: payloadCRC)
        bytes.replaceSubrange(0..<headerSize, with: head)
        bytes.append(contentsOf: footer(length: UInt64(length), payloadCRC: payloadCRC))
    }

    /// The header bytes for a payload of `length` bytes with checksum `payloadCRC`.
    package static func header(kind: Kind, flags: Flags = [], length: UInt64, payloadCRC: UInt32) -> [UInt8] {
        var header = ByteWriter(capacity: headerSize)
        header.append(magic)
        header.append(kind.rawValue)
        header.append(flags.rawValue)
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
