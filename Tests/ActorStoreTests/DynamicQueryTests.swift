import ActorStore
import Foundation
import Testing

/// Owners with lists of pets, and pets linking back to an owner: the classes the dynamic queries are
/// compared on with the typed ones.
enum DynamicQueryModels {
    final class DQOwner: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
        @Persisted var pets: List<DQPet>
        @Persisted var tags: MutableSet<String>
        @Persisted var scores: Map<String, Int>
        @Persisted var since = Date(timeIntervalSince1970: 0)
    }

    final class DQPet: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
        @Persisted var age = 0
        @Persisted var weight: Double?
        @Persisted var owner: DQOwner?
        @Persisted var nicknames: List<String>
    }
}

private typealias DQOwner = DynamicQueryModels.DQOwner
private typealias DQPet = DynamicQueryModels.DQPet

extension Realm {
    /// The ids of `dynamicObjects("DQPet")` matching `age > 3` before and after a commit adds one and a
    /// second commit deletes one, holding the same results across the commits.
    fileprivate func dynamicLiveness() async throws -> [[Int]] {
        let results = try dynamicObjects("DQPet").filter("age > %@", 3).sorted(byKeyPath: "id")
        var seen = [results.map { $0["id"] as! Int }]
        try await beginWrite()
        create(DQPet.self, value: ["id": 100, "name": "Zed", "age": 8])
        seen.append(results.map { $0["id"] as! Int })  // the open transaction's own write
        try await commitWrite()
        seen.append(results.map { $0["id"] as! Int })
        try await write { realm in
            if let pet = realm.object(ofType: DQPet.self, forPrimaryKey: 100) { realm.delete(pet) }
            if let pet = realm.object(ofType: DQPet.self, forPrimaryKey: 2) { pet.age = 1 }
        }
        seen.append(results.map { $0["id"] as! Int })
        return seen
    }
}

/// The message of a `RealmError`, or the description of another error.
private func message(of error: any Error) -> String { (error as? RealmError)?.message ?? "\(error)" }

@Suite struct DynamicQueryTests {
    /// A realm on a file of ``makeFile()``.
    private func makeRealm() async throws -> Realm {
        try await Realm(
            configuration: migrationConfiguration(try await makeFile(), [DQOwner.self, DQPet.self], version: 1))
    }

    /// A file (schema version 1) with four owners and twelve pets (one without an owner), with lists, sets,
    /// maps and optionals.
    private func makeFile() async throws -> URL {
        let url = temporaryRealmURL()
        let realm = try await Realm(configuration: migrationConfiguration(url, [DQOwner.self, DQPet.self], version: 1))
        try await realm.write { realm in
            let names = ["Rex", "bella", "Max", "Bo", "luna", "Otto", "Milo", "rex", "Coco", "Zoe", "Ben", "Ollie"]
            let ages = [3, 7, 1, 5, 3, 12, 0, 9, 5, 2, 7, 4]
            var pets: [DQPet] = []
            for (i, name) in names.enumerated() {
                let weight: Double? = i % 4 == 1 ? nil : Double(ages[i]) * 2.5 + Double(i)
                pets.append(
                    realm.create(
                        DQPet.self,
                        value: [
                            "id": i + 1, "name": name, "age": ages[i], "weight": weight as Any,
                            "nicknames": i % 3 == 0 ? [name + "y", "pup"] : [],
                        ]))
            }
            let owners: [(String, [Int], [String], [String: Int])] = [
                ("Ann", [0, 1, 2], ["a", "b"], ["x": 1]),
                ("bob", [3], [], ["x": 5, "y": 2]),
                ("Cy", [4, 5, 6, 7, 8], ["b"], [:]),
                ("Ann", [9, 10], ["c"], ["y": 9]),
            ]
            for (index, (name, members, tags, scores)) in owners.enumerated() {
                let owner = realm.create(
                    DQOwner.self,
                    value: [
                        "id": index + 1, "name": name, "tags": tags, "scores": scores,
                        "since": Date(timeIntervalSince1970: Double(1000 * (4 - index))),
                    ])
                for member in members {
                    owner.pets.append(pets[member])
                    pets[member].owner = owner
                }
            }
            // A pet listed by two owners; pet 12 has no owner.
            realm.objects(DQOwner.self).filter { $0.id == 4 }.first?.pets.append(pets[0])
        }
        return url
    }

    private static let petPredicates = [
        "TRUEPREDICATE", "age > 3", "age BETWEEN {2, 5}", "name BEGINSWITH[c] 'b'", "name CONTAINS 'o'",
        "name ==[c] 'REX'", "name LIKE '?o*'", "weight == nil", "weight > 10.5", "NOT (age < 5 OR weight == nil)",
        "owner.name == 'Ann'", "owner == nil", "owner.id IN {1, 3}", "owner.name BEGINSWITH 'A' AND age >= 3",
        "ANY nicknames == 'pup'", "nicknames.@count == 0", "'pup' IN nicknames", "owner.tags.@count > 1",
        "ANY owner.pets.age > 10",
    ]

    private static let ownerPredicates = [
        "ANY pets.age > 5", "ALL pets.age < 10", "NONE pets.name == 'Rex'", "pets.@count >= 3",
        "pets.@avg.age > 4", "pets.@max.age == 12", "pets.@sum.age < 20", "ANY pets.owner.name == 'bob'",
        "SUBQUERY(pets, $p, $p.age > 2 AND $p.weight != nil).@count > 1", "'b' IN tags", "tags.@count == 0",
        "scores['x'] > 1", "ANY scores.@allKeys == 'y'", "scores.@count == 2", "since > %@", "name IN %@",
    ]

    private static let petSorts: [(String, Bool)] = [
        ("id", true), ("name", true), ("age", false), ("weight", true), ("owner.name", true), ("owner.id", false),
    ]

    @Test func filteredAndSortedAsTheTypedResults() async throws {
        let realm = try await makeRealm()
        let (mismatches, sizes) = await realm.read { realm -> ([String], [Int]) in
            var mismatches: [String] = []
            // The number of matches of each predicate, so that the comparison is not one of empty results.
            var sizes: [Int] = []
            for predicate in Self.petPredicates {
                for (key, ascending) in Self.petSorts {
                    do {
                        let typed = try realm.objects(DQPet.self).filter(predicate)
                            .sorted(byKeyPath: key, ascending: ascending).map(\.id)
                        let dynamic = try realm.dynamicObjects("DQPet").filter(predicate)
                            .sorted(byKeyPath: key, ascending: ascending).map { $0["id"] as! Int }
                        if typed != dynamic { mismatches.append("\(predicate) by \(key): \(typed) ≠ \(dynamic)") }
                        if key == "id" { sizes.append(dynamic.count) }
                    } catch {
                        mismatches.append("\(predicate) by \(key): \(error)")
                    }
                }
            }
            for predicate in Self.ownerPredicates {
                let argument: Any = predicate.hasPrefix("since") ? Date(timeIntervalSince1970: 1500) : ["Ann", "Cy"]
                let usesArgument = predicate.contains("%@")
                do {
                    let typedOwners = realm.objects(DQOwner.self)
                    let dynamicOwners = realm.dynamicObjects("DQOwner")
                    let typed = try
                        (usesArgument ? typedOwners.filter(predicate, argument) : typedOwners.filter(predicate))
                        .sorted(byKeyPath: "name").map(\.id)
                    let dynamic = try
                        (usesArgument ? dynamicOwners.filter(predicate, argument) : dynamicOwners.filter(predicate))
                        .sorted(byKeyPath: "name").map { $0["id"] as! Int }
                    if typed != dynamic { mismatches.append("\(predicate): \(typed) ≠ \(dynamic)") }
                    sizes.append(dynamic.count)
                } catch {
                    mismatches.append("\(predicate): \(error)")
                }
            }
            return (mismatches, sizes)
        }
        #expect(mismatches == [])
        #expect(sizes.count == Self.petPredicates.count + Self.ownerPredicates.count)
        // Most predicates match some objects but not all (12 pets, 4 owners).
        let partial = zip(
            sizes,
            Array(repeating: 12, count: Self.petPredicates.count)
                + Array(repeating: 4, count: Self.ownerPredicates.count)
        )
        .filter { $0 > 0 && $0 < $1 }
        #expect(partial.count >= sizes.count - 3)
    }

    @Test func predicatesMatchWhatTheyShould() async throws {
        let realm = try await makeRealm()
        let found = try await realm.read { realm in
            [
                try realm.dynamicObjects("DQPet").filter("owner.name == %@", "bob").map { $0["name"] as! String },
                try realm.dynamicObjects("DQOwner").filter("pets.@count > 3").map { $0["name"] as! String },
                try realm.dynamicObjects("DQOwner").filter("ANY pets.name ==[c] %@", "rex").sorted(byKeyPath: "id")
                    .map { $0["name"] as! String },
                try realm.dynamicObjects("DQPet").filter("age > 4").sorted(byKeyPath: "age", ascending: false)
                    .limit(2).map { $0["name"] as! String },
            ]
        }
        #expect(found[0] == ["Bo"])
        #expect(found[1] == ["Cy"])
        #expect(found[2] == ["Ann", "Cy", "Ann"])
        #expect(found[3] == ["Otto", "rex"])
    }

    @Test func severalKeysDistinctLimitAndAggregatesAsTheTypedResults() async throws {
        let realm = try await makeRealm()
        try await realm.read { realm in
            let typed = realm.objects(DQPet.self)
                .sorted(by: [SortDescriptor(\DQPet.age, order: .reverse), SortDescriptor(\DQPet.name)]).map(\.id)
            let dynamic = try realm.dynamicObjects("DQPet")
                .sorted(by: [
                    DynamicSortDescriptor(keyPath: "age", ascending: false), DynamicSortDescriptor(keyPath: "name"),
                ])
                .map { $0["id"] as! Int }
            #expect(typed == dynamic)
            #expect(dynamic.count == 12)

            let typedDistinct = try realm.objects(DQPet.self).sorted(byKeyPath: "name").distinct(by: ["age"])
                .limit(4).map(\.id)
            let dynamicDistinct = try realm.dynamicObjects("DQPet").sorted(byKeyPath: "name").distinct(by: ["age"])
                .limit(4).map { $0["id"] as! Int }
            #expect(typedDistinct == dynamicDistinct)
            #expect(dynamicDistinct.count == 4)

            let chainedTyped = try realm.objects(DQPet.self).sorted(byKeyPath: "name").sorted(byKeyPath: "owner.name")
                .map(\.id)
            let chainedDynamic = try realm.dynamicObjects("DQPet").sorted(byKeyPath: "name")
                .sorted(byKeyPath: "owner.name").map { $0["id"] as! Int }
            #expect(chainedTyped == chainedDynamic)

            let adults = try realm.dynamicObjects("DQPet").filter("age >= 3")
            let typedAdults = try realm.objects(DQPet.self).filter("age >= 3")
            #expect(try adults.sum(ofProperty: "age") as Int == typedAdults.sum(ofProperty: "age") as Int)
            #expect(try adults.max(ofProperty: "age") as Int? == 12)
            #expect(try adults.min(ofProperty: "name") as String? == typedAdults.min(ofProperty: "name") as String?)
            #expect(try adults.average(ofProperty: "weight") as Double? == typedAdults.average(ofProperty: "weight"))
        }
    }

    @Test func collectionAccessFirstLastIndexAndIteration() async throws {
        let realm = try await makeRealm()
        try await realm.read { realm in
            let young = try realm.dynamicObjects("DQPet").filter("age < %@", 4).sorted(byKeyPath: "age")
            let ages = young.map { $0["age"] as! Int }
            #expect(ages == [0, 1, 2, 3, 3])
            #expect(young.count == 5)
            #expect(!young.isEmpty)
            #expect(young.first?["name"] as? String == "Milo")
            #expect(young.last?["age"] as? Int == 3)
            #expect(young[2]["name"] as? String == "Zoe")
            let zoe = young[2]
            #expect(young.index(of: zoe) == 2)
            var iterated: [String] = []
            for pet in young { iterated.append(pet["name"] as! String) }
            #expect(iterated == young.map { $0["name"] as! String })
            // A dynamic object (or a managed one) as an argument is matched by identity.
            let firstOwner = try realm.dynamicObjects("DQOwner").filter("id == 1").first
            let ann = try #require(firstOwner)
            let annsPets = try realm.dynamicObjects("DQPet").filter("owner == %@", ann).map { $0["id"] as! Int }
            #expect(annsPets == [1, 2, 3])
            let typedOwner = realm.object(ofType: DQOwner.self, forPrimaryKey: 1)
            let typedAnn = try #require(typedOwner)
            #expect(try realm.dynamicObjects("DQPet").filter("owner == %@", typedAnn).count == 3)
            // A link reads back as a dynamic object that can be queried from.
            let owner = try #require(young.first?["owner"] as? DynamicObject)
            #expect(owner["name"] as? String == "Cy")
            #expect(try realm.dynamicObjects("DQPet").filter("owner == %@ AND age > 5", owner).count == 2)
            #expect(try realm.dynamicObjects("DQPet").filter("age > 100").first == nil)
        }
    }

    @Test func resultsAreLive() async throws {
        let realm = try await makeRealm()
        let seen = try await realm.dynamicLiveness()
        #expect(seen[0] == [2, 4, 6, 8, 9, 11, 12])
        #expect(seen[1] == [2, 4, 6, 8, 9, 11, 12, 100])
        #expect(seen[2] == [2, 4, 6, 8, 9, 11, 12, 100])
        #expect(seen[3] == [4, 6, 8, 9, 11, 12])
        // Inside one write: the results follow the transaction's own changes.
        let counts = try await realm.write { realm -> [Int] in
            let named = try realm.dynamicObjects("DQPet").filter("name BEGINSWITH 'N'")
            var counts = [named.count]
            realm.create(DQPet.self, value: ["id": 200, "name": "Nemo"])
            counts.append(named.count)
            if let pet = realm.object(ofType: DQPet.self, forPrimaryKey: 200) { pet.name = "Dory" }
            counts.append(named.count)
            return counts
        }
        #expect(counts == [0, 1, 0])
    }

    @Test func unknownPropertiesThrowAsForTypedResults() async throws {
        let realm = try await makeRealm()
        let messages = await realm.read { realm -> [(typed: String, dynamic: String)] in
            var messages: [(typed: String, dynamic: String)] = []
            func capture(_ body: () throws -> Void) -> String {
                do {
                    try body()
                    return "no error"
                } catch let error as RealmError {
                    return "\(error.code): \(error.message)"
                } catch {
                    return "\(error)"
                }
            }
            let typed = realm.objects(DQPet.self)
            let dynamic = realm.dynamicObjects("DQPet")
            messages.append(
                (
                    capture { _ = try typed.filter("colour == 'red'") },
                    capture { _ = try dynamic.filter("colour == 'red'") }
                ))
            messages.append(
                (
                    capture { _ = try typed.filter("owner.colour == 'red'") },
                    capture { _ = try dynamic.filter("owner.colour == 'red'") }
                ))
            messages.append(
                (
                    capture { _ = try typed.sorted(byKeyPath: "colour") },
                    capture { _ = try dynamic.sorted(byKeyPath: "colour") }
                ))
            messages.append(
                (
                    capture { _ = try typed.sorted(byKeyPath: "nicknames") },
                    capture { _ = try dynamic.sorted(byKeyPath: "nicknames") }
                ))
            messages.append(
                (
                    capture { _ = try typed.distinct(by: ["colour"]) },
                    capture { _ = try dynamic.distinct(by: ["colour"]) }
                ))
            messages.append(
                (capture { _ = try typed.filter("age == 'x'") }, capture { _ = try dynamic.filter("age == 'x'") }))
            messages.append((capture { _ = try typed.filter("age >") }, capture { _ = try dynamic.filter("age >") }))
            messages.append(
                (
                    capture { _ = try typed.sum(ofProperty: "colour") as Int },
                    capture { _ = try dynamic.sum(ofProperty: "colour") as Int }
                ))
            // Odd key paths and predicates: errors, never traps.
            for keyPath in ["", "owner.", ".name", "@count", "nicknames.@count", "owner", "scores['x']", "name.length"]
            {
                messages.append(
                    (
                        capture { _ = try typed.sorted(byKeyPath: keyPath) },
                        capture { _ = try dynamic.sorted(byKeyPath: keyPath) }
                    ))
                messages.append(
                    (
                        capture { _ = try typed.distinct(by: [keyPath]) },
                        capture { _ = try dynamic.distinct(by: [keyPath]) }
                    ))
            }
            for predicate in [
                "", "owner.name.first == 'a'", "nicknames == 3", "SUBQUERY(owner, $o, $o.id > 1).@count > 0",
                "name BETWEEN {1, 2}", "ANY age > 1", "owner.pets.@avg.name > 1", "nicknames.@sum > 1", "%@ == 1",
            ] {
                messages.append(
                    (capture { _ = try typed.filter(predicate) }, capture { _ = try dynamic.filter(predicate) }))
            }
            return messages
        }
        for (typed, dynamic) in messages {
            #expect(typed.hasPrefix("invalidQuery"))
            #expect(dynamic == typed)
        }
        #expect(messages[0].dynamic.contains("DQPet has no property 'colour'"))
        #expect(messages[1].dynamic.contains("DQOwner has no property 'colour'"))
        #expect(messages[2].dynamic.contains("'colour'"))
    }

    @Test func anUnknownClassGivesEmptyResults() async throws {
        let realm = try await makeRealm()
        let (count, first, filtered, sorted, sum) = try await realm.read { realm in
            let nothing = realm.dynamicObjects("NoSuchClass")
            return (
                nothing.count, nothing.first == nil, try nothing.filter("anything > 3").count,
                try nothing.sorted(byKeyPath: "whatever").map { $0.className }, try nothing.sum(ofProperty: "x") as Int
            )
        }
        #expect(count == 0)
        #expect(first)
        #expect(filtered == 0)
        #expect(sorted == [])
        #expect(sum == 0)
        await #expect(throws: RealmError.self) {
            try await realm.read { realm in _ = try realm.dynamicObjects("NoSuchClass").filter("a ==") }
        }
    }

    @Test func aClassWithoutItsModelClassIsQueried() async throws {
        // The file has pets and owners; this realm opens it without listing the classes' models.
        let url = try await makeFile()
        let other = try await Realm(
            configuration: migrationConfiguration(url, [Dog.self, Person.self, Address.self], version: 1))
        let names = try await other.read { realm in
            try realm.dynamicObjects("DQPet").filter("owner.name == 'Ann' AND age > 1").sorted(byKeyPath: "name")
                .map { $0["name"] as! String }
        }
        #expect(names == ["Ben", "Rex", "Zoe", "bella"])
    }

    @Test func queriesInsideAMigrationBlock() async throws {
        let url = try await makeFile()
        let found = Locked<[String]>([])
        _ = try await Realm(
            configuration: migrationConfiguration(url, [DQOwner.self, DQPet.self], version: 2) { migration, _ in
                // Old objects, by the old schema.
                let old = try migration.oldObjects(ofType: "DQPet").filter("owner.name == 'bob' OR age > 10")
                    .sorted(byKeyPath: "age")
                found.withLock { $0.append(old.map { $0["name"] as! String }.joined(separator: ",")) }
                // New objects: queried, written, created, deleted; the results follow.
                let puppies = try migration.newObjects(ofType: "DQPet").filter("age < 2")
                found.withLock { $0.append("\(puppies.count)") }
                for pet in try migration.newObjects(ofType: "DQPet").filter("owner == nil") { migration.delete(pet) }
                migration.create("DQPet", value: ["id": 300, "name": "Pip", "age": 0])
                puppies.first?["age"] = 5
                found.withLock { $0.append(puppies.map { $0["name"] as! String }.joined(separator: ",")) }
                let ownerless = try migration.newObjects(ofType: "DQPet").filter("owner == nil").count
                found.withLock { $0.append("\(ownerless)") }
                // The old objects are as they were.
                found.withLock { $0.append("\(try! migration.oldObjects(ofType: "DQPet").filter("age < 2").count)") }
            })
        #expect(found.withLock { $0 } == ["Bo,Otto", "2", "Milo,Pip", "1", "2"])
    }

    @Test func aRenamedPropertyIsQueriedByItsOldNameInTheOldObjectsAndItsNewNameInTheNew() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: migrationConfiguration(url, [TagV1.Tag.self], version: 1))
            try await realm.write { realm in
                for (code, uses) in [("a", 3), ("b", 1), ("c", 7)] {
                    realm.create(TagV1.Tag.self, value: ["code": code, "uses": uses])
                }
            }
        }
        let found = Locked<[String]>([])
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [TagV2.Tag.self], version: 2) { migration, _ in
                migration.renameProperty(onType: "Tag", from: "code", to: "id")
                let old = try migration.oldObjects(ofType: "Tag").filter("uses > 2").sorted(byKeyPath: "code")
                found.withLock { $0.append(old.map { $0["code"] as! String }.joined()) }
                let new = try migration.newObjects(ofType: "Tag").filter("uses > 2").sorted(byKeyPath: "id")
                found.withLock { $0.append(new.map { $0["id"] as! String }.joined()) }
                do {
                    _ = try migration.newObjects(ofType: "Tag").filter("code == 'a'")
                    found.withLock { $0.append("no error") }
                } catch {
                    found.withLock { $0.append(message(of: error)) }
                }
            })
        let values = found.withLock { $0 }
        #expect(values.prefix(2) == ["ac", "ac"])
        #expect(values.last?.contains("Tag has no property 'code'") == true)
        #expect(try await realm.read { try $0.dynamicObjects("Tag").filter("uses > 2").count } == 2)
    }
}

/// The Migrations article's dynamic-API examples: dogs whose `nick` becomes `name`.
enum DocDogsV1 {
    final class Dog: Object {
        @Persisted var nick = ""
        @Persisted var age = 0
        @Persisted var owner: Person?
    }
    final class Person: Object {
        @Persisted var name = ""
    }
}

enum DocDogsV2 {
    final class Dog: Object {
        @Persisted var name = ""
        @Persisted var age = 0
        @Persisted var owner: Person?
    }
    final class Person: Object {
        @Persisted var name = ""
    }
}

@Suite struct DynamicQueryArticleTests {
    @Test func theArticlesExamplesRun() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(
                configuration: migrationConfiguration(url, [DocDogsV1.Dog.self, DocDogsV1.Person.self], version: 1))
            try await realm.write { realm in
                let jane = realm.create(DocDogsV1.Person.self, value: ["name": "Jane"])
                let joe = realm.create(DocDogsV1.Person.self, value: ["name": "Joe"])
                for (nick, age, owner) in [
                    ("Rex", 1, jane), ("Fido", 0, joe), ("Old", 16, nil), ("Spot", 1, joe), ("Big", 5, jane),
                    ("Gramps", 17, jane),
                ] {
                    realm.create(DocDogsV1.Dog.self, value: ["nick": nick, "age": age, "owner": owner as Any])
                }
            }
        }
        let seniors = Locked(-1)
        let realm = try await Realm(
            configuration: migrationConfiguration(url, [DocDogsV2.Dog.self, DocDogsV2.Person.self], version: 2) {
                migration, _ in
                migration.renameProperty(onType: "Dog", from: "nick", to: "name")
                for dog in try migration.newObjects(ofType: "Dog").filter("owner == nil AND age > %@", 15) {
                    migration.delete(dog)
                }
                let count = try migration.oldObjects(ofType: "Dog").filter("age > 10").count  // old names: "nick"
                seniors.withLock { $0 = count }
            })
        #expect(seniors.withLock { $0 } == 2)
        let puppies = try await realm.read { realm in
            try realm.dynamicObjects("Dog")
                .filter("age < %@ AND owner.name BEGINSWITH %@", 2, "J")
                .sorted(byKeyPath: "owner.name")
                .sorted(by: [DynamicSortDescriptor(keyPath: "age", ascending: false)])
                .map { $0["name"] as! String }
        }
        // Age descending first, then owner name (the earlier sort) among the dogs of the same age.
        #expect(puppies == ["Rex", "Spot", "Fido"])
        #expect(
            await realm.read { $0.objects(DocDogsV2.Dog.self).map(\.name) } == ["Rex", "Fido", "Spot", "Big", "Gramps"])
    }
}
