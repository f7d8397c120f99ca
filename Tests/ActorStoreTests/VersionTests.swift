import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Versions: what a realm sees until it refreshes, pinned versions, `invalidate`, and the limit on active
// versions.

/// "When you initially open a Realm on a thread, its state will be based off the most recent successful write
/// commit, and it will remain on that version until refreshed."
private func stableUntilRefreshed(_ realm: isolated Realm, other: Realm) async throws -> [Int] {
    guard let dog = realm.objects(SeedDog.self).first else { return [] }
    let before = dog.age
    try await other.write { realm in realm.objects(SeedDog.self).first!.age = 50 }
    let count = realm.objects(SeedDog.self).count
    let unchanged = dog.age
    let refreshed = realm.refresh()
    return [before, unchanged, count, refreshed ? 1 : 0, dog.age, realm.objects(SeedDog.self).count]
}

/// RLMRealm `invalidate`: "Calling this method multiple times in a row without reading any data from the
/// Realm, or before ever reading any data from the Realm, is a no-op ... The Realm itself remains valid, and a
/// new read transaction is implicitly begun the next time data is read from the Realm."
private func auditInvalidateThenRead(_ realm: isolated Realm, other: Realm) async throws -> [Int] {
    realm.invalidate()
    realm.invalidate()
    let before = realm.objects(AuditDog.self).count
    try await other.write { $0.create(AuditDog.self, value: ["name": "Later"]) }
    realm.invalidate()
    realm.invalidate()
    return [before, realm.objects(AuditDog.self).count]
}

@Suite(.timeLimit(.minutes(30))) struct VersionTests {
    @Test(.tags(.seed)) func seeingChangesFromOtherRealms() async throws {
        let config = seedConfiguration()
        let a = try await Realm(configuration: config)
        let b = try await Realm(configuration: config)
        let before = await a.read { $0.objects(SeedDog.self).count }
        #expect(before == 0)
        let versionBefore = await a.version
        try await b.write { $0.create(SeedDog.self, value: ["name": "From B"]) }
        // Each read (and write) of `a` starts at the newest version.
        let after = await a.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(after == ["From B"])
        #expect(await a.version > versionBefore)
        // refresh() reports whether there was a newer version.
        try await b.write { $0.create(SeedDog.self, value: ["name": "Again"]) }
        #expect(await a.refresh())
        #expect(await !a.refresh())
        // Writes on either start from the newest version.
        try await a.write { realm in realm.objects(SeedDog.self).last!.age = 5 }
        let age = await b.read { $0.objects(SeedDog.self).last!.age }
        #expect(age == 5)
        // Between refreshes, a realm keeps reading the version it is at.
        let seen = try await stableUntilRefreshed(a, other: b)
        #expect(seen == [0, 0, 2, 1, 50, 2])
    }

    @Test(.tags(.seed)) func pinnedVersionsAreCountedAndReleased() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { $0.create(SeedDog.self, value: ["name": "v1"]) }
        let baseline = await realm.statistics
        #expect(baseline.pinnedVersions == 1, "the realm pins the version it reads")
        var first: FrozenRealm? = await realm.freeze()
        try await realm.write { $0.create(SeedDog.self, value: ["name": "v2"]) }
        var second: FrozenRealm? = await realm.freeze()
        var firstDog: Frozen<SeedDog>? = first?.objects(SeedDog.self).first
        try await realm.write { $0.create(SeedDog.self, value: ["name": "v3"]) }
        _ = await realm.refresh()
        let held = await realm.statistics
        #expect(held.pinnedVersions == 3, "two frozen versions and the realm's own")
        #expect(held.oldestPinnedVersion == first?.version)
        #expect(held.version == (await realm.version))

        second = nil
        #expect(await realm.statistics.pinnedVersions == 2)
        first = nil
        #expect(await realm.statistics.pinnedVersions == 2, "a frozen object keeps its version pinned")
        #expect(firstDog?.name == "v1")
        firstDog = nil
        let released = await realm.statistics
        #expect(released.pinnedVersions == 1)
        #expect(released.oldestPinnedVersion == released.version)
        _ = second
    }

    @Test(.tags(.seed)) func invalidateReleasesTheRealmsVersion() async throws {
        let config = seedConfiguration()
        let a = try await Realm(configuration: config)
        let b = try await Realm(configuration: config)
        try await b.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        _ = await a.read { $0.objects(SeedDog.self).count }
        try await b.write { $0.create(SeedDog.self, value: ["name": "Fido"]) }
        #expect(await b.statistics.pinnedVersions == 2, "a still reads the older version")
        await a.invalidate()
        #expect(await b.statistics.pinnedVersions == 1)
    }

    @Test(.tags(.seed)) func maximumNumberOfActiveVersionsProducesTooManyVersions() async throws {
        var config = seedConfiguration()
        config.maximumNumberOfActiveVersions = 3
        let realm = try await Realm(configuration: config)
        var held: [FrozenRealm] = []
        var committed = 0
        var sawTooManyVersions = false
        for i in 0..<8 {
            do {
                try await realm.write { $0.create(SeedDog.self, value: ["name": "d\(i)"]) }
                committed += 1
            } catch let error as RealmError where error.code == .tooManyVersions {
                sawTooManyVersions = true
            }
            // Never silently stale: whatever was acknowledged is visible, in reads and in new frozen values.
            let seen = await realm.read { $0.objects(SeedDog.self).count }
            #expect(seen == committed, "after write \(i)")
            let frozen = await realm.freeze()
            #expect(frozen.objects(SeedDog.self).count == committed, "freeze after write \(i)")
            held.append(frozen)
            #expect(await realm.statistics.pinnedVersions <= 3)
        }
        #expect(sawTooManyVersions, "pinning more versions than allowed must be reported")
        // Releasing the frozen values makes room again.
        held.removeAll()
        try await realm.write { $0.create(SeedDog.self, value: ["name": "after"]) }
        let count = await realm.read { $0.objects(SeedDog.self).count }
        #expect(count == committed + 1)
    }

    @Test(.tags(.seed)) func aVersionLimitOfOneStillAllowsWritesWhenNothingElseIsPinned() async throws {
        var config = seedConfiguration()
        config.maximumNumberOfActiveVersions = 1
        let realm = try await Realm(configuration: config)
        // The realm moves from one version to the next: it never needs two at once.
        for i in 0..<3 {
            try await realm.write { $0.create(SeedDog.self, value: ["name": "d\(i)"]) }
        }
        let count = await realm.read { $0.objects(SeedDog.self).count }
        #expect(count == 3)
        #expect(await realm.statistics.pinnedVersions == 1)
        // Holding a frozen value of the current version, the next version would be a second one.
        let frozen = await realm.freeze()
        await expectRealmError(.tooManyVersions) {
            try await realm.write { $0.create(SeedDog.self, value: ["name": "blocked"]) }
        }
        #expect(frozen.objects(SeedDog.self).count == 3)
    }

    @Test(.tags(.audit)) func anUnresolvedReferencePinsItsVersionUntilReleased() async throws {
        // "Failing to resolve a ThreadSafeReference will result in the source version of the Realm being pinned
        // until the reference is deallocated."
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { $0.create(AuditDog.self, value: ["name": "Rex"]) }
        var reference: ThreadSafeReference<AuditDog>? = await realm.read { realm in
            ThreadSafeReference(to: realm.objects(AuditDog.self).first!)
        }
        try await realm.write { $0.create(AuditDog.self, value: ["name": "Fido"]) }
        #expect(await realm.statistics.pinnedVersions == 2)
        #expect(reference != nil)
        reference = nil
        #expect(await realm.statistics.pinnedVersions == 1, "releasing the reference releases its version")
    }

    @Test(.tags(.audit)) func invalidateTwiceIsHarmlessAndTheNextReadSeesTheNewestVersion() async throws {
        let config = auditConfiguration()
        let realm = try await Realm(configuration: config)
        let other = try await Realm(configuration: config)
        try await other.write { $0.create(AuditDog.self, value: ["name": "First"]) }
        let counts = try await auditInvalidateThenRead(realm, other: other)
        #expect(counts == [1, 2])
    }

    /// `UInt.max` is the natural "no limit" for a `UInt` setting; it used to trap converting to `Int`.
    @Test(.tags(.regression)) func maximumNumberOfActiveVersionsAcceptsUIntMax() async throws {
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
