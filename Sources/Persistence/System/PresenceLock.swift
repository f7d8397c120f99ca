#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// "This process has the store open": a shared lock on the lock file beside the store (`<store>.lock`),
/// held by every engine of the store, read-write and read-only, from open to close.
///
/// What it is for: operations that would pull the file out from under another process — deleting it,
/// compacting it (a rename over it), cutting its end off (reserved space given back at close) — take the
/// lock exclusively without waiting, and are refused (or skipped) when any other process holds it shared.
/// Opening takes it shared, waiting (a bounded time) while such an operation runs elsewhere.
///
/// ```text
///  <store>.lock   byte 0: fcntl record lock   shared    every open engine of every process
///                                             exclusive delete, compaction, truncation (never waited for)
///                 byte 1: fcntl record lock   exclusive the writer of every process that appends now
///                                                       (see lockWriter(waiting:); waited for off the pool)
///                 byte 2: fcntl record lock   shared    a process waiting for byte 1 (see writerIsWaiting())
///                 bytes 8-31: the durable end (see publishDurableEnd; read through a mapping by writers)
/// ```
///
/// Why `fcntl` record locks and not `flock`: a record lock belongs to the process and is not inherited by
/// a child process that is being started (between its fork and its exec a child holds copies of every
/// descriptor, and with them every `flock`), and a shared lock turns exclusive atomically, or stays shared
/// if another process holds it. A record lock is also released when the process closes *any* descriptor of
/// the file: so this type keeps exactly one descriptor per lock file in the process, shared by all its
/// holders (counted), and nothing else in the engine opens a lock file. Within the process, record locks do
/// not conflict; the count stands in for that.
///
/// The lock file holds no data and is never deleted by the engine (as Realm's `.lock`), so every process
/// locks the same inode.
package final class PresenceLock: Sendable {
    /// The lock file's path (`<store>.lock`).
    package let path: String
    /// Set once, by ``release()``.
    private let released = Locked(false)

    /// Whether this hold is a writable engine's (counted in ``Entry/writers``).
    private let writable: Bool

    private init(path: String, writable: Bool) {
        self.path = path
        self.writable = writable
    }

    deinit { release() }

    /// The lock file of the store at `storePath`.
    package static func lockPath(forStore storePath: String) -> String { storePath + ".lock" }

    /// One lock file's state in this process.
    private struct Entry {
        var descriptor: Int32
        /// Engines of this process holding the lock shared.
        var holders: Int
        /// Held exclusively (by a compaction, truncation or deletion of this process).
        var exclusive: Bool
        /// Writable engines of this process among the holders: at most one (record locks do not keep two
        /// engines of one process apart, so the writer lock below could not serialise them).
        var writers = 0
        /// Whether this process holds the writer lock (byte 1).
        var writing = false
        /// The address of a read-only mapping of the lock file's first page (0: not mapped yet), through
        /// which ``PresenceLock/mappedDurableEnd(generation:)`` reads the durable end without a system call.
        var mapping: UInt = 0
    }

    /// Every lock file this process has open, by path. Its lock is held for system calls that take no time
    /// (`open`, `fcntl(F_SETLK)`, `close`), never while waiting.
    private static let table = Locked<[String: Entry]>([:])

    /// How long opening waits for another process's exclusive hold (a deletion or the end of a compaction:
    /// both short) before it reports `.alreadyOpen`.
    static let patience: Duration = .seconds(10)

    /// Takes the store's presence lock shared, waiting up to ``patience`` while a process holds it
    /// exclusively. Blocking: call it off the cooperative pool (open runs on a Dispatch thread).
    /// - Parameter readOnly: the store is opened read-only. When the lock file cannot be created or
    ///   opened (a read-only directory), a read-only open goes on without the lock (nil); so does any open
    ///   on a file system without record locks.
    /// - Throws: `.alreadyOpen` when another process kept it exclusive past ``patience``; `.permissionDenied`
    ///   and the like when a writable open cannot create the lock file.
    package static func acquireShared(forStore storePath: String, readOnly: Bool) throws(StorageError) -> PresenceLock?
    {
        let path = lockPath(forStore: storePath)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: patience)
        let writerDeadline = clock.now.advanced(by: .milliseconds(100))
        while true {
            let outcome = try table.withLock { table throws(StorageError) -> Bool? in
                if var entry = table[path] {
                    // Another engine of this process holds it: shared use, unless this process is deleting
                    // or compacting the store right now (then wait for that), or a second writable engine
                    // would join a writable one (refused after a short wait: the first may be closing).
                    if entry.exclusive { return false }
                    if !readOnly && entry.writers > 0 {
                        guard clock.now < writerDeadline else { throw secondWriter(storePath) }
                        return false
                    }
                    entry.holders += 1
                    if !readOnly { entry.writers += 1 }
                    table[path] = entry
                    return true
                }
                let descriptor: Int32
                do throws(StorageError) {
                    descriptor = try openLockFile(path)
                } catch  where readOnly {
                    return nil
                }
                guard setLock(descriptor, type: F_RDLCK) else {
                    let held = errno == EAGAIN || errno == EACCES
                    _ = systemCloseLock(descriptor)
                    // A file system without record locks (ENOLCK, say): the store opens unguarded, as before
                    // there were presence locks.
                    return held ? false : nil
                }
                table[path] = Entry(descriptor: descriptor, holders: 1, exclusive: false, writers: readOnly ? 0 : 1)
                return true
            }
            switch outcome {
            case nil: return nil
            case true?: return PresenceLock(path: path, writable: !readOnly)
            case false?:
                guard clock.now < deadline else { throw busy(storePath) }
                sleepBriefly()
            }
        }
    }

    /// Runs `body` holding the store's lock exclusively, if no other process has the store open: for
    /// deleting a store that no realm of this process uses. An engine of this process that is still
    /// closing (its realms were released) does not count: the caller checked that none is in use.
    /// - Throws: `.alreadyOpen` (naming the other process) without running `body`; what `body` throws.
    package static func withExclusive<R>(
        forStore storePath: String, _ body: () throws(StorageError) -> R
    ) throws(StorageError) -> R {
        let path = lockPath(forStore: storePath)
        // (descriptor, opened here): a closing engine's descriptor is used, never a second one (closing a
        // second descriptor would drop that engine's record lock).
        let (descriptor, opened) = try table.withLock { table throws(StorageError) -> (Int32, Bool) in
            if var entry = table[path] {
                guard !entry.exclusive else { throw openElsewhere(storePath) }
                guard setLock(entry.descriptor, type: F_WRLCK) else {
                    throw openElsewhere(storePath, holder: otherHolder(entry.descriptor))
                }
                entry.exclusive = true
                table[path] = entry
                return (entry.descriptor, false)
            }
            let descriptor = try openLockFile(path)
            guard setLock(descriptor, type: F_WRLCK) else {
                let holder = otherHolder(descriptor)
                _ = systemCloseLock(descriptor)
                throw openElsewhere(storePath, holder: holder)
            }
            table[path] = Entry(descriptor: descriptor, holders: 0, exclusive: true)
            return (descriptor, true)
        }
        defer {
            table.withLock { table in
                if opened {
                    table[path] = nil
                    _ = systemCloseLock(descriptor)
                } else {
                    _ = setLock(descriptor, type: F_RDLCK)
                    table[path]?.exclusive = false
                }
            }
        }
        return try body()
    }

    /// Whether the store at `storePath` is open in this process or another one (its lock file is held): a
    /// probe that changes nothing, for explaining a refusal.
    package static func isHeld(forStore storePath: String) -> Bool {
        let path = lockPath(forStore: storePath)
        return table.withLock { table in
            if table[path] != nil { return true }
            // Safe to open and close: this process holds no lock on this file (it is not in the table).
            let descriptor = openRetrying(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return false }
            defer { _ = systemCloseLock(descriptor) }
            var query = lockDescription(type: F_WRLCK)
            guard fcntl(descriptor, F_GETLK, &query) == 0 else { return false }
            return Int32(query.l_type) != Int32(F_UNLCK)
        }
    }

    /// The process ID of a process that holds this store's lock file, if another process does and the
    /// system says which (it may not, for a holder in another PID namespace or on another host): for naming
    /// that process in a refusal.
    package var otherProcess: Int32? {
        Self.table.withLock { table in table[path].flatMap { Self.otherHolder($0.descriptor) } }
    }

    /// Whether the store is open in another process, or in another engine of this one (a test's second
    /// engine). A hint: it may change at once; ``whileAlone(_:)`` decides for real.
    package var othersHaveItOpen: Bool {
        Self.table.withLock { table in
            guard let entry = table[path] else { return false }
            if entry.holders > 1 { return true }
            var query = Self.lockDescription(type: F_WRLCK)
            guard fcntl(entry.descriptor, F_GETLK, &query) == 0 else { return true }
            return Int32(query.l_type) != Int32(F_UNLCK)
        }
    }

    /// Runs `body` holding the lock exclusively if nothing else has the store open (no other process, no
    /// other engine of this process), then holds it shared again. Never waits.
    /// - Returns: `body`'s value, or nil (without running it) when the store is open elsewhere.
    package func whileAlone<R>(_ body: () throws(StorageError) -> R) throws(StorageError) -> R? {
        let descriptor = Self.table.withLock { table -> Int32? in
            guard var entry = table[path], entry.holders == 1, !entry.exclusive,
                Self.setLock(entry.descriptor, type: F_WRLCK)
            else { return nil }
            entry.exclusive = true
            table[path] = entry
            return entry.descriptor
        }
        guard let descriptor else { return nil }
        defer {
            Self.table.withLock { table in
                // Back to shared: atomic for a record lock (no other process can slip in between).
                _ = Self.setLock(descriptor, type: F_RDLCK)
                table[path]?.exclusive = false
            }
        }
        return try body()
    }

    // MARK: The writer lock

    /// The byte whose exclusive record lock serialises the writers of every process (see
    /// ``lockWriter(waiting:)``).
    static let writerByte: off_t = 1

    /// Takes the writer lock: an exclusive record lock on byte 1 of the lock file, which one writable
    /// engine of one process holds at a time, from before it looks at the end of the file until the
    /// records it appended are durable and their end is published. Every write to the store file (records,
    /// reserved zeros, a torn tail zeroed) happens under it.
    ///
    /// - Parameter waiting: wait for the process that holds it (`F_SETLKW`: blocks the calling thread,
    ///   so never on the cooperative pool); without it, a single try (`F_SETLK`).
    /// - Returns: whether it is held now (false: another process holds it, or `waiting` was interrupted by
    ///   something other than a signal; also false for a read-only hold or a released one).
    /// - Throws: `.ioFailure` when the system refuses the lock (`EDEADLK`, `ENOLCK`).
    package func lockWriter(waiting: Bool) throws(StorageError) -> Bool {
        // The descriptor is looked up under the table's lock but used outside it for the waiting call:
        // it stays open while this writable hold lasts (the table closes it with its last holder only, and
        // this engine, a holder, is not releasing now: its own calls are serial under its write lock).
        let descriptor = Self.table.withLock { table -> Int32? in
            guard writable, !released.withLock({ $0 }), let entry = table[path] else { return nil }
            return entry.descriptor
        }
        guard let descriptor else { return false }
        // A process that waits says so (byte 2, shared) for as long as it waits: the holder, which keeps
        // the lock between its writes, lets it go at its next idle moment (see writerIsWaiting()).
        if waiting { _ = Self.setLock(descriptor, type: F_RDLCK, byte: Self.waiterByte) }
        defer { if waiting { _ = Self.setLock(descriptor, type: F_UNLCK, byte: Self.waiterByte) } }
        var description = Self.lockDescription(type: F_WRLCK, byte: Self.writerByte)
        while true {
            if fcntl(descriptor, waiting ? F_SETLKW : F_SETLK, &description) == 0 { break }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EACCES { return false }
            throw StorageError(errno: errno, operation: "Taking the writer lock of", path: path, systemCall: "fcntl")
        }
        Self.table.withLock { table in table[path]?.writing = true }
        return true
    }

    /// The byte a process holds shared while it waits for the writer lock (see ``writerIsWaiting()``).
    static let waiterByte: off_t = 2

    /// Whether another process waits for the writer lock: one `fcntl(F_GETLK)` on byte 2, which a waiting
    /// ``lockWriter(waiting:)`` holds shared while it waits. A holder that keeps the writer lock between its
    /// writes asks this every few milliseconds (not per write) and lets the lock go when the answer is yes.
    /// False when the question cannot be asked (the hold was released, the call failed): the holder then
    /// lets the lock go after its idle time anyway.
    package func writerIsWaiting() -> Bool {
        Self.table.withLock { table in
            guard let entry = table[path], !released.withLock({ $0 }) else { return false }
            var query = Self.lockDescription(type: F_WRLCK, byte: Self.waiterByte)
            guard fcntl(entry.descriptor, F_GETLK, &query) == 0 else { return false }
            return Int32(query.l_type) != F_UNLCK
        }
    }

    /// Lets the writer lock go (see ``lockWriter(waiting:)``).
    package func unlockWriter() {
        Self.table.withLock { table in
            guard var entry = table[path], entry.writing else { return }
            _ = Self.setLock(entry.descriptor, type: F_UNLCK, byte: Self.writerByte)
            entry.writing = false
            table[path] = entry
        }
    }

    // MARK: The durable end

    /// Where the lock file holds the durable end (after the byte the record locks use).
    private static let durableEndOffset: off_t = 8

    /// Publishes, for read-only engines in other processes, where the store's durable records end: a
    /// reader follows the writer's commits only up to it, so it never sees a commit the writer has not
    /// made durable yet (one a power loss could take back). `end` is `UInt64.max` for a writer with
    /// durability `.none` (it promises nothing: readers follow the file). Bytes 8..<32 of the lock file:
    ///
    /// ```text
    ///  8  generation: u64 LE   the store file's generation (compaction makes a new one)
    /// 16  end: u64 LE          the end of the durable records in that generation
    /// 24  check: u64 LE        a hash of the two, so a torn read is told from a value
    /// ```
    /// One `pwrite(2)`; a failure is ignored (readers then see less, never more).
    package func publishDurableEnd(_ end: UInt64, generation: UInt64) {
        var words = (generation.littleEndian, end.littleEndian, Self.check(generation, end).littleEndian)
        // Under the table's lock, and only while this hold lasts: the descriptor is closed (and its number
        // may be reused) once the process's last holder released it.
        Self.table.withLock { table in
            guard let descriptor = table[path]?.descriptor, !released.withLock({ $0 }) else { return }
            _ = withUnsafeBytes(of: &words) { bytes in
                pwrite(descriptor, bytes.baseAddress, bytes.count, Self.durableEndOffset)
            }
        }
    }

    /// The durable end another process published for `generation` (see ``publishDurableEnd(_:generation:)``),
    /// or nil when there is none for it: no writer of this version published one, or it is for another
    /// generation of the file, or the bytes are torn or damaged.
    package func durableEnd(generation: UInt64) -> UInt64? {
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        let count = Self.table.withLock { table -> Int in
            guard let descriptor = table[path]?.descriptor, !released.withLock({ $0 }) else { return 0 }
            return withUnsafeMutableBytes(of: &words) { bytes in
                pread(descriptor, bytes.baseAddress, bytes.count, Self.durableEndOffset)
            }
        }
        let (stored, end, check) = (
            UInt64(littleEndian: words.0), UInt64(littleEndian: words.1), UInt64(littleEndian: words.2)
        )
        guard count == 24, stored == generation, check == Self.check(stored, end) else { return nil }
        return end
    }

    /// The length of the lock file's mapping: one page at least (the durable end lies in its first 32 bytes).
    private static let mappingLength = 4096

    /// ``durableEnd(generation:)`` read through a mapping of the lock file: a memory read, for a writable
    /// engine's every read to notice the commits of other writers. Maps the file on first use once it holds
    /// a durable end (a mapping of an empty file may not be read: SIGBUS); nil until then. The file is never
    /// shortened, so the mapped bytes stay readable.
    package func mappedDurableEnd(generation: UInt64) -> UInt64? {
        let words = Self.table.withLock { table -> (UInt64, UInt64, UInt64)? in
            guard var entry = table[path], !released.withLock({ $0 }) else { return nil }
            if entry.mapping == 0 {
                var st = stat()
                guard fstat(entry.descriptor, &st) == 0, st.st_size >= Self.durableEndOffset + 24,
                    let pointer = mmap(nil, Self.mappingLength, PROT_READ, MAP_SHARED, entry.descriptor, 0),
                    pointer != MAP_FAILED
                else { return nil }
                entry.mapping = UInt(bitPattern: pointer)
                table[path] = entry
            }
            // Safety: mapped above, unmapped only when the entry goes (under this lock); 32 bytes in the file.
            guard let base = UnsafeRawPointer(bitPattern: entry.mapping) else { return nil }
            let offset = Int(Self.durableEndOffset)
            return (
                base.loadUnaligned(fromByteOffset: offset, as: UInt64.self),
                base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self),
                base.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)
            )
        }
        guard let words else { return nil }
        let (stored, end, check) = (
            UInt64(littleEndian: words.0), UInt64(littleEndian: words.1), UInt64(littleEndian: words.2)
        )
        guard stored == generation, check == Self.check(stored, end) else { return nil }
        return end
    }

    /// A mix of the generation and end (never 0 for a valid pair, so a lock file of zeros holds no value).
    private static func check(_ generation: UInt64, _ end: UInt64) -> UInt64 {
        var x = (generation &* 0x9E37_79B9_7F4A_7C15) ^ (end &+ 0x5851_F42D_4C95_7F2D)
        x ^= x >> 31
        x &*= 0xBF58_476D_1CE4_E5B9
        x ^= x >> 29
        return x | 1
    }

    /// Gives this engine's hold up; the last holder of the process closes the lock file (releasing it).
    package func release() {
        guard
            released.withLock({ done in
                defer { done = true }; return !done
            })
        else { return }
        Self.table.withLock { table in
            guard var entry = table[path] else { return }
            entry.holders -= 1
            if writable {
                entry.writers -= 1
                // The writer lock is this writable engine's: never left behind by a hold that is gone.
                if entry.writing {
                    _ = Self.setLock(entry.descriptor, type: F_UNLCK, byte: Self.writerByte)
                    entry.writing = false
                }
            }
            if entry.holders > 0 {
                table[path] = entry
            } else {
                table[path] = nil
                if let mapping = UnsafeMutableRawPointer(bitPattern: entry.mapping) {
                    _ = munmap(mapping, Self.mappingLength)
                }
                _ = Self.systemCloseLock(entry.descriptor)
            }
        }
    }

    // MARK: System calls

    /// Opens (creating, mode 0600) the lock file read-write, or read-only if it exists and cannot be
    /// opened for writing (a shared record lock needs read access only). The corresponding C function is
    /// `open(2)`.
    private static func openLockFile(_ path: String) throws(StorageError) -> Int32 {
        var descriptor = openRetrying(path, O_RDWR | O_CREAT | O_CLOEXEC)
        if descriptor < 0 && (errno == EACCES || errno == EROFS || errno == EPERM) {
            descriptor = openRetrying(path, O_RDONLY | O_CLOEXEC)
        }
        guard descriptor >= 0 else {
            throw StorageError(errno: errno, operation: "Opening the lock file", path: path, systemCall: "open")
        }
        return descriptor
    }

    private static func openRetrying(_ path: String, _ flags: Int32) -> Int32 {
        while true {
            #if canImport(Glibc)
                let descriptor = Glibc.open(path, flags, 0o600)
            #else
                let descriptor = Darwin.open(path, flags, 0o600)
            #endif
            if descriptor >= 0 || errno != EINTR { return descriptor }
        }
    }

    private static func systemCloseLock(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.close(descriptor)
        #else
            Darwin.close(descriptor)
        #endif
    }

    private static func lockDescription(type: Int32, byte: off_t = 0) -> flock {
        var description = flock()
        description.l_type = numericCast(type)
        description.l_whence = numericCast(SEEK_SET)
        description.l_start = byte
        description.l_len = 1
        return description
    }

    /// The process ID of a process holding a lock on byte 0 that keeps this process from locking it
    /// exclusively (`fcntl(F_GETLK)`, which reports one of them), or nil: none, or a holder the system cannot
    /// name (`l_pid` 0 or less, as for a holder in another PID namespace).
    private static func otherHolder(_ descriptor: Int32) -> Int32? {
        var query = lockDescription(type: F_WRLCK)
        guard fcntl(descriptor, F_GETLK, &query) == 0, Int32(query.l_type) != Int32(F_UNLCK), query.l_pid > 0 else {
            return nil
        }
        return Int32(query.l_pid)
    }

    /// Sets a byte's record lock without waiting (`fcntl(F_SETLK)`; byte 0, the presence lock, unless
    /// told); false when another process holds a conflicting one (or the call failed: treated as held, so
    /// nothing destructive runs).
    private static func setLock(_ descriptor: Int32, type: Int32, byte: off_t = 0) -> Bool {
        var description = lockDescription(type: type, byte: byte)
        while true {
            if fcntl(descriptor, F_SETLK, &description) == 0 { return true }
            if errno != EINTR { return false }
        }
    }

    private static func sleepBriefly() {
        var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
        _ = nanosleep(&pause, nil)
    }

    private static func busy(_ storePath: String) -> StorageError {
        StorageError(
            .alreadyOpen,
            "'\(storePath)' is being deleted or compacted by another process, which held its lock file for more than "
                + "\(patience). Try again once that process is done with it.")
    }

    private static func secondWriter(_ storePath: String) -> StorageError {
        StorageError(
            .alreadyOpen,
            "'\(storePath)' is already open for writing in this process (by another engine). Share that one: "
                + "realms on one path share their file.")
    }

    /// The refusal of an operation that another process's hold on the store forbids; names that process
    /// when its ID is known.
    static func openElsewhere(_ storePath: String, holder: Int32? = nil) -> StorageError {
        let who = holder.map { "another process (pid \($0))" } ?? "another process"
        return StorageError(
            .alreadyOpen,
            "'\(storePath)' is open in \(who) (its lock file '\(lockPath(forStore: storePath))' is held). "
                + "Close it there first: release every Realm on it and await Realm.waitUntilClosed(configuration:).")
    }
}
