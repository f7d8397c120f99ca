import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

// The type-safe query builder (`where { … }`): each form must produce the predicate the predicate string
// would. Checked through `QueryPredicate.description` (which prints Realm's predicate syntax) and, for the
// forms where the printing could hide a difference (quantifiers, objects, subquery variables), against
// hand-built ASTs.

enum WBMood: String, PersistableEnum {
    case calm, wild
}

final class WBToy: Object {
    @Persisted var name = ""
    @Persisted var price = 0.0
    @Persisted var count = 0
}

final class WBAddress: EmbeddedObject {
    @Persisted var city = ""
    @Persisted var count = 0
}

final class WBDog: Object {
    @Persisted var name = ""
    @Persisted var nickname: String?
    @Persisted var age = 0
    @Persisted var maximumAge: Int?
    @Persisted var limit = 0
    @Persisted var weight: Float = 0
    @Persisted var height: Int8 = 0
    @Persisted var price = Decimal128(0)
    @Persisted var isGood = true
    @Persisted var birthday = Date(timeIntervalSince1970: 0)
    @Persisted var lastSeen: Date?
    @Persisted var chip = Data()
    @Persisted var tag = UUID()
    @Persisted var mood = WBMood.calm
    @Persisted var previousMood: WBMood?
    @Persisted var owner: WBPerson?
    @Persisted var address: WBAddress?
    @Persisted var toys: List<WBToy>
    @Persisted var tags: List<String>
    @Persisted var ratings: MutableSet<Int>
    @Persisted var scores: Map<String, Int>
    @Persisted var friends: Map<String, WBDog?>
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<WBPerson>
    /// Reads one chain of persisted properties: usable in queries.
    var ownerName: String { owner?.name ?? "" }
    /// Reads two persisted properties: not usable.
    var fullName: String { name + (nickname ?? "") }
    var scratch = 0
}

final class WBPerson: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<WBDog>
    @Persisted var pets: MutableSet<WBDog>
}

private let wbTypes: [ObjectBase.Type] = [WBDog.self, WBPerson.self, WBToy.self, WBAddress.self]

/// The predicate string of a where-query on dogs.
private func dogs(_ body: (Query<WBDog>) -> Query<Bool>) -> String { makeWherePredicate(WBDog.self, body).description }

/// The predicate string of a where-query on people.
private func people(_ body: (Query<WBPerson>) -> Query<Bool>) -> String {
    makeWherePredicate(WBPerson.self, body).description
}

private func path(_ components: QueryKeyPath.Component...) -> QueryExpression { .keyPath(QueryKeyPath(components)) }

private func value(_ value: Value) -> QueryExpression { .value(value) }

private func compare(
    _ lhs: QueryExpression, _ op: QueryOperator, _ rhs: QueryExpression, _ options: QueryOptions = []
) -> QueryPredicate {
    .comparison(QueryComparison(lhs, op, rhs, options: options))
}

private func expectStop(
    _ result: ExitTest.Result?, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(output.contains(message), "standard error: \(output.suffix(400))", sourceLocation: sourceLocation)
}

@Suite struct WhereBuilderTests {
    // MARK: Comparisons and conditions

    @Test func theIssueExample() {
        let predicate = makeWherePredicate(WBDog.self) {
            $0.age < 2 && $0.name.starts(with: "B", options: .caseInsensitive)
        }
        #expect(
            predicate
                == .and([
                    compare(path(.property("age")), .less, value(.int(2))),
                    compare(path(.property("name")), .beginsWith, value(.string("B")), .caseInsensitive),
                ]))
        #expect(predicate.description == "(age < 2) AND (name BEGINSWITH[c] 'B')")
    }

    @Test func comparisonOperators() {
        #expect(dogs { $0.age == 3 } == "age == 3")
        #expect(dogs { $0.age != 3 } == "age != 3")
        #expect(dogs { $0.age < 3 } == "age < 3")
        #expect(dogs { $0.age <= 3 } == "age <= 3")
        #expect(dogs { $0.age > 3 } == "age > 3")
        #expect(dogs { $0.age >= 3 } == "age >= 3")
        #expect(dogs { $0.name == "O'Neil" } == "name == 'O\\'Neil'")
        #expect(dogs { $0.isGood == false } == "isGood == false")
    }

    @Test func everyValueType() {
        #expect(
            makeWherePredicate(WBDog.self) { $0.weight > 1.5 }
                == compare(path(.property("weight")), .greater, value(.float(1.5))))
        #expect(
            makeWherePredicate(WBDog.self) { $0.height == 3 }
                == compare(path(.property("height")), .equal, value(.int(3))))
        let price = Decimal128(12)
        #expect(
            makeWherePredicate(WBDog.self) { $0.price < price }
                == compare(path(.property("price")), .less, value(.decimal128(price.bits))))
        let date = Date(timeIntervalSince1970: 1_000)
        #expect(dogs { $0.birthday <= date } == "birthday <= T1000:0")
        #expect(dogs { $0.lastSeen > date } == "lastSeen > T1000:0")
        #expect(dogs { $0.lastSeen == nil } == "lastSeen == nil")
        #expect(dogs { $0.chip == Data([1, 2]) } == "chip == B64\"AQI=\"")
        let uuid = UUID(uuidString: "00000000-0000-0000-0000-000000000001") ?? UUID()
        #expect(dogs { $0.tag == uuid } == "tag == uuid(00000000-0000-0000-0000-000000000001)")
    }

    @Test func optionalsCompareWithValuesAndNil() {
        #expect(dogs { $0.nickname == nil } == "nickname == nil")
        #expect(dogs { $0.nickname != nil } == "nickname != nil")
        #expect(dogs { $0.nickname == "Rex" } == "nickname == 'Rex'")
        #expect(dogs { $0.maximumAge > 3 } == "maximumAge > 3")
        #expect(dogs { $0.maximumAge.contains(1...5) } == "maximumAge BETWEEN {1, 5}")
    }

    @Test func twoPropertiesCompare() {
        #expect(
            makeWherePredicate(WBDog.self) { $0.age > $0.limit }
                == compare(path(.property("age")), .greater, path(.property("limit"))))
        #expect(dogs { $0.maximumAge != $0.maximumAge } == "maximumAge != maximumAge")
        #expect(dogs { $0.name == $0.name } == "name == name")
    }

    @Test func andOrNotNestAndFlatten() {
        #expect(dogs { $0.age == 1 || $0.age == 2 || $0.age == 3 } == "(age == 1) OR (age == 2) OR (age == 3)")
        #expect(dogs { $0.age == 1 && $0.age == 2 && $0.age == 3 } == "(age == 1) AND (age == 2) AND (age == 3)")
        #expect(dogs { ($0.age == 1 || $0.age == 2) && $0.isGood } == "((age == 1) OR (age == 2)) AND (isGood == true)")
        #expect(dogs { $0.age == 1 || ($0.age == 2 && $0.isGood) } == "(age == 1) OR ((age == 2) AND (isGood == true))")
        #expect(dogs { !($0.age == 1) } == "NOT (age == 1)")
        #expect(dogs { !($0.age == 1 && $0.isGood) } == "NOT ((age == 1) AND (isGood == true))")
    }

    @Test func boolPropertiesAreConditions() {
        #expect(
            makeWherePredicate(WBDog.self) { $0.isGood }
                == compare(path(.property("isGood")), .equal, value(.bool(true))))
        #expect(dogs { !$0.isGood } == "NOT (isGood == true)")
        #expect(dogs { $0.isGood && $0.age > 1 } == "(isGood == true) AND (age > 1)")
        // A condition compared to a Bool is the condition or its negation; two conditions, their equivalence.
        #expect(dogs { ($0.age > 1) == true } == "age > 1")
        #expect(dogs { ($0.age > 1) == false } == "NOT (age > 1)")
        #expect(dogs { ($0.age > 1) != true } == "NOT (age > 1)")
        #expect(
            dogs { ($0.age > 1) == $0.isGood }
                == "((age > 1) AND (isGood == true)) OR ((NOT (age > 1)) AND (NOT (isGood == true)))")
    }

    @Test func inAndRanges() {
        #expect(dogs { $0.name.in(["Rex", "Fido"]) } == "name IN {'Rex', 'Fido'}")
        #expect(dogs { $0.age.in(Set([4])) } == "age IN {4}")
        #expect(dogs { $0.age.in([Int]()) } == "age IN {}")
        #expect(dogs { $0.mood.in([.wild]) } == "mood IN {'wild'}")
        #expect(
            makeWherePredicate(WBDog.self) { $0.age.contains(1...5) }
                == .between(path(.property("age")), lower: value(.int(1)), upper: value(.int(5)), quantifier: nil))
        #expect(dogs { $0.age.contains(1..<5) } == "(age >= 1) AND (age < 5)")
        let start = Date(timeIntervalSince1970: 10)
        let end = Date(timeIntervalSince1970: 20)
        #expect(dogs { $0.birthday.contains(start...end) } == "birthday BETWEEN {T10:0, T20:0}")
        #expect(dogs { $0.weight.contains(1.5...2.5) } == "weight BETWEEN {1.5, 2.5}")
    }

    // MARK: Strings, data, enums

    @Test func stringOperators() {
        #expect(dogs { $0.name.contains("ex") } == "name CONTAINS 'ex'")
        #expect(dogs { $0.name.contains("ex", options: .caseInsensitive) } == "name CONTAINS[c] 'ex'")
        #expect(dogs { $0.name.contains("ex", options: .diacriticInsensitive) } == "name CONTAINS[d] 'ex'")
        #expect(
            dogs { $0.name.contains("ex", options: [.caseInsensitive, .diacriticInsensitive]) }
                == "name CONTAINS[cd] 'ex'")
        #expect(dogs { $0.name.starts(with: "R") } == "name BEGINSWITH 'R'")
        #expect(dogs { $0.name.ends(with: "x", options: .caseInsensitive) } == "name ENDSWITH[c] 'x'")
        #expect(dogs { $0.name.equals("rex", options: .caseInsensitive) } == "name ==[c] 'rex'")
        #expect(dogs { $0.name.notEquals("rex", options: .diacriticInsensitive) } == "name !=[d] 'rex'")
        #expect(dogs { $0.name.like("?bc*") } == "name LIKE '?bc*'")
        #expect(dogs { $0.name.like("?bc*", caseInsensitive: true) } == "name LIKE[c] '?bc*'")
        #expect(dogs { $0.nickname.starts(with: "R") } == "nickname BEGINSWITH 'R'")
        #expect(dogs { !$0.name.contains("ex") } == "NOT (name CONTAINS 'ex')")
    }

    @Test func dataOperators() {
        #expect(dogs { $0.chip.contains(Data([1])) } == "chip CONTAINS B64\"AQ==\"")
        #expect(dogs { $0.chip.starts(with: Data([1])) } == "chip BEGINSWITH B64\"AQ==\"")
        #expect(dogs { $0.chip.ends(with: Data([1])) } == "chip ENDSWITH B64\"AQ==\"")
    }

    @Test func enumsCompareByRawValue() {
        #expect(dogs { $0.mood == .wild } == "mood == 'wild'")
        #expect(dogs { $0.previousMood == nil } == "previousMood == nil")
        #expect(dogs { $0.previousMood == .calm } == "previousMood == 'calm'")
        #expect(dogs { $0.mood.rawValue.starts(with: "w") } == "mood BEGINSWITH 'w'")
        #expect(dogs { $0.previousMood.rawValue.ends(with: "m") } == "previousMood ENDSWITH 'm'")
    }

    // MARK: Links

    @Test func linksAndComputedKeyPaths() {
        #expect(
            makeWherePredicate(WBDog.self) { $0.owner.name == "Jim" }
                == compare(path(.property("owner"), .property("name")), .equal, value(.string("Jim"))))
        #expect(dogs { $0.owner == nil } == "owner == nil")
        #expect(dogs { $0.owner != nil } == "owner != nil")
        #expect(dogs { $0.address.city == "Oslo" } == "address.city == 'Oslo'")
        #expect(dogs { $0.owner.dogs.count > 1 } == "owner.dogs.@count > 1")
        // A computed property that reads one chain of persisted properties queries that chain.
        #expect(dogs { $0.ownerName == "Jim" } == "owner.name == 'Jim'")
    }

    @Test func managedObjectsCompareByIdentity() async throws {
        let realm = try await Realm(configuration: testConfiguration(wbTypes))
        let (predicates, jimKey, rexKey, ballKey) = try await realm.write { realm in
            let jim = realm.create(WBPerson.self, value: ["name": "Jim"])
            let rex = realm.create(WBDog.self, value: ["name": "Rex"])
            let ball = realm.create(WBToy.self, value: ["name": "ball"])
            let predicates = [
                makeWherePredicate(WBDog.self) { $0.owner == jim },
                makeWherePredicate(WBDog.self) { $0.owner != jim },
                makeWherePredicate(WBDog.self) { $0.owner.in([jim]) },
                makeWherePredicate(WBPerson.self) { $0.dogs.contains(rex) },
                makeWherePredicate(WBPerson.self) { $0.dogs.containsAny(in: [rex]) },
                makeWherePredicate(WBPerson.self) { $0.dogs.owner == jim },
                makeWherePredicate(WBDog.self) { $0.friends["best"] == rex },
                // Membership consumes the innermost collection: in a subquery, `ball IN $s0.toys`.
                makeWherePredicate(WBPerson.self) { ($0.dogs.toys.contains(ball) && $0.dogs.age > 1).count > 0 },
            ]
            return (
                predicates, try #require(jim._managed?.key), try #require(rex._managed?.key),
                try #require(ball._managed?.key)
            )
        }
        let ball = QueryExpression.object(className: "WBToy", key: ballKey)
        let s0 = { (name: String) in QueryExpression.keyPath(QueryKeyPath(variable: "$s0", [.property(name)])) }
        let subquery = QueryPredicate.and([
            compare(ball, .in, s0("toys")), compare(s0("age"), .greater, value(.int(1))),
        ])
        let jim = QueryExpression.object(className: "WBPerson", key: jimKey)
        let rex = QueryExpression.object(className: "WBDog", key: rexKey)
        #expect(
            predicates == [
                compare(path(.property("owner")), .equal, jim),
                compare(path(.property("owner")), .notEqual, jim),
                compare(path(.property("owner")), .in, .list([jim])),
                compare(rex, .in, path(.property("dogs"))),
                compare(path(.property("dogs")), .in, .list([rex])),
                compare(path(.property("dogs"), .property("owner")), .equal, jim),
                compare(path(.property("friends"), .mapKey("best")), .equal, rex),
                compare(
                    .subqueryCount(collection: QueryKeyPath("dogs"), variable: "$s0", predicate: subquery), .greater,
                    value(.int(0))),
            ])
    }

    // MARK: Collections

    @Test func membersOfCollectionsAreImplicitlyAny() {
        // No explicit quantifier: a path through a to-many relationship is implicitly ANY.
        #expect(
            makeWherePredicate(WBPerson.self) { $0.dogs.age < 2 }
                == compare(path(.property("dogs"), .property("age")), .less, value(.int(2))))
        #expect(people { $0.pets.name == "Rex" } == "pets.name == 'Rex'")
        #expect(people { $0.dogs.name.contains("ex", options: .caseInsensitive) } == "dogs.name CONTAINS[c] 'ex'")
        #expect(people { $0.dogs.name.starts(with: "R") } == "dogs.name BEGINSWITH 'R'")
        #expect(people { $0.dogs.name.like("R*") } == "dogs.name LIKE 'R*'")
        #expect(people { $0.dogs.name.in(["Rex", "Fido"]) } == "dogs.name IN {'Rex', 'Fido'}")
        #expect(people { $0.dogs.age.contains(1...5) } == "dogs.age BETWEEN {1, 5}")
        #expect(people { $0.dogs.nickname == nil } == "dogs.nickname == nil")
        #expect(people { $0.dogs.chip.contains(Data([1])) } == "dogs.chip CONTAINS B64\"AQ==\"")
        // Through links and further collections of the elements.
        #expect(people { $0.dogs.owner.name == "Jim" } == "dogs.owner.name == 'Jim'")
        #expect(people { $0.dogs.owner == nil } == "dogs.owner == nil")
        #expect(people { $0.dogs.address.city == "Oslo" } == "dogs.address.city == 'Oslo'")
        #expect(people { $0.dogs.toys.name == "ball" } == "dogs.toys.name == 'ball'")
        #expect(people { $0.dogs.scores["speed"] > 3 } == "dogs.scores['speed'] > 3")
        #expect(dogs { $0.owners.name == "Jim" } == "owners.name == 'Jim'")
    }

    @Test func aggregates() {
        #expect(
            makeWherePredicate(WBPerson.self) { $0.dogs.count > 3 }
                == compare(path(.property("dogs"), .count), .greater, value(.int(3))))
        #expect(
            makeWherePredicate(WBPerson.self) { $0.dogs.age.avg >= 3 }
                == compare(path(.property("dogs"), .avg, .property("age")), .greaterOrEqual, value(.double(3))))
        #expect(people { $0.dogs.age.min < 1 } == "dogs.@min.age < 1")
        #expect(people { $0.dogs.age.max > 10 } == "dogs.@max.age > 10")
        #expect(people { $0.dogs.age.sum == 12 } == "dogs.@sum.age == 12")
        #expect(people { $0.dogs.birthday.max > Date(timeIntervalSince1970: 5) } == "dogs.@max.birthday > T5:0")
        #expect(people { $0.dogs.maximumAge.max == nil } == "dogs.@max.maximumAge == nil")
        #expect(people { $0.pets.weight.avg < 2.5 } == "pets.@avg.weight < 2.5")
        #expect(people { $0.dogs.price.avg > Decimal128(1) } == "dogs.@avg.price > decimal128(1)")
        #expect(dogs { $0.owners.count == 0 } == "owners.@count == 0")
        #expect(dogs { $0.toys.price.sum > 10 } == "toys.@sum.price > 10.0")
        // The count of a member's values is the count of its collection.
        #expect(people { $0.dogs.age.count > 2 } == "dogs.@count > 2")
        // An aggregate applies to the innermost collection; the outer ones stay ANY.
        #expect(people { $0.dogs.toys.count > 1 } == "dogs.toys.@count > 1")
        #expect(people { $0.dogs.toys.price.avg > 1 } == "dogs.toys.@avg.price > 1.0")
        #expect(dogs { $0.owner.dogs.age.avg > 1 } == "owner.dogs.@avg.age > 1.0")
    }

    @Test func listsAndSetsOfValues() {
        #expect(
            makeWherePredicate(WBDog.self) { $0.tags.contains("x") }
                == compare(value(.string("x")), .in, path(.property("tags"))))
        #expect(dogs { $0.tags == "y" } == "tags == 'y'")
        #expect(dogs { $0.tags != "y" } == "tags != 'y'")
        #expect(dogs { $0.tags.starts(with: "z", options: .caseInsensitive) } == "tags BEGINSWITH[c] 'z'")
        #expect(dogs { $0.tags.ends(with: "z") } == "tags ENDSWITH 'z'")
        #expect(dogs { $0.tags.equals("z", options: .caseInsensitive) } == "tags ==[c] 'z'")
        #expect(dogs { $0.tags.notEquals("z") } == "tags != 'z'")
        #expect(dogs { $0.tags.like("*z") } == "tags LIKE '*z'")
        #expect(dogs { $0.tags.containsAny(in: ["a", "b"]) } == "tags IN {'a', 'b'}")
        #expect(dogs { $0.tags.in(["a"]) } == "tags IN {'a'}")
        #expect(dogs { $0.tags.count == 0 } == "tags.@count == 0")
        #expect(dogs { !$0.tags.contains("x") } == "NOT ('x' IN tags)")
        #expect(dogs { $0.ratings.contains(5) } == "5 IN ratings")
        #expect(dogs { $0.ratings > 4 } == "ratings > 4")
        #expect(dogs { $0.ratings.min >= 1 } == "ratings.@min >= 1")
        #expect(dogs { $0.ratings.max <= 5 } == "ratings.@max <= 5")
        #expect(dogs { $0.ratings.sum == 9 } == "ratings.@sum == 9")
        #expect(dogs { $0.ratings.avg > 2.5 } == "ratings.@avg > 2.5")
        #expect(dogs { $0.ratings.contains(1...3) } == "ratings BETWEEN {1, 3}")
    }

    @Test func maps() {
        #expect(
            makeWherePredicate(WBDog.self) { $0.scores["math"] > 3 }
                == compare(path(.property("scores"), .mapKey("math")), .greater, value(.int(3))))
        #expect(dogs { $0.scores.keys == "art" } == "scores.@allKeys == 'art'")
        #expect(dogs { $0.scores.keys.starts(with: "a") } == "scores.@allKeys BEGINSWITH 'a'")
        #expect(dogs { $0.scores.values > 1 } == "scores.@allValues > 1")
        #expect(dogs { $0.scores.values.in([1, 2]) } == "scores.@allValues IN {1, 2}")
        #expect(dogs { $0.scores.count == 2 } == "scores.@count == 2")
        #expect(dogs { $0.scores.keys.count == 2 } == "scores.@count == 2")
        #expect(dogs { $0.scores.contains(3) } == "3 IN scores")
        #expect(dogs { $0.scores.min > 0 } == "scores.@min > 0")
        #expect(dogs { $0.scores.max < 10 } == "scores.@max < 10")
        #expect(dogs { $0.scores.sum == 10 } == "scores.@sum == 10")
        #expect(dogs { $0.scores.avg > 2.5 } == "scores.@avg > 2.5")
        #expect(dogs { $0.scores.values.max < 10 } == "scores.@max < 10")
        #expect(dogs { $0.friends["best"].name == "Fido" } == "friends['best'].name == 'Fido'")
        #expect(dogs { $0.friends["best"] == nil } == "friends['best'] == nil")
        #expect(dogs { $0.friends.values.age > 3 } == "friends.@allValues.age > 3")
        #expect(dogs { $0.friends.count > 0 } == "friends.@count > 0")
    }

    // MARK: Subqueries

    @Test func subqueryCounts() {
        let predicate = makeWherePredicate(WBPerson.self) {
            ($0.dogs.age < 2 && $0.dogs.name.starts(with: "R")).count > 0
        }
        let inner = QueryPredicate.and([
            compare(.keyPath(QueryKeyPath(variable: "$s0", [.property("age")])), .less, value(.int(2))),
            compare(.keyPath(QueryKeyPath(variable: "$s0", [.property("name")])), .beginsWith, value(.string("R"))),
        ])
        #expect(
            predicate
                == compare(
                    .subqueryCount(collection: QueryKeyPath("dogs"), variable: "$s0", predicate: inner), .greater,
                    value(.int(0))))
        #expect(
            predicate.description == "SUBQUERY(dogs, $s0, ($s0.age < 2) AND ($s0.name BEGINSWITH 'R')).@count > 0")
    }

    @Test func subqueryForms() {
        // Over a list of values, the variable is the element.
        #expect(
            dogs { ($0.tags.starts(with: "a") && $0.tags.ends(with: "z")).count >= 1 }
                == "SUBQUERY(tags, $s0, ($s0 BEGINSWITH 'a') AND ($s0 ENDSWITH 'z')).@count >= 1")
        // Through a link; deeper paths keep their own implicit ANY; NOT and OR inside.
        #expect(dogs { ($0.owner.dogs.age > 1).count == 2 } == "SUBQUERY(owner.dogs, $s0, $s0.age > 1).@count == 2")
        #expect(
            people { ($0.dogs.toys.price > 3 || !($0.dogs.isGood == true)).count > 0 }
                == "SUBQUERY(dogs, $s0, ($s0.toys.price > 3.0) OR (NOT ($s0.isGood == true))).@count > 0")
        // Aggregates of the elements' own collections, and ranges.
        #expect(
            people { ($0.dogs.toys.count > 1 && $0.dogs.age.contains(1...3)).count > 0 }
                == "SUBQUERY(dogs, $s0, ($s0.toys.@count > 1) AND ($s0.age BETWEEN {1, 3})).@count > 0")
        // A subquery inside another gets its own variable.
        #expect(
            people { (($0.dogs.toys.price > 3).count > 0 && $0.dogs.age > 1).count > 0 }
                == "SUBQUERY(dogs, $s1, (SUBQUERY(dogs, $s0, $s0.toys.price > 3.0).@count > 0) AND ($s1.age > 1))"
                + ".@count > 0")
        // Combined with other conditions.
        #expect(
            people { $0.age > 18 && ($0.pets.age < 2).count > 1 }
                == "(age > 18) AND (SUBQUERY(pets, $s0, $s0.age < 2).@count > 1)")
    }

    @Test func modelPropertiesNamedLikeQueryMembers() {
        // The builder's `count` of collections does not hide a property of that name elsewhere…
        #expect(dogs { $0.address.count == 1 } == "address.count == 1")
        #expect(dogs { $0.friends["best"].address.count == 1 } == "friends['best'].address.count == 1")
        // …but on a collection (or the values of a to-many property) it is the collection's count.
        #expect(dogs { $0.toys.count == 1 } == "toys.@count == 1")
        #expect(dogs { $0.owner.dogs.address.count == 1 } == "owner.dogs.@count == 1")
    }

    // MARK: Programmer errors

    @Test func misuseStops() async {
        let notPersisted = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeWherePredicate(WBDog.self) { $0.scratch == 1 }
        }
        expectStop(notPersisted, "The key path \\WBDog.scratch does not read a @Persisted property of WBDog")
        let computed = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeWherePredicate(WBDog.self) { $0.fullName == "Rex" }
        }
        expectStop(computed, "does not read a @Persisted property of WBDog")
        let unmanaged = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeWherePredicate(WBDog.self) { $0.owner == WBPerson() }
        }
        expectStop(unmanaged, "this WBPerson is not managed by a realm")
    }

    @Test func subqueryMisuseStops() async {
        let noCollection = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeWherePredicate(WBDog.self) { ($0.age > 1).count > 0 }
        }
        expectStop(noCollection, "this one reads no collection")
        let two = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeWherePredicate(WBDog.self) { ($0.toys.price > 1 && $0.tags == "x").count > 0 }
        }
        expectStop(two, "must read the elements of one collection; this one reads toys, tags")
        let correlated = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = makeWherePredicate(WBPerson.self) { ($0.dogs.age > 1 && $0.age > 3).count > 0 }
        }
        expectStop(correlated, "it also reads age")
    }
}
