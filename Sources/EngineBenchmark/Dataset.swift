import ActorStoreBenchmarkKit
import ActorStorePersistence
import Foundation

/// The benchmark's table and rows: `Item(id: Int64 primary key, name: String "name-<i>", group: Int64 i % 100,
/// score: Double)`. Row `i` gets object key `i` (keys are handed out from 0 in insertion order).
enum Dataset {
    static let tableName = "Item"
    static let schema = TableSchema(
        tableName,
        columns: [
            ColumnSchema("id", ColumnType(.int64), primaryKey: true),
            ColumnSchema("name", ColumnType(.string)),
            ColumnSchema("group", ColumnType(.int64)),
            ColumnSchema("score", ColumnType(.double)),
        ])
    static let nameColumn = 1
    static let groupColumn = 2
    static let scoreColumn = 3

    @inline(__always)
    static func row(_ i: Int) -> [Value] {
        [.int(Int64(i)), .string("name-\(i)"), .int(Int64(i % 100)), .double(Double(i) * 0.25)]
    }

    /// Rows `range`, built ahead of a timed loop so that the loop measures the engine, not `String` formatting.
    static func rows(_ range: Range<Int>) -> [[Value]] {
        var rows: [[Value]] = []
        rows.reserveCapacity(range.count)
        for i in range { rows.append(row(i)) }
        return rows
    }

    /// The configuration every benchmark opens stores with: durable (`fdatasync`), no background compaction
    /// (it would run at unpredictable times and disturb the measurements).
    static func configuration(_ path: String) -> StorageEngine.Configuration {
        var configuration = StorageEngine.Configuration(path: path, durability: .full, autoCompaction: nil)
        configuration.encryptionKey = encryptionKey
        return configuration
    }

    /// With `--encrypted` (the environment variable `ENGINE_BENCH_ENCRYPTED=1`, which the memory probe's
    /// child process inherits), every store is encrypted with a fixed 64-byte key.
    static let encryptionKey: [UInt8]? =
        ProcessInfo.processInfo.environment["ENGINE_BENCH_ENCRYPTED"] == "1" ? (0..<64).map { UInt8($0) } : nil

    /// Opens (creating) a store and makes sure it has the `Item` table; returns the engine and the table.
    static func openWithTable(_ path: String) async throws -> (StorageEngine, TableID) {
        let engine = try await StorageEngine.open(configuration(path))
        if let table = try engine.snapshot().tableID(named: tableName) { return (engine, table) }
        let txn = try await engine.beginWrite()
        let table = try txn.createTable(schema)
        try await txn.commit()
        return (engine, table)
    }

    /// The `Item` table of an open store.
    static func table(of engine: StorageEngine) throws -> TableID {
        guard let table = try engine.snapshot().tableID(named: tableName) else {
            throw Workspace.Failure(description: "The store at '\(engine.path)' has no \(tableName) table.")
        }
        return table
    }

    /// Inserts `rows` in one durable transaction.
    static func insertAll(_ rows: [[Value]], into table: TableID, of engine: StorageEngine) async throws {
        let txn = try await engine.beginWrite()
        for row in rows { try txn.insert(table, row) }
        try await txn.commit()
    }
}

/// The benchmark's temporary directory (under /tmp, or under `--dir`), removed at the end.
final class Workspace: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let root: String

    init(parent: String?) throws {
        let base = parent ?? NSTemporaryDirectory()
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        root = trimmed + "/engine-bench-" + UUID().uuidString.prefix(8).lowercased()
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "Cannot create the benchmark directory '\(root)': \(error.localizedDescription)")
        }
    }

    func path(_ name: String) -> String { root + "/" + name }

    /// Removes a store file and the engine's temporary files next to it.
    func removeStore(_ name: String) {
        for suffix in ["", ".creating", ".compacting"] {
            try? FileManager.default.removeItem(atPath: path(name) + suffix)
        }
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }

    /// Copies a store file and syncs the copy, so that its write-back does not run during a timed phase.
    func copyStore(_ source: String, to destination: String) throws {
        removeStore(destination)
        try FileManager.default.copyItem(atPath: path(source), toPath: path(destination))
        try RawIO.syncFile(path(destination))
    }

    func fileSize(_ name: String) -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: path(name)))?[.size] as? NSNumber)?.uint64Value ?? 0
    }

    func cleanup() { try? FileManager.default.removeItem(atPath: root) }
}
