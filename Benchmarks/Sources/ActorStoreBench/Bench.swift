import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import GRDB

/// The sizes of a run: full, or `--quick` (10x–100x smaller).
struct Plan {
    var quick: Bool
    var runs: Int
    /// The large store of W3–W7, W9, W10 (1M; quick 10k).
    var big: Int { quick ? 10_000 : 1_000_000 }
    /// W1's two bulk sizes.
    var bulk: [Int] { quick ? [1_000, 10_000] : [100_000, 1_000_000] }
    var commits: Int { quick ? 500 : 10_000 }
    /// W14's non-durable commits (more than `commits`: each takes microseconds, not a sync).
    var fastCommits: Int { quick ? 2_000 : 50_000 }
    var lookups: Int { quick ? 10_000 : 100_000 }
    var observations: Int { quick ? 100 : 1_000 }
    var observedBase: Int { quick ? 1_000 : 10_000 }
    var mixedSeconds: Double { quick ? 1 : 5 }
    var snapshotSmall: Int { 1_000 }
    var snapshots: Int { quick ? 200 : 2_000 }
    var sortCount: Int { quick ? 20_000 : 200_000 }
    var sequentialBytes: Int { quick ? 64 << 20 : 1 << 30 }
    var fsyncSamples: Int { quick ? 200 : 1_000 }
    var writers: Int { 16 }
}

/// Prebuilt, closed stores that workloads open or copy (built once, untimed).
final class Fixtures {
    let workspace: Workspace
    private var realms: [String: String] = [:]
    private var pools: [String: String] = [:]

    init(workspace: Workspace) { self.workspace = workspace }

    /// A closed ActorStore file with objects 0..<n (of `IndexedItem` if indexed, else `Item`).
    func realm(_ n: Int, indexed: Bool) async throws -> String {
        let key = "\(n)-\(indexed)"
        if let path = realms[key] { return path }
        let path = workspace.newPath("fixture-\(key)", "realm")
        let start = monotonicNanos()
        do {
            let realm = try await Realm(configuration: Workspace.realmConfiguration(path))
            try await insertObjects(realm, 0..<n, indexed: indexed)
        }
        print(
            "  (fixture: ActorStore \(n) objects\(indexed ? ", indexed" : "") built in "
                + "\(Report.format(secondsSince(start))) s)")
        realms[key] = path
        return path
    }

    /// A closed GRDB database with rows 0..<n (and an index on age if indexed).
    func pool(_ n: Int, indexed: Bool) async throws -> String {
        let key = "\(n)-\(indexed)"
        if let path = pools[key] { return path }
        let path = workspace.newPath("fixture-\(key)", "sqlite")
        let start = monotonicNanos()
        let pool = try Workspace.openPool(path)
        try await pool.write { db in
            try Schema.create(db, indexed: indexed)
            let statement = try db.cachedStatement(sql: Raw.insertSQL)
            for i in 0..<n { try Raw.insert(statement, db, i) }
        }
        try pool.close()
        print(
            "  (fixture: GRDB \(n) rows\(indexed ? ", indexed" : "") built in \(Report.format(secondsSince(start))) s)")
        pools[key] = path
        return path
    }

    /// A private copy of a fixture, for workloads that change it.
    func copy(_ path: String, _ suffix: String) throws -> String {
        let to = workspace.newPath("copy", suffix)
        try workspace.copy(path, to: to)
        return to
    }
}

/// Adds objects `range` to a realm in one write, built the way a Realm user does: `T()`, setters, `add`.
func insertObjects(_ realm: Realm, _ range: Range<Int>, indexed: Bool) async throws {
    if indexed {
        try await realm.write { realm in
            for i in range {
                let object = IndexedItem()
                object.fill(i)
                realm.add(object)
            }
        }
    } else {
        try await realm.write { realm in
            for i in range {
                let object = Item()
                object.fill(i)
                realm.add(object)
            }
        }
    }
}

/// Commits objects `0..<n` into `realm`, one `write` each, serially: (commits per second, p50 latency in µs).
/// What W2's serial part, W13 and W14 time on the ActorStore side (the realm's durability sets which).
func serialCommits(_ realm: Realm, _ n: Int) async throws -> (rate: Double, p50: Double) {
    try await serialCommits(n) { i in try await commitOne(realm, i) }
}

/// One `write` adding object `i`: a commit of ``serialCommits(_:_:)``.
func commitOne(_ realm: Realm, _ i: Int) async throws {
    try await realm.write { realm in
        let object = Item()
        object.fill(i)
        realm.add(object)
    }
}

/// One `pool.write` inserting row `i`, by a raw statement or a record: a commit of GRDB's ``serialCommits``.
func commitOne(_ pool: DatabasePool, _ i: Int, raw: Bool) async throws {
    if raw {
        try await pool.write { db in try Raw.insert(try db.cachedStatement(sql: Raw.insertSQL), db, i) }
    } else {
        try await pool.write { db in try ItemRecord(i).insert(db) }
    }
}

/// GRDB's side of ``serialCommits(_:_:)``: one `pool.write` per object, raw statements or records.
func serialCommits(_ pool: DatabasePool, _ n: Int, raw: Bool) async throws -> (rate: Double, p50: Double) {
    try await serialCommits(n) { i in try await commitOne(pool, i, raw: raw) }
}

/// Runs `commit(i)` for `i` in `0..<n`, timing each: (per second, p50 in µs).
private func serialCommits(
    _ n: Int, _ commit: (Int) async throws -> Void
) async throws -> (rate: Double, p50: Double) {
    var latencies: [Double] = []
    latencies.reserveCapacity(n)
    let start = monotonicNanos()
    for i in 0..<n {
        let t = monotonicNanos()
        try await commit(i)
        latencies.append(secondsSince(t))
    }
    return (Double(n) / secondsSince(start), percentile(latencies, 0.5) * 1e6)
}

/// (count, checksum) of every object of a realm.
func realmSummary<T: ItemObject>(_ realm: Realm, _ type: T.Type) async -> (Int, Int) {
    await realm.read { realm in
        var digest = 0
        var count = 0
        for object in realm.objects(T.self) {
            count += 1
            digest &+= object.digest
        }
        return (count, digest)
    }
}

func checks(count: Int, digest: Int) -> [String: String] { ["count": "\(count)", "digest": "\(digest)"] }

/// Everything a workload needs.
/// @unchecked: one task drives the benchmark; workloads run one after the other.
final class Bench: @unchecked Sendable {
    let plan: Plan
    let report = Report(ratioLegend: "ActorStore/GRDB medians")
    let workspace: Workspace
    let fixtures: Fixtures

    /// `directory`: the parent of the temporary directory (`--dir`), or the system's.
    init(plan: Plan, directory: String?) throws {
        self.plan = plan
        workspace = try Workspace(parent: directory)
        fixtures = Fixtures(workspace: workspace)
    }

    /// Random keys in 0..<n, the same for every engine.
    func randomKeys(_ count: Int, below n: Int, seed: UInt64) -> [Int] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in Int(rng.next() % UInt64(n)) }
    }

    func run(
        _ id: String, _ title: String, metrics: [Metric], runs: Int? = nil,
        engines: [Engine: () async throws -> Sample]
    ) async throws {
        try await report.run(id, title, metrics: metrics, runs: runs ?? plan.runs, engines: engines)
    }
}
