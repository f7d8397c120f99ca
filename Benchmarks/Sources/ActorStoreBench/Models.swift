import ActorStore
import GRDB

/// The benchmark object in ActorStore: `{id: Int primary key, name: "name-<i>", age: i % 100, score}`.
final class Item: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var score = 0.0
}

/// The same object with `age` indexed (W4 indexed equality).
final class IndexedItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var score = 0.0
}

/// The same object as a GRDB Codable record (table `item`; the indexed variant adds `CREATE INDEX` on age).
struct ItemRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "item"
    var id: Int
    var name: String
    var age: Int
    var score: Double
}

/// The data every engine stores.
enum Dataset {
    @inline(__always) static func name(_ i: Int) -> String { "name-\(i)" }
    @inline(__always) static func age(_ i: Int) -> Int { i % 100 }
    @inline(__always) static func score(_ i: Int) -> Double { Double(i) * 0.5 }

    /// What reading all four properties of object `i` adds to a checksum (exact in Int).
    @inline(__always) static func digest(id: Int, name: String, age: Int, score: Double) -> Int {
        id &+ age &+ Int(score * 2) &+ name.utf8.count
    }

    /// The checksum of objects with the given ids.
    static func digest<S: Sequence<Int>>(_ ids: S) -> Int {
        ids.reduce(0) { $0 &+ digest(id: $1, name: name($1), age: age($1), score: score($1)) }
    }

    /// A random ASCII string of 8–16 letters and digits (W11): byte order and Swift's `String` order agree.
    static func randomString(_ rng: inout SplitMix64) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        let length = 8 + Int(rng.next() % 9)
        var bytes = [UInt8]()
        bytes.reserveCapacity(length)
        for _ in 0..<length { bytes.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Item and IndexedItem: generic code reads and writes both.
protocol ItemObject: Object {
    var id: Int { get set }
    var name: String { get set }
    var age: Int { get set }
    var score: Double { get set }
}
extension Item: ItemObject {}
extension IndexedItem: ItemObject {}

extension ItemObject {
    /// Fills the object with the data of object `i`.
    @inline(__always) func fill(_ i: Int) {
        id = i
        name = Dataset.name(i)
        age = Dataset.age(i)
        score = Dataset.score(i)
    }

    /// Reads all four properties into a checksum.
    @inline(__always) var digest: Int { Dataset.digest(id: id, name: name, age: age, score: score) }
}
