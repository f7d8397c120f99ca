import ActorStoreBenchmarkKit
import ActorStorePersistence
import Foundation

/// Compaction of the N-row store after half of its rows were updated.
extension Workloads {
    // MARK: 7. Compaction

    func compaction() async throws {
        let bench = Benchmark.compaction.rawValue
        _ = try await ensureBase()
        // Once: a copy of the N-row store plus one commit that updates every other row (the score column).
        let source = "compact-source.store"
        try workspace.copyStore(Self.base, to: source)
        do {
            let engine = try await StorageEngine.open(Dataset.configuration(workspace.path(source)))
            let (table, version) = (try Dataset.table(of: engine), engine.latestVersion)
            await engine.close()
            let updated = { (i: Int) -> [Value] in
                var row = Dataset.row(i)
                row[Dataset.scoreColumn] = .double(-Double(i))
                return row
            }
            if Dataset.encryptionKey != nil {
                try await Fixture.commitThroughEngine(
                    to: workspace.path(source), table: table, keys: stride(from: 0, to: plan.rows, by: 2), row: updated)
            } else {
                try Fixture.appendCommit(
                    to: workspace.path(source), version: version.next, table: table,
                    keys: stride(from: 0, to: plan.rows, by: 2), row: updated)
            }
        }
        var rates: [Double] = []
        var times: [Double] = []
        var cpu: [Double] = []
        var controls: [Double] = []
        var live: UInt64 = 0
        var before: UInt64 = 0
        var after: UInt64 = 0
        for run in 0..<runs {
            let name = "compact-\(run).store"
            try workspace.copyStore(source, to: name)
            let engine = try await StorageEngine.open(Dataset.configuration(workspace.path(name)))
            let stats = engine.statistics
            // Control: plain write + fsync of as many bytes as compaction writes, under the same disk conditions.
            let controlSeconds = try RawIO.sequentialWriteSeconds(
                path: workspace.path("control-\(run)"), totalBytes: Int(stats.liveBytes))
            controls.append(Double(stats.liveBytes) / 1e6 / controlSeconds)
            let cpuStart = processCPUSeconds()
            let start = monotonicNanos()
            try await engine.compact()
            let seconds = secondsSince(start)
            cpu.append(processCPUSeconds() - cpuStart)
            after = engine.statistics.totalBytes
            let rows = try engine.snapshot().count(try Dataset.table(of: engine))
            guard rows == plan.rows else {
                throw Workspace.Failure(description: "the compacted store has \(rows) rows, expected \(plan.rows)")
            }
            await engine.close()
            workspace.removeStore(name)
            live = stats.liveBytes
            before = stats.totalBytes
            times.append(seconds)
            rates.append(Double(stats.liveBytes) / 1e6 / seconds)
        }
        workspace.removeStore(source)
        report.add(
            Measurement(
                bench, "compact() throughput (live bytes)", unit: "MB/s", runs: rates,
                target: .atLeast(300),
                note: "file \(Report.format(Double(before) / 1e6)) MB -> \(Report.format(Double(after) / 1e6)) MB, "
                    + "live \(Report.format(Double(live) / 1e6)) MB; includes fsync, rename, directory fsync"))
        report.add(Measurement(bench, "compact() time", unit: "s", runs: times))
        report.add(Measurement(bench, "  CPU time of compact() (all threads)", unit: "s", runs: cpu))
        report.add(
            Measurement(
                bench, "control: raw write + fsync of the live bytes", unit: "MB/s", runs: controls,
                note: "measured right before each compaction: the disk's ceiling for compaction"))
    }
}
