import Foundation
import Testing

@testable import ActorStore

@Suite struct QueryEngineTests {
    private func filtered(_ results: Results<Dog>, _ predicate: QueryPredicate) throws -> Results<Dog> {
        try results.adding { $0.predicates.append(predicate) }
    }

    @Test func comparisonsLinksAndCollections() async throws {
        let realm = try await Realm(configuration: testConfiguration([Dog.self, Person.self, Address.self]))
        try await realm.write { realm in
            let ann = Person(value: ["name": "Ann"])
            for (i, name) in ["Rex", "Bella", "bob", "Spike", "Hachi"].enumerated() {
                let dog = Dog(value: ["name": name, "age": i])
                if i % 2 == 0 {
                    dog.owner = ann
                    ann.dogs.append(dog)
                }
                realm.add(dog)
            }
        }
        try await realm.read { realm in
            let dogs = realm.objects(Dog.self)
            let age = QueryExpression.keyPath(QueryKeyPath("age"))
            let name = QueryExpression.keyPath(QueryKeyPath("name"))
            func names(_ p: QueryPredicate) throws -> [String] { try filtered(dogs, p).map(\.name) }
            #expect(try names(.comparison(QueryComparison(age, .less, .value(.int(2))))) == ["Rex", "Bella"])
            #expect(
                try names(
                    .comparison(QueryComparison(name, .beginsWith, .value(.string("b")), options: .caseInsensitive)))
                    == ["Bella", "bob"])
            #expect(try names(.comparison(QueryComparison(name, .beginsWith, .value(.string("b"))))) == ["bob"])
            #expect(
                try names(
                    .comparison(
                        QueryComparison(.keyPath(QueryKeyPath("owner", "name")), .equal, .value(.string("Ann")))))
                    == ["Rex", "bob", "Hachi"])
            #expect(
                try names(.comparison(QueryComparison(.keyPath(QueryKeyPath("owner")), .equal, .value(.null))))
                    == ["Bella", "Spike"])
            #expect(
                try names(
                    .comparison(
                        QueryComparison(.keyPath(QueryKeyPath("owners", "name")), .equal, .value(.string("Ann")))))
                    == ["Rex", "bob", "Hachi"])
            #expect(
                try names(.between(age, lower: .value(.int(1)), upper: .value(.int(3)), quantifier: nil))
                    == ["Bella", "bob", "Spike"])
            #expect(try names(.comparison(QueryComparison(name, .like, .value(.string("?o*"))))) == ["bob"])
            let people = realm.objects(Person.self)
            let count = try people.adding {
                $0.predicates.append(
                    .comparison(
                        QueryComparison(.keyPath(QueryKeyPath([.property("dogs"), .count])), .greater, .value(.int(2))))
                )
            }
            #expect(count.count == 1)
            let avg = try people.adding {
                $0.predicates.append(
                    .comparison(
                        QueryComparison(
                            .keyPath(QueryKeyPath([.property("dogs"), .avg, .property("age")])), .equal, .value(.int(2))
                        )))
            }
            #expect(avg.count == 1)
            let sub = try people.adding {
                $0.predicates.append(
                    .comparison(
                        QueryComparison(
                            .subqueryCount(
                                collection: QueryKeyPath("dogs"), variable: "$d",
                                predicate: .comparison(
                                    QueryComparison(
                                        .keyPath(QueryKeyPath(variable: "$d", [.property("age")])), .greater,
                                        .value(.int(1))))), .equal, .value(.int(2)))))
            }
            #expect(sub.count == 1)
            let sorted = try dogs.sorted(byKeyPath: "name", ascending: false).map(\.name)
            #expect(sorted == ["bob", "Spike", "Rex", "Hachi", "Bella"])
            #expect(dogs.sorted(by: \.age, ascending: false).limit(2).map(\.name) == ["Hachi", "Spike"])
            #expect(dogs.max(of: \.age) == 4)
            #expect(dogs.sum(of: \.age) == 10)
            #expect(dogs.average(of: \.age) == 2)
            #expect(try dogs.sorted(byKeyPath: "owner.name").first?.owner == nil)
            #expect(throws: RealmError.self) {
                try filtered(dogs, .comparison(QueryComparison(.keyPath(QueryKeyPath("agee")), .less, .value(.int(2)))))
            }
            #expect(throws: RealmError.self) {
                try filtered(dogs, .comparison(QueryComparison(age, .less, .value(.string("x")))))
            }
            let frozen = dogs.freeze()
            #expect(frozen.sorted(by: \.age).limit(1).first?.name == "Rex")
        }
    }
}
