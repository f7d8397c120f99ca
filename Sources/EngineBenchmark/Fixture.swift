import ActorStoreBenchmarkKit
import ActorStorePersistence
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
        if Dataset.encryptionKey != nil {
            try await commitThroughEngine(to: path, table: table, keys: 0..<rows) { Dataset.row($0) }
            return
        }
        try appendCommit(to: path, version: version.next, table: table, keys: 0..<rows) { Dataset.row($0) }
        // Open and close once: the open replays the record and the close writes a checkpoint, so the store
        // is in the state of any store that was closed (and of the encrypted fixture) whichever benchmark
        // opens it first; otherwise the first to open it reads an index built by replay, in memory.
        try await StorageEngine.open(Dataset.configuration(path)).close()
    }

    /// ``appendCommit(to:version:table:keys:row:)`` for an encrypted store (`--encrypted`), whose records
    /// only the engine can seal: one transaction inserting or updating every row.
    static func commitThroughEngine<Keys: Sequence<Int>>(
        to path: String, table: TableID, keys: Keys, row: (Int) -> [Value]
    ) async throws {
        let engine = try await StorageEngine.open(Dataset.configuration(path))
        let txn = try await engine.beginWrite()
        for key in keys {
            let values = row(key)
            if txn.contains(table, ObjectKey(Int64(key))) {
                try txn.update(
                    table, ObjectKey(Int64(key)), values.enumerated().dropFirst().map { ($0.offset, $0.element) })
            } else {
                try txn.insert(table, values)
            }
        }
        try await txn.commit()
        await engine.close()
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
