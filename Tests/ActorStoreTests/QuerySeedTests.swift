import ActorStore
import Foundation
import Testing

// The seeds' Filtering examples, end to end through predicate strings on live and frozen results.

final class QSDog: Object {
    @Persisted var name = ""
    @Persisted var color = ""
    @Persisted var age = 0
}

final class QSWord: Object {
    @Persisted var value = ""
}

final class QSStudent: Object {
    @Persisted var age = 0
}

final class QSTeacher: Object {
    @Persisted var name = ""
    @Persisted var student: List<QSStudent>
}

final class QSEmployee: Object {
    @Persisted var name = ""
    @Persisted(originProperty: "employees") var companies: LinkingObjects<QSCompany>
}

final class QSCompany: Object {
    @Persisted var name = ""
    @Persisted var employees: List<QSEmployee>
    @Persisted var ceo: QSEmployee?
}

@Suite struct QuerySeedTests {
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

    @Test func seedExamples() async throws {
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

    @Test func sortingDistinctLimitAndAggregates() async throws {
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

    @Test func badPredicatesThrowWithPositions() async throws {
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

    @Test func liveResultsSeeTheTransactionsOwnWritesAndIndexes() async throws {
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
