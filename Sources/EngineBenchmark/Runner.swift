import ActorStoreBenchmarkKit
import Foundation

/// BenchmarkKit's, not Foundation's.
typealias Measurement = ActorStoreBenchmarkKit.Measurement

/// The benchmarks, in the order they run. The raw names are what `--only` takes.
enum Benchmark: String, BenchmarkCase {
    case rawAppend = "raw-append"
    case rawWrite = "raw-write"
    case bulkInsert = "bulk-insert"
    case open = "open"
    case pointRead = "point-read"
    case snapshot = "snapshot"
    case memory = "memory"
    case commitSerial = "commit-serial"
    case commitConcurrent = "commit-concurrent"
    case compaction = "compaction"

    var summary: String {
        switch self {
        case .rawAppend: "append 100 B + fdatasync latency, plain POSIX (no engine)"
        case .rawWrite: "sequential write + fsync throughput, plain POSIX (no engine)"
        case .bulkInsert: "insert N rows in one durable transaction"
        case .open: "StorageEngine.open of the N-row store"
        case .pointRead: "random point reads (withRow + string and int columns) on one core"
        case .snapshot: "engine.snapshot() cost at 1k and N rows"
        case .memory: "RSS growth after opening the N-row store and reading every row (child process)"
        case .commitSerial: "serial durable single-row commits"
        case .commitConcurrent: "durable single-row commits from 16 concurrent writer tasks (group commit)"
        case .compaction: "compact() after updating 50 % of the N-row store"
        }
    }
}

/// How much work each benchmark does: full size, or small for `--quick`.
struct Plan: Sendable {
    /// Rows of the large table (the targets are written for 1,000,000).
    var rows: Int
    var runs: Int
    var rawAppendSamples: Int
    var rawWriteBytes: Int
    var serialCommits: Int
    var concurrentWriters = 16
    var commitsPerWriter: Int
    var reads: Int
    var snapshotCalls: Int
    var smallRows = 1000
    /// Seconds one bulk-insert run may take before it is stopped and extrapolated (so a pathological
    /// insert path cannot stall the whole benchmark).
    var bulkInsertBudget: Double

    static let fullRows = 1_000_000

    init(_ options: Options) {
        runs = options.common.runs ?? 3
        if options.common.quick {
            rows = options.rows ?? 100_000
            rawAppendSamples = 300
            rawWriteBytes = 64 << 20
            serialCommits = 1000
            commitsPerWriter = 200
            reads = 1_000_000
            snapshotCalls = 200_000
            bulkInsertBudget = 10
        } else {
            rows = options.rows ?? Plan.fullRows
            rawAppendSamples = 2000
            rawWriteBytes = 1 << 30
            serialCommits = 3000
            commitsPerWriter = 500
            reads = 3_000_000
            snapshotCalls = 1_000_000
            bulkInsertBudget = 30
        }
    }

    /// The factor by which size-proportional targets (time to insert or open N rows, their memory) shrink
    /// when N is below the 1M rows the targets were set for.
    var scale: Double { Double(rows) / Double(Plan.fullRows) }
    var isScaled: Bool { rows != Plan.fullRows }
}

/// Runs the selected benchmarks, prints the table, writes the JSON.
enum Runner {
    static func main(_ options: Options) async -> Int32 {
        let plan = Plan(options)
        let workspace: Workspace
        do {
            workspace = try Workspace(parent: options.common.directory)
        } catch {
            FileHandle.standardError.write(Data("engine-bench: \(error)\n".utf8))
            return 1
        }
        let interrupt = Harness.removeOnInterrupt(tool: "engine-bench", root: workspace.root)
        defer {
            interrupt.cancel()
            workspace.cleanup()
        }
        let mode = options.common.mode
        print(
            "engine-bench (\(mode)): \(Report.format(Double(plan.rows))) rows, \(plan.runs) runs per measurement, "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(Report.loadAverage()), "
                + "files in \(workspace.root)")
        let workloads = Workloads(
            plan: plan, workspace: workspace,
            report: Report(
                mode: mode, sizeKey: "rows", size: plan.rows, runsPerMeasurement: plan.runs,
                cores: ProcessInfo.processInfo.activeProcessorCount, directory: workspace.root,
                date: ISO8601DateFormatter().string(from: Date())))
        let start = monotonicNanos()
        let ran = await Harness.runEach(options.common.selected(Benchmark.self)) { try await workloads.run($0) }
        let wrote = Harness.finish(
            &workloads.report, tool: "engine-bench", start: start, jsonPath: options.common.jsonPath)
        // A missed target is a finding, not a failure of the benchmark: only errors make the exit code non-zero.
        return ran && wrote ? 0 : 1
    }
}
