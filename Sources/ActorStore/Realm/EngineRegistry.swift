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
    }
    private static let entries = Locked<[String: Entry]>([:])

    /// A reference-counted use of the engine for `key`.
    static func acquire(
        _ key: String, readOnly: Bool, open: @escaping @Sendable () async throws(StorageError) -> StorageEngine
    ) async throws(RealmError) -> StorageEngine {
        let task = entries.withLock { table -> Task<StorageEngine, any Error>? in
            if var entry = table[key] {
                // A read-only realm may share a writable engine (writes are refused by the realm); a writable
                // realm cannot share a read-only one.
                if entry.readOnly && !readOnly { return nil }
                entry.users += 1
                table[key] = entry
                return entry.opening
            }
            let task = Task<StorageEngine, any Error> { try await open() }
            table[key] = Entry(opening: task, users: 1, readOnly: readOnly)
            return task
        }
        guard let task else {
            throw RealmError(
                .alreadyOpen,
                "The realm is open read-only in this process: release those Realm instances before opening it "
                    + "writable.")
        }
        do {
            return try await task.value
        } catch {
            release(key)
            if let error = error as? StorageError { throw RealmError(error) }
            throw RealmError(.fileAccess, "Opening the realm failed: \(error)", underlyingError: error)
        }
    }

    /// Ends one use of `key`'s engine.
    static func release(_ key: String) {
        entries.withLock { table in
            guard var entry = table[key] else { return }
            entry.users -= 1
            table[key] = entry.users > 0 ? entry : nil
        }
    }

    /// Whether any realm in this process has `key` open.
    static func isOpen(_ key: String) -> Bool { entries.withLock { $0[key] != nil } }
}
