import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation

extension Workloads {
    // MARK: Queries

    /// Filtering N objects: an unindexed scan (count and fetch), indexed equality, primary-key lookups.
    func queryBenchmark() async throws {
        let name = Benchmark.query.rawValue
        let n = plan.objects
        let scanned = try await Realm(
            configuration: workspace.configuration(at: workspace.newPath("query"), durability: .none))
        let indexed = try await Realm(
            configuration: workspace.configuration(at: workspace.newPath("indexed"), durability: .none))
        try await scanned.write { realm in
            for i in 0..<n {
                let dog = Item()
                dog.fill(i)
                realm.add(dog)
            }
        }
        try await indexed.write { realm in
            for i in 0..<n {
                let dog = IndexedItem()
                dog.fill(i)
                realm.add(dog)
            }
        }
        // The expected matches, computed in plain Swift.
        let expected = (0..<n).filter { $0 % 100 < 30 && "name-\($0)".hasPrefix("name-1") }.count
        let predicate = "age < 30 AND name BEGINSWITH 'name-1'"
        var countRuns: [Double] = []
        var fetchRuns: [Double] = []
        var indexRuns: [Double] = []
        for _ in 0..<plan.runs {
            let (count, countSeconds) = try await scanned.read { realm in
                let start = monotonicNanos()
                let count = try realm.objects(Item.self).filter(predicate).count
                return (count, secondsSince(start))
            }
            guard count == expected else {
                throw Failure(description: "\(predicate) counted \(count), not \(expected)")
            }
            countRuns.append(countSeconds)
            let (sum, fetchSeconds) = try await scanned.read { realm in
                let start = monotonicNanos()
                var sum = 0.0
                for dog in try realm.objects(Item.self).filter(predicate) {
                    sum += dog.score + Double(dog.age) + Double(dog.name.utf8.count)
                }
                return (sum, secondsSince(start))
            }
            Sink.shared.consume(sum)
            fetchRuns.append(fetchSeconds)
            let (matches, indexSeconds) = try await indexed.read { realm in
                let start = monotonicNanos()
                let count = try realm.objects(IndexedItem.self).filter("age == %@", 42).count
                return (count, secondsSince(start))
            }
            guard matches == n / 100 + (n % 100 > 42 ? 1 : 0) else {
                throw Failure(description: "age == 42 counted \(matches)")
            }
            indexRuns.append(indexSeconds)
        }
        let objects = Report.format(Double(n))
        report.add(
            Measurement(
                name, "count \(predicate) over \(objects) (no index)", unit: "s", runs: countRuns,
                target: .atMost(0.06 * plan.scale, scaled: plan.isScaled),
                note: "\(expected) matches; GRDB ~0.08 s at 1M"))
        report.add(
            Measurement(
                name, "fetch the same (iterate matches, read 3 properties)", unit: "s", runs: fetchRuns,
                target: .atMost(0.1 * plan.scale, scaled: plan.isScaled), note: "GRDB ~0.12 s at 1M"))
        report.add(
            Measurement(
                name, "count age == 42 with an index on age, \(objects) objects", unit: "s", runs: indexRuns,
                target: .atMost(0.001), note: "\(n / 100) matches"))
    }

    /// Sorting: 200k random strings; 200k ints then the first 100.
    func sortBenchmark() async throws {
        let name = Benchmark.sort.rawValue
        let n = Swift.min(200_000, plan.objects * 2)
        let realm = try await Realm(
            configuration: workspace.configuration(at: workspace.newPath("sort"), durability: .none))
        var rng = SplitMix64(seed: 42)
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        let names = (0..<n).map { _ in
            String((0..<(8 + Int(rng.next() % 17))).map { _ in letters[Int(rng.next() % 62)] })
        }
        let ages = (0..<n).map { _ in Int(rng.next() % 1_000_000) }
        try await realm.write { realm in
            for i in 0..<n {
                let dog = SortDog()
                dog.name = names[i]
                dog.age = ages[i]
                realm.add(dog)
            }
        }
        let smallest = names.min { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let top = Array(ages.sorted().prefix(100))
        var stringRuns: [Double] = []
        var intRuns: [Double] = []
        for _ in 0..<plan.runs {
            let (first, stringSeconds) = try await realm.read { realm in
                let start = monotonicNanos()
                let first = try realm.objects(SortDog.self).sorted(byKeyPath: "name").first?.name
                return (first, secondsSince(start))
            }
            guard first == smallest else { throw Failure(description: "sort by name began with \(first ?? "nil")") }
            stringRuns.append(stringSeconds)
            let (firstAges, intSeconds) = await realm.read { realm in
                let start = monotonicNanos()
                let ages = realm.objects(SortDog.self).sorted(by: \.age).limit(100).map(\.age)
                return (ages, secondsSince(start))
            }
            guard firstAges == top else { throw Failure(description: "sort by age then limit 100 is wrong") }
            intRuns.append(intSeconds)
        }
        let count = Report.format(Double(n))
        report.add(
            Measurement(
                name, "sort \(count) random strings (8-24 chars), read the first", unit: "s", runs: stringRuns,
                target: n == 200_000 ? .atMost(0.3) : nil))
        report.add(
            Measurement(
                name, "sort \(count) random ints, take 100", unit: "s", runs: intRuns,
                target: n == 200_000 ? .atMost(0.02) : nil))
    }
}
