import ActorStore
import Foundation
import GRDB

/// A temporary directory for every file of the run, removed at the end.
final class Workspace: @unchecked Sendable {
    // @unchecked: `counter` is only touched from the main task.
    let root: String
    private var counter = 0

    init() throws {
        root = (NSTemporaryDirectory() as NSString).appendingPathComponent(
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

    /// GRDB's configuration: a `DatabasePool` (WAL mode) with GRDB's defaults (`synchronous` untouched).
    static func openPool(_ path: String) throws -> DatabasePool {
        try DatabasePool(path: path, configuration: Configuration())
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
