import Dispatch
import Foundation

/// Writes the finished part of a large write transaction's record to the file while the transaction goes on
/// building the rest, on a thread of its own: the commit then writes only the record's header and what came
/// after the last chunk.
///
/// Why: a record is written into the page cache, and a large one costs a copy of every byte into freshly
/// allocated pages. For the 59 MB record of a million-row update that took 0.12–0.19 s of `pwrite` on this
/// project's VM, after the transaction had built it: a third of `update(\.score) { }` on 1M objects. Written
/// a chunk at a time beside the transaction, it overlaps with the work of building the rest.
///
/// Safe by the file format:
/// - The record's first ``WriteTransaction/bodyStart`` bytes (its header and watermark) are never streamed:
///   they are written at commit, after every chunk. Until then the file holds zeros there (or nothing), so a
///   crash, or a reader of another process, finds no record at the end of the log (a torn tail, discarded at
///   open), however many chunks had reached the file.
/// - A transaction that does not commit (rolled back, failed, released) has the file cut back to where its
///   record would have started, or, while other processes have the file open, the streamed bytes
///   overwritten with zeros: nothing of it is left for a later, shorter record to leave behind.
/// - The bytes of a chunk do not change once streamed: chunks end where an operation ends (an operation
///   patches its own bytes only while it is the last), and a transaction that truncates its record below
///   what was streamed (an operation undone) moves its buffer first (see ``RecordBuffer``), the chunk
///   writes reading the old memory until they are done.
///
/// The chunks are written in order on a serial queue; the first failure (a full disk, an I/O error) stops
/// the writes and is the commit's error.
final class RecordStream: @unchecked Sendable {
    // Safety (`@unchecked Sendable`): `queue`, `fs`, `file` and `recordStart` are immutable; `state` is
    // `Locked` (a pthread mutex, which ThreadSanitizer sees, where it cannot see `Mutex`'s futex). The
    // memory the writes read is described by `Chunk`, whose safety is argued there.
    private let queue = DispatchQueue(label: "ActorStore.recordStream")
    private let fs: any FileSystem
    private let file: OpenFile
    private let recordStart: UInt64
    private let state = Locked(State())

    private struct State {
        var failure: StorageError?
        /// The end (offset in the record) of the furthest chunk asked for: the file may hold bytes up to it.
        var furthest = 0
        /// The checksum of the chunks written so far, in order, where they start (the first chunk's offset)
        /// and end; nil once the bytes streamed are not one run (a truncation below them rewrote some).
        var checksum: (crc: CRC32C, start: Int, end: Int)?
        /// Writes asked for and not finished (or skipped) yet.
        var pending = 0
    }

    /// Bytes of the record buffer, read by the queue.
    private struct Chunk: @unchecked Sendable {
        // Safety (`@unchecked Sendable`): the bytes belong to a RecordBuffer that neither changes nor frees them
        // before the write is done: a buffer with a stream frees or moves its memory only through
        // ``retire(_:)``, which frees it on the queue after the writes queued before, and never writes below
        // what it streamed (it moves first).
        let bytes: UnsafeRawBufferPointer
    }

    init(fs: any FileSystem, file: OpenFile, recordStart: UInt64) {
        self.fs = fs
        self.file = file
        self.recordStart = recordStart
    }

    /// The first write that failed, if any.
    var failure: StorageError? { state.withLock { $0.failure } }

    /// The end (offset in the record) of the furthest bytes the stream may have written to the file.
    var furthest: Int { state.withLock { $0.furthest } }

    /// Whether every write asked for is finished: nothing reads the buffer's memory now, nor will until the
    /// next ``write(_:at:)`` (only the buffer's owner asks for writes).
    var isIdle: Bool { state.withLock { $0.pending == 0 } }

    /// The checksum of the bytes streamed, from `start` to `end`, if the first chunk started at `start` and
    /// they are one run, unchanged since (see ``rewound()``). Read after ``drain()``.
    func checksum(from start: Int) -> (crc: CRC32C, end: Int)? {
        state.withLock { state in state.checksum.flatMap { $0.start == start ? ($0.crc, $0.end) : nil } }
    }

    /// Queues a write of `bytes`, which are the record's bytes at `offset`, and their checksum: the commit
    /// then checksums only the rest of the record (on this queue, the checksum too is off the transaction's
    /// thread).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        state.withLock { state in
            if state.furthest == 0 { state.checksum = (CRC32C(), offset, offset) }
            state.furthest = max(state.furthest, offset + bytes.count)
            state.pending += 1
        }
        let chunk = Chunk(bytes: bytes)
        let (fs, file, position) = (fs, file, recordStart + UInt64(offset))
        queue.async {
            defer { self.state.withLock { $0.pending -= 1 } }
            guard self.failure == nil else { return }
            do throws(StorageError) { try fs.writeAll(file, chunk.bytes, at: position) } catch {
                self.state.withLock { $0.failure = error }
                return
            }
            var checksum = self.state.withLock { $0.checksum }
            if checksum?.end == offset {
                checksum?.crc.update(chunk.bytes)
                checksum?.end += chunk.bytes.count
            } else {
                checksum = nil
            }
            self.state.withLock { state in state.checksum = state.checksum == nil ? nil : checksum }
        }
    }

    /// Says that the buffer was truncated below what it streamed: the bytes after it will change, so the
    /// checksum of the streamed bytes no longer serves the record.
    func rewound() { state.withLock { $0.checksum = nil } }

    /// Frees `pointer` (memory of the record buffer, `malloc`ed) once the writes queued before are done.
    func retire(_ pointer: UnsafeMutableRawPointer) {
        let address = UInt(bitPattern: pointer)
        queue.async { free(UnsafeMutableRawPointer(bitPattern: address)) }
    }

    /// Returns once every write queued before is done (without blocking a thread).
    func drain() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }

    /// Runs `body` on the queue once every write queued before is done.
    func afterWrites(_ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }
}
