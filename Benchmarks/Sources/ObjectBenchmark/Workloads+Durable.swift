import ActorStore
import ActorStoreBenchmarkKit
import Foundation

extension Workloads {
    func rawFsyncBenchmark() throws {
        let name = Benchmark.rawFsync.rawValue
        var fsyncRuns: [Double] = []
        var fdatasyncRuns: [Double] = []
        var fsyncP50: [Double] = []
        var fdatasyncP50: [Double] = []
        for _ in 0..<plan.runs {
            let a = try RawIO.appendSyncLatencies(
                path: workspace.newPath("fsync", suffix: "raw"), samples: plan.fsyncSamples, call: .fsync)
            fsyncRuns.append(a.ratePerSecond)
            fsyncP50.append(a.percentileMicros(50))
            let b = try RawIO.appendSyncLatencies(
                path: workspace.newPath("fdatasync", suffix: "raw"), samples: plan.fsyncSamples, call: .fdatasync)
            fdatasyncRuns.append(b.ratePerSecond)
            fdatasyncP50.append(b.percentileMicros(50))
        }
        report.add(
            Measurement(
                name, "append 100 B + fsync", unit: "ops/s", runs: fsyncRuns,
                note: "p50 \(Report.format(Summary(fsyncP50).median)) µs; \(plan.fsyncSamples) samples per run"))
        report.add(
            Measurement(
                name, "append 100 B + fdatasync (what a commit does)", unit: "ops/s", runs: fdatasyncRuns,
                note: "p50 \(Report.format(Summary(fdatasyncP50).median)) µs"))
    }

    func durableWriteBenchmark() async throws {
        let name = Benchmark.durableWrite.rawValue
        var rates: [Double] = []
        var p50: [Double] = []
        var p99: [Double] = []
        var cpu: [Double] = []
        var fsyncRatios: [Double] = []
        var fdatasyncRatios: [Double] = []
        var fsyncRates: [Double] = []
        var fdatasyncRates: [Double] = []
        var fastRates: [Double] = []
        var fastCPU: [Double] = []
        // The disk's sync latency drifts with what else the machine does, so each run measures the raw rates
        // right before its durable writes and the ratio is taken run by run.
        let rawSamples = max(100, plan.fsyncSamples / 2)
        for _ in 0..<plan.runs {
            let fsync = try RawIO.appendSyncLatencies(
                path: workspace.newPath("paired-fsync", suffix: "raw"), samples: rawSamples, call: .fsync)
            let fdatasync = try RawIO.appendSyncLatencies(
                path: workspace.newPath("paired-fdatasync", suffix: "raw"), samples: rawSamples, call: .fdatasync)
            let durable = try await serialWrites(plan.durableWrites, durability: .full)
            let rate = durable.latencies.ratePerSecond
            rates.append(rate)
            p50.append(durable.latencies.percentileMicros(50))
            p99.append(durable.latencies.percentileMicros(99))
            cpu.append(durable.cpuMicrosPerWrite)
            fsyncRates.append(fsync.ratePerSecond)
            fdatasyncRates.append(fdatasync.ratePerSecond)
            fsyncRatios.append(rate / fsync.ratePerSecond)
            fdatasyncRatios.append(rate / fdatasync.ratePerSecond)
            let fast = try await serialWrites(plan.durableWrites, durability: .none)
            fastRates.append(fast.latencies.ratePerSecond)
            fastCPU.append(fast.cpuMicrosPerWrite)
        }
        report.add(
            Measurement(
                name, "durable single-object writes", unit: "writes/s", runs: rates, target: .atLeast(5000),
                note: "\(plan.durableWrites) serial `try await realm.write { $0.create(Dog.self, value: …) }` per "
                    + "run; process CPU \(Report.format(Summary(cpu).median)) µs/write (all threads)"))
        report.add(Measurement(name, "  latency p50", unit: "µs", runs: p50))
        report.add(Measurement(name, "  latency p99", unit: "µs", runs: p99))
        report.add(
            Measurement(
                name, "  ratio to raw append + fsync rate", unit: "×", runs: fsyncRatios,
                note: "raw rate measured just before each run (\(rawSamples) samples): "
                    + fsyncRates.map { Report.format($0) }.joined(separator: ", ") + " /s"))
        report.add(
            Measurement(
                name, "  ratio to raw append + fdatasync rate", unit: "×", runs: fdatasyncRatios,
                note: "what one commit asks of the disk; raw rate just before each run: "
                    + fdatasyncRates.map { Report.format($0) }.joined(separator: ", ") + " /s"))
        report.add(
            Measurement(
                name, "same with durability .none", unit: "writes/s", runs: fastRates,
                note: "the per-transaction cost without the disk: process CPU "
                    + "\(Report.format(Summary(fastCPU).median)) µs/write"))
    }

    /// `count` serial single-object write transactions on a fresh realm (after 20 untimed ones).
    private func serialWrites(
        _ count: Int, durability: Realm.Durability
    ) async throws -> (
        latencies: LatencySamples, cpuMicrosPerWrite: Double
    ) {
        let path = workspace.newPath(durability == .full ? "durable" : "nondurable")
        defer { workspace.remove(path) }
        let realm = try await Realm(configuration: workspace.configuration(at: path, durability: durability))
        let warmup = 20
        for i in 0..<warmup {
            try await realm.write { realm in
                _ = realm.create(Dog.self, value: ["name": Values.name(i), "age": Values.age(i), "score": 0.5])
            }
        }
        var nanos: [UInt64] = []
        nanos.reserveCapacity(count)
        let watch = Stopwatch()
        for i in 0..<count {
            let start = monotonicNanos()
            try await realm.write { realm in
                _ = realm.create(Dog.self, value: ["name": Values.name(i), "age": Values.age(i), "score": 0.5])
            }
            nanos.append(monotonicNanos() &- start)
        }
        let cpu = watch.cpuSeconds
        let stored = await realm.read { $0.objects(Dog.self).count }
        guard stored == warmup + count else {
            throw Failure(description: "wrote \(warmup + count) objects but the realm holds \(stored)")
        }
        return (LatencySamples(nanos: nanos), cpu / Double(count) * 1e6)
    }
}
