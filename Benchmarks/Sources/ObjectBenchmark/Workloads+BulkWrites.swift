import ActorStore
import ActorStoreBenchmarkKit
import Foundation

extension Workloads {
    /// Set-based writes on a fresh realm of N `KeyedDog`s (primary key `id`, no other index), each in its own
    /// write transaction (durability `.none`): `update { $0.score += 1 }` over every object, the same with
    /// `update(\.score) { $0 += 1 }`, `setValue(7.0, forKey: "score")` over every object, then `delete` of
    /// the half with `id < N/2`. The Benchmarks package compares the same against GRDB's statements (W12).
    func bulkWriteBenchmark() async throws {
        let bench = Benchmark.bulkWrite.rawValue
        let n = plan.objects
        var updates: [Double] = []
        var keyPathUpdates: [Double] = []
        var sets: [Double] = []
        var deletes: [Double] = []
        for _ in 0..<plan.runs {
            let path = workspace.newPath(bench)
            defer { workspace.remove(path) }
            let realm = try await Realm(configuration: workspace.configuration(at: path, durability: .none))
            try await realm.write { realm in
                for i in 0..<n {
                    realm.create(
                        KeyedDog.self, value: ["id": i, "name": Values.name(i), "age": Values.age(i), "score": 0.0])
                }
            }
            var start = monotonicNanos()
            try await realm.write { realm in realm.objects(KeyedDog.self).update { $0.score += 1 } }
            updates.append(secondsSince(start))
            start = monotonicNanos()
            try await realm.write { realm in realm.objects(KeyedDog.self).update(\.score) { $0 += 1 } }
            keyPathUpdates.append(secondsSince(start))
            start = monotonicNanos()
            try await realm.write { realm in realm.objects(KeyedDog.self).setValue(7.0, forKey: "score") }
            sets.append(secondsSince(start))
            start = monotonicNanos()
            try await realm.write { realm in realm.delete(try realm.objects(KeyedDog.self).filter("id < %@", n / 2)) }
            deletes.append(secondsSince(start))
            let (left, sum) = await realm.read { realm in
                (realm.objects(KeyedDog.self).count, realm.objects(KeyedDog.self).reduce(0.0) { $0 + $1.score })
            }
            guard left == n - n / 2, sum == 7.0 * Double(left) else {
                throw Failure(description: "bulk-write left \(left) objects summing \(sum)")
            }
        }
        let objects = Report.format(Double(n))
        report.add(
            Measurement(
                bench, "update { score += 1 } of \(objects) objects", unit: "s", runs: updates,
                note: "\(Report.format(Summary(updates).median / Double(n) * 1e9)) ns/object"))
        report.add(
            Measurement(
                bench, "update(\\.score) { $0 += 1 } of \(objects) objects", unit: "s", runs: keyPathUpdates,
                note: "\(Report.format(Summary(keyPathUpdates).median / Double(n) * 1e9)) ns/object"))
        report.add(
            Measurement(
                bench, "setValue(7, forKey: score) of \(objects) objects", unit: "s", runs: sets,
                note: "\(Report.format(Summary(sets).median / Double(n) * 1e9)) ns/object"))
        report.add(
            Measurement(
                bench, "delete id < \(Report.format(Double(n / 2))) (primary-key range)", unit: "s", runs: deletes,
                note: "\(Report.format(Summary(deletes).median / Double(n / 2) * 1e9)) ns/object"))
    }
}
