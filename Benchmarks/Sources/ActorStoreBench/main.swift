import ActorStore
import Foundation
import GRDB

// actorstore-bench [--quick] [--only W3[,W4]] [--json out.json] [--runs N]
var quick = false
var only: Set<String>?
var jsonPath: String?
var runsOverride: Int?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--quick": quick = true
    case "--only":
        guard let value = arguments.next() else { fatalError("--only needs a workload, e.g. --only W3") }
        only = Set(value.uppercased().split(separator: ",").map(String.init))
    case "--json":
        guard let value = arguments.next() else { fatalError("--json needs a path") }
        jsonPath = value
    case "--runs":
        guard let value = arguments.next(), let n = Int(value), n > 0 else { fatalError("--runs needs a number") }
        runsOverride = n
    case "-h", "--help":
        print("usage: actorstore-bench [--quick] [--only W1,...,W13,RAW] [--json out.json] [--runs N]")
        exit(0)
    default:
        FileHandle.standardError.write("unknown argument \(argument)\n".data(using: .utf8)!)
        exit(2)
    }
}

let knownWorkloads = Set(["RAW"] + (1...13).map { "W\($0)" })
if let only, !only.isSubset(of: knownWorkloads) {
    FileHandle.standardError.write("unknown workload in --only: \(only.sorted())\n".data(using: .utf8)!)
    exit(2)
}
let plan = Plan(quick: quick, runs: runsOverride ?? (quick ? 1 : 3))
// Its temporary directory is removed at every exit below.
let bench = try Bench(plan: plan)
// Ctrl-C / SIGTERM: remove the temporary files too.
let workspace = bench.workspace
let signalSources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
        workspace.cleanup()
        exit(128 + number)
    }
    source.resume()
    return source
}
let command = "actorstore-bench " + CommandLine.arguments.dropFirst().joined(separator: " ")
let totalStart = monotonicNanos()
let workloads: [(String, () async throws -> Void)] = [
    ("W1", bench.w1), ("W2", bench.w2), ("W3", bench.w3), ("W4", bench.w4), ("W5", bench.w5), ("W6", bench.w6),
    ("W7", bench.w7), ("W8", bench.w8), ("W9", bench.w9), ("W10", bench.w10), ("W11", bench.w11),
    ("W12", bench.w12), ("W13", bench.w13),
    // Last: writing gigabytes can use up a cloud disk's burst budget and slow every later fsync.
    ("RAW", bench.rawIO),
]

do {
    try await bench.describeSettings()
    bench.report.printHeader()
    for (id, workload) in workloads where only?.contains(id) ?? true {
        try await workload()
    }
} catch {
    bench.report.printTable()
    bench.workspace.cleanup()
    FileHandle.standardError.write("\nFAILED: \(error)\n".data(using: .utf8)!)
    exit(1)
}
bench.workspace.cleanup()
bench.report.printTable()
print("\ntotal \(Report.format(secondsSince(totalStart))) s (\(plan.quick ? "quick, " : "")\(plan.runs) run(s) per engine)")
if let jsonPath {
    try bench.report.json(command: command).write(to: URL(fileURLWithPath: jsonPath))
    print("wrote \(jsonPath)")
}
withExtendedLifetime(signalSources) {}
