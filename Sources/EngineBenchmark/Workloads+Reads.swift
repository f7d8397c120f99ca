import ActorStoreBenchmarkKit
import ActorStorePersistence
import Foundation

/// Read-side benchmarks on the N-row store: point reads, snapshots, resident memory.
extension Workloads {
    // MARK: 4. Point reads

    func pointReads() async throws {
        let bench = Benchmark.pointRead.rawValue
        let path = try await ensureBase()
        let engine = try await StorageEngine.open(Dataset.configuration(path))
        let table = try Dataset.table(of: engine)
        let snapshot = try engine.snapshot()
        let count = UInt64(snapshot.count(table))
        // Warm-up: touch every row once, so the runs measure lookups rather than first-touch page faults.
        var checksum: UInt64 = 0
        for (key, _) in snapshot.keys(table) { checksum &+= try readNameAndGroup(snapshot, table, key) }
        var rates: [Double] = []
        var cpuRates: [Double] = []
        for run in 0..<runs {
            var rng = SplitMix64(seed: UInt64(run) &+ 1)
            let cpuStart = threadCPUNanos()
            let start = monotonicNanos()
            for _ in 0..<plan.reads {
                let key = ObjectKey(Int64(rng.next() % count))
                checksum &+= try readNameAndGroup(snapshot, table, key)
            }
            rates.append(Double(plan.reads) / secondsSince(start))
            cpuRates.append(Double(plan.reads) / (Double(threadCPUNanos() - cpuStart) / 1e9))
        }
        Sink.shared.consume(checksum)
        await engine.close()
        report.add(
            Measurement(
                bench, "random point reads, \(Report.format(Double(count)))-row table", unit: "reads/s",
                runs: rates, target: .atLeast(2_000_000),
                note: "\(Report.format(Double(plan.reads))) reads per run on one task; one snapshot"
                    + (plan.rows < Plan.fullRows
                        ? "; the target is for 1M rows, and a smaller table's index fits in the CPU caches" : "")))
        report.add(Measurement(bench, "time per point read", unit: "ns", runs: rates.map { 1e9 / $0 }))
        report.add(
            Measurement(
                bench, "reads per CPU-second of the reading thread", unit: "reads/s", runs: cpuRates,
                note: "thread CPU time instead of wall time: discounts time the thread was preempted"))
    }

    /// One point read: `withRow`, then the string and int columns.
    @inline(__always)
    func readNameAndGroup(_ snapshot: Snapshot, _ table: TableID, _ key: ObjectKey) throws -> UInt64 {
        let value = try snapshot.withRow(table, key) { (row) throws(StorageError) -> UInt64 in
            let name = try row.string(at: Dataset.nameColumn, optional: false) ?? ""
            let group = try row.int64(at: Dataset.groupColumn, type: .int64, optional: false) ?? 0
            return UInt64(name.utf8.count) &+ UInt64(bitPattern: group)
        }
        guard let value else { throw Workspace.Failure(description: "row \(key) is missing") }
        return value
    }

    // MARK: 5. Snapshots

    func snapshots() async throws {
        let bench = Benchmark.snapshot.rawValue
        // A small store of 1k rows...
        let small = "small.store"
        workspace.removeStore(small)
        let (smallEngine, smallTable) = try await Dataset.openWithTable(workspace.path(small))
        try await Dataset.insertAll(Dataset.rows(0..<plan.smallRows), into: smallTable, of: smallEngine)
        let smallTimes = try snapshotCost(smallEngine)
        await smallEngine.close()
        workspace.removeStore(small)
        // ... and the N-row store.
        let largeEngine = try await StorageEngine.open(Dataset.configuration(try await ensureBase()))
        let largeTimes = try snapshotCost(largeEngine)
        await largeEngine.close()

        let calls = "\(Report.format(Double(plan.snapshotCalls))) calls per run"
        report.add(
            Measurement(
                bench, "snapshot() at \(Report.format(Double(plan.smallRows))) rows", unit: "ns",
                runs: smallTimes, target: .atMost(1000), note: calls))
        report.add(
            Measurement(
                bench, "snapshot() at \(Report.format(Double(plan.rows))) rows", unit: "ns",
                runs: largeTimes, target: .atMost(1000)))
        let ratios = zip(largeTimes, smallTimes).map { $0 / $1 }
        report.add(
            Measurement(
                bench, "size dependence: \(Report.format(Double(plan.rows))) / 1k rows", unit: "x",
                runs: ratios, target: .atMost(1.5),
                note: "independent of size: the large-store cost within 1.5x of the small-store cost"))
    }

    /// Nanoseconds per `engine.snapshot()` call (take and release), one value per run.
    func snapshotCost(_ engine: StorageEngine) throws -> [Double] {
        var sum: UInt64 = 0
        for _ in 0..<10_000 { sum &+= try engine.snapshot().version.rawValue }  // warm-up
        var times: [Double] = []
        for _ in 0..<runs {
            let start = monotonicNanos()
            for _ in 0..<plan.snapshotCalls { sum &+= try engine.snapshot().version.rawValue }
            times.append(Double(monotonicNanos() - start) / Double(plan.snapshotCalls))
        }
        Sink.shared.consume(sum)
        return times
    }

    // MARK: 8. Memory

    func memory() async throws {
        let bench = Benchmark.memory.rawValue
        let path = try await ensureBase()
        var deltas: [Double] = []
        var anonymous: [Double] = []
        var file: [Double] = []
        var afterOpen: [Double] = []
        for _ in 0..<runs {
            let probe = try MemoryProbe.measure(storePath: path)
            guard probe.rows == plan.rows else {
                throw Workspace.Failure(description: "the memory probe read \(probe.rows) rows, expected \(plan.rows)")
            }
            deltas.append(Double(probe.afterRead.total) / 1e6 - Double(probe.before.total) / 1e6)
            anonymous.append(Double(probe.afterRead.anonymous) / 1e6 - Double(probe.before.anonymous) / 1e6)
            file.append(Double(probe.afterRead.file) / 1e6 - Double(probe.before.file) / 1e6)
            afterOpen.append(Double(probe.afterOpen.total) / 1e6 - Double(probe.before.total) / 1e6)
        }
        report.add(
            Measurement(
                bench, "RSS growth: open + read every row", unit: "MB", runs: deltas,
                target: sizeTarget(atMost: 150),
                note: "VmRSS in a fresh child process, after minus before open; "
                    + "store file \(Report.format(Double(workspace.fileSize(Self.base)) / 1e6)) MB"))
        report.add(
            Measurement(
                bench, "  of which anonymous (heap: index nodes loaded)", unit: "MB", runs: anonymous,
                note: "at most the node cache (nodeCacheLimit, 64 MiB) for what one snapshot holds, + a few MB"))
        report.add(Measurement(bench, "  of which file-backed (mapped store)", unit: "MB", runs: file))
        report.add(Measurement(bench, "RSS growth right after open", unit: "MB", runs: afterOpen))
    }
}
