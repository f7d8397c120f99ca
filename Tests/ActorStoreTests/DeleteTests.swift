import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Deletes: objects, results and sequences, and what happens to the links, lists, sets and maps that held them.

/// "Deleting Objects": links to a deleted object become nil, lists drop it, and held instances are
/// invalidated.
private func deleteNilsLinksAndLeavesLists(_ realm: isolated Realm) async throws {
    try await realm.beginWrite()
    let jim = realm.create(SeedPerson.self, value: ["name": "Jim"])
    let rex = realm.create(SeedDog.self, value: ["name": "Rex", "owner": jim])
    let fido = realm.create(SeedDog.self, value: ["name": "Fido", "owner": jim])
    jim.dogs.append(contentsOf: [rex, fido, rex])
    try await realm.commitWrite()
    #expect(rex.owner?.name == "Jim")
    #expect(jim.dogs.map(\.name) == ["Rex", "Fido", "Rex"])

    try await realm.beginWrite()
    realm.delete(rex)
    #expect(rex.isInvalidated)
    #expect(jim.dogs.map(\.name) == ["Fido"], "deleted objects leave every list (all occurrences)")
    try await realm.commitWrite()
    #expect(rex.isInvalidated)
    #expect(!fido.isInvalidated)
    #expect(jim.dogs.count == 1)

    try await realm.beginWrite()
    realm.delete(jim)
    try await realm.commitWrite()
    #expect(jim.isInvalidated)
    #expect(fido.owner == nil, "a link to a deleted object reads as nil")
    #expect(realm.objects(SeedDog.self).map(\.name) == ["Fido"])

    // "Delete all objects from the realm".
    try await realm.beginWrite()
    realm.create(SeedPerson.self, value: ["name": "Ann", "dogs": [["name": "Buddy"]]])
    realm.create(Book.self, value: ["id": 1, "title": "Cheese recipes"])
    realm.deleteAll()
    try await realm.commitWrite()
    let isEmpty = realm.isEmpty
    #expect(isEmpty)
    #expect(fido.isInvalidated)
    #expect(realm.objects(SeedDog.self).count == 0)
    #expect(realm.objects(Book.self).count == 0)

    // The schema stays: objects can be created again.
    try await realm.beginWrite()
    realm.create(SeedDog.self, value: ["name": "Again"])
    try await realm.commitWrite()
    #expect(realm.objects(SeedDog.self).map(\.name) == ["Again"])
}

private func deleteSomeResults(_ realm: isolated Realm) -> [String] {
    for i in 0..<6 {
        let tag = realm.create(RegTag.self, value: ["label": "t\(i)"])
        realm.create(RegBook.self, value: ["id": i, "title": "b\(i)", "note": tag])
        realm.create(
            RegContact.self,
            value: ["name": "c\(i)", "address": ["street": "s\(i)"], "addresses": [["street": "x\(i)"]]])
    }
    let held = realm.objects(RegTag.self).where { $0.label == "t1" }.first!
    realm.delete(realm.objects(RegTag.self).where { $0.label == "t1" || $0.label == "t4" })
    realm.delete(realm.objects(RegContact.self).where { $0.name != "c2" })
    let tags: [String] = realm.objects(RegTag.self).map(\.label)
    let notes: [String] = realm.objects(RegBook.self).map { $0.note?.label ?? "nil" }
    let contacts: [String] = realm.objects(RegContact.self).map { contact in
        "\(contact.name) \(contact.address?.street ?? "-") \(contact.addresses.count)"
    }
    return [
        "\(held.isInvalidated)", tags.joined(separator: ","), notes.joined(separator: ","),
        contacts.joined(separator: ","),
    ]
}

@Suite(.timeLimit(.minutes(30))) struct DeleteTests {
    @Test(.tags(.seed)) func deletingObjects() async throws {
        try await deleteNilsLinksAndLeavesLists(try await Realm(configuration: seedConfiguration()))
    }

    @Test(.tags(.seed)) func deleteResultsAndSequences() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let counts = try await realm.write { realm -> [Int] in
            for i in 0..<6 { realm.create(SeedDog.self, value: ["name": "d\(i)", "age": i]) }
            realm.delete(realm.objects(SeedDog.self).filter { $0.age % 2 == 0 })
            let afterSequence = realm.objects(SeedDog.self).count
            realm.delete(realm.objects(SeedDog.self))
            return [afterSequence, realm.objects(SeedDog.self).count]
        }
        #expect(counts == [3, 0])
        await expectRealmError(.invalidObject) {
            try await realm.write { realm in realm.delete(SeedDog(value: ["name": "unmanaged"])) }
        }
    }

    @Test(.tags(.audit)) func deletingTheObjectsOfAListAndOfLinkingObjects() async throws {
        // RLMRealm `deleteObjects:`: "An enumerable collection such as NSArray, RLMArray, or RLMResults,
        // containing objects to be deleted from the Realm."
        let realm = try await Realm(configuration: auditConfiguration())
        let counts = try await realm.write { realm -> [Int] in
            let jim = realm.create(
                AuditPerson.self,
                value: ["name": "Jim", "dogs": [["name": "Rex"], ["name": "Fido"], ["name": "Spot"]]])
            let ann = realm.create(AuditPerson.self, value: ["name": "Ann", "dogs": [["name": "Max"]]])
            let maxDog = ann.dogs[0]
            realm.delete(jim.dogs)
            let afterList = [jim.dogs.count, ann.dogs.count, realm.objects(AuditDog.self).count]
            realm.delete(maxDog.owners)
            return afterList + [realm.objects(AuditPerson.self).count, realm.objects(AuditDog.self).count]
        }
        #expect(counts == [0, 1, 1, 1, 1], "Ann (who links to Max) is deleted, Jim stays")
    }

    @Test(.tags(.audit)) func deletingAListThatHoldsAnObjectTwice() async throws {
        // A List may hold one object several times; deleting the list's objects deletes each object.
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            let jim = realm.create(AuditPerson.self, value: ["name": "Jim"])
            let rex = realm.create(AuditDog.self, value: ["name": "Rex"])
            jim.dogs.append(contentsOf: [rex, rex])
        }
        try await realm.write { realm in realm.delete(realm.objects(AuditPerson.self).first!.dogs) }
        let dogs = await realm.read { $0.objects(AuditDog.self).count }
        #expect(dogs == 0)
    }

    @Test(.tags(.audit)) func deletedObjectsLeaveSetsAndMapValuesBecomeNil() async throws {
        // "Deleting Objects": links to a deleted object are nil'd, in every kind of collection.
        let realm = try await Realm(configuration: auditConfiguration())
        let state = try await realm.write { realm -> [String] in
            let jim = realm.create(AuditPerson.self, value: ["name": "Jim"])
            let rex = realm.create(AuditDog.self, value: ["name": "Rex"])
            let fido = realm.create(AuditDog.self, value: ["name": "Fido"])
            jim.favorites.insert(objectsIn: [rex, fido])
            jim.dogsByNickname["rexy"] = rex
            jim.dogsByNickname["fifi"] = fido
            realm.delete(rex)
            return [
                jim.favorites.map(\.name).joined(), jim.dogsByNickname.keys.joined(separator: ","),
                "\(jim.dogsByNickname["rexy"] == .some(nil))", jim.dogsByNickname["fifi"]??.name ?? "nil",
            ]
        }
        #expect(state == ["Fido", "fifi,rexy", "true", "Fido"])
        let frozen = await realm.freeze()
        let jim = try #require(frozen.objects(AuditPerson.self).first)
        #expect(jim.favorites.map(\.name) == ["Fido"])
        #expect(jim.dogsByNickname["rexy"] == .some(nil))
    }

    @Test(.tags(.audit)) func deleteAllKeepsTheFileSize() async throws {
        // "You can also delete all objects stored in a Realm. Note the Realm file will maintain its size on
        // disk to efficiently reuse that space for future objects."
        var config = auditConfiguration()
        config.automaticCompaction = false
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            for i in 0..<200 {
                realm.create(AuditDog.self, value: ["name": String(repeating: "x", count: 100), "age": i])
            }
        }
        let before = await realm.statistics
        try await realm.write { $0.deleteAll() }
        let after = await realm.statistics
        #expect(after.fileSize >= before.fileSize)
        #expect(after.usedBytes < before.usedBytes)
        #expect(await realm.isEmpty)
    }

    /// `delete(results)` deletes by key (no object per row): exactly the matches go, links to them become
    /// nil, live objects of them become invalidated, and the objects that remain keep their embedded objects.
    @Test(.tags(.regression)) func deletingResultsDeletesTheMatchesAndOnlyThem() async throws {
        let realm = try await Realm(
            configuration: testConfiguration([RegTag.self, RegBook.self, RegContact.self, RegAddress.self]))
        let outcome = try await realm.write { realm in deleteSomeResults(realm) }
        #expect(outcome == ["true", "t0,t2,t3,t5", "t0,nil,t2,t3,nil,t5", "c2 s2 1"])
        #expect(await realm.read { $0.objects(RegTag.self).count } == 4)
    }
}
