import ActorStore
import Foundation
import Testing

final class ComposablePet: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted(originProperty: "pets") var owners: LinkingObjects<ComposableOwner>
}

final class ComposableOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var pets: List<ComposablePet>
    @Persisted var favourites: MutableSet<ComposablePet>
}

/// The pets aged 2 or more, oldest first and then by name, at most three: written once, for any
/// `ComposableQuery` (live, frozen, dynamic, or a collection property).
private func oldestThree<Pets: ComposableQuery>(_ pets: Pets) throws -> Pets.QueryResults {
    try pets.filter("age >= %@", 2).sorted(byKeyPath: "name").sorted(byKeyPath: "age", ascending: false).limit(3)
}

/// The total age, the oldest, and whether a predicate naming an unknown property is refused, for any
/// `ComposableQuery`.
private func summary<Pets: ComposableQuery>(_ pets: Pets) throws -> (sum: Int, oldest: Int?, refused: Bool) {
    let refused: Bool
    do {
        _ = try pets.filter("weight > 1")
        refused = false
    } catch {
        refused = error.code == .invalidQuery
    }
    return (try pets.sum(ofProperty: "age"), try pets.max(ofProperty: "age"), refused)
}

/// ``ComposableQuery`` gives `Results`, `FrozenResults`, `DynamicResults`, `List`, `MutableSet` and
/// `LinkingObjects` the same query methods: one generic chain must give the same matches on each.
@Suite("Composable queries")
struct ComposableQueryTests {
    private static let pets: [(id: Int, name: String, age: Int)] = [
        (1, "a", 1), (2, "b", 3), (3, "c", 2), (4, "d", 3), (5, "e", 5), (6, "f", 2),
    ]

    private static func makeRealm() async throws -> Realm {
        var config = Realm.Configuration(inMemoryIdentifier: "Composable-" + UUID().uuidString)
        config.objectTypes = [ComposablePet.self, ComposableOwner.self]
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            let owner = realm.create(ComposableOwner.self, value: ["id": 1])
            // The list in reverse order: the sort, not the collection's order, decides.
            for pet in pets.reversed() {
                let object = realm.create(ComposablePet.self, value: ["id": pet.id, "name": pet.name, "age": pet.age])
                owner.pets.append(object)
                owner.favourites.insert(object)
            }
        }
        return realm
    }

    @Test func oneChainGivesTheSameMatchesOnEveryKind() async throws {
        let realm = try await Self.makeRealm()
        let ids = try await realm.read { realm in
            let owner = realm.object(ofType: ComposableOwner.self, forPrimaryKey: 1)!
            let results = realm.objects(ComposablePet.self)
            return [
                "results": try oldestThree(results).map(\.id),
                "frozen": try oldestThree(results.freeze()).map { $0.id },
                "dynamic": try oldestThree(realm.dynamicObjects("ComposablePet")).map { $0["id"] as! Int },
                "list": try oldestThree(owner.pets).map(\.id),
                "set": try oldestThree(owner.favourites).map(\.id),
            ]
        }
        for (kind, matches) in ids { #expect(matches == [5, 2, 4], "\(kind)") }
    }

    @Test func aggregatesAndErrorsAreTheSameOnEveryKind() async throws {
        let realm = try await Self.makeRealm()
        let summaries = try await realm.read { realm in
            let owner = realm.object(ofType: ComposableOwner.self, forPrimaryKey: 1)!
            let results = realm.objects(ComposablePet.self)
            return [
                try summary(results), try summary(results.freeze()), try summary(realm.dynamicObjects("ComposablePet")),
                try summary(owner.pets), try summary(owner.favourites),
            ]
        }
        for summary in summaries { #expect(summary == (16, 5, true)) }
    }

    /// What the protocol added: key-path aggregates on frozen results and collections; `limit`,
    /// `distinct(by:)` by name and `explain()` on collections.
    @Test func frozenResultsAndCollectionsHaveTheWholeAPI() async throws {
        let realm = try await Self.makeRealm()
        let read = try await realm.read { realm in
            let owner = realm.object(ofType: ComposableOwner.self, forPrimaryKey: 1)!
            let frozen = realm.objects(ComposablePet.self).freeze()
            let pet = realm.object(ofType: ComposablePet.self, forPrimaryKey: 3)!
            return (
                frozenMin: frozen.min(of: \.age), frozenAverage: frozen.where { $0.age > 2 }.average(of: \.age),
                listMax: owner.pets.max(of: \.age), listLimit: owner.pets.limit(2).map(\.id),
                distinctAges: try owner.favourites.distinct(by: ["age"]).count,
                owners: pet.owners.limit(1).map(\.id), explained: owner.pets.explain().isEmpty
            )
        }
        #expect(read.frozenMin == 1 && read.frozenAverage == 11.0 / 3)
        #expect(read.listMax == 5 && read.listLimit == [6, 5])
        #expect(read.distinctAges == 4 && read.owners == [1] && !read.explained)
    }

    /// A class the file does not have, read dynamically: queries are not checked against it, its results are
    /// empty, and the aggregates are nil (a sum, 0).
    @Test func dynamicResultsOfAMissingClassAreEmpty() async throws {
        let realm = try await Self.makeRealm()
        let read = try await realm.read { realm in
            let missing = try realm.dynamicObjects("Nothing").filter("weight > 1").sorted(byKeyPath: "name")
            let sum: Int = try missing.sum(ofProperty: "weight")
            let min: Int? = try missing.min(ofProperty: "weight")
            return (missing.count, sum, min)
        }
        #expect(read.0 == 0 && read.1 == 0 && read.2 == nil)
    }
}
