import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Object models: creating objects, property types (optional, enum, every supported type), defaults,
// ignored properties, key-value coding and inheritance.

/// Ignored properties "won't automatically update their value if the same property on another instance
/// representing the same Realm object is changed".
private func auditIgnoredPropertyPerInstance(_ realm: isolated Realm) async throws -> [Int] {
    try await realm.beginWrite()
    let first = realm.create(AuditPerson.self, value: ["name": "Ann"])
    try await realm.commitWrite()
    let second = try #require(realm.objects(AuditPerson.self).first)
    first.tmpID = 42
    try await realm.beginWrite()
    first.name = "Anna"
    try await realm.commitWrite()
    return [first.tmpID, second.tmpID, second.name == "Anna" ? 1 : 0]
}

@Suite(.timeLimit(.minutes(30))) struct ModelTests {
    @Test(.tags(.seed)) func createObjectsThreeWays() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let names = try await realm.write { realm -> [String] in
            // (1) Create a Dog object and then set its properties.
            let myDog = SeedDog()
            myDog.name = "Rex"
            myDog.age = 10
            // (2) Create a Dog object from a dictionary.
            let myOtherDog = SeedDog(value: ["name": "Pluto", "age": 3])
            // (3) Create a Dog object from an array, in property order.
            let myThirdDog = SeedDog(value: ["Fido", 5])
            #expect(!myDog.isManaged && !myOtherDog.isManaged && !myThirdDog.isManaged)
            #expect(myOtherDog.name == "Pluto" && myOtherDog.age == 3)
            #expect(myThirdDog.name == "Fido" && myThirdDog.age == 5)
            realm.add([myDog, myOtherDog, myThirdDog])
            #expect(myDog.isManaged && myOtherDog.isManaged && myThirdDog.isManaged)
            return realm.objects(SeedDog.self).map { "\($0.name):\($0.age)" }
        }
        #expect(names == ["Rex:10", "Pluto:3", "Fido:5"])

        // The same three ways through create(_:value:).
        let created = try await realm.write { realm -> [String] in
            realm.create(SeedDog.self, value: ["name": "Lassie", "age": 7])
            realm.create(SeedDog.self, value: ["Snoopy", 70])
            realm.create(SeedDog.self, value: SeedDog(value: ["Odie", 4]))
            return realm.objects(SeedDog.self).dropFirst(3).map { "\($0.name):\($0.age)" }
        }
        #expect(created == ["Lassie:7", "Snoopy:70", "Odie:4"])
        // Missing properties take their defaults.
        let defaults = try await realm.write { realm -> String in
            let dog = realm.create(SeedDog.self, value: ["age": 2])
            return "\(dog.name)|\(dog.age)|\(dog.owner == nil)"
        }
        #expect(defaults == "|2|true")
    }

    @Test(.tags(.seed)) func nestedObjectsFromNestedArraysAndDictionaries() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let result = try await realm.write { realm -> [String] in
            let aDog = SeedDog(value: ["Buster", 5])
            let anotherDog = SeedDog(value: ["name": "Buddy", "age": 6])
            // Instead of using already existing dogs...
            let aPerson = SeedPerson(value: ["Jane", 30, [aDog, anotherDog]])
            // ...we can create them inline.
            let anotherPerson = SeedPerson(value: ["Jane", 30, [["Buster", 5], ["Buddy", 6]]])
            #expect(aPerson.dogs.count == 2)
            #expect(anotherPerson.dogs.map(\.name) == ["Buster", "Buddy"])
            realm.add(aPerson)
            realm.add(anotherPerson)
            // And dictionaries nested in dictionaries, through create.
            realm.create(
                SeedPerson.self,
                value: ["name": "Joe", "age": 40, "dogs": [["name": "Rex", "age": 1], ["Spot", 2]]])
            return realm.objects(SeedPerson.self).map { person in
                "\(person.name) \(person.age): " + person.dogs.map { "\($0.name)/\($0.age)" }.joined(separator: ",")
            }
        }
        #expect(result == ["Jane 30: Buster/5,Buddy/6", "Jane 30: Buster/5,Buddy/6", "Joe 40: Rex/1,Spot/2"])
        let dogs = await realm.read { $0.objects(SeedDog.self).count }
        #expect(dogs == 6, "each nested dog is an object of its own")

        // The guide's "Model Inheritance" composition example.
        let duck = try await realm.write { realm -> String in
            let duck = SeedDuck(value: ["animal": ["age": 3], "name": "Gustav"])
            #expect(duck.animal?.age == 3)
            realm.add(duck)
            return "\(duck.name) \(duck.animal?.age ?? -1) \(realm.objects(SeedAnimal.self).count)"
        }
        #expect(duck == "Gustav 3 1")
    }

    @Test(.tags(.seed)) func optionalProperties() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let values = try await realm.write { realm -> [String] in
            let person = realm.create(SeedOptionalPerson.self, value: ["Jane", 27])
            let first = "\(person.name ?? "nil") \(person.age.map(String.init) ?? "nil")"
            person.age = 28
            let second = "\(person.age.map(String.init) ?? "nil")"
            let empty = realm.create(SeedOptionalPerson.self)
            let third = [
                empty.name == nil, empty.age == nil, empty.isMember == nil, empty.height == nil, empty.weight == nil,
                empty.photo == nil, empty.joined == nil, empty.taste == nil,
            ].allSatisfy { $0 }
            empty.isMember = false
            empty.height = 0
            empty.weight = 1.5
            empty.photo = Data()
            empty.joined = Date(timeIntervalSince1970: 5)
            empty.taste = .bitter
            return [first, second, "\(third)"]
        }
        #expect(values == ["Jane 27", "28", "true"])
        let stored = await realm.read { realm -> [String] in
            let people = realm.objects(SeedOptionalPerson.self)
            let p = people[1]
            return [
                "\(people[0].age ?? -1)", "\(p.isMember.map(String.init) ?? "nil")", "\(p.height ?? -1)",
                "\(p.weight ?? -1)", "\(p.photo?.count ?? -1)", "\(p.joined?.timeIntervalSince1970 ?? -1)",
                p.taste?.rawValue ?? "nil", p.name ?? "nil",
            ]
        }
        #expect(stored == ["28", "false", "0.0", "1.5", "0", "5.0", "bitter", "nil"])
        // Setting an optional back to nil.
        let cleared = try await realm.write { realm -> Bool in
            let p = realm.objects(SeedOptionalPerson.self)[0]
            p.age = nil
            p.name = nil
            return p.age == nil && p.name == nil
        }
        #expect(cleared)
        let clearedStored = await realm.read { realm in
            let p = realm.objects(SeedOptionalPerson.self)[0]
            return p.age == nil && p.name == nil
        }
        #expect(clearedStored)
    }

    @Test(.tags(.seed)) func enumsAreStoredAsTheirRawValues() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let tastes = try await realm.write { realm -> [Taste?] in
            let a = realm.create(AllTypes.self, value: ["taste": Taste.sour, "optionalTaste": "bitter"])
            let b = realm.create(AllTypes.self, value: ["taste": "bitter"])
            b.taste = .sweet
            return [a.taste, a.optionalTaste, b.taste, b.optionalTaste]
        }
        #expect(tastes == [.sour, .bitter, .sweet, nil])
        // A raw value that is not a case does not fit.
        await expectRealmError(.invalidValue) {
            try await realm.write { $0.create(AllTypes.self, value: ["taste": "salty"]) }
        }
        let count = await realm.read { $0.objects(AllTypes.self).count }
        #expect(count == 2)
    }

    @Test(.tags(.seed)) func allPropertyTypesRoundTrip() async throws {
        let config = seedConfiguration(durability: .full)
        let id = UUID()
        let uuid = UUID()
        let objectId = ObjectId.generate()
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let data = Data([0, 1, 2, 255, 0])
        let decimal = try #require(Decimal128("-12345.6789"))
        let expected = [
            "true", "\(Int.min)", "\(Int8.min)", "\(Int16.max)", "\(Int32.min)", "\(Int64.max)", "\(Float.pi)",
            "\(-Double.greatestFiniteMagnitude)", "héllo 🐶\u{0}end", data.base64EncodedString(),
            "\(date.timeIntervalSince1970)", uuid.uuidString, objectId.stringValue, decimal.description, "bitter",
            "-1", "", "\(Date(timeIntervalSince1970: -1).timeIntervalSince1970)", "sour", "idx", "42",
        ]
        let describe: @Sendable (AllTypes) -> [String] = { o in
            [
                "\(o.bool)", "\(o.int)", "\(o.int8)", "\(o.int16)", "\(o.int32)", "\(o.int64)", "\(o.float)",
                "\(o.double)", o.string, o.data.base64EncodedString(), "\(o.date.timeIntervalSince1970)",
                o.uuid.uuidString, o.objectId.stringValue, o.decimal.description, o.taste.rawValue,
                "\(o.optionalInt ?? 0)", o.optionalString ?? "nil", "\(o.optionalDate?.timeIntervalSince1970 ?? 0)",
                o.optionalTaste?.rawValue ?? "nil", o.indexedName, "\(o.ignored)",
            ]
        }
        do {
            let realm = try await Realm(configuration: config)
            let written = try await realm.write { realm -> [String] in
                let o = AllTypes()
                o.id = id
                o.bool = true
                o.int = Int.min
                o.int8 = Int8.min
                o.int16 = Int16.max
                o.int32 = Int32.min
                o.int64 = Int64.max
                o.float = Float.pi
                o.double = -Double.greatestFiniteMagnitude
                o.string = "héllo 🐶\u{0}end"
                o.data = data
                o.date = date
                o.uuid = uuid
                o.objectId = objectId
                o.decimal = decimal
                o.taste = .bitter
                o.optionalInt = -1
                o.optionalString = ""
                o.optionalDate = Date(timeIntervalSince1970: -1)
                o.optionalTaste = .sour
                o.indexedName = "idx"
                o.ignored = 7
                realm.add(o)
                return describe(realm.object(ofType: AllTypes.self, forPrimaryKey: id)!)
            }
            #expect(written == expected, "the ignored property reads its initial value from a fetched object")
            let frozen = await realm.freeze()
            let fromFrozen = try #require(frozen.object(ofType: AllTypes.self, forPrimaryKey: id))
            let frozenValues: [String] = [
                "\(fromFrozen.bool)", "\(fromFrozen.int)", "\(fromFrozen.int8)", "\(fromFrozen.int16)",
                "\(fromFrozen.int32)", "\(fromFrozen.int64)", "\(fromFrozen.float)", "\(fromFrozen.double)",
                fromFrozen.string, fromFrozen.data.base64EncodedString(), "\(fromFrozen.date.timeIntervalSince1970)",
                fromFrozen.uuid.uuidString, fromFrozen.objectId.stringValue, fromFrozen.decimal.description,
                fromFrozen.taste.rawValue, "\(fromFrozen.optionalInt ?? 0)", fromFrozen.optionalString ?? "nil",
                "\(fromFrozen.optionalDate?.timeIntervalSince1970 ?? 0)", fromFrozen.optionalTaste?.rawValue ?? "nil",
                fromFrozen.indexedName, "42",
            ]
            #expect(frozenValues == expected)
        }
        // After every realm on the file is released, from disk.
        let reopened = try await Realm(configuration: config)
        let read = await reopened.read { realm in
            realm.object(ofType: AllTypes.self, forPrimaryKey: id).map(describe) ?? []
        }
        #expect(read == expected)
    }

    @Test(.tags(.seed)) func ignoredPropertiesAreNotStored() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let values = try await realm.write { realm -> [Int] in
            let person = SeedPerson(value: ["name": "Ann", "age": 3])
            person.tmpID = 99
            realm.add(person)
            let fetched = realm.objects(SeedPerson.self).first!
            #expect(fetched.displayName == "Ann (3)")
            return [person.tmpID, fetched.tmpID]
        }
        #expect(values == [99, 0])
        #expect(SeedPerson(value: ["tmpID": 5]).tmpID == 0)
        #expect(SeedPerson()["tmpID"] == nil, "KVC does not see ignored properties")
    }

    @Test(.tags(.seed)) func keyValueCoding() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let values = try await realm.write { realm -> [String] in
            let dog = realm.create(SeedDog.self, value: ["name": "Rex", "age": 1])
            dog["name"] = "Max"
            dog["age"] = 4
            return ["\(dog["name"] ?? "nil")", "\(dog["age"] ?? "nil")", "\(dog["nope"] == nil)"]
        }
        #expect(values == ["Max", "4", "true"])
        await expectRealmError(.invalidValue) {
            try await realm.write { realm in realm.objects(SeedDog.self).first!["age"] = "old" }
        }
        let age = await realm.read { $0.objects(SeedDog.self).first!.age }
        #expect(age == 4)
    }

    @Test(.tags(.audit)) func uuidStringDefaultPrimaryKeysAreUniquePerObject() async throws {
        // "A common pattern is to set the default property value to NSUUID().UUIDString to generate unique
        // string IDs" and "a createdAt property with a default value of NSDate()".
        let realm = try await Realm(configuration: auditConfiguration())
        let start = Date()
        try await realm.write { realm in
            realm.create(AuditTicket.self, value: ["name": "created"])
            realm.create(AuditTicket.self, value: ["name": "created too"])
            realm.add(AuditTicket(value: ["name": "added"]))
            realm.add(AuditTicket())
        }
        let tickets = await realm.read { realm in
            realm.objects(AuditTicket.self).map { ($0.id, $0.createdAt) }
        }
        #expect(tickets.count == 4)
        #expect(Set(tickets.map(\.0)).count == 4, "each object gets its own default key")
        #expect(tickets.allSatisfy { UUID(uuidString: $0.0) != nil })
        #expect(tickets.allSatisfy { abs($0.1.timeIntervalSince(start)) < 60 }, "createdAt defaults to now")
        let found = await realm.read { realm in
            tickets.allSatisfy { realm.object(ofType: AuditTicket.self, forPrimaryKey: $0.0) != nil }
        }
        #expect(found)
    }

    @Test(.tags(.audit)) func optionalNumbersOfEverySize() async throws {
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            realm.create(AuditOptionals.self)
            realm.create(
                AuditOptionals.self,
                value: [
                    "int8": Int8.min, "int16": Int16.max, "int32": Int32.min, "int64": Int64.max, "float": Float(-1.5),
                    "bool": false,
                ])
        }
        let values = await realm.read { realm in
            realm.objects(AuditOptionals.self).map { o in
                [
                    o.int8.map { "\($0)" }, o.int16.map { "\($0)" }, o.int32.map { "\($0)" }, o.int64.map { "\($0)" },
                    o.float.map { "\($0)" }, o.bool.map { "\($0)" },
                ]
            }
        }
        #expect(values.first == [nil, nil, nil, nil, nil, nil])
        #expect(values.last == ["\(Int8.min)", "\(Int16.max)", "\(Int32.min)", "\(Int64.max)", "-1.5", "false"])
        // And back to nil.
        try await realm.write { realm in
            let o = realm.objects(AuditOptionals.self).last!
            o.int8 = nil
            o.int64 = nil
            o.bool = nil
        }
        let cleared = await realm.read { realm in
            realm.objects(AuditOptionals.self).last.map { [$0.int8 == nil, $0.int64 == nil, $0.bool == nil] }
        }
        #expect(cleared == [true, true, true])
    }

    @Test(.tags(.audit)) func intBackedEnumsAloneAndInCollections() async throws {
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            realm.create(AuditTask.self, value: ["title": "default"])
            let task = realm.create(
                AuditTask.self,
                value: ["title": "given", "priority": AuditPriority.high, "previous": 1, "history": [1, 5]])
            task.history.append(.high)
            task.seen.insert(objectsIn: [.low, .low, .high])
            task.byOwner["ann"] = .normal
        }
        let tasks = try await realm.read { realm in
            try realm.objects(AuditTask.self).filter("priority == %@", AuditPriority.high).map { task in
                [
                    "\(task.priority)", "\(task.previous.map { "\($0)" } ?? "nil")",
                    task.history.map { "\($0.rawValue)" }.joined(separator: ","),
                    task.seen.map { "\($0.rawValue)" }.sorted().joined(separator: ","),
                    "\(task.byOwner["ann"].map { "\($0)" } ?? "nil")",
                ]
            }
        }
        #expect(tasks == [["high", "low", "1,5,10", "1,10", "normal"]])
        let defaults = await realm.read { realm in
            realm.objects(AuditTask.self).first.map { "\($0.priority) \($0.previous == nil)" }
        }
        #expect(defaults == "normal true")
        // A raw value that is not a case does not fit.
        await expectRealmError(.invalidValue) {
            try await realm.write { $0.create(AuditTask.self, value: ["priority": 7]) }
        }
    }

    @Test(.tags(.audit)) func ignoredPropertiesDoNotAutoUpdateAndCannotBeQueried() async throws {
        // "they can't be used in queries, they won't automatically update their value if the same property on
        // another instance representing the same Realm object is changed".
        let realm = try await Realm(configuration: auditConfiguration())
        let values = try await auditIgnoredPropertyPerInstance(realm)
        #expect(values == [42, 0, 1], "persisted properties update across instances, the ignored one does not")
        let error = await realm.read { realm -> RealmError? in
            do {
                _ = try realm.objects(AuditPerson.self).filter("tmpID == 42")
                return nil
            } catch {
                return error as? RealmError
            }
        }
        #expect(error?.code == .invalidQuery, "\(String(describing: error))")
    }

    @Test(.tags(.audit)) func subclassesInheritPersistedPropertiesAndMethods() async throws {
        // "Realm allows models to be further subclassed ... Class methods, instance methods and properties on
        // parent classes are inherited in their child classes."
        let realm = try await Realm(configuration: auditConfiguration())
        let inside = try await realm.write { realm -> [String] in
            let cat = realm.create(AuditCat.self, value: ["age": 3, "name": "Tom"])
            let byArray = realm.create(AuditCat.self, value: [2, "Felix"])
            realm.create(AuditAnimal.self, value: ["age": 9])
            return ["\(cat.name) \(cat.age) \(cat.ageInDogYears())", "\(byArray.name) \(byArray.age)"]
        }
        #expect(inside == ["Tom 3 21", "Felix 2"])
        let stored = await realm.read { realm in
            [
                realm.objects(AuditCat.self).map { "\($0.name) \($0.age)" }.joined(separator: ","),
                // "Querying on multiple classes simultaneously" is not possible: each class has its own objects.
                "\(realm.objects(AuditAnimal.self).count)",
            ]
        }
        #expect(stored == ["Tom 3,Felix 2", "1"])
    }

    @Test(.tags(.regression)) func hostileDecimalTextIsRejected() {
        #expect(Decimal128("1e-9223372036854775808") == nil)
        #expect(Decimal128("1e9223372036854775807") == nil)
        #expect(Decimal128("12.50") == Decimal128("12.5"))
    }

    @Test(.tags(.regression)) func anInitThatSetsPropertiesWorksForManagedObjects() async throws {
        let realm = try await Realm(configuration: regressionConfiguration(types: [RegInitSetter.self]))
        try await realm.write { realm in realm.add(RegInitSetter()) }
        try await realm.write { realm in realm.objects(RegInitSetter.self).first!.count = 7 }
        #expect(await realm.read { $0.objects(RegInitSetter.self).first!.count } == 7)
    }
}
