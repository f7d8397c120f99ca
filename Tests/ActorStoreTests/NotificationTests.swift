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
}

/// Reads deliveries from a change sequence one at a time, failing (instead of hanging) after a timeout.
final class ChangeReader<S: AsyncSequence & Sendable>: @unchecked Sendable where S.Element: Sendable {
    // @unchecked: the iterator is used by one task at a time (each `next` awaits the previous one).
    private var iterator: S.AsyncIterator

    init(_ sequence: S) { iterator = sequence.makeAsyncIterator() }

    func next(timeout: Duration = .seconds(10)) async throws -> S.Element? {
        try await withThrowingTaskGroup(of: S.Element?.self) { group in
            group.addTask { [self] in try await self.iterator.next() }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw CancellationError()
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
    }
}

typealias Update = (deletions: [Int], insertions: [Int], modifications: [Int])

func update<T>(_ change: RealmCollectionChange<FrozenResults<T>>?) -> Update? {
    guard case .update(_, let deletions, let insertions, let modifications)? = change else { return nil }
    return (deletions, insertions, modifications)
}

@Suite struct NotificationTests {
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
}
