import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Frozen values: frozen objects, results and collections keep their version; thawing them.

@Suite(.timeLimit(.minutes(30))) struct FrozenTests {
    @Test(.tags(.seed)) func frozenValuesReadPropertiesLinksAndCollections() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            let jim = realm.create(
                SeedPerson.self,
                value: [
                    "name": "Jim", "age": 40, "address": ["street": "Main", "city": "Oslo"],
                    "nicknames": ["J", "Jimbo"], "tags": ["a", "b"], "scores": ["chess": 1200],
                ])
            let rex = realm.create(SeedDog.self, value: ["name": "Rex", "age": 3, "owner": jim])
            jim.dogs.append(rex)
            jim.dogs.append(SeedDog(value: ["name": "Fido", "age": 1, "owner": jim]))
        }
        let frozen = await realm.freeze()
        #expect(frozen.isFrozen)
        let summary = await Task.detached { () -> [String] in
            guard let jim = frozen.objects(SeedPerson.self).first else { return [] }
            let rex = frozen.objects(SeedDog.self)[0]
            return [
                "\(jim.name) \(jim.age)", jim.address?.city ?? "nil", jim.nicknames.joined(separator: ","),
                jim.tags.sorted().joined(), "\(jim.scores)", jim.dogs.map(\.name).joined(separator: ","),
                rex.owner?.name ?? "nil", rex.owners.map(\.name).joined(), "\(frozen.objects(SeedDog.self).count)",
                "\(jim.version == frozen.version) \(rex.owner?.version == frozen.version)",
            ]
        }.value
        #expect(
            summary == [
                "Jim 40", "Oslo", "J,Jimbo", "ab", "[\"chess\": 1200]", "Rex,Fido", "Jim", "Jim", "2", "true true",
            ])
        // An object's own freeze() and a Results' freeze().
        let (frozenDog, frozenDogs) = await realm.read { realm in
            (realm.objects(SeedDog.self).last!.freeze(), realm.objects(SeedDog.self).freeze())
        }
        #expect(frozenDog.name == "Fido")
        #expect(frozenDog.owner?.dogs.count == 2)
        #expect(frozenDogs.map(\.name) == ["Rex", "Fido"])
        #expect(frozenDogs[0] == frozen.objects(SeedDog.self)[0], "the same object at the same version")
    }

    @Test(.tags(.seed)) func frozenValuesKeepShowingTheirVersion() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            let jim = realm.create(SeedPerson.self, value: ["name": "Jim", "nicknames": ["J"]])
            jim.dogs.append(SeedDog(value: ["name": "Rex", "age": 1]))
        }
        let frozen = await realm.freeze()
        let frozenJim = try #require(frozen.objects(SeedPerson.self).first)
        let frozenRex = try #require(frozenJim.dogs.first)
        try await realm.write { realm in
            let jim = realm.objects(SeedPerson.self).first!
            jim.name = "James"
            jim.nicknames.append("Jimmy")
            jim.dogs.first!.age = 9
            jim.dogs.append(SeedDog(value: ["name": "Fido"]))
        }
        try await realm.write { realm in realm.delete(realm.objects(SeedDog.self).first!) }
        #expect(frozenJim.name == "Jim")
        #expect(frozenJim.nicknames == ["J"])
        #expect(frozenJim.dogs.map(\.name) == ["Rex"])
        #expect(frozenRex.age == 1, "a deleted object still reads at its frozen version")
        #expect(frozen.objects(SeedDog.self).count == 1)
        #expect(frozen.version < (await realm.version))
        let live = await realm.read { realm -> [String] in
            let jim = realm.objects(SeedPerson.self).first!
            return [jim.name, jim.dogs.map(\.name).joined(separator: ",")]
        }
        #expect(live == ["James", "Fido"])
        let newer = await realm.freeze()
        #expect(newer.objects(SeedPerson.self).first?.name == "James")
        #expect(newer.version > frozen.version)
    }

    @Test(.tags(.seed)) func thawFrozenValues() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            realm.create(SeedDog.self, value: ["name": "Rex", "age": 1])
            realm.create(SeedDog.self, value: ["name": "Fido", "age": 2])
        }
        let frozen = await realm.freeze()
        let rex = try #require(frozen.objects(SeedDog.self).first)
        let fido = try #require(frozen.objects(SeedDog.self).last)
        try await realm.write { realm in
            realm.objects(SeedDog.self).first!.age = 10
            realm.delete(realm.objects(SeedDog.self).last!)
        }
        let thawed = await realm.read { realm -> [String] in
            let live = rex.thaw(in: realm)
            return [
                "\(live?.age ?? -1)", "\(live?.isManaged ?? false)", "\(fido.thaw(in: realm) == nil)",
                "\(frozen.objects(SeedDog.self).thaw(in: realm).count)",
            ]
        }
        #expect(thawed == ["10", "true", "true", "1"])
        // Thawed objects can be written.
        try await realm.write { realm in rex.thaw(in: realm)?.age = 11 }
        let age = await realm.read { $0.objects(SeedDog.self).first?.age }
        #expect(age == 11)
        // In another realm on the same file, too.
        let other = try await Realm(configuration: realm.configuration)
        let name = await other.read { realm in rex.thaw(in: realm)?.name }
        #expect(name == "Rex")
    }

    @Test(.tags(.audit)) func objectsReadFromAFrozenRealmAreFrozen() async throws {
        // RLMRealm `freeze`: "All objects and collections read from a frozen Realm will also be frozen."
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            realm.create(AuditDog.self, value: ["name": "Rex", "owner": ["name": "Jim"]])
        }
        let frozen = await realm.freeze()
        let dogs = frozen.objects(AuditDog.self)
        let rex = try #require(dogs.first)
        let owner = try #require(rex.owner)
        #expect(frozen.isFrozen && dogs.isFrozen && rex.isFrozen && owner.isFrozen)
        #expect(owner.version == frozen.version && dogs.version == frozen.version)
        let filtered = try dogs.filter("name == 'Rex'")
        #expect(filtered.isFrozen && filtered.count == 1)
        // And it does not live-update.
        try await realm.write { realm in realm.objects(AuditDog.self).first!.name = "Max" }
        #expect(rex.name == "Rex")
        #expect(try dogs.filter("name == 'Rex'").count == 1)
    }
}
