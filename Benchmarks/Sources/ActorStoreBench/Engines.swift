import ActorStoreBenchmarkKit

// The engines of the comparison and the names the workloads use for BenchmarkKit's comparison types.

/// ActorStore (the subject of every ratio), GRDB's records, GRDB with raw SQLite statements.
enum Engine: String, ComparedEngine {
    case actorStore = "ActorStore"
    case grdbRecords = "GRDB records"
    case grdbRaw = "GRDB raw"

    var jsonKey: String {
        switch self {
        case .actorStore: "actorStore"
        case .grdbRecords: "grdbRecords"
        case .grdbRaw: "grdbRaw"
        }
    }

    // The subject's ratio to itself is never shown or written: its title and key below are placeholders.
    var ratioTitle: String {
        switch self {
        case .actorStore: "AS/AS"
        case .grdbRecords: "AS/records"
        case .grdbRaw: "AS/raw"
        }
    }

    var ratioJSONKey: String {
        switch self {
        case .actorStore: "ratioActorStoreOverActorStore"
        case .grdbRecords: "ratioActorStoreOverGRDBRecords"
        case .grdbRaw: "ratioActorStoreOverGRDBRaw"
        }
    }
}

/// What one run of one engine produced.
typealias Sample = ComparisonSample
/// One printed row: a metric of a workload.
typealias Metric = ComparedMetric<Engine>
/// The runs of one row, per engine.
typealias RowResult = ComparisonRow<Engine>
/// The comparison's rows, table and JSON (BenchmarkKit's own `Report` is for single-engine tools).
typealias Report = ComparisonReport<Engine>
/// A failed check or system call.
typealias Failure = BenchmarkFailure
