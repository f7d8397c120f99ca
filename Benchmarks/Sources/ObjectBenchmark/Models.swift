import ActorStore

// The query, notify and observation benchmarks use BenchmarkModels' `Item` and `IndexedItem` (actorstore-bench's
// objects: `name-<i>`, `age = i % 100`).

/// The small object of the bulk benchmarks: three properties, no primary key, no index.
final class Dog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var score = 0.0
}

/// The same object with an `Int` primary key, for `object(ofType:forPrimaryKey:)`.
final class KeyedDog: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var score = 0.0
}

/// Property values of the benchmark objects, computed before any timed loop so that the loops measure
/// the object layer rather than string formatting. The names are short enough to be stored inline in a
/// Swift `String` (no allocation), as most small names are.
enum Values {
    static let names: [String] = (0..<1024).map { "dog-\($0)" }

    @inline(__always) static func name(_ i: Int) -> String { names[i & 1023] }
    @inline(__always) static func age(_ i: Int) -> Int { i % 20 }
    @inline(__always) static func score(_ i: Int) -> Double { Double(i) * 0.5 }

    /// The sum of `age(i)` over `0..<n`: what a full scan reading `age` must return.
    static func ageSum(_ n: Int) -> Int { (0..<n).reduce(0) { $0 + age($1) } }
}

/// One random string per object, for sorting.
final class SortDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
}
