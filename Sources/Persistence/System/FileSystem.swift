#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The engine's only door to the operating system's files.
///
/// Every system call the engine makes (open, pread, pwrite, fsync/fdatasync, directory fsync, rename, unlink,
/// ftruncate, flock, mmap) goes through this protocol, so tests can replace it: ``MemoryFileSystem`` keeps
/// files in memory and models what survives a crash; ``FaultInjectingFileSystem`` wraps any file system and
/// fails the Nth call with EIO, ENOSPC, a short or torn write, or a simulated crash.
/// ``PosixFileSystem`` is the production implementation.
///
/// Implementations report failures as ``StorageError`` with the `errno` attached (see ``StorageError/init(errno:operation:path:)``).
package protocol FileSystem: Sendable {
    /// Opens (and with `create`, creates with mode 0600) the file at `path`.
    /// The corresponding C function is `open(2)`.
    func open(_ path: String, create: Bool, readOnly: Bool) throws(StorageError) -> OpenFile
    /// Closes a file. The corresponding C function is `close(2)`. Never fails observably.
    func close(_ file: OpenFile)
    /// Reads up to `buffer.count` bytes at `offset`; returns the number read (0 at end of file).
    /// The corresponding C function is `pread(2)`.
    func read(
        _ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64
    ) throws(StorageError) -> Int
    /// Writes up to `bytes.count` bytes at `offset`; returns the number written, which may be short.
    /// The corresponding C function is `pwrite(2)`.
    func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) -> Int
    /// Makes the file's data durable (`fdatasync(2)` on Linux, `fcntl(F_FULLFSYNC)` on Apple platforms).
    func sync(_ file: OpenFile) throws(StorageError)
    /// Sets the file's size. The corresponding C function is `ftruncate(2)`.
    func truncate(_ file: OpenFile, to size: UInt64) throws(StorageError)
    /// The file's current size. The corresponding C function is `fstat(2)`.
    func size(of file: OpenFile) throws(StorageError) -> UInt64
    /// Takes the file's exclusive advisory lock without waiting; throws `.alreadyOpen` if another holder has it.
    /// The corresponding C function is `flock(2)` with `LOCK_EX | LOCK_NB`.
    func lockExclusive(_ file: OpenFile) throws(StorageError)
    /// Takes the advisory lock a writer shares with the writers of other processes (their writes are
    /// serialised by ``PresenceLock/lockWriter(waiting:)``), without waiting; throws `.alreadyOpen` while a
    /// holder has it exclusively (a writer of an older ActorStore). A file with several names (hard links)
    /// is locked exclusively: the lock file beside each name is another, so writers through two names would
    /// not be serialised. `flock(2)` with `LOCK_SH | LOCK_NB` (`LOCK_EX` for a linked file).
    func lockForSharedWriting(_ file: OpenFile) throws(StorageError)
    /// Maps the first `length` bytes of the file read-only (`length` may exceed the file's size; only bytes
    /// below the size may be read). Writes made later through ``write(_:_:at:)`` at offsets below `length`
    /// become visible through the region. The corresponding C function is `mmap(2)`.
    func map(_ file: OpenFile, length: Int) throws(StorageError) -> MappedRegion
    /// Renames atomically, replacing `destination`. The corresponding C function is `rename(2)`.
    func rename(_ source: String, to destination: String) throws(StorageError)
    /// Removes a file. The corresponding C function is `unlink(2)`.
    func remove(_ path: String) throws(StorageError)
    /// Makes the directory's entries (creations, renames, removals) durable: `open(O_DIRECTORY)` + `fsync(2)`.
    func syncDirectory(_ path: String) throws(StorageError)
    /// Creates a new file at `path` (mode 0600) and opens it read-write; fails with `.fileExists` if anything
    /// is there already, a symbolic link included (which is not followed). For temporary files, which must
    /// never write through a link planted at their name. The corresponding C function is `open(2)` with
    /// `O_CREAT | O_EXCL | O_NOFOLLOW`.
    func createExclusive(_ path: String) throws(StorageError) -> OpenFile
    /// Gives `source`'s name to `destination` unless `destination` exists (then throws `.fileExists` and
    /// changes nothing); `source` is gone afterwards. The corresponding C functions are `link(2)` and
    /// `unlink(2)` (or `renameat2(2)` with `RENAME_NOREPLACE` where hard links are not supported).
    func renameNoReplace(_ source: String, to destination: String) throws(StorageError)
    /// The identity (device and inode) of an open file. The corresponding C function is `fstat(2)`.
    func identity(of file: OpenFile) throws(StorageError) -> FileIdentity
    /// The identity (device and inode) of the file at `path`, following symbolic links. The corresponding C
    /// function is `stat(2)`.
    func identity(atPath path: String) throws(StorageError) -> FileIdentity
    /// Gives `file` the permission bits of `model` and, when the process may (it runs as root), its owner
    /// and group: a compacted copy replacing a store keeps the store's access rights. Best effort for the
    /// owner. The corresponding C functions are `fstat(2)`, `fchmod(2)` and `fchown(2)`.
    func copyPermissions(from model: OpenFile, to file: OpenFile) throws(StorageError)
    /// `path` with symbolic links, `.` and `..` resolved: the file's real path if it exists, else its real
    /// directory followed by its name (`path` itself when even the directory does not resolve). The
    /// corresponding C function is `realpath(3)`.
    func resolvedPath(_ path: String) -> String
    /// Whether a file exists at `path`. The corresponding C function is `stat(2)`.
    func fileExists(_ path: String) -> Bool
    /// The names of the entries of a directory (not full paths). The corresponding C function is `readdir(3)`.
    func contentsOfDirectory(_ path: String) throws(StorageError) -> [String]
    /// Whether other processes may open the same files: then every engine holds its store's
    /// ``PresenceLock`` (a record lock on `<store>.lock`, taken with `fcntl(2)` outside this protocol), and
    /// deleting, compacting or shortening a store waits for no other process to have it open.
    var sharesFilesBetweenProcesses: Bool { get }
}

extension FileSystem {
    /// False: a file system of this process alone (in memory, or a test double).
    package var sharesFilesBetweenProcesses: Bool { false }

    /// The exclusive lock: a file system of one process has one writer.
    package func lockForSharedWriting(_ file: OpenFile) throws(StorageError) { try lockExclusive(file) }
}

/// What identifies a file whatever its name: its device and inode numbers.
package struct FileIdentity: Hashable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// An open file of a ``FileSystem``: an opaque descriptor plus the path it was opened with.
package struct OpenFile: Hashable, Sendable {
    package let descriptor: Int32
    package let path: String
    package init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }
}

/// A read-only view of the start of a file, alive as long as this object is.
///
/// Snapshots hold the region they read from, so a region outlives remapping and compaction for as long
/// as a reader needs it.
package final class MappedRegion: Sendable {
    /// The first byte of the region. Only bytes below the file's committed length may be read.
    // Safety: the pointer is immutable, and the memory behind it is only written (through `write`) at
    // offsets no published snapshot reads yet: the engine publishes a location only after writing it.
    nonisolated(unsafe) package let base: UnsafeRawPointer
    package let length: Int
    /// The encryption of the file's records, for an encrypted store: rows and nodes in the region are
    /// sealed units that readers open (see ``StoreCipher``).
    package let cipher: StoreCipher?
    private let release: @Sendable () -> Void
    /// Tells the system that the process is done with the pages of a page-aligned byte range for now (see
    /// ``dropResidentPages(_:)``); nil where that means nothing (memory).
    private let dropPages: (@Sendable (_ offset: Int, _ count: Int) -> Void)?

    package init(
        base: UnsafeRawPointer, length: Int, cipher: StoreCipher? = nil,
        dropPages: (@Sendable (_ offset: Int, _ count: Int) -> Void)? = nil, release: @escaping @Sendable () -> Void
    ) {
        self.base = base
        self.length = length
        self.cipher = cipher
        self.dropPages = dropPages
        self.release = release
    }

    /// The same bytes, read through `cipher`; this region stays mapped while the new one lives.
    package func reading(through cipher: StoreCipher?) -> MappedRegion {
        guard let cipher else { return self }
        return MappedRegion(base: base, length: length, cipher: cipher, dropPages: dropPages) {
            withExtendedLifetime(self) {}
        }
    }

    /// The size of a memory page.
    private static let pageSize = max(Int(sysconf(Int32(_SC_PAGESIZE))), 1)

    /// Lets go of the resident pages that lie wholly inside `range` (`madvise(MADV_DONTNEED)` of a read-only
    /// shared file mapping): they leave the process's resident memory and stay in the system's page cache,
    /// and the next read of them maps them again, with the same bytes. So it is safe at any time, for any
    /// reader, this one or another thread: it costs a re-read, never a wrong one. For long scans, which
    /// would otherwise keep every page of the file they passed resident (see ``RowCursor``).
    package func dropResidentPages(_ range: Range<Int>) {
        guard let dropPages else { return }
        let page = Self.pageSize
        let start = (max(range.lowerBound, 0) + page - 1) / page * page
        let end = min(range.upperBound, length) / page * page
        if start < end { dropPages(start, end - start) }
    }

    deinit { release() }

    /// The bytes at `offset ..< offset + count`. The caller guarantees the range lies inside the region.
    @inline(__always)
    package func bytes(at offset: Int, count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + offset, count: count)
    }
}

extension FileSystem {
    /// Writes all of `bytes` at `offset`, looping over short writes. A write that makes no progress is an error.
    package func writeAll(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) {
        var done = 0
        while done < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[done...])
            let n = try write(file, rest, at: offset + UInt64(done))
            if n <= 0 {
                throw StorageError(.ioFailure, "The write to '\(file.path)' made no progress.")
            }
            done += n
        }
    }

    /// Writes all of `bytes` at `offset` (see ``writeAll(_:_:at:)-(_,UnsafeRawBufferPointer,_)``).
    package func writeAll(_ file: OpenFile, _ bytes: [UInt8], at offset: UInt64) throws(StorageError) {
        var failure: StorageError?
        bytes.withUnsafeBytes { raw in
            do throws(StorageError) { try writeAll(file, raw, at: offset) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Reads exactly `buffer.count` bytes at `offset`, or throws `.corrupted` if the file ends first.
    package func readExactly(
        _ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64
    ) throws(StorageError) {
        var done = 0
        while done < buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[done...])
            let n = try read(file, into: rest, at: offset + UInt64(done))
            if n == 0 {
                throw StorageError(
                    .corrupted, "'\(file.path)' ended at \(offset + UInt64(done)) while reading \(buffer.count) bytes.",
                    offset: FileOffset(offset + UInt64(done)))
            }
            done += n
        }
    }
}
