import ActorStoreBenchmarkKit
import ActorStorePersistence
import Foundation

/// Durable commits: serial (latency against the raw fdatasync) and 16 concurrent writers (group commit).
extension Workloads {
    // MARK: 3. Commits

    func serialCommits() async throws {
        let bench = Benchmark.commitSerial.rawValue
        if rawAppendP50 == nil {
            print("  (measuring the raw append + fdatasync latency for the ratio)")
            try rawAppend()
        }
        var rates: [Double] = []
        var p50s: [Double] = []
        var p99s: [Double] = []
        var controlP50s: [Double] = []
        var controlRates: [Double] = []
        for run in 0..<runs {
            // Control: the raw append + fdatasync latency right before this run, under the same disk conditions
            // (the disk of a shared VM drifts by several times between minutes).
            let control = try RawIO.appendSyncLatencies(
                path: workspace.path("control-\(run)"), samples: plan.serialCommits)
            controlP50s.append(control.percentileMicros(50))
            controlRates.append(control.ratePerSecond)
            let name = "serial-\(run).store"
            let (engine, table) = try await freshStore(name, durability: .full)
            var latencies = LatencySamples(capacity: plan.serialCommits)
            let start = monotonicNanos()
            for i in 0..<plan.serialCommits {
                let begin = monotonicNanos()
                try await commitOneRow(engine, table, row: 1000 + i)
                latencies.record(monotonicNanos() - begin)
            }
            rates.append(Double(plan.serialCommits) / secondsSince(start))
            p50s.append(latencies.percentileMicros(50))
            p99s.append(latencies.percentileMicros(99))
            await engine.close()
            workspace.removeStore(name)
        }
        let cpuOnly = try await serialCommitsWithoutSync()
        report.add(
            Measurement(
                bench, "serial durable commits", unit: "commits/s", runs: rates,
                target: .atLeast(10_000),
                note: "\(plan.serialCommits) one-row commits per run (beginWrite, insert, commit) on a fresh store"))
        report.add(Measurement(bench, "commit latency p50", unit: "µs", runs: p50s))
        report.add(Measurement(bench, "commit latency p99", unit: "µs", runs: p99s))
        if let raw = rawAppendP50 {
            report.add(
                Measurement(
                    bench, "p50 / raw append+fdatasync p50 (step 1)", unit: "x", runs: p50s.map { $0 / raw },
                    target: .atMost(1.3),
                    note: "raw p50 \(Report.format(raw)) µs (median of the raw-append runs)"))
        }
        report.add(
            Measurement(
                bench, "control: raw append+fdatasync p50, same run", unit: "µs", runs: controlP50s,
                note: "measured right before each engine run; the ratio below compares run by run"))
        report.add(
            Measurement(bench, "p50 / control p50 (same run)", unit: "x", runs: zip(p50s, controlP50s).map { $0 / $1 }))
        report.add(
            Measurement(
                bench, "commits/s / control appends/s (same run)", unit: "x",
                runs: zip(rates, controlRates).map { $0 / $1 },
                note: "1.0 = the engine commits as fast as the disk syncs serially"))
        report.add(
            Measurement(
                bench, "serial commits without fdatasync (.none)", unit: "commits/s", runs: cpuOnly,
                note: "durability .none: the engine's CPU cost per commit, for comparison"))
    }

    /// Serial one-row commits with `durability: .none`: what a commit costs without the disk.
    func serialCommitsWithoutSync() async throws -> [Double] {
        var rates: [Double] = []
        for run in 0..<runs {
            let name = "serial-none-\(run).store"
            let (engine, table) = try await freshStore(name, durability: .none)
            let start = monotonicNanos()
            for i in 0..<plan.serialCommits { try await commitOneRow(engine, table, row: 1000 + i) }
            rates.append(Double(plan.serialCommits) / secondsSince(start))
            await engine.close()
            workspace.removeStore(name)
        }
        return rates
    }

    /// A new store with the `Item` table and 20 warm-up commits.
    func freshStore(
        _ name: String, durability: StorageEngine.Durability
    ) async throws -> (StorageEngine, TableID) {
        workspace.removeStore(name)
        var configuration = Dataset.configuration(workspace.path(name))
        configuration.durability = durability
        let engine = try await StorageEngine.open(configuration)
        let txn = try await engine.beginWrite()
        let table = try txn.createTable(Dataset.schema)
        try await txn.commit()
        for i in 0..<20 { try await commitOneRow(engine, table, row: i) }
        return (engine, table)
    }

    func commitOneRow(_ engine: StorageEngine, _ table: TableID, row: Int) async throws {
        let txn = try await engine.beginWrite()
        try txn.insert(table, Dataset.row(row))
        try await txn.commit()
    }

    func concurrentCommits() async throws {
        let bench = Benchmark.commitConcurrent.rawValue
        let writers = plan.concurrentWriters
        let perWriter = plan.commitsPerWriter
        var rates: [Double] = []
        var p50s: [Double] = []
        var p99s: [Double] = []
        var cpuOnly: [Double] = []
        for run in 0..<runs {
            for durability in [StorageEngine.Durability.full, .none] {
                let name = "concurrent-\(run).store"
                let (engine, table) = try await freshStore(name, durability: durability)
                let start = monotonicNanos()
                let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            var latencies: [UInt64] = []
                            latencies.reserveCapacity(perWriter)
                            for j in 0..<perWriter {
                                let begin = monotonicNanos()
                                let txn = try await engine.beginWrite()
                                try txn.insert(table, Dataset.row(1000 + writer * perWriter + j))
                                try await txn.commit()
                                latencies.append(monotonicNanos() - begin)
                            }
                            return latencies
                        }
                    }
                    var all = LatencySamples(capacity: writers * perWriter)
                    for try await latencies in group { for ns in latencies { all.record(ns) } }
                    return all
                }
                let rate = Double(writers * perWriter) / secondsSince(start)
                await engine.close()
                workspace.removeStore(name)
                if durability == .none {
                    cpuOnly.append(rate)
                } else {
                    rates.append(rate)
                    p50s.append(latencies.percentileMicros(50))
                    p99s.append(latencies.percentileMicros(99))
                }
            }
        }
        report.add(
            Measurement(
                bench, "\(writers) writers: total durable commits", unit: "commits/s", runs: rates,
                target: .atLeast(50_000),
                note: "\(writers) tasks x \(perWriter) one-row commits per run on a fresh store"))
        report.add(Measurement(bench, "commit latency p50", unit: "µs", runs: p50s))
        report.add(Measurement(bench, "commit latency p99", unit: "µs", runs: p99s))
        report.add(
            Measurement(
                bench, "\(writers) writers without fdatasync (.none)", unit: "commits/s", runs: cpuOnly,
                note: "durability .none: the CPU-bound ceiling of the commit path on this machine"))
    }
}
