import Foundation
import Testing

@testable import ActorStore

// `#Predicate` → query AST. Each supported form is checked against the predicate string its AST prints
// (and a few against hand-built ASTs); unsupported forms must throw `invalidQuery` naming the expression.

enum FPTaste: String, PersistableEnum, Codable {
    case sweet, sour
}

final class FPOwner: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<FPDog>
    @Persisted var best: FPDog?
}

final class FPDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var weight = 0.0
    @Persisted var isGood = false
    @Persisted var nickname: String?
    @Persisted var birthday: Date?
    @Persisted var taste = FPTaste.sweet
    @Persisted var owner: FPOwner?
    @Persisted var friends: List<FPDog>
    @Persisted var tags: List<String>
    @Persisted var scores: MutableSet<Int>
    @Persisted var prices: Map<String, Double>
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<FPOwner>

    /// Computed, of another type than the property it reads: must not translate.
    var isSenior: Bool { age > 10 }
    /// Computed, of the type of the property it reads: must not translate either.
    var shout: String { name.uppercased() }
    /// Computed, returning one property unchanged: reads that property.
    var title: String { name }
}

/// Stand-ins for the string expressions Apple's Foundation framework adds to `#Predicate` (absent from
/// swift-foundation on Linux), with the same names and children, built by hand below.
enum FPFrameworkStandIns {
    struct StringLocalizedStandardContains<Root: StandardPredicateExpression, Other: StandardPredicateExpression>:
        StandardPredicateExpression
    where Root.Output == String, Other.Output == String {
        typealias Output = Bool
        let root: Root
        let other: Other
        func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            try root.evaluate(bindings).localizedStandardContains(other.evaluate(bindings))
        }
    }

    struct StringCaseInsensitiveCompare<Root: StandardPredicateExpression, Other: StandardPredicateExpression>:
        StandardPredicateExpression
    where Root.Output == String, Other.Output == String {
        typealias Output = ComparisonResult
        let root: Root
        let other: Other
        func evaluate(_ bindings: PredicateBindings) throws -> ComparisonResult {
            try root.evaluate(bindings).caseInsensitiveCompare(other.evaluate(bindings))
        }
    }
}

@Suite struct FoundationPredicateTests {
    /// The predicate string of `predicate`'s translation.
    private func query(_ predicate: Predicate<FPDog>) throws -> String {
        try translatePredicate(predicate).description
    }

    /// The error translating `predicate` throws.
    private func failure(_ predicate: Predicate<FPDog>) -> RealmError? {
        do {
            let translated = try translatePredicate(predicate)
            Issue.record("expected an error, got \(translated)")
            return nil
        } catch {
            return error
        }
    }

    // MARK: Comparisons and logic

    @Test func comparisonOperators() throws {
        #expect(try query(#Predicate { $0.age == 3 }) == "age == 3")
        #expect(try query(#Predicate { $0.age != 3 }) == "age != 3")
        #expect(try query(#Predicate { $0.age < 3 }) == "age < 3")
        #expect(try query(#Predicate { $0.age <= 3 }) == "age <= 3")
        #expect(try query(#Predicate { $0.age > 3 }) == "age > 3")
        #expect(try query(#Predicate { $0.age >= 3 }) == "age >= 3")
        #expect(try query(#Predicate { $0.weight > 2.5 }) == "weight > 2.5")
        #expect(try query(#Predicate { $0.name == "Rex" }) == "name == 'Rex'")
        #expect(try query(#Predicate { 3 < $0.age }) == "3 < age")
        #expect(try query(#Predicate { $0.age == $0.owner!.age }) == "age == owner.age")
    }

    @Test func handBuiltAST() throws {
        let translated = try translatePredicate(#Predicate<FPDog> { $0.age < 2 && $0.owner?.name == "Ann" })
        let expected = QueryPredicate.and([
            .comparison(QueryComparison(.keyPath(QueryKeyPath("age")), .less, .value(.int(2)))),
            .comparison(QueryComparison(.keyPath(QueryKeyPath("owner", "name")), .equal, .value(.string("Ann")))),
        ])
        #expect(translated == expected)
    }

    @Test func capturedConstants() throws {
        let limit = 3
        let name = "Rex"
        let taste = FPTaste.sour
        let day = Date(timeIntervalSince1970: 86_400)
        let nickname: String? = nil
        #expect(try query(#Predicate { $0.age < limit && $0.name == name }) == "(age < 3) AND (name == 'Rex')")
        #expect(try query(#Predicate { $0.taste == taste }) == "taste == 'sour'")
        #expect(try query(#Predicate { $0.birthday == day }) == "birthday == T86400:0")
        #expect(try query(#Predicate { $0.nickname == nickname }) == "nickname == nil")
    }

    @Test func logic() throws {
        #expect(
            try query(#Predicate { $0.age < 2 && $0.name.starts(with: "B") })
                == "(age < 2) AND (name BEGINSWITH 'B')")
        #expect(
            try query(#Predicate { $0.age < 2 && $0.age > 0 && $0.isGood })
                == "(age < 2) AND (age > 0) AND (isGood == true)")
        #expect(try query(#Predicate { $0.age < 2 || $0.age > 5 }) == "(age < 2) OR (age > 5)")
        #expect(try query(#Predicate { !($0.age == 2) || $0.isGood }) == "(NOT (age == 2)) OR (isGood == true)")
        #expect(try query(#Predicate { !$0.isGood }) == "NOT (isGood == true)")
        #expect(try query(#Predicate { $0.isGood == false }) == "isGood == false")
        #expect(try query(#Predicate { ($0.age > 2) == true }) == "age > 2")
        #expect(try query(#Predicate { ($0.age > 2) != true }) == "NOT (age > 2)")
        #expect(try query(#Predicate { _ in true }) == "TRUEPREDICATE")
        #expect(try query(#Predicate { _ in false }) == "FALSEPREDICATE")
        #expect(try query(Predicate<FPDog>.true) == "TRUEPREDICATE")
        #expect(try query(#Predicate { $0.age > 2 && true }) == "age > 2")
        #expect(
            try query(#Predicate { ($0.age > 2) == $0.isGood })
                == "((age > 2) AND (isGood == true)) OR ((NOT (age > 2)) AND (NOT (isGood == true)))")
        #expect(try query(#Predicate { $0.isGood == $0.owner!.best!.isGood }) == "isGood == owner.best.isGood")
    }

    @Test func ternaryOfConditions() throws {
        #expect(
            try query(#Predicate { $0.age > 2 ? $0.name == "a" : $0.name == "b" })
                == "((age > 2) AND (name == 'a')) OR ((NOT (age > 2)) AND (name == 'b'))")
    }

    // MARK: Optionals

    @Test func optionalChainingThroughLinks() throws {
        #expect(try query(#Predicate { $0.owner?.name == "Ann" }) == "owner.name == 'Ann'")
        #expect(try query(#Predicate { $0.owner?.best?.name == "Rex" }) == "owner.best.name == 'Rex'")
        #expect(try query(#Predicate { $0.owner!.name == "Ann" }) == "owner.name == 'Ann'")
        #expect(
            try query(#Predicate { $0.owner?.name.starts(with: "A") ?? false })
                == "(owner != nil) AND (owner.name BEGINSWITH 'A')")
        #expect(
            try query(#Predicate { $0.owner?.name.starts(with: "A") ?? true })
                == "(owner == nil) OR (owner.name BEGINSWITH 'A')")
        #expect(try query(#Predicate { $0.owner?.name.starts(with: "A") == nil }) == "owner == nil")
        #expect(
            try query(#Predicate { $0.owner?.name.starts(with: "A") == true })
                == "(owner != nil) AND (owner.name BEGINSWITH 'A')")
        #expect(
            try query(#Predicate { $0.owner?.name.starts(with: "A") == false })
                == "(owner != nil) AND (NOT (owner.name BEGINSWITH 'A'))")
        #expect(
            try query(#Predicate { $0.owner?.name.starts(with: "A") != true })
                == "NOT ((owner != nil) AND (owner.name BEGINSWITH 'A'))")
        #expect(try query(#Predicate { $0.owner?.dogs.count == 2 }) == "owner.dogs.@count == 2")
    }

    @Test func nilChecks() throws {
        #expect(try query(#Predicate { $0.owner == nil }) == "owner == nil")
        #expect(try query(#Predicate { $0.owner != nil }) == "owner != nil")
        #expect(try query(#Predicate { $0.nickname == nil }) == "nickname == nil")
        #expect(try query(#Predicate { $0.nickname != nil }) == "nickname != nil")
        #expect(try query(#Predicate { $0.owner?.best == nil }) == "owner.best == nil")
    }

    @Test func nilCoalescing() throws {
        #expect(
            try query(#Predicate { ($0.nickname ?? "") == "x" }) == "(nickname != nil) AND (nickname == 'x')")
        #expect(
            try query(#Predicate { ($0.nickname ?? "x") == "x" })
                == "((nickname != nil) AND (nickname == 'x')) OR (nickname == nil)")
        #expect(
            try query(#Predicate { ($0.nickname ?? "") != "x" })
                == "((nickname != nil) AND (nickname != 'x')) OR (nickname == nil)")
        #expect(
            try query(#Predicate { ($0.nickname ?? "b") < "c" })
                == "((nickname != nil) AND (nickname < 'c')) OR (nickname == nil)")
        // A property as the default.
        #expect(
            try query(#Predicate { ($0.nickname ?? $0.name) == "x" })
                == "((nickname != nil) AND (nickname == 'x')) OR ((nickname == nil) AND (name == 'x'))")
        let translated = try translatePredicate(#Predicate<FPDog> { ($0.nickname ?? "") == "x" })
        let nickname = QueryExpression.keyPath(QueryKeyPath("nickname"))
        #expect(
            translated
                == .and([
                    .comparison(QueryComparison(nickname, .notEqual, .value(.null))),
                    .comparison(QueryComparison(nickname, .equal, .value(.string("x")))),
                ]))
    }

    // MARK: Strings

    @Test func stringOperators() throws {
        let part = "ab"
        #expect(try query(#Predicate { $0.name.contains("ab") }) == "name CONTAINS 'ab'")
        #expect(try query(#Predicate { $0.name.contains(part) }) == "name CONTAINS 'ab'")
        #expect(try query(#Predicate { $0.name.starts(with: "B") }) == "name BEGINSWITH 'B'")
        #expect(
            try query(#Predicate { $0.owner?.name.contains("n") ?? false })
                == "(owner != nil) AND (owner.name CONTAINS 'n')")
        #expect(
            try query(#Predicate { $0.nickname?.contains("x") == true })
                == "(nickname != nil) AND (nickname CONTAINS 'x')")
    }

    @Test func frameworkStringExpressions() throws {
        let localized = Predicate<FPDog> { dog in
            FPFrameworkStandIns.StringLocalizedStandardContains(
                root: PredicateExpressions.build_KeyPath(root: dog, keyPath: \.name),
                other: PredicateExpressions.build_Arg("ab"))
        }
        #expect(try query(localized) == "name CONTAINS[cd] 'ab'")
        let caseless = Predicate<FPDog> { dog in
            PredicateExpressions.build_Equal(
                lhs: FPFrameworkStandIns.StringCaseInsensitiveCompare(
                    root: PredicateExpressions.build_KeyPath(root: dog, keyPath: \.name),
                    other: PredicateExpressions.build_Arg("rex")),
                rhs: PredicateExpressions.build_Arg(ComparisonResult.orderedSame))
        }
        #expect(try query(caseless) == "name ==[c] 'rex'")
        let ordered = Predicate<FPDog> { dog in
            PredicateExpressions.build_Equal(
                lhs: FPFrameworkStandIns.StringCaseInsensitiveCompare(
                    root: PredicateExpressions.build_KeyPath(root: dog, keyPath: \.name),
                    other: PredicateExpressions.build_Arg("rex")),
                rhs: PredicateExpressions.build_Arg(ComparisonResult.orderedAscending))
        }
        let error = failure(ordered)
        #expect(error?.code == .invalidQuery)
        #expect(error?.message.contains("caseInsensitiveCompare") == true)
    }

    #if canImport(Darwin)
        @Test func frameworkStringExpressionsFromTheMacro() throws {
            #expect(try query(#Predicate { $0.name.localizedStandardContains("ab") }) == "name CONTAINS[cd] 'ab'")
            #expect(
                try query(#Predicate { $0.name.caseInsensitiveCompare("rex") == .orderedSame }) == "name ==[c] 'rex'")
        }
    #endif

    // MARK: Collections

    @Test func collectionContainsValue() throws {
        let names = ["a", "b"]
        let ages: Set = [3]
        #expect(try query(#Predicate { $0.tags.contains("x") }) == "'x' IN tags")
        #expect(try query(#Predicate { $0.scores.contains(3) }) == "3 IN scores")
        #expect(try query(#Predicate { $0.tags.contains($0.name) }) == "name IN tags")
        #expect(try query(#Predicate { names.contains($0.name) }) == "name IN {'a', 'b'}")
        #expect(try query(#Predicate { ages.contains($0.age) }) == "age IN {3}")
    }

    @Test func containsWhereAndAllSatisfy() throws {
        #expect(
            try query(#Predicate { $0.friends.contains { $0.age > 3 } })
                == "SUBQUERY(friends, $v, $v.age > 3).@count > 0")
        #expect(
            try query(#Predicate { $0.friends.contains { $0.age > 3 && $0.name.starts(with: "R") } })
                == "SUBQUERY(friends, $v, ($v.age > 3) AND ($v.name BEGINSWITH 'R')).@count > 0")
        #expect(
            try query(#Predicate { $0.friends.allSatisfy { $0.isGood } })
                == "SUBQUERY(friends, $v, NOT ($v.isGood == true)).@count == 0")
        #expect(
            try query(#Predicate { $0.tags.contains { $0.starts(with: "a") } })
                == "SUBQUERY(tags, $v, $v BEGINSWITH 'a').@count > 0")
        #expect(
            try query(#Predicate { $0.tags.contains { $0 == "x" || $0 == "y" } })
                == "SUBQUERY(tags, $v, ($v == 'x') OR ($v == 'y')).@count > 0")
        #expect(
            try query(#Predicate { $0.owners.contains { $0.name == "Ann" } })
                == "SUBQUERY(owners, $v, $v.name == 'Ann').@count > 0")
        #expect(
            try query(#Predicate { $0.friends.contains { $0.owner?.name == "Ann" } })
                == "SUBQUERY(friends, $v, $v.owner.name == 'Ann').@count > 0")
        #expect(
            try query(#Predicate { dog in dog.friends.contains { friend in friend.friends.contains { $0.age > 1 } } })
                == "SUBQUERY(friends, $v, SUBQUERY($v.friends, $v1, $v1.age > 1).@count > 0).@count > 0")
        let translated = try translatePredicate(#Predicate<FPDog> { $0.friends.contains { $0.age > 3 } })
        let inner = QueryPredicate.comparison(
            QueryComparison(.keyPath(QueryKeyPath(variable: "$v", [.property("age")])), .greater, .value(.int(3))))
        #expect(
            translated
                == .comparison(
                    QueryComparison(
                        .subqueryCount(collection: QueryKeyPath("friends"), variable: "$v", predicate: inner), .greater,
                        .value(.int(0)))))
    }

    @Test func countsAndEmptiness() throws {
        #expect(try query(#Predicate { $0.friends.count > 2 }) == "friends.@count > 2")
        #expect(try query(#Predicate { $0.tags.count == 0 }) == "tags.@count == 0")
        #expect(try query(#Predicate { $0.scores.count < 4 }) == "scores.@count < 4")
        #expect(try query(#Predicate { $0.prices.count >= 1 }) == "prices.@count >= 1")
        #expect(try query(#Predicate { $0.owners.count == 1 }) == "owners.@count == 1")
        #expect(try query(#Predicate { $0.tags.isEmpty }) == "tags.@count == 0")
        #expect(try query(#Predicate { !$0.friends.isEmpty }) == "NOT (friends.@count == 0)")
        #expect(try query(#Predicate { $0.prices.isEmpty }) == "prices.@count == 0")
        #expect(
            try query(#Predicate { $0.friends.filter { $0.age > 1 }.count > 2 })
                == "SUBQUERY(friends, $v, $v.age > 1).@count > 2")
        #expect(
            try query(#Predicate { $0.friends.filter { $0.age > 1 }.isEmpty })
                == "SUBQUERY(friends, $v, $v.age > 1).@count == 0")
        #expect(
            try query(#Predicate { $0.friends.filter { $0.age > 1 }.contains { $0.isGood } })
                == "SUBQUERY(friends, $v, ($v.age > 1) AND ($v.isGood == true)).@count > 0")
    }

    @Test func minAndMax() throws {
        #expect(
            try query(#Predicate { ($0.scores.max() ?? 0) > 3 })
                == "(scores.@max != nil) AND (scores.@max > 3)")
        #expect(
            try query(#Predicate { $0.scores.min() == 1 }) == "scores.@min == 1")
    }

    @Test func ranges() throws {
        let span = 2...4
        #expect(try query(#Predicate { (1...5).contains($0.age) }) == "age BETWEEN {1, 5}")
        #expect(try query(#Predicate { span.contains($0.age) }) == "age BETWEEN {2, 4}")
        #expect(try query(#Predicate { (1..<5).contains($0.age) }) == "(age >= 1) AND (age < 5)")
    }

    // MARK: Unsupported

    @Test func unsupportedExpressionsThrowNamingThem() {
        let cases: [(Predicate<FPDog>, String)] = [
            (#Predicate { $0.age + 1 > 2 }, "PredicateExpressions.Arithmetic"),
            (#Predicate { $0.age * 2 == 4 }, "PredicateExpressions.Arithmetic"),
            (#Predicate { $0.age % 2 == 0 }, "PredicateExpressions.IntRemainder"),
            (#Predicate { $0.name.count > 2 }, "String"),
            (#Predicate { $0.tags[0] == "a" }, "PredicateExpressions.CollectionIndexSubscript"),
            (#Predicate { $0.friends.first?.age == 2 }, "List<FPDog>"),
            (#Predicate { ($0.age > 2 ? $0.name : "x") == "x" }, "PredicateExpressions.Conditional"),
            (#Predicate { $0.isSenior }, "FPDog"),
            (#Predicate { $0.tags.starts(with: ["a"]) }, "PredicateExpressions.SequenceStartsWith"),
            (#Predicate { $0.name.contains(/a+/) }, "PredicateExpressions.StringContainsRegex"),
        ]
        for (predicate, name) in cases {
            let error = failure(predicate)
            #expect(error?.code == .invalidQuery, "\(name)")
            #expect(error?.message.contains(name) == true, "\(error?.message ?? "no error") should name \(name)")
            #expect(error?.message.contains("Supported:") == true)
        }
    }

    @Test func errorsSpellPropertiesByName() {
        let error = failure(#Predicate { $0.age + 1 > 2 })
        #expect(error?.message.contains("keyPath: \\FPDog.age") == true, "\(error?.message ?? "")")
    }

    @Test func computedProperties() throws {
        for predicate in [#Predicate<FPDog> { $0.isSenior }, #Predicate<FPDog> { $0.shout == "REX" }] {
            let error = failure(predicate)
            #expect(error?.code == .invalidQuery)
            #expect(error?.message.contains("not a @Persisted property of FPDog") == true, "\(error?.message ?? "")")
        }
        #expect(try query(#Predicate { $0.title == "Rex" }) == "name == 'Rex'")
    }
}
