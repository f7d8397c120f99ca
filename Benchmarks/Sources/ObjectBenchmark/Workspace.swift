import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory for the benchmark's realm files, removed at the end (and on Ctrl-C / SIGTERM).
final class Workspace: Sendable {
    typealias Failure = BenchmarkFailure

    let root: String
    private let counter = Counter()

    init(parent: String?) throws {
        let base = parent ?? NSTemporaryDirectory()
        root = (base as NSString).appendingPathComponent("object-bench-\(getpid())-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "cannot create the benchmark directory '\(root)': \(error)")
        }
    }

    /// A path in the workspace that nothing uses yet.
    func newPath(_ name: String, suffix: String = "realm") -> String {
        (root as NSString).appendingPathComponent("\(name)-\(counter.next()).\(suffix)")
    }

    /// A configuration for a new realm file in the workspace, allowing the benchmark's classes.
    func newConfiguration(_ name: String, durability: Realm.Durability) -> Realm.Configuration {
        configuration(at: newPath(name), durability: durability)
    }

    func configuration(at path: String, durability: Realm.Durability) -> Realm.Configuration {
        var configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: path))
        configuration.objectTypes = [Dog.self, KeyedDog.self, Item.self, IndexedItem.self, SortDog.self]
        configuration.durability = durability
        // Bulk files are written once and deleted: background compaction would only add noise.
        configuration.automaticCompaction = false
        return configuration
    }

    /// Removes a realm file and its auxiliary files (call once its `Realm` is released).
    func remove(_ path: String) {
        for suffix in ["", ".creating", ".compacting"] {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }

    func cleanup() {
        try? FileManager.default.removeItem(atPath: root)
    }

    private final class Counter: @unchecked Sendable {
        // @unchecked: the only state is behind the lock.
        private let lock = NSLock()
        private var value = 0

        func next() -> Int {
            lock.lock()
            defer { lock.unlock() }
            value += 1
            return value
        }
    }
}
