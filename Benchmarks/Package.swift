// swift-tools-version: 6.0
import PackageDescription

// A peer comparison of ActorStore against GRDB (SQLite). A separate package so that the library itself stays
// free of dependencies. Release builds only:
//   swift run -c release --package-path Benchmarks actorstore-bench [--quick] [--only W3] [--json out.json] [--runs N]
let package = Package(
    name: "ActorStoreBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "actorstore-bench", targets: ["ActorStoreBench"])
    ],
    dependencies: [
        .package(name: "ActorStore", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "ActorStoreBench",
            dependencies: [
                .product(name: "ActorStore", package: "ActorStore"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // The SQLite C API for the raw-statement variant (bind, step, column on GRDB statements).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Sources/ActorStoreBench")
    ],
    swiftLanguageModes: [.v6]
)
