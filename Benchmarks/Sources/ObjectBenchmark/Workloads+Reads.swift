import ActorStore
import ActorStoreBenchmarkKit
import Foundation

extension Workloads {
    // MARK: Iteration

    func iterateBenchmark() async throws {
        let realm = try await sharedDogRealm()
        let n = plan.objects
        let name = Benchmark.iterate.rawValue
        let objects = Report.format(Double(n))
        let expected = Values.ageSum(n)
        // One untimed pass first: the runs then measure the object layer, not first-touch page faults.
        let warm = await realm.read { realm in realm.objects(Dog.self).reduce(0) { $0 + $1.age } }
        guard warm == expected else { throw Failure(description: "iteration summed \(warm), not \(expected)") }
        var ageRuns: [Double] = []
        var ageCPU: [Double] = []
        var nameRuns: [Double] = []
        var nameCPU: [Double] = []
        var allRuns: [Double] = []
        var allCPU: [Double] = []
        for _ in 0..<plan.runs {
            // The timed call is the whole `await realm.read { … }` (hop and refresh included); the CPU time is
            // the loop's own thread's.
            var start = monotonicNanos()
            let (sum, cpu) = await realm.read { realm -> (Int, UInt64) in
                let cpuStart = threadCPUNanos()
                var sum = 0
                for dog in realm.objects(Dog.self) { sum += dog.age }
                return (sum, threadCPUNanos() &- cpuStart)
            }
            ageRuns.append(secondsSince(start))
            ageCPU.append(Double(cpu) / 1e9)
            guard sum == expected else { throw Failure(description: "iteration summed \(sum), not \(expected)") }

            start = monotonicNanos()
            let (length, nameCPUNanos) = await realm.read { realm -> (Int, UInt64) in
                let cpuStart = threadCPUNanos()
                var length = 0
                for dog in realm.objects(Dog.self) { length += dog.name.utf8.count }
                return (length, threadCPUNanos() &- cpuStart)
            }
            nameRuns.append(secondsSince(start))
            nameCPU.append(Double(nameCPUNanos) / 1e9)
            Sink.shared.consume(length)

            start = monotonicNanos()
            let (all, allCPUNanos) = await realm.read { realm -> (Double, UInt64) in
                let cpuStart = threadCPUNanos()
                var all = 0.0
                for dog in realm.objects(Dog.self) { all += Double(dog.name.utf8.count + dog.age) + dog.score }
                return (all, threadCPUNanos() &- cpuStart)
            }
            allRuns.append(secondsSince(start))
            allCPU.append(Double(allCPUNanos) / 1e9)
            Sink.shared.consume(all)
        }
        func perObject(_ runs: [Double], _ cpu: [Double]) -> String {
            "\(Report.format(Summary(runs).median / Double(n) * 1e9)) ns/object; CPU of the loop's thread "
                + "\(Report.format(Summary(cpu).median)) s"
        }
        report.add(
            Measurement(
                name, "read .age of \(objects) objects via Results", unit: "s", runs: ageRuns,
                target: .atMost(0.5 * plan.scale, scaled: plan.isScaled), note: perObject(ageRuns, ageCPU)))
        report.add(
            Measurement(
                name, "read .name (String) of \(objects) objects", unit: "s", runs: nameRuns,
                note: perObject(nameRuns, nameCPU)))
        report.add(
            Measurement(
                name, "read all 3 properties of \(objects) objects", unit: "s", runs: allRuns,
                note: perObject(allRuns, allCPU)))
    }

    func frozenIterateBenchmark() async throws {
        let realm = try await sharedDogRealm()
        let n = plan.objects
        let name = Benchmark.frozenIterate.rawValue
        let objects = Report.format(Double(n))
        let expected = Values.ageSum(n)
        var ageRuns: [Double] = []
        var ageCPU: [Double] = []
        var nameRuns: [Double] = []
        var nameCPU: [Double] = []
        let warm = await realm.freeze().objects(Dog.self).reduce(0) { $0 + $1.age }
        guard warm == expected else { throw Failure(description: "frozen iteration summed \(warm), not \(expected)") }
        for _ in 0..<plan.runs {
            let frozen = await realm.freeze()
            // No suspension inside the loops: the thread CPU time is the loop's own.
            var start = monotonicNanos()
            var cpuStart = threadCPUNanos()
            var sum = 0
            for dog in frozen.objects(Dog.self) { sum += dog.age }
            ageRuns.append(secondsSince(start))
            ageCPU.append(Double(threadCPUNanos() &- cpuStart) / 1e9)
            guard sum == expected else {
                throw Failure(description: "frozen iteration summed \(sum), not \(expected)")
            }

            start = monotonicNanos()
            cpuStart = threadCPUNanos()
            var length = 0
            for dog in frozen.objects(Dog.self) { length += dog.name.utf8.count }
            nameRuns.append(secondsSince(start))
            nameCPU.append(Double(threadCPUNanos() &- cpuStart) / 1e9)
            Sink.shared.consume(length)
        }
        func perObject(_ runs: [Double], _ cpu: [Double]) -> String {
            "\(Report.format(Summary(runs).median / Double(n) * 1e9)) ns/object; CPU of the loop's thread "
                + "\(Report.format(Summary(cpu).median)) s"
        }
        report.add(
            Measurement(
                name, "read .age of \(objects) Frozen<Dog>", unit: "s", runs: ageRuns,
                note: perObject(ageRuns, ageCPU)))
        report.add(
            Measurement(
                name, "read .name of \(objects) Frozen<Dog>", unit: "s", runs: nameRuns,
                note: perObject(nameRuns, nameCPU)))
    }

    // MARK: Freezing

    func freezeBenchmark() async throws {
        let realm = try await sharedDogRealm()
        let name = Benchmark.freeze.rawValue
        let calls = plan.freezeCalls
        let awaitCalls = plan.awaitFreezeCalls
        var inside: [Double] = []
        var outside: [Double] = []
        var fromMain: [Double] = []
        for _ in 0..<plan.runs {
            let nanos = await realm.read { realm -> UInt64 in
                var versions: UInt64 = 0
                let start = monotonicNanos()
                for _ in 0..<calls { versions &+= realm.freeze().version }
                let elapsed = monotonicNanos() &- start
                Sink.shared.consume(versions)
                return elapsed
            }
            inside.append(Double(nanos) / Double(calls) / 1000)

            var versions: UInt64 = 0
            let start = monotonicNanos()
            for _ in 0..<awaitCalls { versions &+= await realm.freeze().version }
            outside.append(Double(monotonicNanos() &- start) / Double(awaitCalls) / 1000)
            Sink.shared.consume(versions)

            fromMain.append(await Workloads.awaitFreezeFromMainActor(realm, calls: awaitCalls))
        }
        let versions = await realm.statistics.pinnedVersions
        report.add(
            Measurement(
                name, "realm.freeze() inside the actor", unit: "µs/call", runs: inside, target: .atMost(2),
                note: "\(calls) calls in one realm.read on the \(Report.format(Double(plan.objects)))-object realm"))
        report.add(
            Measurement(
                name, "await realm.freeze() from a nonisolated task", unit: "µs/call", runs: outside,
                note: "\(awaitCalls) serial calls (actor hop there and back); \(versions) version(s) pinned after"))
        report.add(
            Measurement(name, "await realm.freeze() from @MainActor", unit: "µs/call", runs: fromMain))
    }

    /// Microseconds per `await realm.freeze()` made from the main actor (an app's UI code).
    @MainActor
    static func awaitFreezeFromMainActor(_ realm: Realm, calls: Int) async -> Double {
        var versions: UInt64 = 0
        let start = monotonicNanos()
        for _ in 0..<calls { versions &+= await realm.freeze().version }
        let micros = Double(monotonicNanos() &- start) / Double(calls) / 1000
        Sink.shared.consume(versions)
        return micros
    }

    // MARK: Primary-key lookups

    func lookupBenchmark() async throws {
        let realm = try await sharedKeyedRealm()
        let name = Benchmark.lookup.rawValue
        let n = plan.objects
        let lookups = plan.lookups
        var live: [Double] = []
        var frozenRuns: [Double] = []
        // Lookups per second of the looping thread's CPU time: on a busy machine, the wall-clock rate
        // also counts the time the thread waited for a core.
        var liveCPU: [Double] = []
        var frozenCPU: [Double] = []
        for run in 0..<plan.runs {
            let seed = UInt64(run + 1)
            let (found, nanos, cpuNanos) = await realm.read { realm -> (Int, UInt64, UInt64) in
                var rng = SplitMix64(seed: seed)
                var found = 0
                var ages = 0
                let cpuStart = threadCPUNanos()
                let start = monotonicNanos()
                for _ in 0..<lookups {
                    let key = Int(rng.next() % UInt64(n))
                    if let dog = realm.object(ofType: KeyedDog.self, forPrimaryKey: key) {
                        found += 1
                        ages &+= dog.age
                    }
                }
                let elapsed = monotonicNanos() &- start
                let cpu = threadCPUNanos() &- cpuStart
                Sink.shared.consume(ages)
                return (found, elapsed, cpu)
            }
            guard found == lookups else { throw Failure(description: "found \(found) of \(lookups) keys") }
            live.append(Double(lookups) / (Double(nanos) / 1e9))
            liveCPU.append(Double(lookups) / (Double(max(cpuNanos, 1)) / 1e9))

            let frozen = await realm.freeze()
            var rng = SplitMix64(seed: seed)
            var frozenFound = 0
            var ages = 0
            // No suspension point until the loop ends: it runs on one thread.
            let cpuStart = threadCPUNanos()
            let start = monotonicNanos()
            for _ in 0..<lookups {
                let key = Int(rng.next() % UInt64(n))
                if let dog = frozen.object(ofType: KeyedDog.self, forPrimaryKey: key) {
                    frozenFound += 1
                    ages &+= dog.age
                }
            }
            frozenRuns.append(Double(lookups) / secondsSince(start))
            frozenCPU.append(Double(lookups) / (Double(max(threadCPUNanos() &- cpuStart, 1)) / 1e9))
            Sink.shared.consume(ages)
            guard frozenFound == lookups else {
                throw Failure(description: "frozen lookups found \(frozenFound) of \(lookups) keys")
            }
        }
        let among = "\(Report.format(Double(lookups))) random keys among \(Report.format(Double(n)))"
        report.add(
            Measurement(
                name, "object(ofType:forPrimaryKey:) + read .age", unit: "lookups/s", runs: live,
                note: among + " objects, inside one realm.read"))
        report.add(
            Measurement(
                name, "FrozenRealm.object(ofType:forPrimaryKey:) + .age", unit: "lookups/s", runs: frozenRuns,
                note: among + " objects, outside the actor"))
        report.add(
            Measurement(
                name, "object(ofType:forPrimaryKey:) + read .age, per thread-CPU second", unit: "lookups/s",
                runs: liveCPU, note: "the first row's loops, timed by the looping thread's CPU clock"))
        report.add(
            Measurement(
                name, "FrozenRealm.object(ofType:forPrimaryKey:) + .age, per thread-CPU second", unit: "lookups/s",
                runs: frozenCPU, note: "the second row's loops, timed by the looping thread's CPU clock"))
    }
}
