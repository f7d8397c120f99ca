import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Passing objects between actors: ThreadSafeReference (objects, results, lists) and unmanaged objects.

/// The guide's ThreadSafeReference example: add a person, then make a reference to it.
private func addJaneAndMakeReference(_ realm: isolated Realm) async throws -> ThreadSafeReference<SeedNamedPerson> {
    let person = SeedNamedPerson(name: "Jane")
    try await realm.beginWrite()
    try await realm.add(person)
    try await realm.commitWrite()
    return ThreadSafeReference(to: person)
}

private func resolveName(_ realm: isolated Realm, _ reference: ThreadSafeReference<SeedDog>) -> String? {
    realm.resolve(reference)?.name
}

@Suite(.timeLimit(.minutes(30))) struct ThreadSafeReferenceTests {
    @Test(.tags(.seed)) func threadSafeReferenceResolvesInAnotherRealm() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        // The guide's example.
        let ref = try await addJaneAndMakeReference(realm)
        let renamed = try await Task.detached { () throws -> Bool in
            let realm = try await Realm(configuration: config)
            return try await realm.write { realm -> Bool in
                guard let person = realm.resolve(ref) else { return false }  // person was deleted
                person.name = "Jane Doe"
                return true
            }
        }.value
        #expect(renamed)
        let name = await realm.read { $0.objects(SeedNamedPerson.self).first?.name }
        #expect(name == "Jane Doe")
    }

    @Test(.tags(.seed)) func threadSafeReferenceResolvesAtANewerVersion() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        let other = try await Realm(configuration: config)
        _ = await other.read { $0.objects(SeedDog.self).count }  // `other` now reads an older version
        try await realm.write { $0.create(SeedDog.self, value: ["name": "New"]) }
        let ref = await realm.read { realm in ThreadSafeReference(to: realm.objects(SeedDog.self).first!) }
        // Resolve without the refresh that `read` and `write` do first.
        let name = await resolveName(other, ref)
        #expect(name == "New", "resolving advances the realm to the reference's version")
    }

    @Test(.tags(.seed)) func threadSafeReferenceIsNilAfterDeletion() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Doomed"]) }
        let ref = await realm.read { realm in ThreadSafeReference(to: realm.objects(SeedDog.self).first!) }
        try await realm.write { realm in realm.delete(realm.objects(SeedDog.self)) }
        let other = try await Realm(configuration: config)
        let resolved = await other.read { realm in realm.resolve(ref) == nil }
        #expect(resolved, "person was deleted")
    }

    @Test(.tags(.seed)) func threadSafeReferenceToResultsAndList() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            realm.create(SeedPerson.self, value: ["name": "Jim", "dogs": [["Rex", 1], ["Fido", 2]]])
        }
        let (resultsRef, listRef) = await realm.read { realm in
            (
                ThreadSafeReference(to: realm.objects(SeedDog.self)),
                ThreadSafeReference(to: realm.objects(SeedPerson.self).first!.dogs)
            )
        }
        let other = try await Realm(configuration: config)
        let seen = try await other.write { realm -> [String] in
            let dogs = realm.resolve(resultsRef)
            let list = realm.resolve(listRef)
            list?.append(SeedDog(value: ["name": "Spot"]))
            return [dogs.map(\.name).joined(separator: ","), list?.map(\.name).joined(separator: ",") ?? "nil"]
        }
        #expect(seen == ["Rex,Fido,Spot", "Rex,Fido,Spot"])
        let names = await realm.read { $0.objects(SeedPerson.self).first!.dogs.map(\.name) }
        #expect(names == ["Rex", "Fido", "Spot"])

        // A list reference whose owner was deleted resolves to nil.
        let orphanRef = await realm.read { ThreadSafeReference(to: $0.objects(SeedPerson.self).first!.dogs) }
        try await realm.write { realm in realm.delete(realm.objects(SeedPerson.self)) }
        let orphan = await other.read { realm in realm.resolve(orphanRef) == nil }
        #expect(orphan)
    }

    @Test(.tags(.seed)) func threadSafeReferencePinsItsVersionUntilResolved() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        let ref = await realm.read { realm in ThreadSafeReference(to: realm.objects(SeedDog.self).first!) }
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Fido"]) }
        #expect(await realm.statistics.pinnedVersions == 2, "the reference pins the version it was made at")
        let other = try await Realm(configuration: config)
        let name = await other.read { realm in realm.resolve(ref)?.name }
        #expect(name == "Rex")
        #expect(await realm.statistics.pinnedVersions == 1)
    }

    @Test(.tags(.seed)) func unmanagedObjectsCrossActorsFreely() async throws {
        // "Unmanaged instances of Objects behave exactly as regular NSObject subclasses" — in Swift 6 they
        // cross by being sent: `add` takes the object (`sending`).
        let realm = try await Realm(configuration: seedConfiguration())
        let dog = await Task.detached { () -> String in
            let dog = SeedDog(value: ["name": "Traveller", "age": 2])
            dog.age += 1
            return "\(dog.name) \(dog.age) \(dog.isManaged)"
        }.value
        #expect(dog == "Traveller 3 false")
        let traveller = SeedDog(value: ["name": "Traveller"])
        try await realm.add(traveller)
        let names = await realm.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["Traveller"])
    }

    @Test(.tags(.audit)) func threadSafeReferenceToAFilteredSortedResultsKeepsItsQuery() async throws {
        // "Instances of Realm, Results, or List ... are thread-confined"; a ThreadSafeReference carries them.
        let config = auditConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            for (name, age) in [("Rex", 3), ("Fido", 1), ("Spot", 7), ("Max", 5)] {
                realm.create(AuditDog.self, value: ["name": name, "age": age])
            }
        }
        let reference = try await realm.read { realm in
            ThreadSafeReference(to: try realm.objects(AuditDog.self).filter("age > 2").sorted(byKeyPath: "name"))
        }
        let other = try await Realm(configuration: config)
        let names = try await other.write { realm -> [String] in
            let dogs = realm.resolve(reference)
            realm.create(AuditDog.self, value: ["name": "Bolt", "age": 4])
            realm.create(AuditDog.self, value: ["name": "Pup", "age": 0])
            return dogs.map(\.name)
        }
        #expect(names == ["Bolt", "Max", "Rex", "Spot"], "the resolved Results keeps its filter and sort, live")
    }

    @Test(.tags(.regression)) func aListReferenceResolvesInARealmThatNeverUsedItsClass() async throws {
        let url = temporaryRealmURL()
        let b = try await Realm(configuration: regressionConfiguration(url))
        let a = try await Realm(configuration: regressionConfiguration(url))
        try await a.write { $0.create(RegOwner.self, value: ["name": "o", "items": ["x"]]) }
        let reference = await a.read { ThreadSafeReference(to: $0.objects(RegOwner.self).first!.items) }
        #expect(await b.read { $0.resolve(reference)?.count ?? -1 } == 1)
    }
}
