import Foundation

/// Applies the operations of committed records to a state: how open rebuilds the database from the log,
/// and how compaction brings its copy up to date with commits that arrived while it ran.
package enum Replay {
    /// What replayed commits changed, for open's check of links after a checkpoint
    /// (``DatabaseState/hasDanglingLinks(after:)``).
    struct Touched {
        var upserted: [(TableID, ObjectKey)] = []
        var deleted: [(TableID, ObjectKey)] = []
        /// A table was cleared or the schema changed: only a full check will do.
        var needsFullCheck = false

        /// Adds the objects a commit body (already replayed, so well-formed) upserts and deletes.
        mutating func add(_ payload: UnsafeRawBufferPointer) {
            var r = ByteReader(payload)
            _ = r.uint64()
            addOps(&r)
        }

        /// Adds the objects the operations at `r` (to its end) upsert and delete.
        mutating func addOps(_ r: inout ByteReader) {
            while !r.isAtEnd && !r.overrun {
                switch CommitPayload.Op(rawValue: r.uint8()) {
                case .upsert:
                    upserted.append((TableID(r.uint32()), ObjectKey(r.int64())))
                    r.skip(Int(r.uint32()))
                case .delete:
                    deleted.append((TableID(r.uint32()), ObjectKey(r.int64())))
                case .schema, .clear, nil:
                    needsFullCheck = true
                    return
                }
            }
        }
    }

    /// Applies one commit body (found at `payloadOffset` in the file, in the record at `recordOffset`) to `state`.
    ///
    /// - Parameter readRow: the bytes of an existing row, for index maintenance.
    /// - Throws: `.corrupted` if the payload is malformed or out of sequence.
    package static func apply(
        commit payload: UnsafeRawBufferPointer, at payloadOffset: Int, record recordOffset: Int,
        to state: inout DatabaseState, token: MutationToken, path: String,
        readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        var r = ByteReader(payload)
        let version = try readVersion(&r, state: state, record: recordOffset, path: path)
        do throws(StorageError) {
            while !r.isAtEnd {
                try applyOp(&r, state: &state, token: token, record: recordOffset, path: path, readRow: readRow) {
                    start, length, _ in RowLocation(offset: UInt64(payloadOffset + start), length: UInt32(length))
                }
            }
        } catch let error where error.code != .corrupted {
            throw CommitPayload.malformed(path, recordOffset, "content (\(error.message))")
        }
        state.version = version
        state.endOffset = UInt64(payloadOffset + payload.count + Record.footerSize)
    }

    /// ``apply(commit:at:record:to:token:path:readRow:)`` for the record `entry` of an encrypted store
    /// (see ``EncryptedRecord``): its seal and every unit are checked; a row's location is its unit.
    /// `file` is the file's bytes from offset 0. `touched`, when given, collects what the commit wrote.
    package static func apply(
        encrypted entry: LogScanner.Entry, in file: UnsafeRawBufferPointer, cipher: StoreCipher,
        to state: inout DatabaseState, token: MutationToken, path: String,
        readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        var touched: Touched?
        try apply(
            encrypted: entry, in: file, cipher: cipher, to: &state, token: token, path: path, touched: &touched,
            readRow: readRow)
    }

    static func apply(
        encrypted entry: LogScanner.Entry, in file: UnsafeRawBufferPointer, cipher: StoreCipher,
        to state: inout DatabaseState, token: MutationToken, path: String, touched: inout Touched?,
        readRow: (RowLocation) throws(StorageError) -> RowView
    ) throws(StorageError) {
        let recordOffset = entry.offset
        let (units, count) = try EncryptedRecord.openSeal(of: entry, in: file, cipher: cipher, path: path)
        var version: Version?
        do throws(StorageError) {
            try EncryptedRecord.forEachUnit(in: file, units, count: count, cipher: cipher, path: path) {
                (offset, size, plain) throws(StorageError) in
                var r = ByteReader(plain)
                guard version != nil else {
                    version = try readVersion(&r, state: state, record: recordOffset, path: path)
                    guard r.isAtEnd else { throw CommitPayload.malformed(path, recordOffset, "version unit") }
                    return
                }
                try applyOp(&r, state: &state, token: token, record: recordOffset, path: path, readRow: readRow) {
                    _, _, _ in RowLocation(offset: UInt64(offset), length: UInt32(size))
                }
                guard r.isAtEnd else { throw CommitPayload.malformed(path, recordOffset, "operation unit") }
                var ops = ByteReader(plain)
                touched?.addOps(&ops)
            }
        } catch let error where error.code != .corrupted {
            throw CommitPayload.malformed(path, recordOffset, "content (\(error.message))")
        }
        guard let version else { throw CommitPayload.malformed(path, recordOffset, "version") }
        state.version = version
        state.endOffset = UInt64(entry.end)
    }

    /// Reads a commit's version and checks it follows `state`'s.
    private static func readVersion(
        _ r: inout ByteReader, state: DatabaseState, record recordOffset: Int, path: String
    ) throws(StorageError) -> Version {
        let version = Version(r.uint64())
        // A compacted file starts with one record holding a whole version, whatever its number.
        let isBase = state.version == .zero && recordOffset == FileHeader.size && version > .zero
        guard version <= .max else {
            throw StorageError(
                .corrupted,
                "'\(path)' has a commit at byte \(recordOffset) for \(version), past the largest version a store "
                    + "can reach. The file is damaged or was written by a faulty program; restore it from a backup.",
                offset: FileOffset(recordOffset))
        }
        guard !r.overrun, version == state.version.next || isBase else {
            throw StorageError(
                .corrupted,
                "'\(path)' has a commit at byte \(recordOffset) for \(version) where \(state.version.next) was expected. "
                    + "Records are out of sequence; restore the file from a backup.",
                offset: FileOffset(recordOffset))
        }
        return version
    }

    /// Applies the operation at `r`. `locate` gives an upsert's row location from the row's position in
    /// `r`, its length and the reader.
    private static func applyOp(
        _ r: inout ByteReader, state: inout DatabaseState, token: MutationToken, record recordOffset: Int,
        path: String, readRow: (RowLocation) throws(StorageError) -> RowView,
        locate: (_ start: Int, _ length: Int, _ reader: ByteReader) -> RowLocation
    ) throws(StorageError) {
        guard let op = CommitPayload.Op(rawValue: r.uint8()) else {
            throw CommitPayload.malformed(path, recordOffset, "operation code")
        }
        switch op {
        case .upsert:
            let table = TableID(r.uint32())
            let key = ObjectKey(r.int64())
            // The table's next key is one past its largest key: the largest key must leave room.
            guard key.rawValue < Int64.max else {
                throw CommitPayload.malformed(path, recordOffset, "object key")
            }
            let length = Int(r.uint32())
            let start = r.position
            let bytes = r.bytes(length)
            guard !r.overrun else { throw CommitPayload.malformed(path, recordOffset, "row") }
            let location = locate(start, length, r)
            try state.applyUpsert(
                table: table, key: key, location: location, newRow: try RowView(bytes), token: token,
                readRow: readRow)
        case .delete:
            let table = TableID(r.uint32())
            let key = ObjectKey(r.int64())
            guard !r.overrun, let location = state.tables[table]?.rows.value(forKey: key) else {
                throw CommitPayload.malformed(path, recordOffset, "delete of a missing object")
            }
            try state.applyDelete(table: table, key: key, oldRow: try readRow(location), token: token)
        case .schema:
            let (schemaVersion, tables) = try CommitPayload.readSchema(&r, at: recordOffset, path: path)
            try validate(tables, path: path, at: recordOffset)
            try state.applySchema(tables, version: schemaVersion, token: token, readRow: readRow)
        case .clear:
            let table = TableID(r.uint32())
            guard !r.overrun, let rows = state.tables[table]?.rows else {
                throw CommitPayload.malformed(path, recordOffset, "clear of a missing table")
            }
            for (key, location) in rows {
                try state.applyDelete(table: table, key: key, oldRow: try readRow(location), token: token)
            }
        }
    }

    /// Checks a schema read from a file as a live schema change is checked (``SchemaValidation``), and that
    /// no two tables share an id: the rest of the engine relies on both (a row never has more columns than
    /// ``RowFormat/maxColumns``, a link names a table, …), and a record whose checksum is valid may still
    /// hold a schema no ActorStore would write.
    /// - Throws: `.corrupted` naming the problem.
    static func validate(
        _ tables: [CommitPayload.TableEntry], path: String, at recordOffset: Int
    ) throws(StorageError) {
        var ids = Set<TableID>()
        for table in tables where !ids.insert(table.id).inserted {
            throw CommitPayload.malformed(path, recordOffset, "schema (two tables have the id \(table.id))")
        }
        do throws(StorageError) {
            try SchemaValidation.validate(tables.map(\.schema))
        } catch {
            throw CommitPayload.malformed(path, recordOffset, "schema (\(error.message))")
        }
    }
}

/// A growable byte buffer with a stable address between appends: the record a write transaction builds.
///
/// Reserved header space at the front means the finished buffer *is* the record (header, payload, footer),
/// and a byte's index in the buffer equals its offset from the record's start in the file.
package final class RecordBuffer {
    // The stored properties are private, and `count` is read from other modules through a computed
    // property: a class's stored property visible outside the module gets a dynamic exclusivity check
    // (`swift_beginAccess`, a thread-local access set) on every access, which were about half the cost
    // of `reserve`, called several times per inserted row. With every access in this file, the
    // whole-module optimizer proves that no two accesses overlap and drops the checks.
    private var pointer: UnsafeMutableRawPointer
    private var allocated: Int
    private var used: Int
    /// Where the finished part of the record is being written while the transaction goes on (see
    /// ``RecordStream``); nil otherwise. While it has writes to finish, the memory is never moved by
    /// `realloc`, written below what was streamed, nor freed directly: they may still be reading it (see
    /// ``relocate(keeping:capacity:)``).
    private var stream: RecordStream?
    /// The end of the bytes handed to ``stream``.
    private var streamedEnd = 0
    /// The number of bytes appended (and not truncated away).
    package var count: Int { used }
    /// The bytes allocated.
    package var capacity: Int { allocated }

    package init(capacity: Int = 4096) {
        allocated = max(capacity, 64)
        pointer = Self.resize(nil, to: allocated)
        used = 0
    }

    deinit {
        if let stream { stream.retire(pointer) } else { free(pointer) }
    }

    /// The stream writing this buffer's finished bytes, if any.
    var recordStream: RecordStream? { stream }

    /// The end of the bytes handed to the stream (0 without one).
    var streamed: Int { stream == nil ? 0 : streamedEnd }

    /// Hands the bytes from `start` (or from where the last call ended) to the end to `stream`, attaching it
    /// if the buffer has none. The bytes handed over must not change: call it where an operation ends.
    func stream(to stream: @autoclosure () -> RecordStream, from start: Int) {
        if self.stream == nil {
            self.stream = stream()
            streamedEnd = start
        }
        guard let attached = self.stream, used > streamedEnd else { return }
        attached.write(UnsafeRawBufferPointer(start: pointer + streamedEnd, count: used - streamedEnd), at: streamedEnd)
        streamedEnd = used
    }

    /// Lets the stream go, once every write it was asked for is finished (``RecordStream/drain()``): the
    /// memory is the buffer's alone again. (A buffer whose transaction does not commit keeps its stream: it
    /// is not reused, and its memory is freed through the stream.)
    func detachStream() {
        stream = nil
        streamedEnd = 0
    }

    /// Moves the first `keeping` bytes to new memory of the same capacity and hands the old memory to the
    /// stream to free after its writes. Used, while streaming, where the buffer would otherwise `realloc`
    /// (growing) or write over streamed bytes (a truncation below them).
    private func relocate(keeping: Int, capacity: Int? = nil) {
        let newCapacity = capacity ?? allocated
        let new = Self.resize(nil, to: newCapacity)
        new.copyMemory(from: pointer, byteCount: keeping)
        stream?.retire(pointer)
        pointer = new
        allocated = newCapacity
    }

    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: pointer, count: used) }

    package func bytes(at offset: Int, count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: pointer + offset, count: count)
    }

    /// Makes room for `extra` more bytes, so that the next appends of that many bytes in all move nothing:
    /// a view of bytes already in the buffer, taken after this call, stays valid through them.
    package func reserveCapacity(forAppending extra: Int) { reserve(extra) }

    private func reserve(_ extra: Int) {
        guard used + extra > allocated else { return }
        var newCapacity = allocated * 2
        while newCapacity < used + extra { newCapacity *= 2 }
        if let stream, !stream.isIdle {
            relocate(keeping: used, capacity: newCapacity)
            return
        }
        pointer = Self.resize(pointer, to: newCapacity)
        allocated = newCapacity
    }

    /// `realloc`: a large buffer (which `malloc` maps on its own) grows by remapping its pages where the
    /// system can (`mremap` on Linux), so a transaction of tens of megabytes neither copies its record at
    /// every doubling nor faults in (and has the kernel zero) a fresh buffer each time. Bulk insert of 1M
    /// rows, whose record grows to 64 MiB: the doubling copies and faults were about a fifth of the
    /// `txn.insert` time in `perf`.
    private static func resize(_ old: UnsafeMutableRawPointer?, to capacity: Int) -> UnsafeMutableRawPointer {
        guard let new = realloc(old, capacity) else {
            // Deliberate trap, as every Swift allocation (Array growth included) traps when memory runs out:
            // a transaction's record lives in memory until its commit, so a failure here means the process
            // is out of memory, not that the input or the file is bad. Throwing would need every append of
            // the write path to throw; left as a known limit (see the session notes).
            fatalError("Out of memory growing a record to \(capacity) bytes")
        }
        // `malloc` aligns to 16 bytes on every 64-bit platform the package supports; readers rely on 16.
        precondition(Int(bitPattern: new) & 15 == 0, "malloc returned memory aligned to less than 16 bytes")
        return new
    }

    @inline(__always)
    package func append<T: FixedWidthInteger>(_ value: T) {
        reserve(MemoryLayout<T>.size)
        (pointer + used).storeBytes(of: value.littleEndian, as: T.self)
        used += MemoryLayout<T>.size
    }

    package func append(_ raw: UnsafeRawBufferPointer) {
        reserve(raw.count)
        if let base = raw.baseAddress { (pointer + used).copyMemory(from: base, byteCount: raw.count) }
        used += raw.count
    }

    package func append(_ raw: [UInt8]) { raw.withUnsafeBytes { append($0) } }

    /// Appends `count` bytes written by `initialize`, which must write all of them at the pointer it is
    /// given (valid only during the call).
    @inline(__always)
    package func append(count: Int, _ initialize: (UnsafeMutableRawPointer) -> Void) {
        reserve(count)
        initialize(pointer + used)
        used += count
    }

    /// Writes `value` at `offset` (inside the buffer).
    package func store<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        (pointer + offset).storeBytes(of: value.littleEndian, as: T.self)
    }

    /// Drops everything after `newCount` (to undo a failed operation).
    package func truncate(to newCount: Int) {
        let old = used
        used = min(used, newCount)
        if let stream, used < streamedEnd {
            // The bytes after `used` will be written over, and a chunk write may still be reading them: then
            // the buffer moves, keeping them all (as without a stream, the bytes truncated stay readable: the
            // trees of a transaction that failed half-way may still point at them until it rolls back).
            if !stream.isIdle { relocate(keeping: old) }
            streamedEnd = used
            stream.rewound()
        }
    }
}
