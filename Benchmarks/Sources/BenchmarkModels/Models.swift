import ActorStore
import ActorStoreBenchmarkKit

// The models and data both benchmark tools store: actorstore-bench compares them against GRDB, object-bench's
// query, notify and observation benchmarks use them on their own.

/// The benchmark object: `{id: Int primary key, name: "name-<i>", age: i % 100, score}`.
public final class Item: Object {
    /// The primary key.
    @Persisted(primaryKey: true) public var id = 0
    /// `name-<id>` (``Dataset/name(_:)``).
    @Persisted public var name = ""
    /// `id % 100`, not indexed.
    @Persisted public var age = 0
    /// `id / 2`.
    @Persisted public var score = 0.0
}

/// The same object with `age` indexed (indexed equality, range counts).
public final class IndexedItem: Object {
    /// The primary key.
    @Persisted(primaryKey: true) public var id = 0
    /// `name-<id>` (``Dataset/name(_:)``).
    @Persisted public var name = ""
    /// `id % 100`, indexed.
    @Persisted(indexed: true) public var age = 0
    /// `id / 2`.
    @Persisted public var score = 0.0
}

/// The data every engine stores.
public enum Dataset {
    /// The name of object `i`.
    @inlinable @inline(__always) public static func name(_ i: Int) -> String { "name-\(i)" }
    /// The age of object `i`.
    @inlinable @inline(__always) public static func age(_ i: Int) -> Int { i % 100 }
    /// The score of object `i`.
    @inlinable @inline(__always) public static func score(_ i: Int) -> Double { Double(i) * 0.5 }

    /// What reading all four properties of object `i` adds to a checksum (exact in Int).
    @inlinable @inline(__always) public static func digest(id: Int, name: String, age: Int, score: Double) -> Int {
        id &+ age &+ Int(score * 2) &+ name.utf8.count
    }

    /// The checksum of objects with the given ids.
    public static func digest<S: Sequence<Int>>(_ ids: S) -> Int {
        ids.reduce(0) { $0 &+ digest(id: $1, name: name($1), age: age($1), score: score($1)) }
    }

    /// A random ASCII string of 8–16 letters and digits: byte order and Swift's `String` order agree.
    public static func randomString(_ rng: inout SplitMix64) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        let length = 8 + Int(rng.next() % 9)
        var bytes = [UInt8]()
        bytes.reserveCapacity(length)
        for _ in 0..<length { bytes.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Item and IndexedItem: generic code reads and writes both.
public protocol ItemObject: Object {
    /// The primary key.
    var id: Int { get set }
    /// `name-<id>`.
    var name: String { get set }
    /// `id % 100`.
    var age: Int { get set }
    /// `id / 2`.
    var score: Double { get set }
}
extension Item: ItemObject {}
extension IndexedItem: ItemObject {}

extension ItemObject {
    /// Fills the object with the data of object `i`.
    @inlinable @inline(__always) public func fill(_ i: Int) {
        id = i
        name = Dataset.name(i)
        age = Dataset.age(i)
        score = Dataset.score(i)
    }

    /// Reads all four properties into a checksum.
    @inlinable @inline(__always) public var digest: Int { Dataset.digest(id: id, name: name, age: age, score: score) }
}
