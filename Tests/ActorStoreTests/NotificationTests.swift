import ActorStore
import Foundation
import Testing

// Change notifications: the seeds' examples, and the contract of each sequence.

final class NTDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var favoriteToy = ""
    @Persisted var siblings: List<NTDog>
}

final class NTPerson: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<NTDog>
    @Persisted var pet: NTDog?
}

final class NTOther: Object {
    @Persisted var value = 0
    @Persisted var scores: List<Int>
    @Persisted var tags: MutableSet<String>
    @Persisted var settings: Map<String, String>
}

/// Reads deliveries from a change sequence one at a time. A delivery that never comes does not hang the
/// run: the suites that use it carry a time limit, which cancels the test, and a cancelled change sequence
/// ends (`next` returns nil, which the callers' expectations reject).
final class ChangeReader<S: AsyncSequence & Sendable>: @unchecked Sendable where S.Element: Sendable {
    // @unchecked: the iterator is used by one task at a time (each `next` awaits the previous one).
    private var iterator: S.AsyncIterator

    init(_ sequence: S) { iterator = sequence.makeAsyncIterator() }

    func next() async throws -> S.Element? { try await iterator.next() }
}

typealias Update = (deletions: [Int], insertions: [Int], modifications: [Int])

func update<T>(_ change: RealmCollectionChange<FrozenResults<T>>?) -> Update? {
    guard case .update(_, let deletions, let insertions, let modifications)? = change else { return nil }
    return (deletions, insertions, modifications)
}

@Suite(.timeLimit(.minutes(30))) struct NotificationTests {
    private func realm() async throws -> Realm {
        try await Realm(configuration: testConfiguration([NTDog.self, NTPerson.self, NTOther.self]))
    }

    @Test func seedOwnersExample() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let alice = realm.create(NTPerson.self, value: ["name": "Alice"])
            alice.dogs.append(realm.create(NTDog.self, value: ["name": "Rex", "age": 1]))
            realm.create(NTPerson.self, value: ["name": "Bob"])
        }
        let changes = await realm.read { $0.objects(NTPerson.self).changes }
        let reader = ChangeReader(changes)
        guard case .initial(let people)? = try await reader.next() else {
            Issue.record("no initial delivery")
            return
        }
        #expect(people.map(\.name) == ["Alice", "Bob"])

        // Modifying the person's name.
        try await realm.write { $0.objects(NTPerson.self)[0].name = "Alicia" }
        var u = update(try await reader.next())
        #expect(u?.modifications == [0] && u?.insertions == [] && u?.deletions == [])
        // Adding a dog to the person's dogs.
        try await realm.write { realm in
            realm.objects(NTPerson.self)[0].dogs.append(realm.create(NTDog.self, value: ["name": "Fido"]))
        }
        u = update(try await reader.next())
        #expect(u?.modifications == [0])
        // Changing a dog's age.
        try await realm.write { $0.objects(NTDog.self).first { $0.name == "Rex" }!.age = 5 }
        u = update(try await reader.next())
        #expect(u?.modifications == [0])
        // A commit to an unrelated table delivers nothing; the next relevant one does.
        try await realm.write { $0.create(NTOther.self, value: ["value": 1]) }
        try await realm.write { $0.create(NTPerson.self, value: ["name": "Carol"]) }
        let change = try await reader.next()
        u = update(change)
        #expect(u?.insertions == [2] && u?.modifications == [] && u?.deletions == [])
        if case .update(let people, _, _, _)? = change { #expect(people.map(\.name) == ["Alicia", "Bob", "Carol"]) }
        // Deleting.
        try await realm.write { $0.delete($0.objects(NTPerson.self)[1]) }
        u = update(try await reader.next())
        #expect(u?.deletions == [1] && u?.insertions == [])
    }

    @Test func filteredSortedResultsReportObjectsEnteringAndLeaving() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            for (name, age) in [("a", 1), ("b", 5), ("c", 2), ("d", 9)] {
                realm.create(NTDog.self, value: ["name": name, "age": age])
            }
        }
        let changes = try await realm.read { realm in
            try realm.objects(NTDog.self).filter("age < 5").sorted(byKeyPath: "age").changes
        }
        let reader = ChangeReader(changes)
        guard case .initial(let dogs)? = try await reader.next() else { throw CancellationError() }
        #expect(dogs.map(\.name) == ["a", "c"])
        try await realm.write { $0.objects(NTDog.self).first { $0.name == "d" }!.age = 0 }  // enters first
        var change = try await reader.next()
        #expect(update(change)?.insertions == [0])
        try await realm.write { $0.objects(NTDog.self).first { $0.name == "a" }!.age = 7 }  // leaves
        change = try await reader.next()
        #expect(update(change)?.deletions == [1])
        try await realm.write { $0.objects(NTDog.self).first { $0.name == "c" }!.age = -1 }  // moves to front
        change = try await reader.next()
        if case .update(let dogs, let deletions, let insertions, _)? = change {
            #expect(dogs.map(\.name) == ["c", "d"])
            #expect(deletions.count == 1 && insertions.count == 1)
        } else {
            Issue.record("expected an update, got \(String(describing: change))")
        }
    }

    @Test func objectChangesReportPropertiesWithOldAndNewValuesThenDeletion() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(NTDog.self, value: ["name": "Max", "age": 3]) }
        let changes = await realm.read { $0.objects(NTDog.self)[0].changes }
        let reader = ChangeReader(changes)
        try await realm.write { $0.objects(NTDog.self)[0].name = "Wolfie" }
        guard case .change(let dog, let properties)? = try await reader.next() else {
            Issue.record("expected a change")
            return
        }
        #expect(dog.name == "Wolfie")
        #expect(properties.map(\.name) == ["name"])
        #expect(properties.first?.oldValue as? String == "Max")
        #expect(properties.first?.newValue as? String == "Wolfie")
        try await realm.write { $0.delete($0.objects(NTDog.self)[0]) }
        guard case .deleted? = try await reader.next() else {
            Issue.record("expected the deletion")
            return
        }
        #expect(try await reader.next() == nil)
    }

    @Test func seedKeyPathExampleFavoriteToyAndAge() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(NTDog.self, value: ["name": "Max", "favoriteToy": "Ball", "age": 2]) }
        let changes = try await realm.read { try $0.objects(NTDog.self)[0].changes(keyPaths: ["favoriteToy", "age"]) }
        let reader = ChangeReader(changes)
        try await realm.write { $0.objects(NTDog.self)[0].favoriteToy = "Frisbee" }
        guard case .change(_, let properties)? = try await reader.next() else {
            Issue.record("expected a change")
            return
        }
        #expect(properties.map(\.name) == ["favoriteToy"])
        try await realm.write { $0.objects(NTDog.self)[0].name = "Maxamillion" }  // not observed
        try await realm.write { $0.objects(NTDog.self)[0].age = 3 }
        guard case .change(_, let next)? = try await reader.next() else {
            Issue.record("expected a change")
            return
        }
        #expect(next.map(\.name) == ["age"])
        #expect(next.first?.newValue as? Int == 3)
    }

    @Test func seedKeyPathExampleSiblingsVersusSiblingsName() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let rex = realm.create(NTDog.self, value: ["name": "Rex"])
            rex.siblings.append(realm.create(NTDog.self, value: ["name": "Sib"]))
        }
        let (siblings, siblingNames) = try await realm.read { realm in
            let rex = realm.objects(NTDog.self).first { $0.name == "Rex" }!
            return (try rex.changes(keyPaths: ["siblings"]), try rex.changes(keyPaths: ["siblings.name"]))
        }
        let listOnly = ChangeReader(siblings)
        let deep = ChangeReader(siblingNames)
        // A sibling's name: only the "siblings.name" observer hears it.
        try await realm.write { $0.objects(NTDog.self).first { $0.name == "Sib" }!.name = "Sibling" }
        guard case .change(_, let properties)? = try await deep.next() else {
            Issue.record("siblings.name should report a sibling's new name")
            return
        }
        #expect(properties.map(\.name) == ["siblings"])
        // Adding a sibling: both hear it. The list-only observer's first delivery is this one.
        try await realm.write { realm in
            let rex = realm.objects(NTDog.self).first { $0.name == "Rex" }!
            rex.siblings.append(realm.create(NTDog.self, value: ["name": "New"]))
        }
        guard case .change(let rex, let listChange)? = try await listOnly.next() else {
            Issue.record("siblings should report an added sibling")
            return
        }
        #expect(listChange.map(\.name) == ["siblings"])
        #expect(rex.siblings.map(\.name) == ["Sibling", "New"])
        guard case .change? = try await deep.next() else {
            Issue.record("siblings.name should report an added sibling")
            return
        }
    }

    @Test func writeWithoutNotifyingSkipsExactlyThoseObservers() async throws {
        let realm = try await realm()
        let silenced = Deliveries()
        let other = Deliveries()
        let (token, otherToken) = await realm.read { realm in
            let all = realm.objects(NTDog.self)
            return (
                all.observe { change in silenced.add(change) },
                all.observe { change in other.add(change) }
            )
        }
        try await waitUntil { silenced.count == 1 && other.count == 1 }  // the initial deliveries
        try await realm.write(withoutNotifying: [token]) { $0.create(NTDog.self, value: ["name": "UI"]) }
        try await realm.write { $0.create(NTDog.self, value: ["name": "Elsewhere"]) }
        try await waitUntil { silenced.count == 2 && other.count >= 2 }
        // The silenced observer reports only the second insert, at index 1 (the first was applied by the UI).
        #expect(silenced.updates.map(\.insertions) == [[1]])
        // The other observer reports both inserts (in one update or two).
        try await waitUntil { other.updates.flatMap(\.insertions).count == 2 }
        #expect(other.updates.flatMap(\.insertions).sorted() == [0, 1])
        token.invalidate()
        otherToken.invalidate()
    }

    @Test func realmChangesYieldAfterCommitsByAnyRealm() async throws {
        let realm = try await realm()
        let second = try await Realm(configuration: realm.configuration)
        let reader = ChangeReader(realm.changes)
        try await second.write { $0.create(NTOther.self, value: ["value": 7]) }
        let change = try await reader.next()
        #expect(change?.realm.objects(NTOther.self).map(\.value) == [7])
        #expect(change?.version == (await second.version))
    }

    @Test func endingIterationReleasesTheSubscriptionAndItsVersions() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(NTDog.self, value: ["name": "a"]) }
        let changes = await realm.read { $0.objects(NTDog.self).changes }
        let before = await realm.statistics.pinnedVersions
        let task = Task {
            var seen = 0
            for await _ in changes { seen += 1 }
            return seen
        }
        try await realm.write { $0.create(NTDog.self, value: ["name": "b"]) }
        try await waitUntil { realm.engineSubscriptions == 1 }
        task.cancel()
        _ = await task.value
        try await waitUntil { realm.engineSubscriptions == 0 }
        try await realm.write { $0.create(NTDog.self, value: ["name": "c"]) }
        #expect(await realm.statistics.pinnedVersions <= before)
    }

    @Test func aSlowConsumerGetsOneCoalescedUpdate() async throws {
        let realm = try await realm()
        let reader = ChangeReader(await realm.read { try! $0.objects(NTDog.self).sorted(byKeyPath: "age").changes })
        guard case .initial? = try await reader.next() else { throw CancellationError() }
        for i in 0..<50 { try await realm.write { $0.create(NTDog.self, value: ["name": "d\(i)", "age": 50 - i]) } }
        guard case .update(let dogs, let deletions, let insertions, _)? = try await reader.next() else {
            throw CancellationError()
        }
        // Durability .none publishes inside each commit: all 50 were pending, and arrive as one update.
        #expect(dogs.count == 50)
        #expect(deletions.isEmpty)
        #expect(insertions == Array(0..<50))
    }

    @Test func modificationsReachFourLinksButNotFive() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            var previous: NTDog?
            for i in 0..<6 {
                let dog = realm.create(NTDog.self, value: ["name": "level\(5 - i)"])
                if let previous { dog.siblings.append(previous) }
                previous = dog
            }
        }
        let reader = ChangeReader(await realm.read { try! $0.objects(NTDog.self).filter("name == 'level0'").changes })
        guard case .initial? = try await reader.next() else { throw CancellationError() }
        try await realm.write { $0.objects(NTDog.self).first { $0.name == "level5" }!.age = 1 }  // five links away
        try await realm.write { $0.objects(NTDog.self).first { $0.name == "level4" }!.age = 1 }  // four links away
        let change = try await reader.next()
        #expect(update(change)?.modifications == [0])
        if case .update(let dogs, _, _, _)? = change {
            #expect(dogs.first?.siblings.first?.siblings.first?.siblings.first?.siblings.first?.age == 1)
        }
    }

    @Test func listChangesReportMembershipAndOrder() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let alice = realm.create(NTPerson.self, value: ["name": "Alice"])
            for name in ["a", "b", "c"] { alice.dogs.append(realm.create(NTDog.self, value: ["name": name])) }
        }
        let reader = ChangeReader(await realm.read { $0.objects(NTPerson.self)[0].dogs.changes })
        guard case .initial(let dogs)? = try await reader.next() else { throw CancellationError() }
        #expect(dogs.map(\.name) == ["a", "b", "c"])
        try await realm.write { $0.objects(NTPerson.self)[0].dogs.move(from: 2, to: 0) }
        guard case .update(let moved, let deletions, let insertions, _)? = try await reader.next() else {
            throw CancellationError()
        }
        #expect(moved.map(\.name) == ["c", "a", "b"])
        #expect(deletions == [2] && insertions == [0])
        try await realm.write { $0.objects(NTPerson.self)[0].dogs[1].age = 4 }
        #expect(update(try await reader.next())?.modifications == [1])
        try await realm.write { $0.delete($0.objects(NTPerson.self)[0]) }
        #expect(update(try await reader.next())?.deletions == [0, 1, 2])
        #expect(try await reader.next() == nil)
    }

    @Test func valueCollectionsAndMapsReportIndexChanges() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let other = realm.create(NTOther.self)
            other.scores.append(contentsOf: [1, 2, 3])
            other.settings["b"] = "2"
        }
        let (scores, settings) = await realm.read {
            ($0.objects(NTOther.self)[0].scores.changes, $0.objects(NTOther.self)[0].settings.changes)
        }
        let list = ChangeReader(scores)
        let map = ChangeReader(settings)
        guard case .initial(let initial)? = try await list.next(), case .initial(let initialMap)? = try await map.next()
        else {
            throw CancellationError()
        }
        #expect(initial == [1, 2, 3] && initialMap == ["b": "2"])
        try await realm.write { realm in
            let other = realm.objects(NTOther.self)[0]
            other.scores.remove(at: 0)
            other.scores.append(9)
            other.settings["a"] = "1"
            other.settings["b"] = "20"
        }
        guard case .update(let values, let deletions, let insertions, _)? = try await list.next() else {
            throw CancellationError()
        }
        #expect(values == [2, 3, 9] && deletions == [0] && insertions == [2])
        guard
            case .update(let entries, let mapDeletions, let mapInsertions, let mapModifications)? = try await map.next()
        else { throw CancellationError() }
        #expect(entries == ["a": "1", "b": "20"])
        #expect(mapDeletions == [] && mapInsertions == [0] && mapModifications == [1])
        try await realm.write { $0.delete($0.objects(NTOther.self)[0]) }
        guard case .update(let emptied, let removed, _, _)? = try await list.next() else { throw CancellationError() }
        #expect(emptied.isEmpty && removed == [0, 1, 2])
        #expect(try await list.next() == nil)
    }

    @Test func badKeyPathsThrowClearErrors() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(NTDog.self, value: ["name": "a"]) }
        await realm.read { realm in
            #expect(throws: RealmError.self) { try realm.objects(NTDog.self).changes(keyPaths: ["nmae"]) }
            #expect(throws: RealmError.self) { try realm.objects(NTDog.self).changes(keyPaths: ["name.count"]) }
            #expect(throws: RealmError.self) { try realm.objects(NTDog.self)[0].changes(keyPaths: [""]) }
        }
    }

    @Test func aClosureObserverWithABadKeyPathHearsTheErrorOnce() async throws {
        let realm = try await realm()
        let errors = Locked<[RealmError.Code?]>([])
        let good = Deliveries()
        let (bad, token) = await realm.read { realm in
            let all = realm.objects(NTDog.self)
            return (
                all.observe(keyPaths: ["nmae"]) { change in
                    if case .error(let error) = change { errors.withLock { $0.append(error.code) } }
                },
                all.observe { change in good.add(change) }
            )
        }
        try await waitUntil { errors.withLock { $0.count } == 1 && good.count == 1 }
        try await realm.write { $0.create(NTDog.self, value: ["name": "a"]) }
        try await waitUntil { good.count == 2 }
        // The error ended the bad observation: it was delivered once, not again and again.
        #expect(errors.withLock { $0 } == [.invalidKeyPath])
        bad.invalidate()
        token.invalidate()
    }
}

/// Collects closure deliveries.
final class Deliveries: Sendable {
    private let changes = Locked<[Update?]>([])
    func add<T>(_ change: RealmCollectionChange<FrozenResults<T>>) { changes.withLock { $0.append(update(change)) } }
    var count: Int { changes.withLock { $0.count } }
    var updates: [Update] { changes.withLock { $0.compactMap { $0 } } }
}

/// Polls `condition`, yielding between looks, until it holds. Fails (records an issue and throws) after
/// `turns` looks without it: a backstop counted in turns, not time, generous because the suites run in
/// parallel and the event may come from another thread (the engine's, a closing file's).
func waitUntil(
    _ what: @autoclosure () -> String = "the awaited condition", turns: Int = 10_000_000,
    _ condition: @Sendable () async -> Bool
) async throws {
    for _ in 0..<turns {
        if await condition() { return }
        await Task.yield()
    }
    Issue.record("\(what()) did not happen within \(turns) turns")
    throw CancellationError()
}

extension Realm {
    /// How many change subscriptions the realm's engine has (observers alive).
    nonisolated var engineSubscriptions: Int { _changeSubscriptionCount }
}
