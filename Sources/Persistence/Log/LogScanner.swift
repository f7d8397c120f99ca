/// Walks the records of a store file, verifying every checksum, and classifies what follows the last good one.
///
/// Damage after the last good record is either a *torn tail* (a crash interrupted writes that were never
/// acknowledged: cut the file there) or *corruption* (bytes that had been durable changed: refuse to open,
/// name the offset, leave the file alone). Two kinds of evidence decide:
///
/// - **Vouching.** A later complete record whose durability watermark (see ``Record``) lies past the damage
///   proves that the damaged bytes had been synced before that record was written: corruption, always.
/// - **The shape of a crash.** A power loss persists unsynced pages in any order, and a page that was not
///   written back holds what the file held there before: zeros (the log only ever appends into zero-filled
///   space). So damage a crash can explain has a zero 512-byte sector piece where the record's header, its
///   footer, or a whole sector of its payload should be. A flipped bit or garbage has no such hole.
///
/// | what is found at offset `o`                                   | verdict                         |
/// |---------------------------------------------------------------|---------------------------------|
/// | a valid header, payload and footer                            | a record; continue after it     |
/// | fewer than 24 bytes left                                      | torn tail at `o`                |
/// | valid header whose payload runs past the end of the file      | torn tail at `o`, unless the file ends with that record's own footer (bytes were removed from inside it): corruption |
/// | any damage that a later record vouches for                    | corruption                      |
/// | valid header and payload, bad or cut-off footer: crash-shaped, or nothing valid after it | a record (footer rewritten), torn tail after it |
/// | bad header, bad payload or both: crash-shaped                 | torn tail at `o`                |
/// | bad payload, valid matching footer                            | corruption at `o`               |
/// | bad header, and the file ends with a valid footer that spans back exactly to `o` | corruption at `o` |
/// | other damage with a complete record later                     | corruption                      |
/// | other damage, nothing valid after                             | torn tail at `o`                |
///
/// "A complete record later" means some later offset holds a valid header whose payload checksum also
/// verifies. A zero-filled or random tail therefore never passes for a record (that needs a magic number
/// and two matching CRC-32Cs), and a single flipped bit anywhere in a committed record is reported, because
/// its bytes are not crash-shaped. A zeroed sector inside acknowledged data is reported when a later record
/// vouches for it; without one (the last records of a file, or a file written before watermarks existed) it
/// reads as the crash it looks like, and open cuts the log there (``Outcome/discardedRecords`` counts the
/// complete records that went with it).
package enum LogScanner {
    /// A verified record.
    package struct Entry: Sendable, Equatable {
        /// Offset of the record's header in the file.
        package var offset: Int
        package var kind: UInt8
        /// The header's flags byte (see ``Record/Flags``).
        package var flags: UInt8
        /// The commit body's byte range in the file: the payload after its watermark, if it has one.
        package var payload: Range<Int>
        /// Set for a nodes record (format 2) whose payload does not match its checksum, the only damage the
        /// scan passes on instead of throwing (see ``scan(_:from:path:visit:)``).
        package var payloadIsDamaged = false
        /// The record's durability watermark, if it carries one (see ``Record``).
        package var watermark: UInt64?
        package var end: Int { payload.upperBound + Record.footerSize }
    }

    /// What the scan found after the last record.
    package struct Outcome: Sendable, Equatable {
        /// End of the last valid record: the file's committed length.
        package var validEnd: Int
        /// Set when bytes after `validEnd` are a torn write to discard (the offset where they start).
        package var tornTailAt: Int?
        /// Set when the last record's footer was damaged (offset of that footer) and must be rewritten.
        package var damagedFooterAt: Int?
        /// Complete records after the torn tail's start that go with it: records a crash persisted although
        /// an earlier one was not (never acknowledged, since no record vouches for the damage).
        package var discardedRecords = 0
    }

    /// Scans `file` (the whole file's bytes) from `start`, calling `visit` for each verified record in order.
    ///
    /// - Throws: `.corrupted` with the offset of the damage; whatever `visit` throws.
    /// - Complexity: O(file size); on damage, the search for later records is O(tail size).
    ///
    /// - Parameter trustedNodes: the bytes of a nodes record whose payload is not checksummed: the
    ///   checkpoint record open starts from vouches that it was durable, and each node is checked when it is
    ///   loaded, so open reads no node. Only that record: another nodes record before the checkpoint record
    ///   may be one a checkpoint did not finish writing (see
    ///   ``StorageEngine/writeCheckpoint(holdingWriteLock:syncing:)``), and is checked.
    package static func scan(
        _ file: UnsafeRawBufferPointer, from start: Int, path: String, trustedNodes: Range<Int>? = nil,
        visit: (Entry) throws(StorageError) -> Void
    ) throws(StorageError) -> Outcome {
        let size = file.count
        var o = start
        while o < size {
            guard size - o >= Record.headerSize else { return Outcome(validEnd: o, tornTailAt: o) }
            guard let header = Record.parseHeader(slice(file, o, Record.headerSize)) else {
                let later = laterRecords(file, after: o, damage: o)
                if later.vouched { throw corruption(path, o, "a record header is damaged") }
                if hasUnwrittenSector(file, o..<(o + Record.headerSize)) {
                    return Outcome(validEnd: o, tornTailAt: o, discardedRecords: later.count)
                }
                if lastFooterSpans(file, back: o) || later.count > 0 {
                    throw corruption(path, o, "a record header is damaged")
                }
                return Outcome(validEnd: o, tornTailAt: o)
            }
            let payloadStart = o + Record.headerSize
            let length = Int(header.length)
            // A crash leaves a record short by cutting it, never by removing bytes from its middle: a file that
            // ends with this record's own footer before the record's end lost bytes inside it (an outside edit).
            if length > size - payloadStart - Record.footerSize, size - o >= Record.overhead,
                let last = Record.parseFooter(slice(file, size - Record.footerSize, Record.footerSize)),
                last.length == header.length, last.payloadCRC == header.payloadCRC
            {
                throw corruption(path, o, "bytes are missing from inside a record")
            }
            guard length <= size - payloadStart else {
                // Records after this one within the file while it runs past the end: it was complete once if
                // one of them vouches for it (bytes were removed from it, or its length is damaged).
                if laterRecords(file, after: o, damage: o).vouched {
                    throw corruption(path, o, "a record runs past the end of the file")
                }
                return Outcome(validEnd: o, tornTailAt: o)
            }
            let payloadEnd = payloadStart + length
            let end = payloadEnd + Record.footerSize
            let payloadOK =
                (header.kind == Record.Kind.nodes.rawValue && trustedNodes == o..<end)
                || CRC32C.checksum(slice(file, payloadStart, length)) == header.payloadCRC
            let footer = end <= size ? Record.parseFooter(slice(file, payloadEnd, Record.footerSize)) : nil
            let footerOK = footer.map { $0.length == header.length && $0.payloadCRC == header.payloadCRC } ?? false
            switch (payloadOK, footerOK) {
            case (true, true):
                try visit(try entry(file, o, header, payloadStart..<payloadEnd, path))
                o = end
            case (true, false):
                let later = laterRecords(file, after: end - 1, damage: payloadEnd)
                if later.vouched
                    || (later.count > 0 && !hasUnwrittenSector(file, payloadEnd..<end, atRecordStart: false))
                {
                    throw corruption(path, payloadEnd, "a record footer is damaged")
                }
                try visit(try entry(file, o, header, payloadStart..<payloadEnd, path))
                return Outcome(
                    validEnd: end, tornTailAt: end < size ? end : nil, damagedFooterAt: payloadEnd,
                    discardedRecords: later.count)
            case (false, true) where header.kind == Record.Kind.nodes.rawValue:
                // A complete nodes record whose bytes changed since: checkpoint nodes repeat what the commits
                // hold, so the log stays whole. The visitor decides (open goes on; verify() reports it).
                var damaged = try entry(file, o, header, payloadStart..<payloadEnd, path)
                damaged.payloadIsDamaged = true
                try visit(damaged)
                o = end
            case (false, true):
                let later = laterRecords(file, after: o, damage: o)
                if !later.vouched && hasUnwrittenSector(file, o..<end) {
                    return Outcome(validEnd: o, tornTailAt: o, discardedRecords: later.count)
                }
                throw corruption(path, o, "a record's contents do not match its checksum")
            case (false, false):
                let later = laterRecords(file, after: o, damage: o)
                if later.vouched || (later.count > 0 && !hasUnwrittenSector(file, o..<end)) {
                    throw corruption(path, o, "a record's contents do not match its checksum")
                }
                return Outcome(validEnd: o, tornTailAt: o, discardedRecords: later.count)
            }
        }
        return Outcome(validEnd: o, tornTailAt: nil)
    }

    /// The entry of the verified record at `offset`, its watermark split off the payload.
    /// - Throws: `.corrupted` if the record is flagged as holding a watermark but is too short for one.
    private static func entry(
        _ file: UnsafeRawBufferPointer, _ offset: Int, _ header: Record.Header, _ payload: Range<Int>, _ path: String
    ) throws(StorageError) -> Entry {
        guard Record.Flags(rawValue: header.flags).contains(.watermark) else {
            return Entry(offset: offset, kind: header.kind, flags: header.flags, payload: payload)
        }
        guard payload.count >= Record.watermarkSize else {
            throw StorageError(
                .corrupted,
                "'\(path)' has a record at byte \(offset) too short for the watermark its header announces. "
                    + "The file is damaged or was written by a faulty program; restore it from a backup.",
                offset: FileOffset(offset))
        }
        let watermark = file.loadUnaligned(fromByteOffset: payload.lowerBound, as: UInt64.self).littleEndian
        return Entry(
            offset: offset, kind: header.kind, flags: header.flags,
            payload: (payload.lowerBound + Record.watermarkSize)..<payload.upperBound, watermark: watermark)
    }

    private static func corruption(_ path: String, _ offset: Int, _ what: String) -> StorageError {
        StorageError(
            .corrupted,
            "'\(path)' is damaged at byte \(offset): \(what), and committed data follows it, so this is not an "
                + "interrupted write. The file was not modified. Restore it from a backup or a copy made with "
                + "writeCopy(to:).",
            offset: FileOffset(offset))
    }

    @inline(__always)
    private static func slice(_ file: UnsafeRawBufferPointer, _ offset: Int, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: file[offset..<(offset + count)])
    }

    /// Whether the file ends with a valid footer of a record that would start exactly at `offset`.
    private static func lastFooterSpans(_ file: UnsafeRawBufferPointer, back offset: Int) -> Bool {
        let size = file.count
        guard size - offset >= Record.overhead,
            let footer = Record.parseFooter(slice(file, size - Record.footerSize, Record.footerSize))
        else { return false }
        return UInt64(size - offset - Record.overhead) == footer.length
    }

    /// The complete records (valid header, length in bounds, valid payload CRC) that start after `offset`:
    /// how many, and whether one vouches for `damage` (its watermark, capped at its own offset, lies past it).
    /// Stops at the first record that vouches.
    private static func laterRecords(
        _ file: UnsafeRawBufferPointer, after offset: Int, damage: Int
    ) -> (count: Int, vouched: Bool) {
        let size = file.count
        var p = offset + 1
        var count = 0
        let magic0 = UInt8(truncatingIfNeeded: Record.magic)
        while p + Record.overhead <= size {
            if file[p] == magic0, let header = Record.parseHeader(slice(file, p, Record.headerSize)),
                Int(header.length) <= size - p - Record.overhead,
                CRC32C.checksum(slice(file, p + Record.headerSize, Int(header.length))) == header.payloadCRC
            {
                count += 1
                if Record.Flags(rawValue: header.flags).contains(.watermark),
                    header.length >= UInt64(Record.watermarkSize)
                {
                    let watermark = file.loadUnaligned(fromByteOffset: p + Record.headerSize, as: UInt64.self)
                        .littleEndian
                    // A record vouches only for bytes before itself (a copied record keeps its old watermark).
                    if min(watermark, UInt64(p)) > UInt64(damage) { return (count, true) }
                }
            }
            p += 1
        }
        return (count, false)
    }

    /// Whether the payload `range` of a damaged nodes record has a piece a crash left unwritten (see
    /// ``hasUnwrittenSector(_:_:atRecordStart:)``): a checkpoint that wrote the record's frame and not all
    /// of its payload (see ``StorageEngine/writeCheckpoint(holdingWriteLock:syncing:)``), rather than
    /// bytes that changed after they were written.
    package static func looksUnfinished(_ file: UnsafeRawBufferPointer, payload range: Range<Int>) -> Bool {
        hasUnwrittenSector(file, range, atRecordStart: false)
    }

    /// Whether `range` (a record's bytes, clamped to the file, starting at the record's first byte) has a
    /// piece a crash left unwritten: the part of some 512-byte sector that falls in `range` is all zero,
    /// where that part is a whole sector, or holds the range's first byte, or is at least 4 bytes long and
    /// holds its last byte. A record's first 4 bytes are the magic number, none of whose bytes is zero, so a
    /// written record never starts with a zero byte: a record starting 1 to 3 bytes before a sector boundary
    /// whose first sector was lost (a power loss writes sectors, not bytes) is recognised by those 1 to 3
    /// zeros. Its last 4 bytes are a checksum, so a written record ends with 4 zeros only by a 2^-32 chance.
    /// `range` may also start inside a record (`atRecordStart` false): then the piece holding its first
    /// byte needs 4 bytes, as the last one does.
    private static func hasUnwrittenSector(
        _ file: UnsafeRawBufferPointer, _ range: Range<Int>, atRecordStart: Bool = true
    ) -> Bool {
        let sector = 512
        let top = min(range.upperBound, file.count)
        var block = range.lowerBound / sector * sector
        while block < top {
            let low = max(block, range.lowerBound)
            let high = min(block + sector, top)
            let first = low == range.lowerBound && (atRecordStart || high - low >= 4)
            let last = high == range.upperBound && high - low >= 4
            let counts = high - low == sector || first || last
            if counts && slice(file, low, high - low).allSatisfy({ $0 == 0 }) { return true }
            block += sector
        }
        return false
    }
}
