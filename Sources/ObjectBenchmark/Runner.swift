import Foundation

/// The benchmarks, in the order they run. The raw names are what `--only` takes.
enum Benchmark: String, CaseIterable, Sendable {
    case insertAdd = "insert-add"
    case insertCreate = "insert-create"
    case insertCreateArray = "insert-create-array"
    case iterate = "iterate"
    case frozenIterate = "frozen-iterate"
    case freeze = "freeze"
    case lookup = "lookup"
    case rawFsync = "raw-fsync"
    case durableWrite = "durable-write"

    var summary: String {
        switch self {
        case .insertAdd: "realm.add(obj) of N objects built with setters, in one write transaction"
        case .insertCreate: "realm.create(Dog.self, value: [name:, age:, score:]) N times in one write transaction"
        case .insertCreateArray: "realm.create(Dog.self, value: [name, age, score]) N times in one write transaction"
        case .iterate: "for dog in realm.objects(Dog.self) { sum += dog.age } over N objects, inside realm.read"
        case .frozenIterate: "the same over FrozenResults (await realm.freeze().objects(Dog.self)), outside the actor"
        case .freeze: "realm.freeze() inside the actor, and await realm.freeze() from outside (actor hop)"
        case .lookup: "object(ofType:forPrimaryKey:) of random keys among N objects, live and frozen"
        case .rawFsync: "write 100 B + fsync / fdatasync on the same disk, plain POSIX (no ActorStore)"
        case .durableWrite:
            "serial single-object write transactions, durability .full, vs the raw sync rate (and .none)"
        }
    }
}

/// How much work each benchmark does: full size, or small for `--quick`.
struct Plan: Sendable {
    /// Objects of the bulk benchmarks (the targets are written for 1,000,000).
    var objects: Int
    var runs: Int
    /// `realm.freeze()` calls per run inside the actor.
    var freezeCalls: Int
    /// `await realm.freeze()` calls per run from outside.
    var awaitFreezeCalls: Int
    var lookups: Int
    var durableWrites: Int
    var fsyncSamples: Int
    /// Seconds one bulk insert may run before it is stopped, committed and extrapolated (so that a
    /// pathological insert path cannot stall the whole benchmark).
    var insertBudget: Double

    static let fullObjects = 1_000_000

    init(_ options: Options) {
        freezeCalls = 100_000
        if options.quick {
            objects = options.objects ?? 100_000
            runs = options.runs ?? 1
            awaitFreezeCalls = 10_000
            lookups = 100_000
            durableWrites = 300
            fsyncSamples = 300
            insertBudget = 10
        } else {
            objects = options.objects ?? Plan.fullObjects
            runs = options.runs ?? 3
            awaitFreezeCalls = 50_000
            lookups = 1_000_000
            durableWrites = 3000
            fsyncSamples = 2000
            insertBudget = 60
        }
    }

    /// The factor by which size-proportional targets shrink when N is below the 1M objects they were set for.
    var scale: Double { Double(objects) / Double(Plan.fullObjects) }
    var isScaled: Bool { objects != Plan.fullObjects }
}

/// Runs the selected benchmarks, prints the table, writes the JSON.
enum Runner {
    static func main(_ options: Options) async -> Int32 {
        let plan = Plan(options)
        let workspace: Workspace
        do {
            workspace = try Workspace(parent: options.directory)
        } catch {
            FileHandle.standardError.write(Data("object-bench: \(error)\n".utf8))
            return 1
        }
        let interrupt = workspace.removeOnInterrupt()
        defer {
            interrupt.cancel()
            workspace.cleanup()
        }
        let selected = Benchmark.allCases.filter { options.only?.contains($0.rawValue) ?? true }
        let mode = options.quick ? "quick" : "full"
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print(
            "object-bench (\(mode)): \(Report.format(Double(plan.objects))) objects, \(plan.runs) run(s) per "
                + "measurement, \(cores) cores, load average \(Report.loadAverage()), files in \(workspace.root)")
        let workloads = Workloads(
            plan: plan, workspace: workspace,
            report: Report(
                mode: mode, objects: plan.objects, runsPerMeasurement: plan.runs, cores: cores,
                directory: workspace.root, date: ISO8601DateFormatter().string(from: Date())))
        let start = monotonicNanos()
        var failed = false
        for benchmark in selected {
            print("\n[\(benchmark.rawValue)] \(benchmark.summary)")
            fflush(nil)
            let benchmarkStart = monotonicNanos()
            do {
                try await workloads.run(benchmark)
            } catch {
                failed = true
                print("  FAILED: \(error)")
            }
            print(String(format: "  (%.1f s)", secondsSince(benchmarkStart)))
            fflush(nil)
        }
        await workloads.close()
        workloads.report.totalSeconds = secondsSince(start)
        workloads.report.loadAverageAtEnd = Report.loadAverage()
        let report = workloads.report
        print("\n" + report.table())
        let misses = report.misses.count
        let judged = report.measurements.filter { $0.target != nil }.count
        print(
            "\n\(judged - misses) of \(judged) targets met, \(misses) missed; total "
                + String(format: "%.1f", report.totalSeconds) + " s (mode \(mode)); load average "
                + "\(report.loadAverageAtStart) at start, \(report.loadAverageAtEnd) at end")
        if let path = options.jsonPath {
            do {
                try report.writeJSON(to: path)
                print("wrote \(path)")
            } catch {
                FileHandle.standardError.write(Data("object-bench: cannot write \(path): \(error)\n".utf8))
                failed = true
            }
        }
        // A missed target is a finding, not a failure of the benchmark: only errors make the exit code non-zero.
        return failed ? 1 : 0
    }
}
