import ActorStorePersistence

/// One open engine per file per process, shared by every ``Realm`` actor on that file.
///
/// The engine holds the file's exclusive lock, so a second engine on the same file would fail; instead
/// realms acquire a shared handle here. Files are keyed by their resolved path (symbolic links, `.` and
/// `..` resolved: see ``Realm/Configuration``), so two paths to one file share its engine. Opening is
/// asynchronous, so the registry stores the opening task and later acquirers await the same one.
///
/// The last release closes the engine (a task that waits for its writer and syncs, then releases the file's
/// lock), and the next acquisition of the file awaits that close before opening it again: an engine left
/// to close by itself may still be alive a moment later (a background compaction or the sync thread's
/// round holds it), and a reopen would meet its lock.
enum EngineRegistry {
    private struct Entry {
        let opening: Task<StorageEngine, any Error>
        var users: Int
        /// Opened read-only: it takes no lock and does not see later commits, so it cannot serve a writer.
        let readOnly: Bool
        /// The engine's durability: a realm asking for another would silently get this one.
        let durable: Bool
        /// The engine, once open.
        var engine: ObjectIdentifier?
        /// The file system the engine uses (to compare file identities).
        let fileSystem: (any FileSystem)?
        /// The key the engine was opened with: a realm with another key (or none) must not share it.
        let encryptionKey: [UInt8]?
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// The closing of the engines no realm uses any more, by key, until they are closed.
        var closing: [String: [ClosingEngine]] = [:]
        /// The identifier of the last ``ClosingEngine``.
        var lastClosingID: UInt64 = 0
        /// Tasks waiting in ``waitUntilClosed(_:)``, by key.
        var closeWaiters: [String: [CheckedContinuation<Void, Never>]] = [:]

        /// The waiters of `key` to resume if no realm uses its engine and none of its engines is closing.
        mutating func idleWaiters(_ key: String) -> [CheckedContinuation<Void, Never>] {
            guard entries[key] == nil, closing[key] == nil else { return [] }
            return closeWaiters.removeValue(forKey: key) ?? []
        }
    }

    /// A released engine being closed: its task closes the engine, then removes this record.
    private struct ClosingEngine: Sendable {
        let id: UInt64
        let task: Task<Void, Never>
    }

    private static let state = Locked(State())

    /// Waits until the released engines of `key` (of every key when nil) are closed. Returns whether there
    /// were any.
    @discardableResult
    private static func waitForClosingEngines(_ key: String?) async -> Bool {
        let pending = state.withLock { state in
            key.map { state.closing[$0] ?? [] } ?? state.closing.values.flatMap { $0 }
        }
        for closing in pending { await closing.task.value }
        return !pending.isEmpty
    }

    /// A reference-counted use of the engine for `key`.
    static func acquire(
        _ key: String, readOnly: Bool, durable: Bool, fileSystem: (any FileSystem)? = nil,
        encryptionKey: [UInt8]? = nil, open: @escaping @Sendable () async throws(StorageError) -> StorageEngine
    ) async throws(RealmError) -> StorageEngine {
        await waitForClosingEngines(key)
        do {
            return try await acquireOnce(
                key, readOnly: readOnly, durable: durable, fileSystem: fileSystem, encryptionKey: encryptionKey,
                open: open)
        } catch let error where error.code == .alreadyOpen {
            // The same file may be closing under another name (it was moved): wait for every engine, retry once.
            if await waitForClosingEngines(nil) {
                do {
                    return try await acquireOnce(
                        key, readOnly: readOnly, durable: durable, fileSystem: fileSystem,
                        encryptionKey: encryptionKey, open: open)
                } catch let error where error.code == .alreadyOpen {
                    throw explained(error, key, fileSystem)
                }
            }
            throw explained(error, key, fileSystem)
        }
    }

    private static func acquireOnce(
        _ key: String, readOnly: Bool, durable: Bool, fileSystem: (any FileSystem)?, encryptionKey: [UInt8]?,
        open: @escaping @Sendable () async throws(StorageError) -> StorageEngine
    ) async throws(RealmError) -> StorageEngine {
        while true {
            let found = state.withLock { state -> Result<Task<StorageEngine, any Error>?, RealmError> in
                // A release raced this acquisition: wait for that close first (the loop comes back).
                if state.entries[key] == nil, state.closing[key] != nil { return .success(nil) }
                if var entry = state.entries[key] {
                    // A read-only realm may share a writable engine (writes are refused by the realm); a writable
                    // realm cannot share a read-only one.
                    if entry.readOnly && !readOnly { return .failure(Self.readOnlyConflict) }
                    if entry.durable != durable && !readOnly { return .failure(Self.durabilityConflict(entry.durable)) }
                    // The open engine was opened with its file's key: another key is the wrong one.
                    if entry.encryptionKey != encryptionKey { return .failure(Self.keyConflict(entry.encryptionKey)) }
                    entry.users += 1
                    state.entries[key] = entry
                    return .success(entry.opening)
                }
                let task = Task<StorageEngine, any Error> { try await open() }
                state.entries[key] = Entry(
                    opening: task, users: 1, readOnly: readOnly, durable: durable, fileSystem: fileSystem,
                    encryptionKey: encryptionKey)
                return .success(task)
            }
            guard let task = try found.get() else {
                await waitForClosingEngines(key)
                continue
            }
            do {
                let engine = try await task.value
                state.withLock { $0.entries[key]?.engine = ObjectIdentifier(engine) }
                return engine
            } catch {
                release(key, engine: nil)
                if let error = error as? StorageError { throw RealmError(error) }
                throw RealmError(.fileAccess, "Opening the realm failed: \(error)", underlyingError: error)
            }
        }
    }

    private static func keyConflict(_ openKey: [UInt8]?) -> RealmError {
        RealmError(
            .wrongKey,
            openKey == nil
                ? "This realm file is open in this process without encryption: open it without an encryption key."
                : "This realm file is open in this process with another encryption key: use the key it was "
                    + "created with.")
    }

    /// `error` (the file is locked) with a message saying whether this process holds the lock: an engine of
    /// this process on the same file under another name (a hard link) is named.
    private static func explained(_ error: RealmError, _ key: String, _ fileSystem: (any FileSystem)?) -> RealmError {
        guard key.hasPrefix("file:") else { return error }
        let path = String(key.dropFirst(5))
        let others = state.withLock { state in
            state.entries.compactMap { other, entry in
                other != key && other.hasPrefix("file:") ? (String(other.dropFirst(5)), entry.fileSystem) : nil
            }
        }
        let fs = fileSystem ?? PosixFileSystem()
        guard let identity = try? fs.identity(atPath: path) else { return error }
        for (other, otherFileSystem) in others
        where (try? (otherFileSystem ?? PosixFileSystem()).identity(atPath: other)) == identity {
            return RealmError(
                .alreadyOpen,
                "'\(path)' is the file '\(other)', which this process has open under that name: open it "
                    + "through one name only (realms on one path share the file).",
                underlyingError: error)
        }
        return error
    }

    private static let readOnlyConflict = RealmError(
        .alreadyOpen,
        "The realm is open read-only in this process: release those Realm instances before opening it writable.")

    private static func durabilityConflict(_ durable: Bool) -> RealmError {
        RealmError(
            .alreadyOpen,
            "The realm is already open in this process with durability \(durable ? ".full" : ".none"): every "
                + "writable Realm on a file must use the same durability.")
    }

    /// Ends one use of `key`'s engine; the last one closes it.
    static func release(_ key: String, engine: StorageEngine?) {
        let idle = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard var entry = state.entries[key] else { return [] }
            entry.users -= 1
            guard entry.users == 0 else {
                state.entries[key] = entry
                return []
            }
            state.entries[key] = nil
            guard let engine else { return state.idleWaiters(key) }
            // Registered in the same critical section that removes the entry, so no acquisition sees neither.
            // The close task takes its own record out before it ends: whoever awaited it finds the record
            // gone. (A separate clean-up task, as before, left a moment where the close was over and still
            // listed; an open then looked again without suspending, and with every thread of the
            // cooperative pool in such a loop the clean-up never ran and the process stopped.)
            state.lastClosingID &+= 1
            let id = state.lastClosingID
            let task = Task {
                await engine.close()
                let idle = Self.state.withLock { state in
                    state.closing[key]?.removeAll { $0.id == id }
                    if state.closing[key]?.isEmpty == true { state.closing[key] = nil }
                    return state.idleWaiters(key)
                }
                for waiter in idle { waiter.resume() }
            }
            state.closing[key, default: []].append(ClosingEngine(id: id, task: task))
            return []
        }
        for waiter in idle { waiter.resume() }
    }

    /// Returns once no realm of this process uses `key`'s file and its engine is closed (its lock released):
    /// at once if none is open. Waits as long as some `Realm` on the file is alive.
    static func waitUntilClosed(_ key: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if state.entries[key] == nil && state.closing[key] == nil { return true }
                state.closeWaiters[key, default: []].append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Adds a use of `engine` if it is still the open engine of `key` (an observer keeping the file open
    /// while it observes); false if it is not (every realm on the file was released).
    static func retain(_ key: String, engine: StorageEngine) -> Bool {
        state.withLock { state in
            guard var entry = state.entries[key], entry.engine == ObjectIdentifier(engine) else { return false }
            entry.users += 1
            state.entries[key] = entry
            return true
        }
    }

    /// The closes of `key`'s released engines that are under way (for tests).
    static func closeTasks(_ key: String) -> [Task<Void, Never>] {
        state.withLock { state in (state.closing[key] ?? []).map(\.task) }
    }

    /// Whether the registry lists a released engine of `key` as closing (for tests).
    static func isClosing(_ key: String) -> Bool { state.withLock { $0.closing[key] != nil } }

    /// Whether any realm in this process has `key` open.
    static func isOpen(_ key: String) -> Bool { state.withLock { $0.entries[key] != nil } }
}
