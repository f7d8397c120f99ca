import ActorStore
import ActorStoreTestSupport
import Foundation
import Observation
import Testing

// The @Observable views (ObservedResults, ObservedRealmObject, ObservedRealm), observed the way SwiftUI
// observes them: with withObservationTracking.

final class OVDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: OVPerson?
}

final class OVPerson: Object {
    @Persisted var name = ""
}

final class OVOther: Object {
    @Persisted var value = 0
}

final class OVItem: Object {
    @Persisted var id = 0
    @Persisted var score = 0
    @Persisted var name = ""
}

/// Counts the changes `withObservationTracking` reports for what `read` reads. It registers again inside
/// each report (which comes as the change begins, before the new value is stored), so none is missed;
/// `onChange` runs there too, while the view still shows its previous values.
@MainActor final class ObservationCounter {
    private(set) var fires = 0
    private let read: @MainActor () -> Void
    private let onChange: @MainActor () -> Void

    init(_ read: @escaping @MainActor () -> Void, onChange: @escaping @MainActor () -> Void = {}) {
        self.read = read
        self.onChange = onChange
        track()
    }

    private func track() {
        withObservationTracking {
            read()
        } onChange: { [weak self] in
            // The views change on the actor that owns them: here, the main actor.
            MainActor.assumeIsolated {
                guard let self else { return }
                self.fires += 1
                self.onChange()
                self.track()
            }
        }
    }
}

/// Waits, yielding the main actor between looks, until `condition` holds on it. Fails after `turns` looks
/// without it (a backstop counted in turns, not time).
@MainActor func waitForView(turns: Int = 10_000_000, _ condition: @MainActor () -> Bool) async throws {
    for _ in 0..<turns {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("the view did not reach the expected state within \(turns) turns")
    throw CancellationError()
}

/// Holds the calling actor (no `await`) until `work`, run on another task, has finished: commits made by
/// `work` all arrive while the actor is busy.
@MainActor func whileBusy(_ work: @escaping @Sendable () async throws -> Void) async throws {
    let done = Locked<Result<Void, any Error>?>(nil)
    Task.detached {
        let result: Result<Void, any Error>
        do {
            try await work()
            result = .success(())
        } catch {
            result = .failure(error)
        }
        done.withLock { $0 = result }
    }
    while true {
        if let result = done.withLock({ $0 }) { return try result.get() }
    }
}

@Suite struct ObservedViewTests {
    private func realm() async throws -> Realm {
        try await Realm(configuration: testConfiguration([OVDog.self, OVPerson.self, OVOther.self, OVItem.self]))
    }

    @Test @MainActor func aCommitThatChangesTheResultsFiresOnce() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(OVDog.self, value: ["name": "b", "age": 1]) }
        let puppies = try ObservedResults(OVDog.self, in: realm) { $0.where { $0.age < 2 }.sorted(by: \.name) }
        #expect(puppies.results.map(\.name) == ["b"])
        #expect(puppies.changeSet.isInitial)
        let counter = ObservationCounter { _ = puppies.results }

        try await realm.write { $0.create(OVDog.self, value: ["name": "a", "age": 0]) }
        try await waitForView { puppies.results.count == 2 }
        #expect(counter.fires == 1)
        #expect(puppies.results.map(\.name) == ["a", "b"])
        #expect(!puppies.changeSet.isInitial)
        #expect(puppies.changeSet.insertions == [0])
        #expect(puppies.changeSet.deletions.isEmpty && puppies.changeSet.modifications.isEmpty)

        try await realm.write { $0.objects(OVDog.self).first { $0.name == "b" }!.age = 0 }
        try await waitForView { counter.fires == 2 }
        #expect(puppies.results.map(\.age) == [0, 0])
        #expect(puppies.changeSet.modifications == [1] && puppies.changeSet.modificationsInOld == [1])

        try await realm.write { $0.delete($0.objects(OVDog.self).first { $0.name == "a" }!) }
        try await waitForView { puppies.results.count == 1 }
        #expect(counter.fires == 3)
        #expect(puppies.changeSet.deletions == [0] && puppies.changeSet.insertions.isEmpty)
    }

    @Test @MainActor func commitsThatDoNotTouchTheResultsDoNotFire() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(OVDog.self, value: ["name": "b", "age": 1]) }
        let puppies = try ObservedResults(OVDog.self, in: realm) { $0.where { $0.age < 2 } }
        let counter = ObservationCounter { _ = puppies.changeSet }
        // Another class; a dog the query does not match; a change to a dog that stays out of it.
        try await realm.write { $0.create(OVOther.self, value: ["value": 1]) }
        try await realm.write { $0.create(OVDog.self, value: ["name": "old", "age": 12]) }
        try await realm.write { $0.objects(OVDog.self).first { $0.name == "old" }!.age = 13 }
        // The next relevant commit is reported alone.
        try await realm.write { $0.create(OVDog.self, value: ["name": "c", "age": 0]) }
        try await waitForView { puppies.results.count == 2 }
        #expect(counter.fires == 1)
        #expect(puppies.results.map(\.name) == ["b", "c"])
        #expect(puppies.changeSet.insertions == [1] && puppies.changeSet.modifications.isEmpty)
    }

    @Test @MainActor func keyPathsNarrowWhatCountsAsAModification() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(OVDog.self, value: ["name": "a", "age": 1]) }
        let byAge = try ObservedResults(OVDog.self, in: realm, keyPaths: ["age"])
        let typed = try ObservedResults(OVDog.self, in: realm, keyPaths: [\.age])
        let counters = [ObservationCounter { _ = byAge.changeSet }, ObservationCounter { _ = typed.changeSet }]
        try await realm.write { $0.objects(OVDog.self)[0].name = "renamed" }  // not watched
        try await realm.write { $0.objects(OVDog.self)[0].age = 2 }
        try await waitForView { byAge.results.first?.age == 2 && typed.results.first?.age == 2 }
        #expect(counters.map(\.fires) == [1, 1])
        #expect(byAge.changeSet.modifications == [0] && typed.changeSet.modifications == [0])
        #expect(byAge.results.first?.name == "renamed", "the update delivers the newest version")
        #expect(throws: RealmError.self) { _ = try ObservedResults(OVDog.self, in: realm, keyPaths: ["nmae"]) }
    }

    @Test @MainActor func aBurstOfCommitsWhileTheActorIsBusyFiresOnce() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            for i in 0..<6 { realm.create(OVDog.self, value: ["name": "d\(i)", "age": i]) }
        }
        let dogs = try ObservedResults(OVDog.self, in: realm) { $0.sorted(by: \.age) }
        let before = dogs.results.map(\.name)
        let counter = ObservationCounter { _ = dogs.changeSet }
        try await whileBusy {
            for i in 6..<16 { try await realm.write { $0.create(OVDog.self, value: ["name": "d\(i)", "age": i]) } }
            try await realm.write { $0.delete($0.objects(OVDog.self).first { $0.name == "d2" }!) }
            try await realm.write { $0.objects(OVDog.self).first { $0.name == "d4" }!.age = 100 }  // moves last
            try await realm.write { $0.objects(OVDog.self).first { $0.name == "d0" }!.name = "zero" }
        }
        let expected = await realm.read { $0.objects(OVDog.self).sorted(by: \.age).map(\.name) }
        try await waitForView { dogs.results.map(\.name) == expected }
        #expect(counter.fires == 1, "the burst arrived while the main actor was busy: one update")
        var replayed = before
        let changeSet = dogs.changeSet
        for i in changeSet.deletions.reversed() { replayed.remove(at: i) }
        for j in changeSet.insertions { replayed.insert(expected[j], at: j) }
        for j in changeSet.modifications { replayed[j] = expected[j] }  // "d0" became "zero"
        #expect(replayed == expected)
        #expect(changeSet.modifications.contains(expected.firstIndex(of: "zero")!))
    }

    /// Random commits (inserts, deletes, changes moving objects in and out of a filtered sorted query, bursts
    /// while the view's actor is busy): every update the view shows must turn the previously shown results
    /// into the new ones and report every kept object that changed, and the view must reach the final state.
    @Test(arguments: [UInt64.random(in: 1...UInt64.max / 2)]) @MainActor
    func changeSetsReplayThePreviousResultsIntoTheNew(seed: UInt64) async throws {
        print("observed view oracle seed \(seed)")
        let realm = try await realm()
        try await realm.write { realm in
            for i in 0..<30 { realm.create(OVItem.self, value: ["id": i, "score": i * 7 % 100, "name": "n\(i)"]) }
        }
        let view = try ObservedResults(OVItem.self, in: realm) { try $0.filter("score < 50").sorted(by: \.score) }
        let oracle = ReplayOracle(view, seed: seed)
        let counter = ObservationCounter({ _ = view.changeSet }, onChange: { oracle.check() })
        var random = SplitMix64(seed: seed)
        var nextID = 30
        let commits = TestDepth.count("ACTORSTORE_OBSERVE_COMMITS", long: 1_000, sampled: 150)
        var made = 0
        while made < commits {
            let burst = Int.random(in: 0..<10, using: &random) == 0 ? Int.random(in: 2...8, using: &random) : 1
            let operations = (0..<burst).map { _ in
                (Int.random(in: 0..<100, using: &random), Int.random(in: 0..<1_000, using: &random))
            }
            let firstID = nextID
            let commit: @Sendable () async throws -> Void = {
                for (k, (op, a)) in operations.enumerated() {
                    try await realm.write { realm in
                        let items = realm.objects(OVItem.self)
                        switch op {
                        case 0..<20:
                            realm.create(OVItem.self, value: ["id": firstID + k, "score": a % 100, "name": "n\(a)"])
                        case 20..<35 where !items.isEmpty: realm.delete(items[a % items.count])
                        case 35..<75 where !items.isEmpty: items[a % items.count].score = (a / 7) % 100
                        case 75..<90 where !items.isEmpty: items[a % items.count].name = "m\(a)"
                        case 90..<100 where !items.isEmpty:
                            for j in 0..<4 { items[(a + j * 5) % items.count].score = (a + j * 13) % 100 }
                        default:
                            realm.create(OVItem.self, value: ["id": firstID + k, "score": a % 100, "name": "n\(a)"])
                        }
                    }
                }
            }
            if burst > 1 {
                try await whileBusy(commit)
            } else {
                try await commit()
                if Int.random(in: 0..<3, using: &random) == 0 { await Task.yield() }
            }
            nextID += burst
            made += burst
        }
        let expected = try await realm.read {
            try $0.objects(OVItem.self).filter("score < 50").sorted(by: \.score).map(\.id)
        }
        try await waitForView { view.results.map(\.id) == expected }
        oracle.check()
        #expect(oracle.checked > 1 && counter.fires == oracle.checked, "seed \(seed)")
    }

    @Test @MainActor func anObjectUpdatesThenBecomesNilWhenDeleted() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(OVDog.self, value: ["name": "Max", "age": 3]) }
        let frozen = await realm.read { $0.objects(OVDog.self)[0].freeze() }
        let max = try ObservedRealmObject(frozen, in: realm)
        let counter = ObservationCounter { _ = max.object }
        #expect(max.object?.name == "Max" && !max.isDeleted && max.changedProperties.isEmpty)

        try await realm.write { $0.objects(OVDog.self)[0].name = "Wolfie" }
        try await waitForView { max.object?.name == "Wolfie" }
        #expect(counter.fires == 1)
        #expect(max.changedProperties.map(\.name) == ["name"])
        #expect(max.changedProperties.first?.oldValue as? String == "Max")
        #expect(max.changedProperties.first?.newValue as? String == "Wolfie")

        try await realm.write { $0.create(OVOther.self) }  // another class: nothing
        try await realm.write { $0.delete($0.objects(OVDog.self)[0]) }
        try await waitForView { max.isDeleted }
        #expect(counter.fires == 2)
        #expect(max.object == nil)
        try await waitUntil { realm.engineSubscriptions == 0 }  // a deleted object's observation ends
        await #expect(throws: RealmError.self) { try await max.write { $0.age = 1 } }
    }

    @Test @MainActor func anObjectViewCatchesUpFromAnOlderFrozenVersion() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            realm.create(OVDog.self, value: ["name": "Max"])
            realm.create(OVDog.self, value: ["name": "Gone"])
        }
        let (max, gone) = await realm.read { ($0.objects(OVDog.self)[0].freeze(), $0.objects(OVDog.self)[1].freeze()) }
        try await realm.write { realm in
            realm.objects(OVDog.self)[0].name = "Wolfie"
            realm.delete(realm.objects(OVDog.self)[1])
        }
        let renamed = try ObservedRealmObject(max, in: realm)
        let deleted = try ObservedRealmObject(gone, in: realm)
        #expect(renamed.object?.name == "Max", "a view starts from the frozen object it is given")
        try await waitForView { renamed.object?.name == "Wolfie" && deleted.isDeleted }
        #expect(renamed.changedProperties.map(\.name) == ["name"])
    }

    @Test @MainActor func anObjectsKeyPathsNarrowWhatCounts() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let dog = realm.create(OVDog.self, value: ["name": "Max", "age": 3])
            dog.owner = realm.create(OVPerson.self, value: ["name": "Ann"])
        }
        let frozen = await realm.read { $0.objects(OVDog.self)[0].freeze() }
        let age = try ObservedRealmObject(frozen, in: realm, keyPaths: ["age"])
        let owner = try ObservedRealmObject(frozen, in: realm, keyPaths: [\.owner?.name])
        let counters = [ObservationCounter { _ = age.object }, ObservationCounter { _ = owner.object }]
        try await realm.write { $0.objects(OVDog.self)[0].name = "Maxamillion" }  // watched by neither
        try await realm.write { $0.objects(OVPerson.self)[0].name = "Anna" }
        try await realm.write { $0.objects(OVDog.self)[0].age = 4 }
        try await waitForView { age.object?.age == 4 && owner.object?.owner?.name == "Anna" }
        #expect(counters.map(\.fires) == [1, 1])
        #expect(age.changedProperties.map(\.name) == ["age"])
        #expect(owner.changedProperties.map(\.name) == ["owner"])
    }

    @Test @MainActor func writesFromTheViewReachTheRealmAndComeBack() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(OVDog.self, value: ["name": "Rex", "age": 1]) }
        let dogs = try ObservedResults(OVDog.self, in: realm)
        let rex = try ObservedRealmObject(dogs.results[0], in: realm)
        try await rex.write { $0.name = "Rex II" }
        try await waitForView { rex.object?.name == "Rex II" && dogs.results.first?.name == "Rex II" }
        try await dogs.write(dogs.results[0]) { $0.age += 1 }
        try await waitForView { rex.object?.age == 2 }
        #expect(await realm.read { $0.objects(OVDog.self)[0].age } == 2)
        // The frozen object's realm method, and a deleted object.
        let stale = dogs.results[0]
        try await realm.write { $0.delete($0.objects(OVDog.self)[0]) }
        let error = await #expect(throws: RealmError.self) { try await realm.write(stale) { $0.age = 9 } }
        #expect(error?.code == .invalidObject)
    }

    @Test @MainActor func releasingAViewEndsItsSubscriptionAndReleasesItsVersions() async throws {
        let realm = try await realm()
        try await realm.write { $0.create(OVDog.self, value: ["name": "a"]) }
        let before = await realm.statistics.pinnedVersions
        var dogs: ObservedResults<OVDog>? = try ObservedResults(OVDog.self, in: realm)
        var dog: ObservedRealmObject<OVDog>? = try ObservedRealmObject(dogs!.results[0], in: realm)
        var store: ObservedRealm? = try ObservedRealm(realm)
        #expect(realm.engineSubscriptions == 3)
        try await realm.write { $0.create(OVDog.self, value: ["name": "b"]) }
        try await realm.write { $0.objects(OVDog.self)[0].age = 5 }
        try await waitForView { dogs?.results.count == 2 && dog?.object?.age == 5 }
        dogs = nil
        dog = nil
        store = nil
        try await waitUntil { realm.engineSubscriptions == 0 }
        try await realm.write { $0.create(OVDog.self, value: ["name": "c"]) }
        #expect(await realm.statistics.pinnedVersions <= before)
        _ = store
    }

    @Test @MainActor func cancellingAViewKeepsItsValuesAndStopsUpdates() async throws {
        let realm = try await realm()
        let dogs = try ObservedResults(OVDog.self, in: realm)
        let counter = ObservationCounter { _ = dogs.changeSet }
        try await realm.write { $0.create(OVDog.self, value: ["name": "a"]) }
        try await waitForView { dogs.results.count == 1 }
        dogs.cancel()
        try await waitUntil { realm.engineSubscriptions == 0 }
        try await realm.write { $0.create(OVDog.self, value: ["name": "b"]) }
        #expect(dogs.results.map(\.name) == ["a"] && counter.fires == 1)
    }

    @Test @MainActor func theRealmSignalChangesAfterEveryCommit() async throws {
        let realm = try await realm()
        let store = try ObservedRealm(realm)
        let counter = ObservationCounter { _ = store.version }
        try await realm.write { $0.create(OVOther.self, value: ["value": 7]) }
        let version = await realm.version
        try await waitForView { store.version == version }
        #expect(counter.fires == 1)
        #expect(store.snapshot.objects(OVOther.self).map(\.value) == [7])
        try await realm.write { $0.create(OVDog.self) }
        try await waitForView { counter.fires == 2 }
        #expect(store.snapshot.objects(OVDog.self).count == 1)
    }

    @Test func aViewBelongsToTheActorThatMakesIt() async throws {
        let realm = try await realm()
        let screen = DogScreen()
        try await screen.open(realm)
        try await realm.write { $0.create(OVDog.self, value: ["name": "a"]) }
        // The view shows the commit, and the screen's change handler (a task it starts) has run.
        try await waitUntil {
            let (names, fires) = (await screen.names(), await screen.fires())
            return names == ["a"] && fires >= 1
        }
        #expect(await screen.fires() == 1)
    }

    @Test @MainActor func badInputThrowsRealmErrors() async throws {
        let realm = try await realm()
        let query = #expect(throws: RealmError.self) {
            _ = try ObservedResults(OVDog.self, in: realm) { try $0.filter("age <<< 2") }
        }
        #expect(query?.code == .invalidQuery)
        let keyPath = #expect(throws: RealmError.self) {
            _ = try ObservedResults(OVDog.self, in: realm, keyPaths: ["x.y"])
        }
        #expect(keyPath?.code == .invalidKeyPath)
        let other = try await self.realm()
        try await other.write { $0.create(OVDog.self) }
        let foreign = await other.read { $0.objects(OVDog.self)[0].freeze() }
        let wrongRealm = #expect(throws: RealmError.self) { _ = try ObservedRealmObject(foreign, in: realm) }
        #expect(wrongRealm?.code == .invalidObject)
    }
}

final class OVPuppy: Object {
    @Persisted(primaryKey: true) var id = UUID()
    @Persisted var name = ""
    @Persisted var age = 0
}

/// The list screen's model of the ObservedViews article, line for line (with the test's model class).
@MainActor @Observable final class DogListModel {
    let realm: Realm
    let puppies: ObservedResults<OVPuppy>

    init(realm: Realm) throws {
        self.realm = realm
        puppies = try ObservedResults(OVPuppy.self, in: realm) { $0.where { $0.age < 2 }.sorted(by: \.name) }
    }

    func adopt(_ name: String) async throws {
        try await realm.write { $0.create(OVPuppy.self, value: ["name": name, "age": 0]) }
    }

    func birthday(_ dog: Frozen<OVPuppy>) async throws {
        try await puppies.write(dog) { $0.age += 1 }  // leaves the list at age 2: the list updates itself
    }
}

/// The article's helper: runs `action` and waits for the change of the view it causes, without polling.
/// Tracking is registered before `action` runs, so a change that comes before the wait begins is not missed.
@MainActor func change(of puppies: ObservedResults<OVPuppy>, by action: () async throws -> Void) async rethrows {
    let (changed, continuation) = AsyncStream<Void>.makeStream()
    withObservationTracking {
        _ = puppies.results
    } onChange: {
        continuation.finish()
    }
    try await action()
    for await _ in changed {}
    // Here the view shows the new results.
}

extension ObservedViewTests {
    @Test @MainActor func theArticlesListScreenWorks() async throws {
        let realm = try await Realm(configuration: testConfiguration([OVPuppy.self]))
        let model = try DogListModel(realm: realm)
        #expect(model.puppies.results.isEmpty)
        try await change(of: model.puppies) { try await model.adopt("Rex") }
        #expect(model.puppies.results.map(\.name) == ["Rex"])
        try await change(of: model.puppies) { try await model.birthday(model.puppies.results[0]) }
        #expect(model.puppies.changeSet.modifications == [0] && model.puppies.results[0].age == 1)
        try await change(of: model.puppies) { try await model.birthday(model.puppies.results[0]) }
        #expect(model.puppies.results.isEmpty && model.puppies.changeSet.deletions == [0])
    }
}

/// A screen model isolated to its own actor rather than the main one.
actor DogScreen {
    private var dogs: ObservedResults<OVDog>?
    private var count = 0

    func open(_ realm: Realm) throws {
        let dogs = try ObservedResults(OVDog.self, in: realm) { $0.sorted(by: \.name) }
        self.dogs = dogs
        track()
    }

    private func track() {
        withObservationTracking {
            _ = dogs?.results
        } onChange: { [self] in
            Task { await self.changed() }
        }
    }

    private func changed() {
        count += 1
        track()
    }

    func names() -> [String] { dogs?.results.map(\.name) ?? [] }
    func fires() -> Int { count }
}

/// Checks each update an ``ObservedResults`` shows against the one it showed before.
@MainActor final class ReplayOracle {
    private let view: ObservedResults<OVItem>
    private let seed: UInt64
    private var previous: (ids: [Int], values: [Int: String])
    private var lastChecked: UInt64
    private(set) var checked = 0

    init(_ view: ObservedResults<OVItem>, seed: UInt64) {
        self.view = view
        self.seed = seed
        previous = Self.observe(view.results)
        lastChecked = view.results.version
    }

    static func observe(_ results: FrozenResults<OVItem>) -> (ids: [Int], values: [Int: String]) {
        (results.map(\.id), Dictionary(results.map { ($0.id, "\($0.score)|\($0.name)") }) { a, _ in a })
    }

    /// Checks the update the view shows now, unless it was checked already.
    func check() {
        let changeSet = view.changeSet
        guard changeSet.collection.version != lastChecked else { return }
        lastChecked = changeSet.collection.version
        checked += 1
        let current = Self.observe(changeSet.collection)
        var replayed = previous.ids
        for i in changeSet.deletions.reversed() { replayed.remove(at: i) }
        for j in changeSet.insertions { replayed.insert(current.ids[j], at: j) }
        #expect(replayed == current.ids, "seed \(seed): the change set does not replay")
        #expect(!(changeSet.deletions.isEmpty && changeSet.insertions.isEmpty && changeSet.modifications.isEmpty))
        let inserted = Set(changeSet.insertions)
        for (j, id) in current.ids.enumerated() where !inserted.contains(j) {
            if let before = previous.values[id], before != current.values[id] {
                #expect(changeSet.modifications.contains(j), "seed \(seed): \(id) changed but was not reported")
            }
        }
        for (j, i) in zip(changeSet.modifications, changeSet.modificationsInOld) {
            #expect(previous.ids[i] == current.ids[j], "seed \(seed): modification indices disagree")
        }
        previous = current
    }
}
