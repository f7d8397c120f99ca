import ActorStore
import ActorStoreBenchmarkKit
import Foundation

/// The `json` benchmark: export the N-`Dog` realm as ActorStore JSON (streamed to a file), then import that
/// file into a new realm. Issue 21's acceptance: the export runs in bounded memory (resident memory grows
/// ≤ 64 MiB over the whole export, sampled every 10,000 objects) at ≥ 200k objects/s. For comparison, the
/// growth of merely reading every row of a frozen version once (the index nodes a held version loads).
extension Workloads {
    func jsonBenchmark() async throws {
        let bench = Benchmark.json.rawValue
        let realm = try await sharedDogRealm()
        let n = plan.objects
        var exportRates: [Double] = []
        var growth: [Double] = []
        var heapGrowth: [Double] = []
        var fileGrowth: [Double] = []
        var importRates: [Double] = []
        var sizes: [Double] = []
        var iterateGrowth: [Double] = []
        var iterateSplit: [String] = []
        var nodesLoaded: [Double] = []
        var nodeMiB: [Double] = []
        var cacheMiB: [Double] = []
        for _ in 0..<plan.runs {
            let path = workspace.newPath("export", suffix: "jsonl")
            let url = URL(fileURLWithPath: path)
            do {
                let frozen = await realm.freeze()
                let statsBefore = await realm.statistics
                let before = ResidentMemory.current()
                var peak = before
                let start = monotonicNanos()
                let written = try frozen.exportJSON(to: url) { _ in
                    let now = ResidentMemory.current()
                    if now.total > peak.total { peak.total = now.total }
                    if now.anonymous > peak.anonymous { peak.anonymous = now.anonymous }
                    if now.file > peak.file { peak.file = now.file }
                }
                let seconds = secondsSince(start)
                guard written == n else { throw Failure(description: "the export wrote \(written) of \(n) objects") }
                let statsAfter = await realm.statistics
                nodesLoaded.append(Double(statsAfter.indexNodesLoaded - statsBefore.indexNodesLoaded))
                nodeMiB.append(Double(statsAfter.indexBytesLoaded - statsBefore.indexBytesLoaded) / 1_048_576)
                cacheMiB.append(Double(statsAfter.indexCacheBytes) / 1_048_576)
                exportRates.append(Double(n) / seconds)
                growth.append((Double(peak.total) - Double(before.total)) / 1_048_576)
                heapGrowth.append((Double(peak.anonymous) - Double(before.anonymous)) / 1_048_576)
                fileGrowth.append((Double(peak.file) - Double(before.file)) / 1_048_576)
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                sizes.append(Double(size) / 1_048_576)
            }

            // After the export (so that it does not warm the heap the export is measured on), and with its
            // version released, the baseline: resident memory growth of reading every row of a frozen
            // version once, writing nothing (the index nodes the version loads while it is held).
            do {
                let frozen = await realm.freeze()
                let before = ResidentMemory.current()
                var peak = before.total
                var sum = 0
                for (i, dog) in frozen.objects(Dog.self).enumerated() {
                    sum &+= dog.age
                    if i % 10_000 == 0 { peak = max(peak, ResidentMemory.current().total) }
                }
                peak = max(peak, ResidentMemory.current().total)
                guard sum == Values.ageSum(n) else { throw Failure(description: "the baseline read wrong ages") }
                iterateGrowth.append((Double(peak) - Double(before.total)) / 1_048_576)
                let after = ResidentMemory.current()
                iterateSplit.append(
                    "\(Report.format((Double(after.anonymous) - Double(before.anonymous)) / 1_048_576))/"
                        + "\(Report.format((Double(after.file) - Double(before.file)) / 1_048_576))")
            }
            let importConfiguration = workspace.newConfiguration("import", durability: .none)
            do {
                let target = try await Realm(configuration: importConfiguration)
                let importStart = monotonicNanos()
                let imported = try await target.importJSON(from: url)
                importRates.append(Double(n) / secondsSince(importStart))
                guard imported == n else { throw Failure(description: "the import added \(imported) of \(n) objects") }
            }
            // Releasing the import's realm closes it in the background, which checkpoints its N objects (tens
            // of MiB of buffers): opening the file again waits for that, so that it does not overlap the next
            // run's export and count in its memory growth.
            _ = try await Realm(configuration: importConfiguration)
            try? FileManager.default.removeItem(atPath: path)
        }
        let size = Report.format(Double(n))
        report.add(
            Measurement(
                bench, "export \(size) Dog to a JSON Lines file", unit: "objects/s", runs: exportRates,
                target: .atLeast(200_000),
                note: "FrozenRealm.exportJSON(to:); \(Report.format(sizes.sorted()[sizes.count / 2])) MiB written"))
        report.add(
            Measurement(
                bench, "  resident memory growth during the export (peak - before)", unit: "MiB", runs: growth,
                target: .atMost(64),
                note: "VmRSS sampled every 10,000 objects; heap (RssAnon) only: "
                    + "\(Report.format(heapGrowth.sorted()[heapGrowth.count / 2])) MiB (runs: "
                    + heapGrowth.map { Report.format($0) }.joined(separator: ", ") + "); the store's mapped pages "
                    + "(RssFile): " + fileGrowth.map { Report.format($0) }.joined(separator: ", ") + " MiB"))
        report.add(
            Measurement(
                bench, "  index nodes the export read from the file", unit: "nodes", runs: nodesLoaded,
                note: "Realm.Statistics.indexNodesLoaded after - before; their size in the file: "
                    + "\(Report.format(nodeMiB.sorted()[nodeMiB.count / 2])) MiB; the node cache after the export "
                    + "(indexCacheBytes, nodes the newest versions keep): "
                    + "\(Report.format(cacheMiB.sorted()[cacheMiB.count / 2])) MiB"))
        report.add(
            Measurement(
                bench, "  baseline: growth while reading every row of a frozen version once", unit: "MiB",
                runs: iterateGrowth,
                note: "for dog in frozen.objects(Dog.self); at its end, heap/mapped pages (MiB): "
                    + iterateSplit.joined(separator: ", ")))
        report.add(
            Measurement(
                bench, "import that file into a new realm", unit: "objects/s", runs: importRates,
                note: "Realm.importJSON(from:), one write transaction, durability .none"))
    }
}
