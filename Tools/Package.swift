// swift-tools-version: 6.0
import PackageDescription

// The `actorstore` inspector: look into, query, export, import, verify and compact a realm file from its
// stored schema alone. Its own package, so that the library stays free of dependencies:
//   swift run --package-path Tools actorstore info demo.realm
let package = Package(
    name: "ActorStoreTools",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "actorstore", targets: ["ActorStoreTool"])
    ],
    dependencies: [
        .package(name: "ActorStore", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
    ],
    targets: [
        .executableTarget(
            name: "ActorStoreTool",
            dependencies: [
                .product(name: "ActorStore", package: "ActorStore"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/ActorStoreTool"),
        // End-to-end tests: they make realm files with the library and run the built `actorstore` on them.
        .testTarget(
            name: "ActorStoreToolTests",
            dependencies: [.product(name: "ActorStore", package: "ActorStore")],
            path: "Tests/ActorStoreToolTests"),
    ],
    swiftLanguageModes: [.v6]
)
