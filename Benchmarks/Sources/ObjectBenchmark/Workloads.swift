import ActorStore
import ActorStoreBenchmarkKit
import Foundation

/// Runs the benchmarks and collects their measurements. Used from one task at a time.
final class Workloads {
    let plan: Plan
    let workspace: Workspace
    var report: Report

    /// The file of the N-`Dog` realm the read benchmarks share, once built.
    var dogStore: String?
    /// The realm open on ``dogStore``.
    private var dogRealm: Realm?
    /// An N-`KeyedDog` realm for the primary-key lookups.
    private var keyedRealm: Realm?

    init(plan: Plan, workspace: Workspace, report: Report) {
        self.plan = plan
        self.workspace = workspace
        self.report = report
    }

    func run(_ benchmark: Benchmark) async throws {
        switch benchmark {
        case .insertAdd: try await insertBenchmark(.add, benchmark)
        case .insertCreate: try await insertBenchmark(.createDictionary, benchmark)
        case .insertCreateArray: try await insertBenchmark(.createArray, benchmark)
        case .iterate: try await iterateBenchmark()
        case .frozenIterate: try await frozenIterateBenchmark()
        case .freeze: try await freezeBenchmark()
        case .lookup: try await lookupBenchmark()
        case .query: try await queryBenchmark()
        case .sort: try await sortBenchmark()
        case .rawFsync: try rawFsyncBenchmark()
        case .durableWrite: try await durableWriteBenchmark()
        case .notify: try await notifyBenchmark()
        case .open: try await openBenchmark()
        case .migrate: try await migrationBenchmark()
        case .observation: try await observationBenchmark()
        case .json: try await jsonBenchmark()
        case .bulkWrite: try await bulkWriteBenchmark()
        }
    }

    /// Releases the shared realms (their files are removed with the workspace).
    func close() async {
        dogRealm = nil
        keyedRealm = nil
    }

    // MARK: Shared realms

    /// The realm of N `Dog`s (`Values` for object i) the read benchmarks share: the file the last
    /// `insert-add` run wrote, or one built now (untimed).
    func sharedDogRealm() async throws -> Realm {
        if let dogRealm { return dogRealm }
        let path: String
        if let dogStore {
            path = dogStore
        } else {
            print("  building the \(Report.format(Double(plan.objects)))-object realm the read benchmarks share")
            fflush(nil)
            path = workspace.newPath("shared")
            let result = try await timedInsert(.add, count: plan.objects, path: path, budget: nil)
            print(String(format: "  (built in %.2f s)", result.seconds))
            dogStore = path
        }
        let realm = try await Realm(configuration: workspace.configuration(at: path, durability: .none))
        dogRealm = realm
        return realm
    }

    /// The realm of N `KeyedDog`s (primary key `i` for object i); reports how long building it took.
    func sharedKeyedRealm() async throws -> Realm {
        if let keyedRealm { return keyedRealm }
        let path = workspace.newPath("keyed")
        let result = try await timedInsert(.addKeyed, count: plan.objects, path: path, budget: nil)
        report.add(
            Measurement(
                Benchmark.lookup.rawValue,
                "build: add \(Report.format(Double(plan.objects))) KeyedDog (Int primary key), one write",
                unit: "s", runs: [result.seconds],
                note: "one run (the lookup fixture); commit \(Report.format(result.commitSeconds)) s, "
                    + "CPU \(Report.format(result.cpuSeconds)) s"))
        let realm = try await Realm(configuration: workspace.configuration(at: path, durability: .none))
        keyedRealm = realm
        return realm
    }

    typealias Failure = BenchmarkFailure
}
