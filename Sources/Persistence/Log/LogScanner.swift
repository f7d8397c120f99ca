/// Walks the records of a store file, verifying every checksum, and classifies what follows the last good one.
///
/// The rules (the file's bytes after the header are `records* tail`):
///
/// | what is found at offset `o`                                   | verdict                         |
/// |---------------------------------------------------------------|---------------------------------|
/// | a valid header, payload and footer                            | a record; continue after it     |
/// | fewer than 24 bytes left                                      | torn tail at `o`                |
/// | valid header whose payload runs past the end of the file      | torn tail at `o`                |
/// | valid header and payload, bad or cut-off footer, nothing valid after it | a record (footer rewritten) |
/// | valid header and payload, bad footer, a valid record after    | corruption at the footer        |
/// | valid header, bad payload, valid matching footer              | corruption at `o` (a complete record was damaged), unless an aligned 4 KiB page of the payload is all zero: a hole left by a crash, torn tail |
/// | valid header, bad payload, bad footer, nothing valid after    | torn tail at `o`                |
/// | bad header, and the file ends with a valid footer that spans back exactly to `o` | corruption at `o` |
/// | bad header (or bad payload and footer), a valid record later  | corruption at `o`               |
/// | bad header, nothing valid after                               | torn tail at `o`                |
///
/// "A valid record later" means some later offset holds a valid header whose payload checksum also
/// verifies. A zero-filled or random tail therefore never passes for a record (that needs a magic number
/// and two matching CRC-32Cs), and a single flipped bit anywhere in a committed record is reported, because
/// either a later record or the record's own footer vouches that the damaged bytes had been written whole.
package enum LogScanner {
    /// A verified record.
    package struct Entry: Sendable, Equatable {
        /// Offset of the record's header in the file.
        package var offset: Int
        package var kind: UInt8
        /// The header's flags byte (reserved: must be 0 in this format version).
        package var flags: UInt8
        /// The payload's byte range in the file.
        package var payload: Range<Int>
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
    }

    /// Scans `file` (the whole file's bytes) from `start`, calling `visit` for each verified record in order.
    ///
    /// - Throws: `.corrupted` with the offset of the damage; whatever `visit` throws.
    /// - Complexity: O(file size); on damage, the search for a later valid record is O(tail size).
    package static func scan(
        _ file: UnsafeRawBufferPointer, from start: Int, path: String,
        visit: (Entry) throws(StorageError) -> Void
    ) throws(StorageError) -> Outcome {
        let size = file.count
        var o = start
        while o < size {
            guard size - o >= Record.headerSize else { return Outcome(validEnd: o, tornTailAt: o) }
            guard let header = Record.parseHeader(slice(file, o, Record.headerSize)) else {
                if lastFooterSpans(file, back: o) || laterRecordExists(file, after: o) {
                    throw corruption(path, o, "a record header is damaged")
                }
                return Outcome(validEnd: o, tornTailAt: o)
            }
            let payloadStart = o + Record.headerSize
            let length = Int(header.length)
            guard length <= size - payloadStart else { return Outcome(validEnd: o, tornTailAt: o) }
            let payloadEnd = payloadStart + length
            let end = payloadEnd + Record.footerSize
            let payloadOK = CRC32C.checksum(slice(file, payloadStart, length)) == header.payloadCRC
            let footer = end <= size ? Record.parseFooter(slice(file, payloadEnd, Record.footerSize)) : nil
            let footerOK = footer.map { $0.length == header.length && $0.payloadCRC == header.payloadCRC } ?? false
            switch (payloadOK, footerOK) {
            case (true, true):
                try visit(Entry(offset: o, kind: header.kind, flags: header.flags, payload: payloadStart..<payloadEnd))
                o = end
            case (true, false):
                if laterRecordExists(file, after: end - 1) {
                    throw corruption(path, payloadEnd, "a record footer is damaged")
                }
                try visit(Entry(offset: o, kind: header.kind, flags: header.flags, payload: payloadStart..<payloadEnd))
                return Outcome(validEnd: end, tornTailAt: end < size ? end : nil, damagedFooterAt: payloadEnd)
            case (false, true):
                if hasZeroPage(file, payloadStart..<payloadEnd) && !laterRecordExists(file, after: o) {
                    return Outcome(validEnd: o, tornTailAt: o)
                }
                throw corruption(path, o, "a record's contents do not match its checksum")
            case (false, false):
                if laterRecordExists(file, after: o) {
                    throw corruption(path, o, "a record's contents do not match its checksum")
                }
                return Outcome(validEnd: o, tornTailAt: o)
            }
        }
        return Outcome(validEnd: o, tornTailAt: nil)
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

    /// Whether a complete record (valid header, length in bounds, valid payload CRC) starts after `offset`.
    private static func laterRecordExists(_ file: UnsafeRawBufferPointer, after offset: Int) -> Bool {
        let size = file.count
        var p = offset + 1
        let magic0 = UInt8(truncatingIfNeeded: Record.magic)
        while p + Record.overhead <= size {
            if file[p] == magic0, let header = Record.parseHeader(slice(file, p, Record.headerSize)),
                Int(header.length) <= size - p - Record.overhead,
                CRC32C.checksum(slice(file, p + Record.headerSize, Int(header.length))) == header.payloadCRC
            {
                return true
            }
            p += 1
        }
        return false
    }

    /// Whether some 4 KiB-aligned page that lies wholly inside `range` is all zero: the mark of a block the
    /// file system allocated but a crash never wrote.
    private static func hasZeroPage(_ file: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        let page = 4096
        var p = (range.lowerBound + page - 1) / page * page
        while p + page <= range.upperBound {
            if slice(file, p, page).allSatisfy({ $0 == 0 }) { return true }
            p += page
        }
        return false
    }
}
