// swift-tools-version: 6.2
import PackageDescription

// The benchmarks that need only ActorStore's public API, release builds only:
//   swift run -c release --package-path Benchmarks object-bench [--quick] [--only NAME] [--json out.json] ...
//   swift run -c release --package-path Benchmarks actorstore-bench [--quick] [--only W3] [--json out.json] ...
// A separate package so that the library itself stays free of dependencies (actorstore-bench compares against
// GRDB). The harness is the root package's ActorStoreBenchmarkKit, which engine-bench (root package: it needs the
// engine's `package` API) uses too.
let package = Package(
    name: "ActorStoreBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "object-bench", targets: ["ObjectBenchmark"]),
        .executable(name: "actorstore-bench", targets: ["ActorStoreBench"]),
    ],
    dependencies: [
        .package(name: "ActorStore", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // The models and data both tools store (Item, IndexedItem, Dataset).
        .target(
            name: "BenchmarkModels",
            dependencies: [
                .product(name: "ActorStore", package: "ActorStore"),
                .product(name: "ActorStoreBenchmarkKit", package: "ActorStore"),
            ],
            path: "Sources/BenchmarkModels"),
        // Speed of the object layer (Object + @Persisted, Results, freeze, durable writes), with targets.
        .executableTarget(
            name: "ObjectBenchmark",
            dependencies: [
                "BenchmarkModels",
                .product(name: "ActorStore", package: "ActorStore"),
                .product(name: "ActorStoreBenchmarkKit", package: "ActorStore"),
            ],
            path: "Sources/ObjectBenchmark"),
        // ActorStore against GRDB, the same workloads alternated in one process, results checked.
        .executableTarget(
            name: "ActorStoreBench",
            dependencies: [
                "BenchmarkModels",
                .product(name: "ActorStore", package: "ActorStore"),
                .product(name: "ActorStoreBenchmarkKit", package: "ActorStore"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // The SQLite C API for the raw-statement variant (bind, step, column on GRDB statements).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Sources/ActorStoreBench"),
    ],
    swiftLanguageModes: [.v6]
)
