import Foundation
import Synchronization
import Testing

@testable import ActorStore

// Relationships: to-one and to-many links, inverse relationships, cyclic graphs, and embedded objects
// (owned by one parent).

/// Embedded objects are owned by their parent: deleted with it, and when replaced or removed.
private func embeddedObjectsLifecycle(_ realm: isolated Realm) async throws {
    try await realm.beginWrite()
    let ann = realm.create(
        SeedPerson.self,
        value: [
            "name": "Ann", "address": ["street": "Main", "city": "Oslo"],
            "pastAddresses": [["street": "A", "city": "Bergen"], ["B", "Tromsø"]],
        ])
    try await realm.commitWrite()
    let first = try #require(ann.address)
    #expect(first.isManaged)
    #expect(first.city == "Oslo")
    #expect(ann.pastAddresses.map(\.city) == ["Bergen", "Tromsø"])
    let past = ann.pastAddresses.map { $0 }

    // Replacing the embedded object deletes the old one.
    try await realm.beginWrite()
    ann.address = SeedAddress(value: ["street": "High", "city": "Paris"])
    try await realm.commitWrite()
    #expect(first.isInvalidated, "the replaced embedded object is deleted")
    #expect(ann.address?.city == "Paris")
    let second = try #require(ann.address)

    // Setting nil deletes it too.
    try await realm.beginWrite()
    ann.address = nil
    try await realm.commitWrite()
    #expect(second.isInvalidated)
    #expect(ann.address == nil)

    // Removing from a list of embedded objects deletes them.
    try await realm.beginWrite()
    ann.pastAddresses.remove(at: 0)
    try await realm.commitWrite()
    #expect(past[0].isInvalidated)
    #expect(!past[1].isInvalidated)

    // Deleting the parent deletes what it owns.
    try await realm.beginWrite()
    ann.address = SeedAddress(value: ["street": "Last", "city": "Rome"])
    try await realm.commitWrite()
    let third = try #require(ann.address)
    try await realm.beginWrite()
    realm.delete(ann)
    try await realm.commitWrite()
    #expect(third.isInvalidated, "embedded objects are deleted with their parent")
    #expect(past[1].isInvalidated, "embedded objects in a list are deleted with their parent")
}

@Suite struct RelationshipTests {
    @Test(.tags(.seed)) func toOneAndToManyRelationships() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let summary = try await realm.write { realm -> [String] in
            let jim = SeedPerson()
            jim.name = "Jim"
            let rex = SeedDog()
            rex.name = "Rex"
            rex.owner = jim
            realm.add(rex)
            #expect(jim.isManaged, "adding an object adds the unmanaged objects it links to")
            jim.dogs.append(rex)
            // A List may contain the same object several times, in insertion order.
            let fido = realm.create(SeedDog.self, value: ["name": "Fido"])
            jim.dogs.append(fido)
            jim.dogs.append(fido)
            jim.dogs.append(contentsOf: realm.objects(SeedDog.self).filter { $0.name.contains("Fido") })
            #expect(jim.dogs[1].isSameObject(as: jim.dogs[2]))
            #expect(jim.dogs[2].isSameObject(as: jim.dogs[3]))
            return [rex.owner?.name ?? "nil", jim.dogs.map(\.name).joined(separator: ",")]
        }
        #expect(summary == ["Jim", "Rex,Fido,Fido,Fido"])
        let counts = await realm.read { realm in
            [realm.objects(SeedPerson.self).count, realm.objects(SeedDog.self).count]
        }
        #expect(counts == [1, 2], "a list holds references, not copies")
    }

    @Test(.tags(.seed)) func addingACyclicGraph() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let result = try await realm.write { realm -> [String] in
            let jim = SeedPerson(value: ["name": "Jim"])
            let rex = SeedDog(value: ["name": "Rex"])
            rex.owner = jim
            jim.dogs.append(rex)
            realm.add(jim)
            #expect(jim.isManaged && rex.isManaged)
            return [
                jim.dogs.first?.owner?.name ?? "nil", rex.owner?.dogs.first?.name ?? "nil",
                "\(realm.objects(SeedPerson.self).count) \(realm.objects(SeedDog.self).count)",
            ]
        }
        #expect(result == ["Jim", "Rex", "1 1"])
    }

    @Test(.tags(.seed)) func copyingAnObjectWithCreate() async throws {
        // "Copying Realm objects ... is as simple as passing in the original object to create(_:value:update:)".
        let realm = try await Realm(configuration: seedConfiguration())
        let result = try await realm.write { realm -> [String] in
            let jim = realm.create(SeedPerson.self, value: ["name": "Jim", "age": 3, "dogs": [["Rex", 1]]])
            let copy = realm.create(SeedPerson.self, value: jim)
            copy.name = "Jim's copy"
            return [
                jim.name, copy.name, "\(copy.age)", copy.dogs.map(\.name).joined(),
                "\(realm.objects(SeedPerson.self).count) \(realm.objects(SeedDog.self).count)",
                "\(copy.dogs.first?.isSameObject(as: jim.dogs.first) == true)",
            ]
        }
        #expect(result == ["Jim", "Jim's copy", "3", "Rex", "2 1", "true"])
    }

    @Test(.tags(.seed)) func inverseRelationships() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let result = try await realm.write { realm -> [String] in
            let rex = realm.create(SeedDog.self, value: ["name": "Rex"])
            let jim = realm.create(SeedPerson.self, value: ["name": "Jim"])
            let ann = realm.create(SeedPerson.self, value: ["name": "Ann"])
            #expect(rex.owners.isEmpty)
            jim.dogs.append(rex)
            ann.dogs.append(rex)
            ann.dogs.append(rex)
            // Appending to dogs does not set the dog's owner: links are unidirectional.
            #expect(rex.owner == nil)
            let before = rex.owners.map(\.name).sorted().joined(separator: ",")
            ann.dogs.removeAll()
            let after = rex.owners.map(\.name).joined(separator: ",")
            return [before, after]
        }
        #expect(result == ["Ann,Ann,Jim", "Jim"])
        // Through a to-one link.
        let owned = try await realm.write { realm -> [String] in
            let ann = realm.objects(SeedPerson.self).first { $0.name == "Ann" }!
            let rex = realm.objects(SeedDog.self).first!
            let spot = realm.create(SeedDog.self, value: ["name": "Spot", "owner": ann])
            rex.owner = ann
            let both = ann.ownedDogs.map(\.name).sorted().joined(separator: ",")
            rex.owner = nil
            realm.delete(spot)
            return [both, "\(ann.ownedDogs.count)"]
        }
        #expect(owned == ["Rex,Spot", "0"])
        // Unmanaged objects have no linking objects.
        #expect(SeedDog().owners.isEmpty)
    }

    @Test(.tags(.seed)) func embeddedObjects() async throws {
        try await embeddedObjectsLifecycle(try await Realm(configuration: seedConfiguration()))
        let realm = try await Realm(configuration: seedConfiguration())
        await expectRealmError(.invalidObject) {
            try await realm.write { realm in realm.add(SeedAddress(value: ["street": "Alone"])) }
        }
    }

    @Test(.tags(.regression)) func aManagedEmbeddedObjectCannotGetASecondParent() async throws {
        let realm = try await Realm(configuration: regressionConfiguration(types: [RegContact.self, RegAddress.self]))
        do {
            try await realm.write { realm in
                let c1 = realm.create(RegContact.self, value: ["name": "c1", "address": ["street": "Main"]])
                let c2 = realm.create(RegContact.self, value: ["name": "c2"])
                c2.address = c1.address
            }
            Issue.record("sharing an embedded object committed")
        } catch let error as RealmError {
            #expect(error.code == .invalidObject)
            #expect(error.message.contains("one parent"))
        }
        #expect(await realm.read { $0.objects(RegContact.self).isEmpty })
    }

    @Test(.tags(.regression)) func copyingAnObjectCopiesItsEmbeddedObjects() async throws {
        let realm = try await Realm(configuration: regressionConfiguration(types: [RegContact.self, RegAddress.self]))
        try await realm.write { realm in
            let original = realm.create(
                RegContact.self, value: ["name": "orig", "address": ["street": "Main"], "addresses": [["street": "A"]]])
            let copy = realm.create(RegContact.self, value: original)
            copy.name = "copy"
        }
        try await realm.write { realm in realm.delete(realm.objects(RegContact.self).first { $0.name == "orig" }!) }
        let copy = await realm.read { realm -> [String] in
            let copy = realm.objects(RegContact.self).first { $0.name == "copy" }
            return [copy?.address?.street ?? "nil"] + (copy?.addresses.map(\.street) ?? [])
        }
        #expect(copy == ["Main", "A"])
    }

    @Test(.tags(.regression)) func reorderingAListOfEmbeddedObjectsKeepsThem() async throws {
        let realm = try await Realm(configuration: regressionConfiguration(types: [RegContact.self, RegAddress.self]))
        try await realm.write { realm in
            realm.create(
                RegContact.self,
                value: ["name": "c", "addresses": [["street": "A"], ["street": "B"], ["street": "C"]]])
        }
        try await realm.write { realm in realm.objects(RegContact.self).first!.addresses.move(from: 0, to: 2) }
        #expect(await realm.read { $0.objects(RegContact.self).first!.addresses.map(\.street) } == ["B", "C", "A"])
        try await realm.write { realm in realm.objects(RegContact.self).first!.addresses.swapAt(0, 1) }
        #expect(await realm.read { $0.objects(RegContact.self).first!.addresses.map(\.street) } == ["C", "B", "A"])
    }

    @Test(.tags(.regression)) func oneUnmanagedEmbeddedObjectCannotBeAddedUnderTwoProperties() async throws {
        let realm = try await Realm(configuration: testConfiguration([RegContact.self, RegAddress.self]))
        do {
            try await realm.write { realm in
                let contact = RegContact()
                let address = RegAddress(value: ["street": "Main"])
                contact.address = address
                contact.addresses.append(address)
                realm.add(contact)
            }
            Issue.record("one embedded object was given two links")
        } catch let error as RealmError {
            #expect(error.code == .invalidObject)
        }
        #expect(await realm.read { $0.objects(RegContact.self).isEmpty })
        // Separate embedded objects are fine.
        try await realm.write { realm in
            let contact = RegContact()
            contact.address = RegAddress(value: ["street": "Main"])
            contact.addresses.append(RegAddress(value: ["street": "Side"]))
            realm.add(contact)
        }
        let streets = await realm.read { realm in
            realm.objects(RegContact.self).map { [$0.address?.street ?? "nil"] + $0.addresses.map(\.street) }
        }
        #expect(streets == [["Main", "Side"]])
    }
}
