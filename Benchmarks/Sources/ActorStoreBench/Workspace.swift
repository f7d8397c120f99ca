import ActorStore
import BenchmarkModels
import Foundation
import GRDB

/// A temporary directory for every file of the run, removed at the end.
final class Workspace: @unchecked Sendable {
    // @unchecked: `counter` is only touched from the main task.
    let root: String
    private var counter = 0

    /// A new directory under `parent` (`--dir`), or under the system's temporary directory.
    init(parent: String? = nil) throws {
        root = ((parent ?? NSTemporaryDirectory()) as NSString).appendingPathComponent(
            "actorstore-bench-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    func newPath(_ name: String, _ suffix: String) -> String {
        counter += 1
        return (root as NSString).appendingPathComponent("\(name)-\(counter).\(suffix)")
    }

    /// ActorStore's configuration: durable (`.full`, the default), library defaults otherwise.
    static func realmConfiguration(_ path: String) -> Realm.Configuration {
        var configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: path))
        configuration.objectTypes = [Item.self, IndexedItem.self]
        return configuration
    }

    /// ActorStore's configuration for the bulk workloads (W1, W5, W6, W12): durability `.none`, no sync at
    /// commit, which is what GRDB's pools run at by default (WAL with `synchronous=NORMAL`: a commit is
    /// written to the WAL, not synced; a power loss may lose it, a crash of the process does not). Both
    /// sides then time the same work: the transaction and its write to the OS, not the disk's flush. W13
    /// compares durable commits, both sides syncing.
    ///
    /// Automatic compaction is off: a bulk update or delete leaves half the file dead, and the compaction that
    /// starts at its commit runs in the background for about a second, beside whatever is timed next (the
    /// workload's next step, or the next engine's turn). The workloads time `compact()` on its own instead
    /// (W6 after the delete, W12 after the updates), so the cost of reclaiming the space is a row of its own.
    static func bulkConfiguration(_ path: String) -> Realm.Configuration {
        var configuration = realmConfiguration(path)
        configuration.durability = .none
        configuration.automaticCompaction = false
        return configuration
    }

    /// GRDB's configuration: a `DatabasePool` (WAL mode) with GRDB's defaults (`synchronous` untouched: GRDB
    /// sets NORMAL in WAL mode), except `busyMode`: a 5 s timeout instead of failing at once. Under W9's
    /// contention (two readers and a writer on one pool, raw statements) `BEGIN IMMEDIATE` occasionally failed
    /// with SQLITE_BUSY with the default; the timeout only waits where the default would have thrown.
    static func openPool(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        return try DatabasePool(path: path, configuration: configuration)
    }

    /// Removes a file and its companions (SQLite's -wal/-shm, ActorStore's transient files).
    func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal", ".creating", ".compacting"] {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }

    func copy(_ from: String, to: String) throws {
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: from + suffix) {
            try FileManager.default.copyItem(atPath: from + suffix, toPath: to + suffix)
        }
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    func cleanup() { try? FileManager.default.removeItem(atPath: root) }
}
