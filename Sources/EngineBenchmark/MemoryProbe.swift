import ActorStoreBenchmarkKit
import ActorStorePersistence
import Foundation

/// The `memory` benchmark runs in a fresh child process (this executable with `--memory-probe PATH`), so that
/// the heap and mappings left behind by the other benchmarks cannot hide or inflate the store's footprint.
enum MemoryProbe {
    struct Result: Codable, Sendable {
        var before: ResidentMemory
        var afterOpen: ResidentMemory
        var afterRead: ResidentMemory
        var rows: Int
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Parent side: runs the child on `storePath` and returns what it measured.
    static func measure(storePath: String) throws -> Result {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--memory-probe", storePath]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "the memory probe exited with status \(process.terminationStatus): "
                    + String(decoding: data, as: UTF8.self))
        }
        do {
            return try JSONDecoder().decode(Result.self, from: data)
        } catch {
            throw Failure(description: "the memory probe printed '\(String(decoding: data, as: UTF8.self))': \(error)")
        }
    }

    /// Child side: RSS before opening, after opening, and after reading every row once (every column).
    static func runChild(storePath: String) async -> Int32 {
        do {
            let before = ResidentMemory.current()
            let engine = try await StorageEngine.open(Dataset.configuration(storePath))
            let afterOpen = ResidentMemory.current()
            let table = try Dataset.table(of: engine)
            let snapshot = try engine.snapshot()
            var checksum: UInt64 = 0
            var rows = 0
            for (key, _) in snapshot.keys(table) {
                let value = try snapshot.withRow(table, key) { (row) throws(StorageError) -> UInt64 in
                    let id = try row.int64(at: 0, type: .int64, optional: false) ?? 0
                    let name = try row.string(at: Dataset.nameColumn, optional: false) ?? ""
                    let group = try row.int64(at: Dataset.groupColumn, type: .int64, optional: false) ?? 0
                    let score = try row.double(at: Dataset.scoreColumn, optional: false) ?? 0
                    return UInt64(bitPattern: id &+ group) &+ UInt64(name.utf8.count) &+ score.bitPattern
                }
                checksum &+= value ?? 0
                rows += 1
            }
            Sink.shared.consume(checksum)
            let afterRead = ResidentMemory.current()
            withExtendedLifetime((engine, snapshot)) {}
            let result = Result(before: before, afterOpen: afterOpen, afterRead: afterRead, rows: rows)
            FileHandle.standardOutput.write(try JSONEncoder().encode(result))
            return 0
        } catch {
            print("memory probe failed: \(error)")
            return 1
        }
    }
}
