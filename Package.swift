// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "ActorStore",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "ActorStore", targets: ["ActorStore"]),
        .executable(name: "actorstore-demo", targets: ["ActorStoreDemo"]),
        .executable(name: "engine-bench", targets: ["EngineBenchmark"]),
        // The benchmark tools' harness (Benchmarks/ uses it too): a tool library, not part of ActorStore's API.
        // A package that depends on ActorStore builds it only if one of its targets names it.
        .library(name: "BenchmarkKit", targets: ["BenchmarkKit"]),
        .executable(name: "actorstore-crash-child", targets: ["CrashOracleChild"]),
    ],
    targets: [
        // The storage engine: log-structured file, persistent indexes, MVCC, group commit, compaction.
        // No public API: ActorStore reaches it through `package` declarations.
        .target(name: "ActorStorePersistence", path: "Sources/Persistence"),
        .target(name: "ActorStore", dependencies: ["ActorStorePersistence"], path: "Sources/ActorStore"),
        .executableTarget(
            name: "ActorStoreDemo", dependencies: ["ActorStore", "ActorStorePersistence"],
            path: "Sources/ActorStoreDemo"),
        // The one benchmark harness: timing, statistics, the command line, the report table and JSON, the peer
        // comparison (engines alternated, results checked, ratios). engine-bench here; object-bench and
        // actorstore-bench in Benchmarks/, through the BenchmarkKit product. No dependency, toolchain modules only.
        .target(name: "BenchmarkKit", path: "Sources/BenchmarkKit"),
        .executableTarget(
            name: "EngineBenchmark", dependencies: ["ActorStorePersistence", "BenchmarkKit"],
            path: "Sources/EngineBenchmark"),
        // What more than one test target uses (the seeded generator).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(
            name: "PersistenceTests", dependencies: ["ActorStorePersistence", "TestSupport"],
            path: "Tests/PersistenceTests", resources: [.copy("Fixtures")]),
        .testTarget(
            name: "ActorStoreTests", dependencies: ["ActorStore", "ActorStorePersistence", "TestSupport"],
            path: "Tests/ActorStoreTests"),
        // The kill -9 crash oracle: CrashOracleTests spawns actorstore-crash-child (write, verify, tryopen) and
        // kills it at random moments. No dependency between them: `swift test` and `swift build --build-tests`
        // build every product (checked from a clean build), and the test finds the child next to its bundle.
        .executableTarget(
            name: "CrashOracleChild", dependencies: ["ActorStore", "ActorStorePersistence"],
            path: "Tests/CrashOracleChild"),
        .testTarget(name: "CrashOracleTests", path: "Tests/CrashOracleTests"),
    ],
    swiftLanguageModes: [.v6]
)
