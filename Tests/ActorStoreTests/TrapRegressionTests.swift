import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

// Regression tests for traps an audit found reachable through the public API or a file: each input below
// used to stop the program (or, for the index planner's huge doubles, silently lose matches).

final class TrapKennel: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<TrapDog>
    @Persisted var pack: MutableSet<TrapDog>
}

final class TrapDog: Object {
    @Persisted var name = ""
}

final class TrapCounter: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var n = 0
    @Persisted var plain = 0
}

private func expectStopMessage(
    _ result: ExitTest.Result?, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(output.contains(message), "standard error: \(output.suffix(400))", sourceLocation: sourceLocation)
}

@Suite struct TrapRegressionQueryTests {
    /// Rows at the extremes of Int64 and around the old planner's 9.2e18 cut-off, in a primary key, an
    /// index and a plain column.
    static let values: [Int64] = [
        .min, -9_200_000_000_000_000_001, -5, 0, 3, 9_200_000_000_000_000_000, 9_210_000_000_000_000_000, .max - 1,
        .max,
    ]

    /// The ids matching `predicate` on `column`, and the same predicate on the plain (never indexed) column.
    private static func ids(
        _ realm: Realm, _ column: String, _ op: String, _ argument: Double
    ) async throws -> (indexed: [Int], scanned: [Int]) {
        try await realm.read { realm throws -> ([Int], [Int]) in
            let all = realm.objects(TrapCounter.self)
            let indexed = try all.filter("\(column) \(op) %@", argument).map(\.id).sorted()
            let scanned = try all.filter("plain \(op) %@", argument).map(\.id).sorted()
            return (indexed, scanned)
        }
    }

    /// NaN, ±infinity and doubles at or past Int64's range, against an indexed or primary-key integer
    /// column: the index planner must agree with the scan, NaN matching nothing (`!=` everything).
    @Test func oddDoublesAgainstIndexedIntegersMatchTheScan() async throws {
        let realm = try await Realm(configuration: testConfiguration([TrapCounter.self]))
        try await realm.write { realm in
            for v in Self.values {
                realm.create(TrapCounter.self, value: ["id": Int(v), "n": Int(v), "plain": Int(v)])
            }
        }
        let arguments: [Double] = [
            .nan, .infinity, -.infinity, 9.2e18, 9.205e18, 0x1p63, -0x1p63, -9.2e18, -9.3e18, 1e300, -1e300, 2.5,
        ]
        for column in ["id", "n"] {
            for op in ["<", "<=", ">", ">=", "==", "!="] {
                for argument in arguments {
                    let (indexed, scanned) = try await Self.ids(realm, column, op, argument)
                    #expect(indexed == scanned, "\(column) \(op) \(argument)")
                }
            }
        }
        // The scan itself: NaN is unordered.
        let nan = try await Self.ids(realm, "id", ">", .nan)
        #expect(nan.indexed.isEmpty && nan.scanned.isEmpty)
        let notNaN = try await Self.ids(realm, "id", "!=", .nan)
        #expect(notNaN.indexed.count == Self.values.count)
        // `> 9.2e18` holds for the two rows between 9.2e18 and Int64.max too (the old planner started at
        // Int64.max and found only that one).
        let huge = try await Self.ids(realm, "n", ">", 9.2e18)
        #expect(huge.indexed == [9_210_000_000_000_000_000, Int(Int64.max - 1), Int(Int64.max)])
    }

    /// Integer arguments that no double represents exactly (above 2^53): an indexed range compares them
    /// as integers, as the scan does; through a double, `>= 2^53 + 3` started the walk at 2^53 + 4.
    @Test func largeIntegerArgumentsAgainstIndexedIntegersMatchTheScan() async throws {
        let realm = try await Realm(configuration: testConfiguration([TrapCounter.self]))
        let values: [Int] = [(1 << 53) + 1, (1 << 53) + 3, (1 << 54) + 6, (1 << 54) + 7, Int.max - 1, Int.max]
        try await realm.write { realm in
            for v in values { realm.create(TrapCounter.self, value: ["id": v, "n": v, "plain": v]) }
        }
        for column in ["id", "n"] {
            for op in ["<", "<=", ">", ">=", "==", "!="] {
                for argument in values {
                    let (indexed, scanned) = try await realm.read { realm throws -> ([Int], [Int]) in
                        let all = realm.objects(TrapCounter.self)
                        return (
                            try all.filter("\(column) \(op) %@", argument).map(\.id).sorted(),
                            try all.filter("plain \(op) %@", argument).map(\.id).sorted()
                        )
                    }
                    #expect(indexed == scanned, "\(column) \(op) \(argument)")
                }
            }
        }
    }
}

@Suite struct TrapRegressionConfigurationTests {
    /// `UInt.max` is the natural "no limit" for a `UInt` setting; it used to trap converting to `Int`.
    @Test func maximumNumberOfActiveVersionsAcceptsUIntMax() async throws {
        var config = testConfiguration([TrapDog.self])
        config.maximumNumberOfActiveVersions = UInt.max
        let realm = try await Realm(configuration: config)
        // A commit checks the limit too (against the versions others pin).
        try await realm.write { realm in realm.create(TrapDog.self, value: ["name": "Rex"]) }
        let frozen = await realm.freeze()
        try await realm.write { realm in realm.create(TrapDog.self, value: ["name": "Fido"]) }
        #expect(frozen.objects(TrapDog.self).count == 1)
        #expect(await realm.read { $0.objects(TrapDog.self).count } == 2)

        var memory = Realm.Configuration(inMemoryIdentifier: "trap-\(UUID())")
        memory.objectTypes = [TrapDog.self]
        memory.maximumNumberOfActiveVersions = UInt.max
        let inMemory = try await Realm(configuration: memory)
        try await inMemory.write { realm in realm.create(TrapDog.self, value: ["name": "Rex"]) }
    }
}

@Suite(.serialized) struct TrapRegressionFileTests {
    /// Opens the engine on `config`'s file once the realm that last had it open has let go of it.
    private static func openEngine(_ config: Realm.Configuration) async throws -> StorageEngine {
        await Realm.waitUntilClosed(configuration: config)
        let path = try #require(config.fileURL).path
        return try await StorageEngine.open(.init(path: path, durability: .none, autoCompaction: nil))
    }

    /// A checksum-valid file whose kennel lists dogs A, B, C (in its list and its set), and whose log
    /// then deletes B without unlinking it first, as no ActorStore write does.
    private static func fileWithDanglingLinks() async throws -> Realm.Configuration {
        var config = testConfiguration([TrapKennel.self, TrapDog.self])
        config.encryptionKey = nil  // the log is extended below with a plain record
        let path = try #require(config.fileURL).path
        try await {
            let realm = try await Realm(configuration: config)
            try await realm.write { realm in
                let kennel = realm.create(TrapKennel.self, value: ["name": "K"])
                for name in ["A", "B", "C"] {
                    let dog = realm.create(TrapDog.self, value: ["name": name])
                    kennel.dogs.append(dog)
                    kennel.pack.insert(dog)
                }
            }
        }()
        let engine = try await openEngine(config)
        let snapshot = try engine.snapshot()
        let dogTable = try #require(snapshot.tableID(named: "TrapDog"))
        let keys = snapshot.keys(dogTable).map(\.key)
        try #require(keys.count == 3)
        let version = snapshot.version.rawValue
        _ = consume snapshot
        await engine.close()

        var payload = ByteWriter()
        payload.append(version + 1)
        payload.append(CommitPayload.Op.delete.rawValue)
        payload.append(dogTable.rawValue)
        payload.append(keys.sorted()[1].rawValue)  // B: keys are given in creation order
        var record: [UInt8] = []
        payload.bytes.withUnsafeBytes { Record.frame(kind: .commit, payload: $0, into: &record) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(record))
        try handle.close()
        return config
    }

    /// A list (and a set) holding a link to an object that no longer exists reads without it, the same
    /// way through every path; it used to stop the program ("A stored List<…> element could not be read").
    @Test func danglingLinksInAListAreSkippedEverywhere() async throws {
        let config = try await Self.fileWithDanglingLinks()
        // `close()` let go of the file's lock before it returned.
        let realm = try await Realm(configuration: config)
        try await realm.read { realm throws in
            let kennel = try #require(realm.objects(TrapKennel.self).first)
            let dogs = kennel.dogs
            #expect(dogs.count == 2)
            #expect(dogs.indices == 0..<2)
            #expect(dogs.map(\.name) == ["A", "C"])
            #expect((0..<dogs.count).map { dogs[$0].name } == ["A", "C"])
            #expect(dogs.first?.name == "A" && dogs.last?.name == "C")
            #expect(dogs.name == ["A", "C"])
            #expect(dogs.freeze().map { $0.name } == ["A", "C"])
            #expect(dogs.where { $0.name != "" }.map(\.name) == ["A", "C"])
            #expect(try dogs.filter("name != ''").count == 2)
            #expect(kennel.freeze().dogs.map { $0.name } == ["A", "C"])
            #expect(kennel.pack.count == 2)
            #expect(Set(kennel.pack.map(\.name)) == ["A", "C"])
        }
        let frozen = await realm.freeze()
        let frozenKennel = try #require(frozen.objects(TrapKennel.self).first)
        #expect(frozenKennel.dogs.map { $0.name } == ["A", "C"])

        // Writes index the same elements, and store the list without the missing link.
        try await realm.write { realm in
            let kennel = realm.objects(TrapKennel.self).first!
            kennel.dogs[1] = realm.create(TrapDog.self, value: ["name": "D"])
            kennel.dogs.append(realm.create(TrapDog.self, value: ["name": "E"]))
            kennel.dogs.move(from: 0, to: 2)
            kennel.pack.insert(realm.create(TrapDog.self, value: ["name": "F"]))
        }
        let after = await realm.read { realm in
            let kennel = realm.objects(TrapKennel.self).first!
            return (kennel.dogs.map(\.name), kennel.dogs.count, Set(kennel.pack.map(\.name)), kennel.pack.count)
        }
        #expect(after.0 == ["D", "E", "A"] && after.1 == 3)
        #expect(after.2 == ["A", "C", "F"] && after.3 == 3)
    }
}

@Suite struct TrapRegressionListIndexTests {
    // Each out-of-bounds index stops with the list's own message (not an arithmetic overflow in
    // `index + 1`, nor the standard library's message).

    @Test func settingIntMaxStopsWithTheBoundsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a"])
            list[Int.max] = "b"
        }
        expectStopMessage(result, "List index 9223372036854775807 is out of bounds (count 1).")
    }

    @Test func removingIntMaxStopsWithTheBoundsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a"])
            list.remove(at: Int.max)
        }
        expectStopMessage(result, "List index 9223372036854775807 is out of bounds (count 1).")
    }

    @Test func insertingPastTheEndStopsWithTheBoundsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a"])
            list.insert("b", at: Int.max)
        }
        expectStopMessage(result, "List insertion index 9223372036854775807 is out of bounds (count 1).")
    }

    @Test func movingAndSwappingOutOfBoundsStopWithTheBoundsMessage() async {
        let move = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a", "b"])
            list.move(from: 0, to: Int.max)
        }
        expectStopMessage(move, "List move destination index 9223372036854775807 is out of bounds (count 2).")
        let swap = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a", "b"])
            list.swapAt(-1, 0)
        }
        expectStopMessage(swap, "List index -1 is out of bounds (count 2).")
    }

    /// The same checks hold for a managed list, before anything is written.
    @Test func managedListSetterStopsWithTheBoundsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([TrapKennel.self, TrapDog.self]))
            try await realm.write { realm in
                let kennel = realm.create(TrapKennel.self, value: ["name": "K"])
                kennel.dogs.append(realm.create(TrapDog.self, value: ["name": "A"]))
                kennel.dogs[Int.max] = realm.create(TrapDog.self, value: ["name": "B"])
            }
        }
        expectStopMessage(result, "List index 9223372036854775807 is out of bounds (count 1).")
    }
}
