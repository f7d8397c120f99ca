import ActorStore
import ActorStoreBenchmarkKit
import Foundation

/// How a bulk insert makes its objects.
enum InsertKind: Sendable {
    /// `Dog()`, three setters, `realm.add(dog)`.
    case add
    /// `realm.create(Dog.self, value: ["name": …, "age": …, "score": …])`.
    case createDictionary
    /// `realm.create(Dog.self, value: [name, age, score])`.
    case createArray
    /// `KeyedDog()` with its primary key, three setters, `realm.add(dog)`.
    case addKeyed
}

/// What one bulk insert took.
struct InsertResult {
    /// Wall time of the whole `write` call (begin, block, commit).
    var seconds: Double
    /// Of which the commit (from the end of the block until `write` returned).
    var commitSeconds: Double
    /// Process CPU time over the whole `write` call.
    var cpuSeconds: Double
    /// Objects inserted: fewer than asked if the time budget ran out.
    var inserted: Int
}

extension Workloads {
    func insertBenchmark(_ kind: InsertKind, _ benchmark: Benchmark) async throws {
        let n = plan.objects
        var totals: [Double] = []
        var commits: [Double] = []
        var cpus: [Double] = []
        var extrapolatedFrom: Int?
        for run in 0..<plan.runs {
            let path = workspace.newPath(benchmark.rawValue)
            let result = try await timedInsert(kind, count: n, path: path, budget: plan.insertBudget)
            let factor = Double(n) / Double(result.inserted)
            if result.inserted < n { extrapolatedFrom = result.inserted }
            totals.append(result.seconds * factor)
            commits.append(result.commitSeconds * factor)
            cpus.append(result.cpuSeconds * factor)
            // The last complete add run's file becomes the realm the read benchmarks share.
            if kind == .add, result.inserted == n, run == plan.runs - 1, dogStore == nil {
                dogStore = path
            } else {
                workspace.remove(path)
            }
        }
        let name = benchmark.rawValue
        let objects = Report.format(Double(n))
        var note =
            "\(Report.format(Summary(totals).median / Double(n) * 1e9)) ns/object; CPU (all threads) median "
            + "\(Report.format(Summary(cpus).median)) s"
        if let extrapolatedFrom {
            note += "; stopped after \(plan.insertBudget) s at \(Report.format(Double(extrapolatedFrom))) objects and "
            note += "extrapolated to \(objects)"
        }
        report.add(
            Measurement(
                name, "insert \(objects) objects in one write (total)", unit: "s", runs: totals,
                target: .atMost(2.5 * plan.scale, scaled: plan.isScaled), note: note))
        report.add(Measurement(name, "  of which commit", unit: "s", runs: commits))
        report.add(Measurement(name, "  rate", unit: "objects/s", runs: totals.map { Double(n) / $0 }))
    }

    /// Opens a fresh realm at `path` (durability `.none`), inserts `count` objects in one write transaction
    /// and checks they are there. With a `budget` (seconds), stops adding when it runs out and commits what
    /// was added. The realm is closed when this returns.
    func timedInsert(_ kind: InsertKind, count: Int, path: String, budget: Double?) async throws -> InsertResult {
        let realm = try await Realm(configuration: workspace.configuration(at: path, durability: .none))
        let budgetNanos = budget.map { UInt64($0 * 1e9) } ?? .max
        let watch = Stopwatch()
        let start = monotonicNanos()
        let (inserted, blockEnd) = try await realm.write { realm -> (Int, UInt64) in
            var i = 0
            while i < count {
                let end = min(count, i + 4096)
                Workloads.insert(kind, i..<end, into: realm)
                i = end
                if monotonicNanos() &- start > budgetNanos { break }
            }
            return (i, monotonicNanos())
        }
        let end = monotonicNanos()
        let cpu = watch.cpuSeconds
        let stored = await realm.read { realm in
            kind == .addKeyed ? realm.objects(KeyedDog.self).count : realm.objects(Dog.self).count
        }
        guard stored == inserted else {
            throw Failure(description: "inserted \(inserted) objects but the realm holds \(stored)")
        }
        return InsertResult(
            seconds: Double(end &- start) / 1e9, commitSeconds: Double(end &- blockEnd) / 1e9, cpuSeconds: cpu,
            inserted: inserted)
    }

    /// Inserts objects `range` (property values from `Values`) in the open write transaction.
    static func insert(_ kind: InsertKind, _ range: Range<Int>, into realm: isolated Realm) {
        switch kind {
        case .add:
            for i in range {
                let dog = Dog()
                dog.name = Values.name(i)
                dog.age = Values.age(i)
                dog.score = Values.score(i)
                realm.add(dog)
            }
        case .createDictionary:
            for i in range {
                realm.create(
                    Dog.self, value: ["name": Values.name(i), "age": Values.age(i), "score": Values.score(i)])
            }
        case .createArray:
            for i in range {
                realm.create(Dog.self, value: [Values.name(i), Values.age(i), Values.score(i)] as [Any])
            }
        case .addKeyed:
            for i in range {
                let dog = KeyedDog()
                dog.id = i
                dog.name = Values.name(i)
                dog.age = Values.age(i)
                dog.score = Values.score(i)
                realm.add(dog)
            }
        }
    }
}
