import ActorStorePersistence

/// One open engine per file per process, shared by every ``Realm`` actor on that file.
///
/// The engine holds the file's exclusive lock, so a second engine on the same file would fail; instead
/// realms acquire a shared handle here. Opening is asynchronous, so the registry stores the opening task
/// and later acquirers await the same one. The last release drops the registry's reference; the engine
/// closes its file when the last snapshot or transaction using it is gone.
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
    }
    private static let entries = Locked<[String: Entry]>([:])

    /// Engines no realm uses any more but that may still be alive for a moment (the sync thread finishing
    /// its round holds one briefly). Until one is gone it holds its file's lock, so opening waits for them.
    private static let closing = Locked<[WeakEngine]>([])

    private final class WeakEngine: Sendable {
        let key: String
        weak let engine: StorageEngine?
        init(_ key: String, _ engine: StorageEngine) {
            self.key = key
            self.engine = engine
        }
    }

    /// Waits (at most about two seconds) until the released engines of `key` — of every key when nil —
    /// have closed their files. Returns whether there were any.
    @discardableResult
    private static func waitForClosingEngines(_ key: String?) async -> Bool {
        var waited = false
        for _ in 0..<2000 {
            let pending = closing.withLock { list in
                list.removeAll { $0.engine == nil }
                return list.contains { key == nil || $0.key == key }
            }
            if !pending { return waited }
            waited = true
            try? await Task.sleep(for: .milliseconds(1))
        }
        return waited
    }

    /// A reference-counted use of the engine for `key`.
    static func acquire(
        _ key: String, readOnly: Bool, durable: Bool,
        open: @escaping @Sendable () async throws(StorageError) -> StorageEngine
    ) async throws(RealmError) -> StorageEngine {
        await waitForClosingEngines(key)
        do {
            return try await acquireOnce(key, readOnly: readOnly, durable: durable, open: open)
        } catch let error where error.code == .alreadyOpen {
            // The same file may be closing under another name (it was moved): wait for every engine, retry once.
            guard await waitForClosingEngines(nil) else { throw error }
            return try await acquireOnce(key, readOnly: readOnly, durable: durable, open: open)
        }
    }

    private static func acquireOnce(
        _ key: String, readOnly: Bool, durable: Bool,
        open: @escaping @Sendable () async throws(StorageError) -> StorageEngine
    ) async throws(RealmError) -> StorageEngine {
        let found = entries.withLock { table -> Result<Task<StorageEngine, any Error>, RealmError> in
            if var entry = table[key] {
                // A read-only realm may share a writable engine (writes are refused by the realm); a writable
                // realm cannot share a read-only one.
                if entry.readOnly && !readOnly { return .failure(Self.readOnlyConflict) }
                if entry.durable != durable && !readOnly { return .failure(Self.durabilityConflict(entry.durable)) }
                entry.users += 1
                table[key] = entry
                return .success(entry.opening)
            }
            let task = Task<StorageEngine, any Error> { try await open() }
            table[key] = Entry(opening: task, users: 1, readOnly: readOnly, durable: durable)
            return .success(task)
        }
        let task = try found.get()
        do {
            let engine = try await task.value
            entries.withLock { $0[key]?.engine = ObjectIdentifier(engine) }
            return engine
        } catch {
            release(key, engine: nil)
            if let error = error as? StorageError { throw RealmError(error) }
            throw RealmError(.fileAccess, "Opening the realm failed: \(error)", underlyingError: error)
        }
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

    /// Ends one use of `key`'s engine.
    static func release(_ key: String, engine: StorageEngine?) {
        let last = entries.withLock { table -> Bool in
            guard var entry = table[key] else { return false }
            entry.users -= 1
            table[key] = entry.users > 0 ? entry : nil
            return entry.users == 0
        }
        if last, let engine { closing.withLock { $0.append(WeakEngine(key, engine)) } }
    }

    /// Adds a use of `engine` if it is still the open engine of `key` (an observer keeping the file open
    /// while it observes); false if it is not (every realm on the file was released).
    static func retain(_ key: String, engine: StorageEngine) -> Bool {
        entries.withLock { table in
            guard var entry = table[key], entry.engine == ObjectIdentifier(engine) else { return false }
            entry.users += 1
            table[key] = entry
            return true
        }
    }

    /// Whether any realm in this process has `key` open.
    static func isOpen(_ key: String) -> Bool { entries.withLock { $0[key] != nil } }
}
