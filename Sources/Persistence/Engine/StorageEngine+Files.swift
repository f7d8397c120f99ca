import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of a store: opening and locking them (the exclusive or shared `flock`, waiting out this
/// process's own just-released lock), creating a store file, temporary files and their clean-up.
extension StorageEngine {
    /// How often opening tries again when the file at the path was replaced while it was being locked.
    static let lockAttempts = 8

    /// The store's lock descriptor (locked; nil read-only) and data descriptor, both of the file that is at
    /// `path` while the lock is held. Writable, it also removes stale temporary files and syncs the directory.
    ///
    /// Another engine's compaction may rename a new file over `path` between any two of these steps: a lock
    /// taken on the replaced file protects nothing (its holder would write the live file beside the real
    /// lock holder), so the data descriptor must be of the locked file, else everything is tried again.
    /// - Throws: `.alreadyOpen` when another process (or engine) holds the lock.
    static func openFiles(
        _ fs: any FileSystem, _ path: String, readOnly: Bool, shared: Bool, report: inout RecoveryReport
    ) throws(StorageError) -> (lock: OpenFile?, file: OpenFile) {
        if readOnly { return (nil, try fs.open(path, create: false, readOnly: true)) }
        for _ in 0..<lockAttempts {
            let lockFile = try lockedDescriptor(fs, path, shared: shared)
            let file: OpenFile
            do throws(StorageError) {
                // Only the lock holder may judge the temporary files stale (another engine may be compacting).
                report.removedTemporaryFiles = removeStaleTemporaryFiles(fs, path)
                // The file's directory entry may not be durable yet (a create or a compaction whose directory
                // sync failed before a crash): make it so before acknowledging anything written to it.
                try fs.syncDirectory(directory(of: path))
                file = try fs.open(path, create: false, readOnly: false)
            } catch {
                closeLock(fs, lockFile)
                throw error
            }
            let same: Bool
            do throws(StorageError) {
                same = try fs.identity(of: file) == fs.identity(of: lockFile)
            } catch {
                fs.close(file)
                closeLock(fs, lockFile)
                throw error
            }
            if same { return (lockFile, file) }
            fs.close(file)
            closeLock(fs, lockFile)
        }
        throw replacedWhileLocking(path)
    }

    /// Opens `path` and takes its exclusive lock on that descriptor, making sure the locked file is still
    /// the one at `path` (a compaction in another process may have renamed a new file over it meanwhile;
    /// then it tries again, and meets that process's lock on the new file).
    /// - Throws: `.alreadyOpen` when another process (or engine) holds it.
    static func lockedDescriptor(_ fs: any FileSystem, _ path: String, shared: Bool) throws(StorageError) -> OpenFile {
        for _ in 0..<lockAttempts {
            let lockFile = try fs.open(path, create: false, readOnly: false)
            let current: Bool
            do throws(StorageError) {
                try lockPatiently(fs, lockFile, shared: shared)
                current = try fs.identity(of: lockFile) == fs.identity(atPath: path)
            } catch {
                closeLock(fs, lockFile)
                throw error
            }
            if current { return lockFile }
            closeLock(fs, lockFile)
        }
        throw replacedWhileLocking(path)
    }

    /// Takes the exclusive lock, trying again for up to 100 ms while it is held — and for up to 10 s while
    /// the only holder is a descriptor this process already closed.
    ///
    /// Why wait at all: a child process that this process is starting holds a copy of every descriptor
    /// from its fork until its exec closes them (close-on-exec), and with them every `flock` on them. A
    /// store closed and reopened in that moment meets its own lock, released a moment later (`alreadyOpen`
    /// "by another process" on an immediate reopen: 6 of 240 reopens while other threads started
    /// processes on a loaded machine, where the moment between fork and exec can last more than 100 ms).
    /// On Linux, `/proc/locks` names the process that took a lock: when it is this process and no engine
    /// of this process holds the lock (``heldLocks``), the holder can only be such a child, and opening
    /// waits for its exec. A lock that another process (or engine) really holds is reported after 100 ms.
    ///
    /// With `shared` (the store has a ``PresenceLock``, whose writer lock serialises the writers of every
    /// process), the lock is taken shared (see ``FileSystem/lockForSharedWriting(_:)``): it keeps out
    /// writers of older versions only.
    static func lockPatiently(_ fs: any FileSystem, _ file: OpenFile, shared: Bool) throws(StorageError) {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(100))
        let longDeadline = clock.now.advanced(by: .seconds(10))
        while true {
            do throws(StorageError) {
                if shared { try fs.lockForSharedWriting(file) } else { try fs.lockExclusive(file) }
                if fs.sharesFilesBetweenProcesses, let identity = try? fs.identity(of: file) {
                    heldLocks.withLock { $0[file.descriptor] = identity }
                }
                return
            } catch
                where error.code == .alreadyOpen
                && (clock.now < deadline
                    || (clock.now < longDeadline && fs.sharesFilesBetweenProcesses
                        && heldOnlyByOwnClosedDescriptor(fs, file)))
            {
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
    }

    /// The identities of the store files whose exclusive lock an engine of this process holds, by the
    /// descriptor holding it (real files only).
    static let heldLocks = Locked<[Int32: FileIdentity]>([:])

    /// Closes a lock descriptor (releasing its lock) and forgets it in ``heldLocks``.
    static func closeLock(_ fs: any FileSystem, _ file: OpenFile) {
        if fs.sharesFilesBetweenProcesses {
            heldLocks.withLock { $0[file.descriptor] = nil }
        }
        fs.close(file)
    }

    /// Whether `file`'s lock is held, per `/proc/locks`, by this process only, while no engine of this
    /// process holds it: then a child process being started holds it through a copy of a descriptor this
    /// process has closed. Also true when `/proc/locks` lists no lock on the file at all: the holder let
    /// go between the failed attempt and the reading (a child's exec; worth another attempt, which either
    /// succeeds or meets the new holder). False where `/proc/locks` does not exist (the 100 ms wait
    /// applies), or while an engine of this process holds the file.
    static func heldOnlyByOwnClosedDescriptor(_ fs: any FileSystem, _ file: OpenFile) -> Bool {
        guard let identity = try? fs.identity(of: file),
            !heldLocks.withLock({ $0.values.contains(identity) }),
            let table = readWholeFile("/proc/locks")
        else { return false }
        let own = String(ProcessInfo.processInfo.processIdentifier)
        let suffix = ":\(identity.inode)"
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5].hasSuffix(suffix) else { continue }
            if fields[4] != own { return false }
        }
        // Held by this process only, or by nobody any more (before, that was taken as another process's
        // lock: 2 of about 4,000 immediate reopens failed that way on a machine at load 13).
        return true
    }

    private static func replacedWhileLocking(_ path: String) -> StorageError {
        StorageError(
            .alreadyOpen,
            "'\(path)' is open for writing by another process, which keeps replacing the file (compacting it). "
                + "Close it there first.")
    }

    /// The longest mapping the engine asks for, and so the largest store file it opens or grows: 2^62
    /// bytes (4 EiB), beyond what any file system holds; a bound that keeps the length arithmetic exact.
    static let maxRegionLength = 1 << 62

    /// The mapping length for a file of `size` bytes: room to grow before the next remap (twice the size,
    /// rounded up to a power of two, at least 1 MiB and at most ``maxRegionLength``).
    /// - Throws: `.limitExceeded` if `size` is over ``maxRegionLength`` (the doubling would overflow).
    static func regionLength(for size: UInt64) throws(StorageError) -> Int {
        guard size <= UInt64(maxRegionLength) else {
            throw StorageError(
                .limitExceeded,
                "A store file of \(size) bytes is larger than the \(maxRegionLength) bytes ActorStore can map. "
                    + "The file is damaged or not a store; restore it from a backup.")
        }
        var length = 1 << 20
        while length < maxRegionLength && UInt64(length) < size * 2 { length <<= 1 }
        return length
    }

    /// Creates a complete store file atomically: header into a temporary file, sync, move it to `path`
    /// unless a store appeared there meanwhile (another process created it: that one is kept), sync the
    /// directory.
    static func createStoreFile(_ fs: any FileSystem, _ path: String, header: FileHeader) throws(StorageError) {
        do throws(StorageError) {
            try createStoreFileOnce(fs, path, header: header)
        } catch  where error.code == .fileNotFound && !fs.fileExists(path) {
            // Another process creating the store at the same moment took the temporary file over (it judged it
            // stale) and has not moved it into place yet: create it again.
            try createStoreFileOnce(fs, path, header: header)
        }
    }

    private static func createStoreFileOnce(
        _ fs: any FileSystem, _ path: String, header: FileHeader
    ) throws(StorageError) {
        let temporary = path + ".creating"
        let file = try createTemporaryFile(fs, temporary)
        do throws(StorageError) {
            try fs.writeAll(file, header.encoded(), at: 0)
            try fs.sync(file)
            fs.close(file)
        } catch {
            fs.close(file)
            try? fs.remove(temporary)
            throw error
        }
        do throws(StorageError) {
            try fs.renameNoReplace(temporary, to: path)
        } catch  where fs.fileExists(path) {
            // Another process created the store meanwhile: that one is kept. The temporary file is ours unless
            // that process took the name over (then the move failed with fileNotFound).
            if error.code == .fileExists { try? fs.remove(temporary) }
        } catch {
            if error.code != .fileNotFound { try? fs.remove(temporary) }
            throw error
        }
        try fs.syncDirectory(directory(of: path))
    }

    /// Creates the temporary file `path` without following a symbolic link planted there (it would make
    /// the store write the link's target). Something already at `path` is stale (left by a crash, or
    /// planted): it is removed (a link itself, never its target) and the creation tried once more.
    static func createTemporaryFile(_ fs: any FileSystem, _ path: String) throws(StorageError) -> OpenFile {
        do throws(StorageError) {
            return try fs.createExclusive(path)
        } catch  where error.code == .fileExists {
            do throws(StorageError) { try fs.remove(path) } catch  where error.code == .fileNotFound {}
            return try fs.createExclusive(path)
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Suffixes of the engine's temporary files next to a store.
    static let temporarySuffixes = [".creating", ".compacting"]

    /// Removes temporary files a crash left next to the store; returns their paths.
    static func removeStaleTemporaryFiles(_ fs: any FileSystem, _ path: String) -> [String] {
        let directory = directory(of: path)
        let base = String(path.split(separator: "/").last ?? "")
        guard let names = try? fs.contentsOfDirectory(directory) else { return [] }
        var removed: [String] = []
        for name in names where temporarySuffixes.contains(where: { name == base + $0 }) {
            let full = directory == "/" ? "/" + name : directory + "/" + name
            if (try? fs.remove(full)) != nil { removed.append(full) }
        }
        return removed
    }
}

/// The whole text of a file the kernel writes as it is read (`/proc/locks`), or nil if it cannot be read.
/// `String(contentsOfFile:)` returns only its first 4 KiB (its size reads as 0), which is about 60 locks:
/// on a busy machine, the line of another process's lock on the store was missed, and that lock was
/// taken for this process's own.
func readWholeFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { _ = close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 << 10)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count == 0 { break }
        if count < 0 {
            if errno == EINTR { continue }
            return nil
        }
        bytes.append(contentsOf: chunk[..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
}
