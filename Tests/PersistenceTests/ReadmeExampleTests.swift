import Testing

@testable import ActorStorePersistence

/// The storage engine's quick example (the README's before the object API existed), kept compiling and
/// true. The README's current example is tested in ActorStoreTests.
@Suite("README example (engine)")
struct ReadmeExampleTests {
    @Test("the 30-second example runs and does what the README says")
    func thirtySeconds() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try await StorageEngine.open(.init(path: dir.file("dogs.store")))
        let (dogs, _) = try await engine.write { txn in
            try txn.createTable(
                TableSchema(
                    "Dog",
                    columns: [
                        ColumnSchema("name", ColumnType(.string), indexed: true),
                        ColumnSchema("age", ColumnType(.int64)),
                    ]))
        }
        let (rex, result) = try await engine.write { txn in try txn.insert(dogs, [.string("Rex"), .int(1)]) }
        #expect(engine.latestVersion == result.version)
        #expect(result.changes.tables[dogs]?.inserted.contains(rex) == true)

        let snapshot = try engine.snapshot()
        let name = try await Task.detached { try snapshot.value(dogs, rex, column: 0) }.value
        #expect(name == .string("Rex"))
        try await engine.compact()
        #expect(engine.statistics.generation == 1)
        #expect(try engine.snapshot().value(dogs, rex, column: 0) == .string("Rex"))
        await engine.close()
    }
}
