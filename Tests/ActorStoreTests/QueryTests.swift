import Foundation
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Queries: the seeds' filtering examples through predicate strings, indexed properties, key paths through
// links, and the index planner against the scan.

@Suite(.timeLimit(.minutes(30))) struct QueryTests {
    /// Rows at the extremes of Int64 and around the old planner's 9.2e18 cut-off, in a primary key, an
    /// index and a plain column.
    static let values: [Int64] = [
        .min, -9_200_000_000_000_000_001, -5, 0, 3, 9_200_000_000_000_000_000, 9_210_000_000_000_000_000, .max - 1,
        .max,
    ]

    /// The ids matching `predicate` on `column`, and the same predicate on the plain (never indexed) column.
    private static func ids(
        _ realm: Realm, _ column: String, _ op: String, _ argument: Double
    ) async throws -> (indexed: [Int], scanned: [Int]) {
        try await realm.read { realm throws -> ([Int], [Int]) in
            let all = realm.objects(TrapCounter.self)
            let indexed = try all.filter("\(column) \(op) %@", argument).map(\.id).sorted()
            let scanned = try all.filter("plain \(op) %@", argument).map(\.id).sorted()
            return (indexed, scanned)
        }
    }

    private func realmWithData() async throws -> Realm {
        let realm = try await Realm(
            configuration: testConfiguration([
                QSDog.self, QSWord.self, QSStudent.self, QSTeacher.self, QSEmployee.self, QSCompany.self,
            ]))
        try await realm.write { realm in
            for (name, color, age) in [
                ("Bella", "tan", 3), ("Buster", "tan", 5), ("Rex", "tan", 1), ("Jack", "black", 2),
                ("Jasper", "white", 7),
                ("Lisa", "black", 4), ("Spike", "tan", 6), ("Hachi", "white", 9),
            ] {
                realm.create(QSDog.self, value: ["name": name, "color": color, "age": age])
            }
            for value in ["abcde", "cbc", "bc", "abc", "xbcz", "ABCDE"] {
                realm.create(QSWord.self, value: ["value": value])
            }
            realm.create(QSTeacher.self, value: ["name": "Young", "student": [["age": 19], ["age": 30]]])
            realm.create(QSTeacher.self, value: ["name": "Old", "student": [["age": 25], ["age": 40]]])
            realm.create(QSTeacher.self, value: ["name": "None"])
            let big = realm.create(
                QSCompany.self, value: ["name": "Big", "employees": (0..<7).map { ["name": "e\($0)"] }])
            big.ceo = big.employees[0]
            realm.create(QSCompany.self, value: ["name": "Small", "employees": [["name": "s0"], ["name": "s1"]]])
        }
        return realm
    }

    @Test(.tags(.audit)) func indexedPropertiesOfEachSupportedTypeAnswerEqualityAndIn() async throws {
        // "Realm supports indexing for string, integer, boolean, and NSDate properties. Indexing a property
        // will greatly speed up queries where the property is compared for equality (i.e. the = and IN
        // operators)".
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            for i in 0..<40 {
                realm.create(
                    AuditBook.self,
                    value: [
                        "id": i, "title": "t\(i % 4)", "price": i % 5, "inStock": i % 2 == 0,
                        "published": Date(timeIntervalSince1970: TimeInterval(i % 3)),
                    ])
            }
        }
        let counts = try await realm.read { realm -> [Int] in
            let books = realm.objects(AuditBook.self)
            return [
                try books.filter("title == %@", "t1").count,
                try books.filter("price == %@", 3).count,
                try books.filter("inStock == %@", true).count,
                try books.filter("published == %@", Date(timeIntervalSince1970: 2)).count,
                try books.filter("title IN %@", ["t0", "t3"]).count,
                try books.filter("price IN %@", [0, 4]).count,
                try books.filter("title == %@ AND inStock == %@", "t2", true).count,
            ]
        }
        #expect(counts == [10, 8, 20, 13, 20, 16, 10])
        // Indexes follow updates and deletions.
        try await realm.write { realm in
            realm.object(ofType: AuditBook.self, forPrimaryKey: 1)!.title = "moved"
            realm.delete(realm.object(ofType: AuditBook.self, forPrimaryKey: 5)!)
        }
        let after = try await realm.read { realm -> [Int] in
            let books = realm.objects(AuditBook.self)
            return [
                try books.filter("title == %@", "t1").count, try books.filter("title == %@", "moved").count,
                try books.filter("inStock == false").count,
            ]
        }
        #expect(after == [8, 1, 19])
    }

    @Test(.tags(.audit)) func nestedPropertySyntaxTraversesLinks() async throws {
        // "rex.owner?.address.country will traverse the object graph and automatically fetch each object from
        // Realm as needed."
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            let jim = AuditPerson(value: ["name": "Jim", "address": ["country": "Norway"]])
            let rex = AuditDog(value: ["name": "Rex"])
            rex.owner = jim
            realm.add(rex)
        }
        let country = await realm.read { $0.objects(AuditDog.self).first?.owner?.address?.country }
        #expect(country == "Norway")
        try await realm.write { realm in realm.objects(AuditAddress.self).first!.country = "Sweden" }
        let frozen = await realm.freeze()
        #expect(frozen.objects(AuditDog.self).first?.owner?.address?.country == "Sweden")
        let counts = await realm.read { realm in
            [realm.objects(AuditPerson.self).count, realm.objects(AuditAddress.self).count]
        }
        #expect(counts == [1, 1], "adding the dog added the objects it links to, once")
    }

    /// NaN, ±infinity and doubles at or past Int64's range, against an indexed or primary-key integer
    /// column: the index planner must agree with the scan, NaN matching nothing (`!=` everything).
    @Test(.tags(.regression)) func oddDoublesAgainstIndexedIntegersMatchTheScan() async throws {
        let realm = try await Realm(configuration: testConfiguration([TrapCounter.self]))
        try await realm.write { realm in
            for v in Self.values {
                realm.create(TrapCounter.self, value: ["id": Int(v), "n": Int(v), "plain": Int(v)])
            }
        }
        let arguments: [Double] = [
            .nan, .infinity, -.infinity, 9.2e18, 9.205e18, 0x1p63, -0x1p63, -9.2e18, -9.3e18, 1e300, -1e300, 2.5,
        ]
        for column in ["id", "n"] {
            for op in ["<", "<=", ">", ">=", "==", "!="] {
                for argument in arguments {
                    let (indexed, scanned) = try await Self.ids(realm, column, op, argument)
                    #expect(indexed == scanned, "\(column) \(op) \(argument)")
                }
            }
        }
        // The scan itself: NaN is unordered.
        let nan = try await Self.ids(realm, "id", ">", .nan)
        #expect(nan.indexed.isEmpty && nan.scanned.isEmpty)
        let notNaN = try await Self.ids(realm, "id", "!=", .nan)
        #expect(notNaN.indexed.count == Self.values.count)
        // `> 9.2e18` holds for the two rows between 9.2e18 and Int64.max too (the old planner started at
        // Int64.max and found only that one).
        let huge = try await Self.ids(realm, "n", ">", 9.2e18)
        #expect(huge.indexed == [9_210_000_000_000_000_000, Int(Int64.max - 1), Int(Int64.max)])
    }

    /// Integer arguments that no double represents exactly (above 2^53): an indexed range compares them
    /// as integers, as the scan does; through a double, `>= 2^53 + 3` started the walk at 2^53 + 4.
    @Test(.tags(.regression)) func largeIntegerArgumentsAgainstIndexedIntegersMatchTheScan() async throws {
        let realm = try await Realm(configuration: testConfiguration([TrapCounter.self]))
        let values: [Int] = [(1 << 53) + 1, (1 << 53) + 3, (1 << 54) + 6, (1 << 54) + 7, Int.max - 1, Int.max]
        try await realm.write { realm in
            for v in values { realm.create(TrapCounter.self, value: ["id": v, "n": v, "plain": v]) }
        }
        for column in ["id", "n"] {
            for op in ["<", "<=", ">", ">=", "==", "!="] {
                for argument in values {
                    let (indexed, scanned) = try await realm.read { realm throws -> ([Int], [Int]) in
                        let all = realm.objects(TrapCounter.self)
                        return (
                            try all.filter("\(column) \(op) %@", argument).map(\.id).sorted(),
                            try all.filter("plain \(op) %@", argument).map(\.id).sorted()
                        )
                    }
                    #expect(indexed == scanned, "\(column) \(op) \(argument)")
                }
            }
        }
    }

    @Test(.tags(.seed)) func seedExamples() async throws {
        let realm = try await realmWithData()
        try await realm.read { realm throws in
            let dogs = realm.objects(QSDog.self)
            #expect(try dogs.filter("color = 'tan' AND name BEGINSWITH 'B'").map(\.name) == ["Bella", "Buster"])
            #expect(try dogs.filter("name CONTAINS[c] 'Ja'").map(\.name) == ["Jack", "Jasper"])
            #expect(try dogs.filter("name IN {'Lisa', 'Spike', 'Hachi'}").map(\.name) == ["Lisa", "Spike", "Hachi"])
            #expect(try dogs.filter("age BETWEEN {3, 5}").map(\.name) == ["Bella", "Buster", "Lisa"])
            #expect(try dogs.filter("age > %@ && color != %@", 4, "tan").map(\.name) == ["Jasper", "Hachi"])
            #expect(try dogs.filter("NOT (color == 'tan') OR age == 1").count == 5)
            #expect(try dogs.filter("TRUEPREDICATE").count == 8)
            #expect(try dogs.filter("FALSEPREDICATE").isEmpty)
            let words = realm.objects(QSWord.self)
            #expect(try words.filter("value LIKE '?bc*'").map(\.value) == ["abcde", "cbc", "abc", "xbcz"])
            #expect(try words.filter("value LIKE[c] '?bc*'").count == 5)
            let teachers = realm.objects(QSTeacher.self)
            #expect(try teachers.filter("ANY student.age < 21").map(\.name) == ["Young"])
            #expect(try teachers.filter("ALL student.age > 20").map(\.name) == ["Old", "None"])
            #expect(try teachers.filter("NONE student.age > 35").map(\.name) == ["Young", "None"])
            #expect(try teachers.filter("student.@avg.age > 30").map(\.name) == ["Old"])
            #expect(try teachers.filter("SUBQUERY(student, $s, $s.age > 20).@count == 1").map(\.name) == ["Young"])
            let companies = realm.objects(QSCompany.self)
            #expect(try companies.filter("employees.@count > 5").map(\.name) == ["Big"])
            #expect(try companies.filter("ceo == nil").map(\.name) == ["Small"])
            #expect(try companies.filter("ceo.name == 'e0'").map(\.name) == ["Big"])
            // Objects as arguments match by identity, on to-one links and in collections.
            let bigCEO = try #require(companies.first?.ceo)
            #expect(try companies.filter("ceo == %@", bigCEO).map(\.name) == ["Big"])
            #expect(try companies.filter("%@ IN employees", bigCEO).map(\.name) == ["Big"])
            #expect(try companies.filter("ceo IN %@", [bigCEO]).map(\.name) == ["Big"])
            #expect(throws: RealmError.self) { try companies.filter("ceo == %@", try #require(dogs.first)) }
            let employees = realm.objects(QSEmployee.self)
            #expect(try employees.filter("ANY companies.name == 'Small'").map(\.name) == ["s0", "s1"])
            // The same on frozen results, and on a list.
            let frozen = dogs.freeze()
            #expect(try frozen.filter("color = 'tan' AND name BEGINSWITH 'B'").map(\.name) == ["Bella", "Buster"])
            let big = try #require(companies.first)
            #expect(try big.employees.filter("name IN {'e1', 'e3'}").map(\.name) == ["e1", "e3"])
            #expect(big.employees.sorted(by: \.name, ascending: false).first?.name == "e6")
            #expect(try big.employees.first?.companies.filter("name == 'Big'").count == 1)
        }
    }

    @Test(.tags(.seed)) func sortingDistinctLimitAndAggregates() async throws {
        let realm = try await realmWithData()
        try await realm.read { realm throws in
            let dogs = realm.objects(QSDog.self)
            #expect(try dogs.sorted(byKeyPath: "age").map(\.age) == [1, 2, 3, 4, 5, 6, 7, 9])
            #expect(
                dogs.sorted(by: [SortDescriptor(\QSDog.color), SortDescriptor(\QSDog.age, order: .reverse)]).map(\.name)
                    == ["Lisa", "Jack", "Spike", "Buster", "Bella", "Rex", "Hachi", "Jasper"])
            #expect(try dogs.distinct(by: ["color"]).map(\.name) == ["Bella", "Jack", "Jasper"])
            #expect(dogs.sorted(by: \.age).limit(3).map(\.age) == [1, 2, 3])
            #expect(try dogs.filter("color == 'tan'").limit(2).map(\.name) == ["Bella", "Buster"])
            #expect(try dogs.min(ofProperty: "age") == 1)
            #expect(try dogs.max(ofProperty: "age") == 9)
            #expect(try dogs.sum(ofProperty: "age") == 37)
            #expect(try dogs.filter("color == 'white'").average(ofProperty: "age") == 8.0)
            #expect(dogs.max(of: \.name) == "Spike")
            #expect(try dogs.filter("age > 100").average(ofProperty: "age") as Double? == nil)
            #expect(try dogs.filter("age > 2").explain().contains("scan"))
        }
    }

    @Test(.tags(.seed)) func badPredicatesThrowWithPositions() async throws {
        let realm = try await realmWithData()
        await realm.read { realm in
            let dogs = realm.objects(QSDog.self)
            for (predicate, fragment) in [
                ("agee < 3", "no property 'agee'"), ("age < 'x'", "type mismatch"), ("(age < 3", "offset"),
                ("age < %@", "argument"), ("name BEGINSWITH 3", "BEGINSWITH"), ("age.@count > 2", "@count"),
            ] {
                do throws(RealmError) {
                    _ = try dogs.filter(predicate)
                    Issue.record("\(predicate) did not throw")
                } catch {
                    #expect(error.code == .invalidQuery)
                    #expect(error.message.contains(fragment), "\(predicate): \(error.message)")
                }
            }
            #expect(throws: RealmError.self) { try dogs.sorted(byKeyPath: "nope") }
        }
    }

    @Test(.tags(.seed)) func liveResultsSeeTheTransactionsOwnWritesAndIndexes() async throws {
        let realm = try await realmWithData()
        try await realm.write { realm in
            let tan = try realm.objects(QSDog.self).filter("color == 'tan'")
            #expect(tan.count == 4)
            realm.create(QSDog.self, value: ["name": "New", "color": "tan", "age": 0])
            #expect(tan.count == 5)
            realm.delete(try tan.filter("age < 2"))
            #expect(tan.count == 3)
        }
        let indexed = try await Realm(configuration: testConfiguration([Book.self]))
        try await indexed.write { realm in
            for i in 0..<100 { realm.create(Book.self, value: ["id": i, "title": "t\(i % 10)", "price": Double(i)]) }
        }
        try await indexed.read { realm throws in
            let books = realm.objects(Book.self)
            #expect(try books.filter("id IN {3, 5, 500}").map(\.id) == [3, 5])
            #expect(try books.filter("id == 42").explain().contains("index"))
            #expect(try books.filter("id >= 95").map(\.id) == [95, 96, 97, 98, 99])
            #expect(try books.filter("id < 3 AND title == 't1'").map(\.id) == [1])
        }
    }
}
