// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "ActorStore",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "ActorStore", targets: ["ActorStore"]),
        .executable(name: "actorstore-demo", targets: ["ActorStoreDemo"]),
        .executable(name: "engine-bench", targets: ["ActorStoreEngineBenchmark"]),
        // The benchmark tools' harness (Benchmarks/ uses it too): a tool library, not part of ActorStore's API.
        // A package that depends on ActorStore builds it only if one of its targets names it.
        .library(name: "ActorStoreBenchmarkKit", targets: ["ActorStoreBenchmarkKit"]),
        .executable(name: "actorstore-crash-child", targets: ["ActorStoreCrashOracleChild"]),
    ],
    // Every target but the test targets is named ActorStore…: SwiftPM wants target names unique across a
    // package graph, so a generic name here (TestSupport, BenchmarkKit) would clash with an app's own target.
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
        // actorstore-bench in Benchmarks/, through the ActorStoreBenchmarkKit product. No dependency, toolchain modules only.
        .target(name: "ActorStoreBenchmarkKit", path: "Sources/BenchmarkKit"),
        .executableTarget(
            name: "ActorStoreEngineBenchmark", dependencies: ["ActorStorePersistence", "ActorStoreBenchmarkKit"],
            path: "Sources/EngineBenchmark"),
        // What more than one test target uses (the seeded generator).
        .target(name: "ActorStoreTestSupport", path: "Tests/TestSupport"),
        .testTarget(
            name: "PersistenceTests", dependencies: ["ActorStorePersistence", "ActorStoreTestSupport"],
            path: "Tests/PersistenceTests", resources: [.copy("Fixtures")]),
        .testTarget(
            name: "ActorStoreTests", dependencies: ["ActorStore", "ActorStorePersistence", "ActorStoreTestSupport"],
            path: "Tests/ActorStoreTests"),
        // The kill -9 crash oracle: CrashOracleTests spawns actorstore-crash-child (write, verify, tryopen) and
        // kills it at random moments. No dependency between them: `swift test` and `swift build --build-tests`
        // build every product (checked from a clean build), and the test finds the child next to its bundle.
        .executableTarget(
            name: "ActorStoreCrashOracleChild", dependencies: ["ActorStore", "ActorStorePersistence"],
            path: "Tests/CrashOracleChild"),
        .testTarget(name: "CrashOracleTests", path: "Tests/CrashOracleTests"),
    ],
    swiftLanguageModes: [.v6]
)
