import ActorStore
import Foundation
import Testing

// Typed key paths through lists and sets (`\.dogs.age`), their dynamic members, and maps of objects.

final class KPDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var vet: KPVet?
}

final class KPVet: Object {
    @Persisted var name = ""
}

final class KPPerson: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<KPDog>
    @Persisted var friends: MutableSet<KPDog>
    @Persisted var kennel: Map<String, KPDog?>
}

/// The property names of an object change, or nil for anything else.
private func names(_ change: ObjectChange<Frozen<KPPerson>>?) -> [String]? {
    guard case .change(_, let properties)? = change else { return nil }
    return properties.map(\.name)
}

@Suite(.timeLimit(.minutes(30))) struct NotificationKeyPathTests {
    private func realm() async throws -> Realm {
        try await Realm(configuration: testConfiguration([KPDog.self, KPVet.self, KPPerson.self]))
    }

    /// Alice with dogs Rex (1) and Fido (2) in `dogs`, Rex in `friends`, and `kennel` = ["a": Rex, "b": Fido].
    private func populate(_ realm: Realm) async throws {
        try await realm.write { realm in
            let alice = realm.create(KPPerson.self, value: ["name": "Alice"])
            let rex = realm.create(KPDog.self, value: ["name": "Rex", "age": 1])
            let fido = realm.create(KPDog.self, value: ["name": "Fido", "age": 2])
            alice.dogs.append(contentsOf: [rex, fido])
            alice.friends.insert(rex)
            alice.kennel["a"] = rex
            alice.kennel["b"] = fido
        }
    }

    @Test func listAndSetMembersReadEveryElement() async throws {
        let realm = try await realm()
        try await populate(realm)
        let (ages, friendNames, vets) = await realm.read { realm in
            let alice = realm.objects(KPPerson.self)[0]
            return (alice.dogs.age, alice.friends.name, alice.dogs.vet.map { $0?.name })
        }
        #expect(ages == [1, 2])
        #expect(friendNames == ["Rex"])
        #expect(vets == [nil, nil])
        let unmanaged = List<KPDog>()
        unmanaged.append(KPDog(value: ["name": "Solo", "age": 7]))
        #expect(unmanaged.age == [7])
        #expect(unmanaged.count == 1)  // the list's own member, not the dogs'
    }

    // Each test below commits an unwatched change, then a watched one elsewhere: the first delivery must be
    // the watched one alone (were the unwatched change counted, it would be delivered first or merged in).

    @Test func typedKeyPathThroughAListCountsOnlyThatProperty() async throws {
        let realm = try await realm()
        try await populate(realm)
        let changes = await realm.read { $0.objects(KPPerson.self)[0].changes(keyPaths: [\.name, \.dogs.age]) }
        let reader = ChangeReader(changes)
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Rex" }!.name = "Rexy" }  // not watched
        try await realm.write { $0.objects(KPPerson.self)[0].name = "Alicia" }
        #expect(names(try await reader.next()) == ["name"])
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Fido" }!.age = 3 }
        #expect(names(try await reader.next()) == ["dogs"])
        // Adding a dog changes the list itself: it always counts.
        try await realm.write { realm in
            realm.objects(KPPerson.self)[0].dogs.append(realm.create(KPDog.self, value: ["name": "Pup"]))
        }
        #expect(names(try await reader.next()) == ["dogs"])
    }

    @Test func typedKeyPathsAgreeWithStringKeyPaths() async throws {
        let realm = try await realm()
        try await populate(realm)
        // `\.dogs.vet` is the dogs' `vet` link itself (not the vet's properties: `\.dogs.vet?.name` does not
        // type-check, as `dogs.vet` is an array; the string form "dogs.vet.name" reaches them).
        let (typed, strings) = try await realm.read { realm in
            let alice = realm.objects(KPPerson.self)[0]
            return (
                alice.changes(keyPaths: [\.friends.name, \.dogs.vet]),
                try alice.changes(keyPaths: ["friends.name", "dogs.vet"])
            )
        }
        let readers = [ChangeReader(typed), ChangeReader(strings)]
        // Fido (in dogs only): his age is not watched. Rex (in friends and dogs): his name is, through friends.
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Fido" }!.age = 9 }
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Rex" }!.name = "Rexy" }
        for reader in readers { #expect(names(try await reader.next()) == ["friends"]) }
        try await realm.write { realm in
            realm.objects(KPDog.self).first { $0.name == "Fido" }!.vet = realm.create(KPVet.self, value: ["name": "V"])
        }
        for reader in readers { #expect(names(try await reader.next()) == ["dogs"]) }
        try await realm.write { $0.objects(KPVet.self)[0].name = "Dr. V" }  // not watched
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Rexy" }!.name = "Rex" }
        for reader in readers { #expect(names(try await reader.next()) == ["friends"]) }
    }

    @Test func resultsAndFrozenObjectsTakeTypedKeyPathsThroughLists() async throws {
        let realm = try await realm()
        try await populate(realm)
        try await realm.write { realm in
            let bob = realm.create(KPPerson.self, value: ["name": "Bob"])
            bob.dogs.append(realm.create(KPDog.self, value: ["name": "Bo", "age": 4]))
        }
        let (results, frozenAlice) = await realm.read { realm in
            (
                realm.objects(KPPerson.self).sorted(by: \.name).changes(keyPaths: [\.dogs.age]),
                realm.objects(KPPerson.self).first { $0.name == "Alice" }!.freeze()
            )
        }
        let reader = ChangeReader(results)
        let objectReader = ChangeReader(frozenAlice.changes(keyPaths: [\.name, \.dogs.age]))
        guard case .initial(let people)? = try await reader.next() else {
            Issue.record("no initial delivery")
            return
        }
        #expect(people.map(\.name) == ["Alice", "Bob"])
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Rex" }!.name = "Rexy" }  // not watched
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Bo" }!.age = 5 }  // Bob's dog
        let u = update(try await reader.next())
        #expect(u?.modifications == [1] && u?.insertions == [] && u?.deletions == [])
        try await realm.write { $0.objects(KPPerson.self).first { $0.name == "Alice" }!.name = "Alicia" }
        #expect(names(try await objectReader.next()) == ["name"])
    }

    @Test func observeClosuresTakeTypedKeyPaths() async throws {
        let realm = try await realm()
        try await populate(realm)
        let seen = Locked<[[String]]>([])
        let token = await realm.read { realm in
            realm.objects(KPPerson.self)[0].observe(keyPaths: [\.name, \.dogs.age]) { change in
                if case .change(_, let properties) = change { seen.withLock { $0.append(properties.map(\.name)) } }
            }
        }
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Rex" }!.name = "Rexy" }  // not watched
        try await realm.write { $0.objects(KPPerson.self)[0].name = "Alicia" }
        try await waitUntil { seen.withLock { !$0.isEmpty } }
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Rexy" }!.age = 4 }
        try await waitUntil { seen.withLock { $0.count == 2 } }
        #expect(seen.withLock { $0 } == [["name"], ["dogs"]])
        token.invalidate()
    }

    @Test func mapOfObjectsReportsKeysAddedRemovedRelinkedAndObjectsChanged() async throws {
        let realm = try await realm()
        try await populate(realm)
        let changes = await realm.read { $0.objects(KPPerson.self)[0].kennel.changes }
        let reader = ChangeReader(changes)
        guard case .initial(let initial)? = try await reader.next() else {
            Issue.record("no initial delivery")
            return
        }
        #expect(initial.mapValues { $0?.name } == ["a": "Rex", "b": "Fido"])

        // An object in the map changed: its key ("b", index 1 of the sorted keys) is modified.
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Fido" }!.age = 8 }
        guard case .update(let map, let deletions, let insertions, let modifications)? = try await reader.next() else {
            Issue.record("expected an update")
            return
        }
        #expect((deletions, insertions, modifications) == ([], [], [1]))
        #expect(map["b"]??.age == 8)

        // A new key, and "a" set to another object: an insertion and a modification.
        try await realm.write { realm in
            let alice = realm.objects(KPPerson.self)[0]
            alice.kennel["c"] = realm.create(KPDog.self, value: ["name": "Cub"])
            alice.kennel["a"] = realm.objects(KPDog.self).first { $0.name == "Fido" }
        }
        guard case .update(let map2, let d2, let i2, let m2)? = try await reader.next() else {
            Issue.record("expected an update")
            return
        }
        #expect((d2, i2, m2) == ([], [2], [0]))
        #expect(map2.mapValues { $0?.name } == ["a": "Fido", "b": "Fido", "c": "Cub"])

        // A key removed, and the object behind another deleted (its entry stays, holding nil).
        try await realm.write { realm in
            realm.objects(KPPerson.self)[0].kennel["a"] = nil
            realm.delete(realm.objects(KPDog.self).first { $0.name == "Cub" }!)
        }
        guard case .update(let map3, let d3, let i3, let m3)? = try await reader.next() else {
            Issue.record("expected an update")
            return
        }
        #expect((d3, i3, m3) == ([0], [], [1]))  // "c" is index 1 of the new keys ["b", "c"]
        #expect(map3.keys.sorted() == ["b", "c"])
        #expect(map3["c"] == .some(nil))

        // An unrelated object: no delivery; then the owner's deletion ends the sequence with every key removed.
        try await realm.write { $0.create(KPDog.self, value: ["name": "Stray"]) }
        try await realm.write { $0.delete($0.objects(KPPerson.self)[0]) }
        guard case .update(let last, let d4, let i4, let m4)? = try await reader.next() else {
            Issue.record("expected the final update")
            return
        }
        #expect(last.isEmpty && d4 == [0, 1] && i4 == [] && m4 == [])
        #expect(try await reader.next() == nil)
    }

    @Test func mapOfObjectsKeyPathsNarrowModifications() async throws {
        let realm = try await realm()
        try await populate(realm)
        let (typed, strings) = try await realm.read { realm in
            let kennel = realm.objects(KPPerson.self)[0].kennel
            return (kennel.changes(keyPaths: [\.age]), try kennel.changes(keyPaths: ["age"]))
        }
        let readers = [ChangeReader(typed), ChangeReader(strings)]
        for reader in readers {
            guard case .initial? = try await reader.next() else {
                Issue.record("no initial delivery")
                return
            }
        }
        // Rex ("a") is renamed (not watched), Fido ("b") ages: only "b" is modified.
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Rex" }!.name = "Rexy" }
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Fido" }!.age = 12 }
        for reader in readers {
            guard case .update(let map, let deletions, let insertions, let modifications)? = try await reader.next()
            else {
                Issue.record("expected an update")
                return
            }
            #expect((deletions, insertions, modifications) == ([], [], [1]))
            #expect(map["b"]??.age == 12)
        }
        await #expect(throws: RealmError.self) {
            try await realm.read { try $0.objects(KPPerson.self)[0].kennel.changes(keyPaths: ["nmae"]) }
        }
    }

    @Test func collectionsAndMapsHaveClosureObservers() async throws {
        let realm = try await realm()
        try await populate(realm)
        let listChanges = Locked<[Update]>([])
        let mapChanges = Locked<[[Int]]>([])  // the insertions of each map update that has some
        let (listToken, mapToken) = await realm.read { realm in
            let alice = realm.objects(KPPerson.self)[0]
            return (
                alice.dogs.observe(keyPaths: [\.age]) { change in
                    if let u = update(change) { listChanges.withLock { $0.append(u) } }
                },
                alice.kennel.observe { change in
                    // Fido's changes below modify key "b"; only keys added matter here.
                    if case .update(_, _, let insertions, _) = change, !insertions.isEmpty {
                        mapChanges.withLock { $0.append(insertions) }
                    }
                }
            )
        }
        // The list observer: Fido's name is not watched, his age is (index 1).
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Fido" }!.name = "Fido II" }
        try await realm.write { $0.objects(KPDog.self).first { $0.name == "Fido II" }!.age = 6 }
        try await waitUntil { listChanges.withLock { !$0.isEmpty } }
        #expect(listChanges.withLock { $0.map(\.modifications) } == [[1]])
        // The map observer is registered when observe returns: a silenced commit is never reported.
        try await realm.write(withoutNotifying: [mapToken]) { realm in
            realm.objects(KPPerson.self)[0].kennel["0"] = realm.create(KPDog.self, value: ["name": "Silent"])
        }
        try await realm.write { realm in
            realm.objects(KPPerson.self)[0].kennel["z"] = realm.create(KPDog.self, value: ["name": "Zed"])
        }
        try await waitUntil { mapChanges.withLock { !$0.isEmpty } }
        #expect(mapChanges.withLock { $0 } == [[3]])  // "z" after "0", "a", "b"; "0" was never reported
        listToken.invalidate()
        mapToken.invalidate()
    }
}
