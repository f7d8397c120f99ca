import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

final class ReopenItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var payload = ""
}

/// Realm-layer regression tests for the findings of the outside test campaign (issue 16).
@Suite struct Issue16RealmTests {
    private func count(_ realm: Realm) async -> Int {
        await realm.read { realm in
            _ = realm.refresh()
            return realm.objects(ReopenItem.self).count
        }
    }

    @Test("a failed background compaction is visible through Realm.lastCompactionError, and is retried")
    func backgroundCompactionFailureIsVisible() async throws {
        let faulty = FaultInjectingFileSystem(base: MemoryFileSystem())
        var config = Realm.Configuration(
            fileURL: URL(fileURLWithPath: "/db/\(UUID().uuidString).realm"), objectTypes: [ReopenItem.self])
        config.fileSystem = faulty
        config.durability = .none
        config.automaticCompactionTrigger = .init(deadRatio: 0.5, minimumFileSize: 0)
        // The first write to a compacted copy fails: the disk is full.
        faulty.onNextCall(
            where: { $0.operation == "Writing" && $0.path.hasSuffix(".compacting") }, fail: .error(ENOSPC))
        let realm = try await Realm(configuration: config)
        /// Rewrites the object (its old row becomes dead space) and waits for the compaction it may start.
        func churn(_ round: Int) async throws {
            try await realm.write { realm in
                realm.create(
                    ReopenItem.self, value: ["id": 1, "payload": String(repeating: "x", count: 200 + round)],
                    update: .modified)
            }
            await realm.engine.waitForBackgroundCompaction()
        }
        var round = 0
        while realm.lastCompactionError == nil && round < 200 {
            try await churn(round)
            round += 1
        }
        let error = try #require(realm.lastCompactionError, "no background compaction failed in \(round) commits")
        #expect(error.code == .diskFull, "\(error)")
        #expect(realm.engine.statistics.generation == 0)
        // Later commits over the threshold retry; one succeeds and clears the error.
        let failedAt = round
        while realm.engine.statistics.generation == 0 && round < failedAt + 200 {
            try await churn(round)
            round += 1
        }
        #expect(realm.engine.statistics.generation > 0, "no retry succeeded")
        #expect(realm.lastCompactionError == nil)
        #expect(await count(realm) == 1)
    }
}
