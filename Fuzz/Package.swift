// swift-tools-version: 6.0
import PackageDescription

// Fuzz targets for ActorStore (libFuzzer). A separate package, like Benchmarks/, so that the library stays
// free of dependencies; it uses only the library's public API. Build and run with `Fuzz/run.sh` (see
// Fuzz/README.md): the targets need `--sanitize=fuzzer`, which provides their `main`.
let package = Package(
    name: "ActorStoreFuzz",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "fuzz-open", targets: ["FuzzOpen"]),
        .executable(name: "fuzz-predicate", targets: ["FuzzPredicate"]),
    ],
    dependencies: [
        .package(name: "ActorStore", path: "..")
    ],
    targets: [
        // Models, the store population, the readers that touch every property, the record framing.
        .target(
            name: "FuzzSupport", dependencies: [.product(name: "ActorStore", package: "ActorStore")],
            path: "Sources/FuzzSupport"),
        .executableTarget(
            name: "FuzzOpen",
            dependencies: ["FuzzSupport", .product(name: "ActorStore", package: "ActorStore")],
            path: "Sources/FuzzOpen"),
        .executableTarget(
            name: "FuzzPredicate",
            dependencies: ["FuzzSupport", .product(name: "ActorStore", package: "ActorStore")],
            path: "Sources/FuzzPredicate"),
    ],
    swiftLanguageModes: [.v6]
)
