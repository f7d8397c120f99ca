import ActorStoreBenchmarkKit
import Foundation

/// BenchmarkKit's, not Foundation's.
typealias Measurement = ActorStoreBenchmarkKit.Measurement

/// The benchmarks, in the order they run. The raw names are what `--only` takes.
enum Benchmark: String, BenchmarkCase {
    case insertAdd = "insert-add"
    case insertCreate = "insert-create"
    case insertCreateArray = "insert-create-array"
    case iterate = "iterate"
    case frozenIterate = "frozen-iterate"
    case freeze = "freeze"
    case lookup = "lookup"
    case query = "query"
    case sort = "sort"
    case rawFsync = "raw-fsync"
    case durableWrite = "durable-write"
    case notify = "notify"
    case open = "open"
    case migrate = "migrate"
    case observation = "observation"
    case json = "json"
    case bulkWrite = "bulk-write"

    var summary: String {
        switch self {
        case .insertAdd: "realm.add(obj) of N objects built with setters, in one write transaction"
        case .insertCreate: "realm.create(Dog.self, value: [name:, age:, score:]) N times in one write transaction"
        case .insertCreateArray: "realm.create(Dog.self, value: [name, age, score]) N times in one write transaction"
        case .iterate: "for dog in realm.objects(Dog.self) { sum += dog.age } over N objects, inside realm.read"
        case .frozenIterate: "the same over FrozenResults (await realm.freeze().objects(Dog.self)), outside the actor"
        case .freeze: "realm.freeze() inside the actor, and await realm.freeze() from outside (actor hop)"
        case .lookup: "object(ofType:forPrimaryKey:) of random keys among N objects, live and frozen"
        case .query: "filter N objects: unindexed AND scan (count, fetch), indexed equality count"
        case .sort: "sort 200k random strings; sort 200k ints and take 100"
        case .rawFsync: "write 100 B + fsync / fdatasync on the same disk, plain POSIX (no ActorStore)"
        case .durableWrite:
            "serial single-object write transactions, durability .full, vs the raw sync rate (and .none)"
        case .notify:
            "change streams: commit → delivery latency, a 100k sorted result's change set, 1,000 idle observers"
        case .open:
            "a fresh process opens an N/10- and an N-object realm and reads one object by primary key: time, memory"
        case .migrate:
            "write N objects in one transaction, then open with a migration (rename one property, fill one from two)"
        case .observation:
            "@Observable views: commit → ObservedResults updated on the main actor, 1,000 idle views"
        case .json: "export N objects as JSON Lines (rate, resident memory growth), then import the file"
        case .bulkWrite: "set-based writes on N keyed objects: update { score += 1 }, setValue, delete a key range"
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
        if options.common.quick {
            objects = options.objects ?? 100_000
            runs = options.common.runs ?? 1
            awaitFreezeCalls = 10_000
            lookups = 100_000
            durableWrites = 300
            fsyncSamples = 300
            insertBudget = 10
        } else {
            objects = options.objects ?? Plan.fullObjects
            runs = options.common.runs ?? 3
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
            workspace = try Workspace(parent: options.common.directory)
        } catch {
            FileHandle.standardError.write(Data("object-bench: \(error)\n".utf8))
            return 1
        }
        let interrupt = Harness.removeOnInterrupt(tool: "object-bench", root: workspace.root)
        defer {
            interrupt.cancel()
            workspace.cleanup()
        }
        let mode = options.common.mode
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print(
            "object-bench (\(mode)): \(Report.format(Double(plan.objects))) objects, \(plan.runs) run(s) per "
                + "measurement, \(cores) cores, load average \(Report.loadAverage()), files in \(workspace.root)")
        let workloads = Workloads(
            plan: plan, workspace: workspace,
            report: Report(
                mode: mode, sizeKey: "objects", size: plan.objects, runsPerMeasurement: plan.runs, cores: cores,
                directory: workspace.root, date: ISO8601DateFormatter().string(from: Date()), detailedProgress: true))
        let start = monotonicNanos()
        let ran = await Harness.runEach(options.common.selected(Benchmark.self)) { try await workloads.run($0) }
        await workloads.close()
        let wrote = Harness.finish(
            &workloads.report, tool: "object-bench", start: start, jsonPath: options.common.jsonPath)
        // A missed target is a finding, not a failure of the benchmark: only errors make the exit code non-zero.
        return ran && wrote ? 0 : 1
    }
}
