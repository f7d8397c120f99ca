import ActorStorePersistence
import BenchmarkKit
import Foundation

/// Builds the large stores the read-side benchmarks need without going through `WriteTransaction`, so that
/// open, point reads, snapshots, memory and compaction can be measured even when the insert path is slow:
/// the engine creates the store and its table, then one commit record holding every row is appended —
/// byte for byte the record a single `insert`-per-row transaction writes (the engine's own `RowEncoder`,
/// `CommitPayload` op layout and `Record` framing). Opening the store replays and verifies it like any other.
enum Fixture {
    /// Creates `path` with the `Item` table and rows `0 ..< rows` (object key `i` = row `i`).
    static func createStore(at path: String, rows: Int) async throws {
        let (engine, table) = try await Dataset.openWithTable(path)
        let version = engine.latestVersion
        await engine.close()
        try appendCommit(to: path, version: version.next, table: table, keys: 0..<rows) { Dataset.row($0) }
    }

    /// Appends one commit record creating `version` that upserts row `row(key)` for every key in `keys`
    /// into `table`, then syncs the file. The store must be closed.
    static func appendCommit<Keys: Sequence<Int>>(
        to path: String, version: Version, table: TableID, keys: Keys, row: (Int) -> [Value]
    ) throws {
        let types = Dataset.schema.columns.map(\.type)
        var payload = ByteWriter(capacity: 64 << 20)
        payload.append(version.rawValue)
        var encoded: [UInt8] = []
        for key in keys {
            encoded.removeAll(keepingCapacity: true)
            RowEncoder.encode(row(key), types: types, into: &encoded)
            payload.append(CommitPayload.Op.upsert.rawValue)
            payload.append(table.rawValue)
            payload.append(Int64(key))
            payload.append(UInt32(encoded.count))
            payload.append(encoded)
        }
        var record: [UInt8] = []
        payload.bytes.withUnsafeBytes { Record.frame(kind: .commit, payload: $0, into: &record) }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw Workspace.Failure(description: "cannot open '\(path)' to append the fixture record")
        }
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: record)
        try handle.synchronize()
    }
}
