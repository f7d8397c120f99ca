// actorstore-bench: ActorStore against GRDB (SQLite), the same workloads in one process, results checked.
//
//   swift run -c release --package-path Benchmarks actorstore-bench [--quick] [--only W3[,W4]] [--json out.json]
//                                                                   [--runs N] [--dir DIR]
import ActorStore
import ActorStoreBenchmarkKit
import Foundation
import GRDB

/// The workloads, in the order they run. The raw names are what `--only` takes (in any case).
enum Workload: String, BenchmarkCase {
    case w1 = "W1"
    case w2 = "W2"
    case w3 = "W3"
    case w4 = "W4"
    case w5 = "W5"
    case w6 = "W6"
    case w7 = "W7"
    case w8 = "W8"
    case w9 = "W9"
    case w10 = "W10"
    case w11 = "W11"
    case w12 = "W12"
    case w13 = "W13"
    case w14 = "W14"
    // Last: writing gigabytes can use up a cloud disk's burst budget and slow every later fsync.
    case raw = "RAW"

    var summary: String {
        switch self {
        case .w1: "bulk insert into an empty store, one durable transaction"
        case .w2: "single-object durable transactions: serial, and 16 concurrent writers"
        case .w3: "random primary-key lookups, all four properties read"
        case .w4: "query: unindexed scan (count, fetch), indexed equality (count, fetch)"
        case .w5: "update one property of every object, one durable transaction"
        case .w6: "delete half, then compact / VACUUM: time and file sizes"
        case .w7: "open an existing store and read the first object"
        case .w8: "commit → observer latency"
        case .w9: "two readers and one durable writer at once: reads/s, writes/s"
        case .w10: "snapshot cost: freeze() / makeSnapshot()"
        case .w11: "sort random strings and ints"
        case .w12: "bulk work: add an index, set-based updates, top-1, range count, range delete"
        case .w13: "serial durable commits at equal durability (GRDB at synchronous=FULL)"
        case .w14: "serial non-durable commits: per-commit overhead (ActorStore .none, GRDB synchronous=NORMAL)"
        case .raw: "the disk itself: append + fdatasync latency, sequential write throughput"
        }
    }

    func run(_ bench: Bench) async throws {
        switch self {
        case .w1: try await bench.w1()
        case .w2: try await bench.w2()
        case .w3: try await bench.w3()
        case .w4: try await bench.w4()
        case .w5: try await bench.w5()
        case .w6: try await bench.w6()
        case .w7: try await bench.w7()
        case .w8: try await bench.w8()
        case .w9: try await bench.w9()
        case .w10: try await bench.w10()
        case .w11: try await bench.w11()
        case .w12: try await bench.w12()
        case .w13: try await bench.w13()
        case .w14: try await bench.w14()
        case .raw: try await bench.rawIO()
        }
    }
}

let usage = """
    usage: actorstore-bench [--quick] [--only W1,...,W14,RAW] [--json FILE] [--runs N] [--dir DIR]

      --quick        10x-100x smaller sizes and 1 run per engine (CI)
      --only NAMES   run only these workloads (comma-separated, any case)
      --json FILE    also write the results as JSON
      --runs N       rounds of each workload, every engine once per round (default 3; 1 with --quick)
      --dir DIR      put the temporary files under DIR instead of the system's temporary directory
      --list         list the workloads

    workloads: \(Workload.allCases.map(\.rawValue).joined(separator: ", "))
    """

let options: CommonOptions
do {
    options = try CommonOptions.parse(
        Array(CommandLine.arguments.dropFirst()), benchmarks: Workload.self, usage: usage, runsMinimum: 1,
        commasInNumbers: false
    ) { _, _ in false }
} catch {
    FileHandle.standardError.write(Data("actorstore-bench: \(error)\n\n\(usage)\n".utf8))
    exit(2)
}
let plan = Plan(quick: options.quick, runs: options.runs ?? (options.quick ? 1 : 3))
// Its temporary directory is removed at every exit below.
let bench: Bench
do {
    bench = try Bench(plan: plan, directory: options.directory)
} catch {
    FileHandle.standardError.write(Data("actorstore-bench: cannot create the benchmark directory: \(error)\n".utf8))
    exit(1)
}
// Ctrl-C / SIGTERM: remove the temporary files too.
let interrupt = Harness.removeOnInterrupt(tool: "actorstore-bench", root: bench.workspace.root)
let command = "actorstore-bench " + CommandLine.arguments.dropFirst().joined(separator: " ")
let totalStart = monotonicNanos()

do {
    try await bench.describeSettings()
    bench.report.printHeader()
    for workload in options.selected(Workload.self) {
        try await workload.run(bench)
    }
} catch {
    bench.report.printTable()
    bench.workspace.cleanup()
    FileHandle.standardError.write("\nFAILED: \(error)\n".data(using: .utf8)!)
    exit(1)
}
interrupt.cancel()
bench.workspace.cleanup()
bench.report.printTable()
print(
    "\ntotal \(Report.format(secondsSince(totalStart))) s (\(plan.quick ? "quick, " : "")\(plan.runs) run(s) per engine)"
)
if let jsonPath = options.jsonPath {
    do {
        try bench.report.json(command: command).write(to: URL(fileURLWithPath: jsonPath))
    } catch {
        FileHandle.standardError.write(Data("actorstore-bench: cannot write \(jsonPath): \(error)\n".utf8))
        exit(1)
    }
    print("wrote \(jsonPath)")
}
