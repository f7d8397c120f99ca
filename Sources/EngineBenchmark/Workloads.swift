import ActorStoreBenchmarkKit
import ActorStorePersistence
import Foundation

/// The measurements. Each benchmark adds its lines to `report`. The N-row store (`base.store`) is built once,
/// untimed, by the first benchmark that needs it (see ``Fixture``), and shared by open, point reads,
/// snapshots, memory and compaction; bulk-insert measures the insert path on stores of its own.
final class Workloads {
    let plan: Plan
    let workspace: Workspace
    var report: Report
    /// p50 of the raw append + fdatasync latency, in µs, once measured (the serial commit ratio needs it).
    var rawAppendP50: Double?
    static let base = "base.store"

    init(plan: Plan, workspace: Workspace, report: Report) {
        self.plan = plan
        self.workspace = workspace
        self.report = report
    }

    func run(_ benchmark: Benchmark) async throws {
        switch benchmark {
        case .rawAppend: try rawAppend()
        case .rawWrite: try rawWrite()
        case .bulkInsert: try await bulkInsert()
        case .open: try await openStore()
        case .pointRead: try await pointReads()
        case .snapshot: try await snapshots()
        case .memory: try await memory()
        case .commitSerial: try await serialCommits()
        case .commitConcurrent: try await concurrentCommits()
        case .compaction: try await compaction()
        }
    }

    var runs: Int { plan.runs }

    /// A size-proportional target: `fullValue` for 1M rows, scaled linearly for fewer.
    func sizeTarget(atMost fullValue: Double) -> Target {
        .atMost(fullValue * plan.scale, scaled: plan.isScaled)
    }

    // MARK: 1. Raw physical limits

    func rawAppend() throws {
        let bench = Benchmark.rawAppend.rawValue
        var p50s: [Double] = []
        var p99s: [Double] = []
        var rates: [Double] = []
        for run in 0..<runs {
            let samples = try RawIO.appendSyncLatencies(
                path: workspace.path("raw-append-\(run)"), samples: plan.rawAppendSamples)
            p50s.append(samples.percentileMicros(50))
            p99s.append(samples.percentileMicros(99))
            rates.append(samples.ratePerSecond)
        }
        report.add(
            Measurement(
                bench, "append 100 B + fdatasync p50", unit: "µs", runs: p50s,
                note: "\(plan.rawAppendSamples) appends per run at the end of a fresh file"))
        report.add(Measurement(bench, "append 100 B + fdatasync p99", unit: "µs", runs: p99s))
        report.add(
            Measurement(
                bench, "appends + fdatasync per second, serial", unit: "ops/s", runs: rates,
                note: "the physical ceiling of serial durable commits on this disk (1 / mean latency)"))
        rawAppendP50 = Summary(p50s).median
    }

    func rawWrite() throws {
        let bench = Benchmark.rawWrite.rawValue
        var rates: [Double] = []
        for run in 0..<runs {
            let seconds = try RawIO.sequentialWriteSeconds(
                path: workspace.path("raw-write-\(run)"), totalBytes: plan.rawWriteBytes)
            rates.append(Double(plan.rawWriteBytes) / 1e6 / seconds)
        }
        report.add(
            Measurement(
                bench, "sequential write \(plan.rawWriteBytes >> 20) MiB + fsync", unit: "MB/s", runs: rates,
                note: "1 MiB write() calls, then one fsync; time includes the fsync"))
    }

    // MARK: 2. Bulk insert

    func bulkInsert() async throws {
        let bench = Benchmark.bulkInsert.rawValue
        let rows = Dataset.rows(0..<plan.rows)
        var totals: [Double] = []
        var builds: [Double] = []
        var commits: [Double] = []
        var fileSize: UInt64 = 0
        var aborted: (rows: Int, seconds: Double)?
        for run in 0..<runs {
            let name = "bulk-\(run).store"
            workspace.removeStore(name)
            let (engine, table) = try await Dataset.openWithTable(workspace.path(name))
            let start = monotonicNanos()
            let txn = try await engine.beginWrite()
            var done = 0
            for row in rows {
                try txn.insert(table, row)
                done += 1
                if done & 1023 == 0 && secondsSince(start) > plan.bulkInsertBudget {
                    aborted = (done, secondsSince(start))
                    break
                }
            }
            if let aborted {
                txn.rollback()
                await engine.close()
                workspace.removeStore(name)
                // Extrapolated linearly from the rows done: a lower bound if inserts slow down as the table grows.
                totals = [aborted.seconds * Double(plan.rows) / Double(aborted.rows)]
                break
            }
            let built = monotonicNanos()
            try await txn.commit()
            let end = monotonicNanos()
            await engine.close()
            totals.append(Double(end - start) / 1e9)
            builds.append(Double(built - start) / 1e9)
            commits.append(Double(end - built) / 1e9)
            fileSize = workspace.fileSize(name)
            workspace.removeStore(name)
        }
        let n = Report.format(Double(plan.rows))
        if let aborted {
            report.add(
                Measurement(
                    bench, "insert \(n) rows + durable commit", unit: "s", runs: totals,
                    target: sizeTarget(atMost: 1.0),
                    note: "ABORTED after \(Report.format(Double(aborted.rows))) rows in "
                        + "\(Report.format(aborted.seconds)) s (budget \(Report.format(plan.bulkInsertBudget)) s); "
                        + "the value is a linear extrapolation (a lower bound if the time per row grows with the table)"
                ))
            report.add(
                Measurement(
                    bench, "rows inserted per second before the abort", unit: "rows/s",
                    runs: [Double(aborted.rows) / aborted.seconds]))
            return
        }
        // The fixture that the other benchmarks use must be the same bytes as what the engine wrote.
        let baseSize = workspace.fileSize((try await ensureBase() as NSString).lastPathComponent)
        let sameLayout =
            baseSize == fileSize ? "same size as the fixture store" : "DIFFERS from the fixture store (\(baseSize) B)"
        report.add(
            Measurement(
                bench, "insert \(n) rows + durable commit", unit: "s", runs: totals,
                target: sizeTarget(atMost: 1.0),
                note: "rows are built before the timed loop; file \(fileSize) B, \(sameLayout)"))
        report.add(Measurement(bench, "  of which: \(n) txn.insert calls", unit: "s", runs: builds))
        report.add(Measurement(bench, "  of which: commit (CRC, write, fdatasync)", unit: "s", runs: commits))
        report.add(
            Measurement(bench, "rows inserted per second", unit: "rows/s", runs: totals.map { Double(plan.rows) / $0 }))
    }

    /// Builds the N-row store once (untimed, see ``Fixture``) and returns its path.
    func ensureBase() async throws -> String {
        let path = workspace.path(Self.base)
        if !workspace.exists(Self.base) {
            print("  (building the \(Report.format(Double(plan.rows)))-row store)")
            try await Fixture.createStore(at: path, rows: plan.rows)
        }
        return path
    }

    // MARK: 6. Open

    func openStore() async throws {
        let bench = Benchmark.open.rawValue
        let path = try await ensureBase()
        var times: [Double] = []
        var cpu: [Double] = []
        var replayed = 0
        var fromCheckpoint = false
        for _ in 0..<runs {
            let cpuStart = processCPUSeconds()
            let start = monotonicNanos()
            let engine = try await StorageEngine.open(Dataset.configuration(path))
            times.append(secondsSince(start))
            cpu.append(processCPUSeconds() - cpuStart)
            replayed = engine.recoveryReport.recordsReplayed
            fromCheckpoint = engine.recoveryReport.checkpointVersion != nil
            let rows = try engine.snapshot().count(try Dataset.table(of: engine))
            guard rows == plan.rows else {
                throw Workspace.Failure(description: "the reopened store has \(rows) rows, expected \(plan.rows)")
            }
            await engine.close()
        }
        report.add(
            Measurement(
                bench, "open \(Report.format(Double(plan.rows)))-row store", unit: "s", runs: times,
                target: sizeTarget(atMost: 0.5),
                note: (fromCheckpoint ? "from its checkpoint, " : "no checkpoint: the whole log replayed, ")
                    + "\(replayed) records replayed; file in the page cache (warm open)"))
        report.add(
            Measurement(
                bench, "  CPU time of open (all threads)", unit: "s", runs: cpu,
                note: "user + system CPU of the process during open: open is CPU-bound when this is close to the time"))
    }
}
