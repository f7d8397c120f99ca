import BenchmarkModels
import GRDB

// The ActorStore models and the data are in BenchmarkModels (object-bench stores them too).

/// The benchmark object as a GRDB Codable record (table `item`; the indexed variant adds `CREATE INDEX` on age).
struct ItemRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "item"
    var id: Int
    var name: String
    var age: Int
    var score: Double
}
