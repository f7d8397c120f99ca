import Dispatch
import Foundation
import Synchronization

/// Records of an encrypted store (``FileHeader/Flags/encrypted``): what is sealed, and how it is read.
///
/// ```text
///  record  := header (plaintext, flags bit 0 set) | payload | footer (plaintext)
///  payload := watermark: u64 (plaintext) | unit* | seal unit                           commits, checkpoints
///           | watermark: u64 (plaintext) | node* | seal unit                           nodes
///  commit units:     the version (u64), then one unit per operation (see CommitPayload): an upsert's
///                    unit holds the op, table, key, row length and row; a row's location is its unit
///  checkpoint units: the checkpoint's body (one unit)
///  node:             its header in plaintext, its body one unit (see BTreeNodeFormat)
///  seal unit:        the number of units before it (u64); associated data: its offset, the record's
///                    offset and the header's first 16 bytes (magic, kind, flags, length)
/// ```
/// Every unit's associated data holds its own file offset, so no unit can be moved; the seal unit binds
/// the header and the count of units, so a record cannot be relabelled, shortened or lengthened. The
/// checksums (header, payload, footer) are over the stored bytes as for any record: recovery tells a
/// torn tail from corruption without the key, exactly as for an unencrypted store.
///
/// Units let a reader open one row without decrypting its record: a point read opens one unit.
package enum EncryptedRecord {
    /// Starts a unit in `buffer` (room for its length and nonce) when `encrypted`: returns its start.
    @inline(__always)
    package static func beginUnit(in buffer: RecordBuffer, encrypted: Bool) -> Int? {
        guard encrypted else { return nil }
        let start = buffer.count
        buffer.append(UInt32(0))
        buffer.append(UInt64(0))
        buffer.append(UInt32(0))
        return start
    }

    /// Ends the unit begun at `start` (room for its tag; its length filled in).
    @inline(__always)
    package static func endUnit(_ start: Int?, in buffer: RecordBuffer) {
        guard let start else { return }
        buffer.append(UInt64(0))
        buffer.append(UInt64(0))
        buffer.store(UInt32(buffer.count - start - 4), at: start)
    }

    /// The first 16 bytes of a record header (magic, kind, flags, reserved, length), as the seal unit binds.
    static func headerPrefix(kind: Record.Kind, length: UInt64) -> [UInt8] {
        Array(Record.header(kind: kind, flags: [.watermark, .encrypted], length: length, payloadCRC: 0).prefix(16))
    }

    /// Seals, in place, the units of the record being built in `buffer` (its header at 0, units from
    /// `from` to the end), then appends the record's seal unit. The record will be written at `recordStart`.
    package static func sealUnits(
        in buffer: RecordBuffer, from: Int, recordStart: UInt64, kind: Record.Kind, cipher: StoreCipher
    ) throws(StorageError) {
        var offsets: [Int] = []
        var position = from
        let end = buffer.count
        while position < end {
            offsets.append(position)
            position +=
                Int(UInt32(littleEndian: buffer.bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self))) + 4
        }
        offsets.append(end)
        let units = offsets.count - 1
        let nonces = cipher.reserveNonces(units)
        let base = UnsafeMutableRawPointer(mutating: buffer.bytes.baseAddress!)
        // Sealing is independent per unit: a large record (a bulk insert) is sealed on every core.
        let parts =
            end - from >= parallelSealThreshold ? max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8)) : 1
        let failure = Locked<StorageError?>(nil)
        // Safety: each part seals its own units (disjoint byte ranges of the buffer); the buffer does not
        // move meanwhile (nothing appends until this returns).
        nonisolated(unsafe) let pointer = base
        let starts = offsets
        let seal = { @Sendable (part: Int) in
            let first = units * part / parts
            let last = units * (part + 1) / parts
            for index in first..<last {
                let start = starts[index]
                let unit = UnsafeMutableRawBufferPointer(start: pointer + start, count: starts[index + 1] - start)
                do throws(StorageError) {
                    try cipher.seal(
                        unit, at: recordStart + UInt64(start), nonce: (nonces.session, nonces.counter + UInt32(index)))
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                    return
                }
            }
        }
        if parts == 1 {
            seal(0)
        } else {
            DispatchQueue.concurrentPerform(iterations: parts, execute: seal)
        }
        if let error = failure.withLock({ $0 }) { throw error }
        try appendSeal(to: buffer, count: UInt64(units), recordStart: recordStart, kind: kind, cipher: cipher)
    }

    /// Records at least this large are sealed on several threads.
    static let parallelSealThreshold = 1 << 20

    /// A whole encrypted record of `kind` to be written at `recordStart`: header, watermark, `body` (sealed
    /// as one unit when `sealingBody`, else as it is: a nodes record's nodes, whose bodies are units), the
    /// seal unit, footer.
    package static func frame(
        kind: Record.Kind, body: [UInt8], sealingBody: Bool, watermark: UInt64, at recordStart: UInt64,
        cipher: StoreCipher
    ) throws(StorageError) -> [UInt8] {
        let buffer = RecordBuffer(capacity: body.count + Record.overhead + 128)
        buffer.append([UInt8](repeating: 0, count: Record.headerSize))
        buffer.append(watermark)
        let bodyStart = buffer.count
        if sealingBody {
            let unit = beginUnit(in: buffer, encrypted: true)
            buffer.append(body)
            endUnit(unit, in: buffer)
            try sealUnits(in: buffer, from: bodyStart, recordStart: recordStart, kind: kind, cipher: cipher)
        } else {
            buffer.append(body)
            try appendSeal(to: buffer, count: 0, recordStart: recordStart, kind: kind, cipher: cipher)
        }
        let length = buffer.count - Record.headerSize
        let crc = CRC32C.checksum(buffer.bytes(at: Record.headerSize, count: length))
        buffer.append(Record.footer(length: UInt64(length), payloadCRC: crc))
        let header = Record.header(
            kind: kind, flags: [.watermark, .encrypted], length: UInt64(length), payloadCRC: crc)
        for (i, byte) in header.enumerated() { buffer.store(byte, at: i) }
        return Array(buffer.bytes)
    }

    /// Calls `body` with the body of the checkpoint record `entry` (its one unit, opened).
    package static func withCheckpointBody<R>(
        _ entry: LogScanner.Entry, in file: UnsafeRawBufferPointer, cipher: StoreCipher, path: String,
        _ body: (UnsafeRawBufferPointer) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        let (units, count) = try openSeal(of: entry, in: file, cipher: cipher, path: path)
        guard count == 1, let size = StoreCipher.unitSize(at: UnsafeRawBufferPointer(rebasing: file[units])),
            size == units.count
        else { throw StoreCipher.damaged(path, UInt64(entry.offset), "checkpoint", "it does not hold one unit") }
        return try cipher.withOpenedUnit(
            in: UnsafeRawBufferPointer(rebasing: file[..<units.upperBound]), at: UInt64(units.lowerBound), path: path,
            what: "checkpoint", body)
    }

    /// Appends the seal unit of a record whose header is at `buffer[0]` and that holds `count` units.
    package static func appendSeal(
        to buffer: RecordBuffer, count: UInt64, recordStart: UInt64, kind: Record.Kind, cipher: StoreCipher
    ) throws(StorageError) {
        let start = buffer.count
        let length = UInt64(start + StoreCipher.sealUnitSize - Record.headerSize)
        let unit = beginUnit(in: buffer, encrypted: true)
        buffer.append(count)
        endUnit(unit, in: buffer)
        let context = StoreCipher.sealContext(
            recordStart: recordStart, header: headerPrefix(kind: kind, length: length))
        try cipher.seal(
            UnsafeMutableRawBufferPointer(mutating: buffer.bytes(at: start, count: StoreCipher.sealUnitSize)),
            at: recordStart + UInt64(start), context: context)
    }

    /// Checks the seal unit of the record `entry` in `file` (the file's bytes from offset 0): returns the
    /// range of its units (between the watermark and the seal unit) and their count.
    /// - Throws: `.corrupted` with the offset when the record is not sealed by this key.
    package static func openSeal(
        of entry: LogScanner.Entry, in file: UnsafeRawBufferPointer, cipher: StoreCipher, path: String
    ) throws(StorageError) -> (units: Range<Int>, count: UInt64) {
        let payloadEnd = entry.payload.upperBound
        guard Record.Flags(rawValue: entry.flags).contains(.encrypted),
            let kind = Record.Kind(rawValue: entry.kind),
            entry.payload.count >= StoreCipher.sealUnitSize
        else {
            throw StorageError(
                .corrupted,
                "The record at byte \(entry.offset) of the encrypted store '\(path)' is not encrypted: the file was "
                    + "changed by something other than ActorStore. Restore it from a backup.",
                offset: FileOffset(entry.offset))
        }
        let sealStart = payloadEnd - StoreCipher.sealUnitSize
        let length = UInt64(payloadEnd - entry.offset - Record.headerSize)
        let context = StoreCipher.sealContext(
            recordStart: UInt64(entry.offset), header: headerPrefix(kind: kind, length: length))
        let count = try cipher.withOpenedUnit(
            in: UnsafeRawBufferPointer(rebasing: file[..<payloadEnd]), at: UInt64(sealStart),
            size: StoreCipher.sealUnitSize, path: path, what: "record", context: context
        ) { (plain) throws(StorageError) in
            UInt64(littleEndian: plain.loadUnaligned(as: UInt64.self))
        }
        return (entry.payload.lowerBound..<sealStart, count)
    }

    /// Calls `body` with each unit of `units` (a record's, see ``openSeal(of:in:cipher:path:)``) opened: its
    /// file offset, its size and its plaintext (valid during the call).
    /// - Throws: `.corrupted` with the offset when a unit does not authenticate or the count is wrong.
    package static func forEachUnit(
        in file: UnsafeRawBufferPointer, _ units: Range<Int>, count: UInt64, cipher: StoreCipher, path: String,
        _ body: (_ offset: Int, _ size: Int, _ plaintext: UnsafeRawBufferPointer) throws(StorageError) -> Void
    ) throws(StorageError) {
        var position = units.lowerBound
        var seen: UInt64 = 0
        let bytes = UnsafeRawBufferPointer(rebasing: file[..<units.upperBound])
        while position < units.upperBound {
            guard let size = StoreCipher.unitSize(at: UnsafeRawBufferPointer(rebasing: bytes[position...])) else {
                throw StoreCipher.damaged(path, UInt64(position), "unit", "its length runs past its record")
            }
            try cipher.withOpenedUnit(in: bytes, at: UInt64(position), path: path, what: "unit") {
                (plain) throws(StorageError) in try body(position, size, plain)
            }
            position += size
            seen += 1
        }
        guard seen == count else {
            throw StoreCipher.damaged(path, UInt64(units.lowerBound), "record", "it holds \(seen) units, not \(count)")
        }
    }

    /// Calls `body` with the row whose location (its upsert unit) is `location`, decrypted. The row is valid
    /// during the call only.
    package static func withRow<R>(
        at location: RowLocation, in file: UnsafeRawBufferPointer, cipher: StoreCipher, path: String,
        _ body: (RowView) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        try withRowBytes(at: location, in: file, cipher: cipher, path: path) { (bytes) throws(StorageError) in
            try body(try RowView(bytes))
        }
    }

    /// ``withRow(at:in:cipher:path:_:)``, given the row's encoded bytes.
    package static func withRowBytes<R>(
        at location: RowLocation, in file: UnsafeRawBufferPointer, cipher: StoreCipher, path: String,
        _ body: (UnsafeRawBufferPointer) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        // A small object (most) is opened on the stack, a larger one into the heap.
        var stack = StackBuffer()
        return try withUnsafeMutableBytes(of: &stack) { (buffer) throws(StorageError) -> R in
            if let plaintext = try cipher.openUnit(
                in: file, at: location.offset, size: Int(location.length), path: path, what: "row", into: buffer)
            {
                return try row(plaintext)
            }
            let (storage, plaintext) = try cipher.openUnit(
                in: file, at: location.offset, size: Int(location.length), path: path, what: "row")
            defer { storage.deallocate() }
            return try row(plaintext)
        }
        func row(_ plaintext: UnsafeRawBufferPointer) throws(StorageError) -> R {
            guard plaintext.count >= CommitPayload.upsertHeaderSize else {
                throw StoreCipher.damaged(path, location.offset, "row", "it is too short")
            }
            return try body(UnsafeRawBufferPointer(rebasing: plaintext[CommitPayload.upsertHeaderSize...]))
        }
    }
}

/// 192 bytes on the stack: room for the plaintext of most objects' units.
private struct StackBuffer {
    var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    var more: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    var rest: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
}

/// Rows decrypted for the duration of one write operation (see ``WriteTransaction``): ``DatabaseState``
/// reads rows through closures that return a ``RowView``, which must stay valid until the operation ends.
final class ScratchRows {
    // `@exclusivity(unchecked)`: each instance has one owner that uses it synchronously on one thread at a
    // time (a write transaction, under the write lock; an open's or a compaction's replay; a tail replay),
    // and no call holds an access to it across another (the checks were a measurable share of every row
    // update, which empties it).
    @exclusivity(unchecked) private var buffers: [UnsafeMutableRawBufferPointer] = []

    deinit { empty() }

    /// The row at `location`, decrypted into memory this object keeps until ``empty()``.
    func keep(
        cipher: StoreCipher, region: MappedRegion, location: RowLocation, path: String
    ) throws(StorageError)
        -> RowView
    {
        let buffer = try EncryptedRecord.withRowBytes(
            at: location, in: region.bytes(at: 0, count: region.length), cipher: cipher, path: path
        ) { (row) throws(StorageError) -> UnsafeMutableRawBufferPointer in
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(row.count, 1), alignment: 16)
            copy.copyMemory(from: row)
            return UnsafeMutableRawBufferPointer(rebasing: copy[..<row.count])
        }
        buffers.append(buffer)
        return try RowView(UnsafeRawBufferPointer(buffer))
    }

    func empty() {
        guard !buffers.isEmpty else { return }
        for buffer in buffers { buffer.deallocate() }
        buffers.removeAll(keepingCapacity: true)
    }
}
