import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import Synchronization

/// Timestamps of deliveries, shared between an observer task and the writer.
private final class Deliveries: Sendable {
    private let state = Mutex<[UInt64]>([])
    func record() { state.withLock { $0.append(monotonicNanos()) } }
    var count: Int { state.withLock { $0.count } }
    func time(_ index: Int) -> UInt64 { state.withLock { $0[index] } }
}

extension Workloads {
    // MARK: Notifications

    /// Commit → delivery latency with one observer; the change set of a 100k-object sorted result after
    /// a 100-object commit; the cost of 1,000 idle observers of another class to commit latency.
    func notifyBenchmark() async throws {
        let name = Benchmark.notify.rawValue
        let commits = plan.durableWrites
        for durability in [Realm.Durability.none, .full] {
            let realm = try await Realm(configuration: workspace.newConfiguration("notify", durability: durability))
            let changes = try await realm.read { try $0.objects(Item.self).filter("age < 50").changes }
            let deliveries = Deliveries()
            let observer = Task {
                for await _ in changes { deliveries.record() }
            }
            try await waitFor { deliveries.count == 1 }
            var latencies = LatencySamples(capacity: commits)
            var fromCommit = LatencySamples(capacity: commits)
            let commitStart = Atomic<UInt64>(0)
            for i in 0..<commits {
                let start = monotonicNanos()
                try await realm.write { realm in
                    let dog = Item()
                    dog.id = i
                    dog.age = 10
                    realm.add(dog)
                    // The write block's end: what follows is the commit (encode, append, publish).
                    commitStart.store(monotonicNanos(), ordering: .relaxed)
                }
                try await waitFor { deliveries.count == i + 2 }
                latencies.record(deliveries.time(i + 1) &- start)
                fromCommit.record(deliveries.time(i + 1) &- commitStart.load(ordering: .relaxed))
            }
            observer.cancel()
            let label = durability == .none ? ".none (no fsync)" : ".full (includes the fsync)"
            let inserts = "\(commits) one-object inserts matched by the observed filtered query"
            report.add(
                Measurement(
                    name, "write start → first delivery, one observer, \(label), p50", unit: "µs",
                    runs: [latencies.percentileMicros(50)],
                    note: "\(inserts); p99 \(Report.format(latencies.percentileMicros(99))) µs"))
            report.add(
                Measurement(
                    name, "commit (end of the write block) → first delivery, one observer, \(label), p50",
                    unit: "µs", runs: [fromCommit.percentileMicros(50)],
                    target: durability == .none ? .atMost(100) : nil,
                    note: "\(inserts); p99 \(Report.format(fromCommit.percentileMicros(99))) µs"))
        }
        try await sortedChangeSetBenchmark()
        try await idleObserversBenchmark()
    }

    /// A 100-object commit observed by a 100k-object sorted query: write start → delivery.
    private func sortedChangeSetBenchmark() async throws {
        let name = Benchmark.notify.rawValue
        let n = Swift.min(100_000, plan.objects)
        let realm = try await Realm(configuration: workspace.newConfiguration("notify-sorted", durability: .none))
        var rng = SplitMix64(seed: 7)
        let initialAges = (0..<n).map { _ in Int(rng.next() % 1_000_000) }
        try await realm.write { realm in
            for i in 0..<n {
                let dog = SortDog()
                dog.name = "dog-\(i)"
                dog.age = initialAges[i]
                realm.add(dog)
            }
        }
        let changes = try await realm.read { try $0.objects(SortDog.self).sorted(byKeyPath: "age").changes }
        let deliveries = Deliveries()
        let observer = Task {
            for await _ in changes { deliveries.record() }
        }
        try await waitFor { deliveries.count == 1 }
        var runs: [Double] = []
        let rounds = Swift.max(5, plan.runs * 5)
        for round in 0..<rounds {
            let targets = (0..<100).map { _ in Int(rng.next() % UInt64(n)) }
            let ages = (0..<100).map { _ in Int(rng.next() % 1_000_000) }
            let start = monotonicNanos()
            try await realm.write { realm in
                let dogs = realm.objects(SortDog.self)
                for (target, age) in zip(targets, ages) { dogs[target].age = age }
            }
            try await waitFor { deliveries.count == round + 2 }
            runs.append(Double(deliveries.time(round + 1) &- start) / 1e6)
        }
        observer.cancel()
        report.add(
            Measurement(
                name, "100-object commit → delivered change set of a \(Report.format(Double(n)))-object sorted result",
                unit: "ms", runs: runs, target: n == 100_000 ? .atMost(10) : nil,
                note: "\(rounds) commits changing the sort key of 100 random objects; includes the commit"))
    }

    /// Serial commit latency with no observers, then with 1,000 observers of another class.
    private func idleObserversBenchmark() async throws {
        let name = Benchmark.notify.rawValue
        let realm = try await Realm(configuration: workspace.newConfiguration("notify-idle", durability: .full))
        let commits = plan.durableWrites
        func serial() async throws -> LatencySamples {
            var latencies = LatencySamples(capacity: commits)
            for i in 0..<commits {
                let start = monotonicNanos()
                try await realm.write { realm in
                    let dog = Dog()
                    dog.age = i
                    realm.add(dog)
                }
                latencies.record(monotonicNanos() &- start)
            }
            return latencies
        }
        _ = try await serial()  // warm-up
        // Alternating rounds without and with the observers, so that drift in the disk's latency does not
        // read as their cost.
        var withoutP50: [Double] = []
        var withP50: [Double] = []
        for _ in 0..<2 {
            withoutP50.append(try await serial().percentileMicros(50))
            let sequences = await realm.read { realm in (0..<1000).map { _ in realm.objects(KeyedDog.self).changes } }
            let started = Deliveries()
            var observers: [Task<Void, Never>] = []
            for sequence in sequences {
                observers.append(
                    Task {
                        for await _ in sequence { started.record() }
                    })
            }
            try await waitFor { started.count == 1000 }
            withP50.append(try await serial().percentileMicros(50))
            for observer in observers { observer.cancel() }
            for observer in observers { await observer.value }
        }
        let (with, without) = (Summary(withP50).median, Summary(withoutP50).median)
        let ratio = with / without
        report.add(
            Measurement(
                name, "durable commit p50 with 1,000 idle observers of another class ÷ without", unit: "×",
                runs: [ratio], target: .atMost(1.1),
                note: "\(Report.format(with)) µs vs \(Report.format(without)) µs; two alternating rounds of "
                    + "\(commits) serial one-object commits each"))
    }

    /// Polls (yielding) until `condition` holds; fails after ten seconds.
    private func waitFor(_ condition: () -> Bool) async throws {
        let deadline = monotonicNanos() + 10_000_000_000
        while !condition() {
            if monotonicNanos() > deadline { throw Failure(description: "an observer did not deliver within 10 s") }
            await Task.yield()
        }
    }
}
