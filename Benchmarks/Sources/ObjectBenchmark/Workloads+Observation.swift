import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import Observation
import Synchronization

/// The views of the observation benchmark, on the main actor, where a user interface keeps them.
@MainActor private final class MainActorViews {
    private var observed: ObservedResults<Item>?
    private var idle: [ObservedResults<KeyedDog>] = []

    /// Observes the dogs younger than 50.
    func observe(_ realm: Realm) throws {
        observed = try ObservedResults(Item.self, in: realm) { try $0.filter("age < 50") }
    }

    /// Registers for the next change of the observed results: its time is yielded when it happens, on the
    /// main actor, as the new results are stored (what a SwiftUI view's invalidation sees).
    func track(_ times: AsyncStream<UInt64>.Continuation) {
        withObservationTracking {
            _ = observed?.results
        } onChange: {
            times.yield(monotonicNanos())
        }
    }

    var count: Int { observed?.results.count ?? 0 }

    /// `count` views of a class no commit of the benchmark touches.
    func observeIdle(_ realm: Realm, count: Int) throws {
        idle = try (0..<count).map { _ in try ObservedResults(KeyedDog.self, in: realm) }
    }

    func release() {
        observed = nil
        idle = []
    }
}

extension Workloads {
    // MARK: Observation (@Observable views)

    /// Commit → `ObservedResults` updated on the main actor; the cost of 1,000 idle views of another class
    /// to a durable commit.
    func observationBenchmark() async throws {
        let name = Benchmark.observation.rawValue
        let commits = plan.durableWrites
        let realm = try await Realm(configuration: workspace.newConfiguration("observe", durability: .none))
        let views = await MainActorViews()
        try await views.observe(realm)
        // The writer waits for each change without polling, so that it leaves the CPU to the main actor.
        let (times, timesContinuation) = AsyncStream<UInt64>.makeStream()
        var changes = times.makeAsyncIterator()
        var fromCommit = LatencySamples(capacity: commits)
        var fromStart = LatencySamples(capacity: commits)
        let commitStart = Atomic<UInt64>(0)
        for i in 0..<commits {
            await views.track(timesContinuation)
            let start = monotonicNanos()
            try await realm.write { realm in
                let dog = Item()
                dog.id = i
                dog.age = 10
                realm.add(dog)
                // The write block's end: what follows is the commit (encode, append, publish).
                commitStart.store(monotonicNanos(), ordering: .relaxed)
            }
            guard let changed = await changes.next() else { throw Failure(description: "the view stopped") }
            fromCommit.record(changed &- commitStart.load(ordering: .relaxed))
            fromStart.record(changed &- start)
        }
        guard await views.count == commits else {
            throw Failure(description: "the observed results missed commits (\(await views.count) of \(commits))")
        }
        await views.release()
        let inserts = "\(commits) one-object inserts matched by an ObservedResults (filtered query) on the main actor"
        report.add(
            Measurement(
                name, "commit (end of the write block) → ObservedResults updated on the main actor, .none, p50",
                unit: "µs", runs: [fromCommit.percentileMicros(50)], target: .atMost(100),
                note: "\(inserts); p99 \(Report.format(fromCommit.percentileMicros(99))) µs; write start → "
                    + "updated p50 \(Report.format(fromStart.percentileMicros(50))) µs"))
        try await idleViewsBenchmark()
    }

    /// Serial durable commit latency with no views, then with 1,000 views of another class on the main
    /// actor.
    private func idleViewsBenchmark() async throws {
        let name = Benchmark.observation.rawValue
        let realm = try await Realm(configuration: workspace.newConfiguration("observe-idle", durability: .full))
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
        // Alternating rounds without and with the views, so that drift in the disk's latency does not read as
        // their cost.
        var withoutP50: [Double] = []
        var withP50: [Double] = []
        let views = await MainActorViews()
        for _ in 0..<2 {
            withoutP50.append(try await serial().percentileMicros(50))
            try await views.observeIdle(realm, count: 1000)
            withP50.append(try await serial().percentileMicros(50))
            await views.release()
        }
        let (with, without) = (Summary(withP50).median, Summary(withoutP50).median)
        report.add(
            Measurement(
                name, "durable commit p50 with 1,000 idle ObservedResults of another class ÷ without", unit: "×",
                runs: [with / without], target: .atMost(1.1),
                note: "\(Report.format(with)) µs vs \(Report.format(without)) µs; two alternating rounds of "
                    + "\(commits) serial one-object commits each"))
    }
}
