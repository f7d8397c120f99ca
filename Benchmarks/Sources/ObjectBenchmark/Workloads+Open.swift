import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation

/// The `open` benchmark: how long a fresh process takes to open a realm of N `KeyedDog`s and read one of
/// them by primary key, and how much memory that adds, at N/10 and N objects (issue 17's acceptance: the
/// larger within 2× the smaller, ≤ 10 ms at 1M, ≤ 16 MiB added). Each run is a child process (this
/// executable with `--open-probe PATH KEY`), so that nothing the parent built is in its heap.
extension Workloads {
    struct OpenProbeResult: Codable, Sendable {
        var seconds: Double
        var before: ResidentMemory
        var after: ResidentMemory
        var name: String
        /// After reading every object once (by primary key, in a new read each 10,000 objects).
        var afterAll: ResidentMemory
        var ageSum: Int
    }

    func openBenchmark() async throws {
        let bench = Benchmark.open.rawValue
        var medians: [Int: Double] = [:]
        for count in [plan.objects / 10, plan.objects] {
            let path = workspace.newPath("open-\(count)")
            let build = try await timedInsert(.addKeyed, count: count, path: path, budget: nil)
            print(String(format: "  (built %@ KeyedDog in %.2f s)", Report.format(Double(count)), build.seconds))
            var times: [Double] = []
            var added: [Double] = []
            var anonymous: [Double] = []
            var heapAfterAll: [Double] = []
            for run in 0..<max(plan.runs, 5) {
                let key = (run * 7_919 + count / 2) % count
                let result = try Self.runOpenProbe(path: path, key: key)
                guard result.name == Values.name(key) else {
                    throw Failure(description: "the probe read '\(result.name)' for key \(key)")
                }
                times.append(result.seconds)
                added.append(Double(result.after.total) - Double(result.before.total))
                anonymous.append(Double(result.after.anonymous) - Double(result.before.anonymous))
                heapAfterAll.append(Double(result.afterAll.anonymous) - Double(result.before.anonymous))
                guard result.ageSum == (0..<count).reduce(0, { $0 + Values.age($1) }) else {
                    throw Failure(description: "the probe read the wrong ages")
                }
            }
            medians[count] = times.sorted()[times.count / 2]
            let size = Report.format(Double(count))
            report.add(
                Measurement(
                    bench, "open a \(size)-object realm + one primary-key read (fresh process)", unit: "s",
                    runs: times, target: count == plan.objects ? .atMost(0.010) : nil,
                    note: "Realm(configuration:) + object(ofType:forPrimaryKey:); file in the page cache"))
            report.add(
                Measurement(
                    bench, "  resident memory added by that open (\(size))", unit: "MiB",
                    runs: added.map { $0 / 1_048_576 }, target: .atMost(16),
                    note: "VmRSS after - before, in the child; heap only: "
                        + "\(Report.format(anonymous.sorted()[anonymous.count / 2] / 1_048_576)) MiB"))
            report.add(
                Measurement(
                    bench, "  heap added after reading every object once (\(size))", unit: "MiB",
                    runs: heapAfterAll.map { $0 / 1_048_576 }, target: .atMost(64 + 16),
                    note: "RssAnon: the node cache (nodeCacheLimit, 64 MiB) + 16 MiB; by primary key, in reads of "
                        + "10,000 objects"))
        }
        if let small = medians[plan.objects / 10], let large = medians[plan.objects], small > 0 {
            report.add(
                Measurement(
                    bench,
                    "  open time ratio, \(Report.format(Double(plan.objects))) / "
                        + "\(Report.format(Double(plan.objects / 10))) objects", unit: "x", runs: [large / small],
                    target: .atMost(2), note: "constant-time open: the indexes are read from the file when used"))
        }
    }

    /// Parent side: runs one probe child.
    static func runOpenProbe(path: String, key: Int) throws -> OpenProbeResult {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--open-probe", path, String(key)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let result = try? JSONDecoder().decode(OpenProbeResult.self, from: data)
        else {
            throw Failure(
                description: "the open probe exited with status \(process.terminationStatus): "
                    + String(decoding: data, as: UTF8.self))
        }
        return result
    }

    /// Child side: opens the realm at `path`, reads `KeyedDog` `key`, prints the result as JSON.
    static func openProbeChild(path: String, key: Int) async -> Int32 {
        var configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: path))
        configuration.objectTypes = [Dog.self, KeyedDog.self, Item.self, IndexedItem.self, SortDog.self]
        configuration.automaticCompaction = false
        do {
            // The parent's realm closes (and checkpoints) in the background after it is released: until then
            // the file is locked. Only the attempt that opens is measured.
            var attempts = 0
            var before = ResidentMemory.current()
            var start = monotonicNanos()
            let realm: Realm
            while true {
                do {
                    before = ResidentMemory.current()
                    start = monotonicNanos()
                    realm = try await Realm(configuration: configuration)
                    break
                } catch let error as RealmError where error.code == .alreadyOpen && attempts < 12_000 {
                    attempts += 1
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            let name = await realm.read { $0.object(ofType: KeyedDog.self, forPrimaryKey: key)?.name ?? "" }
            let seconds = Double(monotonicNanos() &- start) / 1e9
            let after = ResidentMemory.current()
            let count = await realm.read { $0.objects(KeyedDog.self).count }
            var ageSum = 0
            var next = 0
            while next < count {
                let range = next..<min(count, next + 10_000)
                ageSum += await realm.read { realm in
                    range.reduce(0) { $0 + (realm.object(ofType: KeyedDog.self, forPrimaryKey: $1)?.age ?? -1_000_000) }
                }
                next = range.upperBound
            }
            let result = OpenProbeResult(
                seconds: seconds, before: before, after: after, name: name, afterAll: ResidentMemory.current(),
                ageSum: ageSum)
            FileHandle.standardOutput.write(try JSONEncoder().encode(result))
            return 0
        } catch {
            print("\(error)")
            return 1
        }
    }
}
