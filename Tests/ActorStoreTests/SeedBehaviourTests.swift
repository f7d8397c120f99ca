import ActorStore
import Foundation
import Synchronization
import Testing

// The examples of the Realm Swift guide (sections Models, Relationships, Collections, Writes, Realms and
// Threading), translated to ActorStore (`@Persisted` for `dynamic var`, `update: .modified` for
// `update: true`, `try await realm.write { realm in ... }` for `try! realm.write { ... }`), asserting
// that they behave as the guide says.

// MARK: Models of these tests

final class SeedDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: SeedPerson?
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<SeedPerson>
}

final class SeedPerson: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<SeedDog>
    @Persisted var birthdate = Date(timeIntervalSince1970: 1)
    @Persisted var address: SeedAddress?
    @Persisted var pastAddresses: List<SeedAddress>
    @Persisted var nicknames: List<String>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted(originProperty: "owner") var ownedDogs: LinkingObjects<SeedDog>
    /// Not `@Persisted`: ignored by the realm (the guide's `ignoredProperties()`).
    var tmpID = 0
    /// Read-only: ignored as well.
    var displayName: String { "\(name) (\(age))" }
}

final class SeedAddress: EmbeddedObject {
    @Persisted var street = ""
    @Persisted var city = ""
}

/// The guide's "Optional Properties" `Person`: an optional string and an optional number (RealmOptional).
final class SeedOptionalPerson: Object {
    @Persisted var name: String?
    @Persisted var age: Int?
    @Persisted var isMember: Bool?
    @Persisted var height: Double?
    @Persisted var weight: Float?
    @Persisted var photo: Data?
    @Persisted var joined: Date?
    @Persisted var taste: Taste?
}

/// The guide's "Model Inheritance" composition example.
final class SeedAnimal: Object {
    @Persisted var age = 0
}

final class SeedDuck: Object {
    @Persisted var animal: SeedAnimal?
    @Persisted var name = ""
}

/// Holds the collection kinds of the "Collections" section.
final class SeedKennel: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var dogSet: MutableSet<SeedDog>
    @Persisted var numbers: MutableSet<Int>
    @Persisted var dogsByName: Map<String, SeedDog?>
    @Persisted var prices: Map<String, Double>
    @Persisted var optionalNames: List<String?>
}

/// Links to objects with a primary key, for nested updates.
final class SeedLibrary: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var featured: Book?
    @Persisted var books: List<Book>
}

/// The guide's "Threading" example `Person(name:)`.
final class SeedNamedPerson: Object {
    @Persisted var name = ""
    @Persisted var birthdate = Date(timeIntervalSince1970: 0)

    convenience init(name: String) {
        self.init()
        self.name = name
    }
}

/// Records the arguments of `shouldCompactOnLaunch` calls.
private final class SeedCompactionLog: Sendable {
    let calls = Mutex<[(total: Int, used: Int)]>([])
}

private let seedTypes: [ObjectBase.Type] = [
    SeedDog.self, SeedPerson.self, SeedAddress.self, SeedOptionalPerson.self, SeedAnimal.self, SeedDuck.self,
    SeedKennel.self, SeedNamedPerson.self, SeedLibrary.self, Book.self, AllTypes.self,
]

private func seedConfiguration(durability: Realm.Durability = .none) -> Realm.Configuration {
    testConfiguration(seedTypes, durability: durability)
}

/// Expects `body` to throw a `RealmError` with `code`.
private func expectRealmError(
    _ code: RealmError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    let error = await #expect(throws: RealmError.self, comment, sourceLocation: sourceLocation) { try await body() }
    #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
}

/// Expects an exit test's standard error to contain `message` (the stop was the expected one).
private func expectStopMessage(
    _ result: ExitTest.Result?, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(output.contains(message), "standard error: \(output.suffix(400))", sourceLocation: sourceLocation)
}

// MARK: Scenarios that keep live objects across transactions (functions isolated to the realm)

/// "Adding Objects" then "Typed Updates": the added object stays usable and its changes are persisted.
private func addThenKeepUsing(_ realm: isolated Realm) async throws {
    let author = SeedPerson()
    author.name = "David Foster Wallace"
    author.tmpID = 7
    try await realm.beginWrite()
    try await realm.add(author)
    try await realm.commitWrite()
    #expect(author.isManaged)
    #expect(author.name == "David Foster Wallace")
    #expect(author.tmpID == 7, "an ignored property keeps its value on the instance")

    try await realm.beginWrite()
    author.name = "Thomas Pynchon"
    try await realm.commitWrite()
    #expect(realm.objects(SeedPerson.self).count == 1)
    let fetched = realm.objects(SeedPerson.self).first
    #expect(fetched?.name == "Thomas Pynchon")
    #expect(fetched?.tmpID == 0, "ignored properties are not stored")
    #expect(fetched?.isSameObject(as: author) == true)
    #expect(fetched == author)
}

/// "Auto-Updating Objects": two instances of one object see each other's writes.
private func autoUpdatingObjects(_ realm: isolated Realm) async throws {
    let myDog = SeedDog()
    myDog.name = "Fido"
    myDog.age = 1
    try await realm.beginWrite()
    try await realm.add(myDog)
    try await realm.commitWrite()

    let myPuppy = realm.objects(SeedDog.self).first { $0.age == 1 }
    #expect(myPuppy != nil)
    try await realm.beginWrite()
    myPuppy?.age = 2
    #expect(myDog.age == 2, "visible inside the transaction that made it")
    try await realm.commitWrite()
    #expect(myDog.age == 2)

    try await realm.beginWrite()
    myDog.name = "Rex"
    try await realm.commitWrite()
    #expect(myPuppy?.name == "Rex")
}

/// "Auto-Updating Results": a Results reflects the realm's current state, including the open transaction.
private func autoUpdatingResults(_ realm: isolated Realm) async throws {
    let puppies = realm.objects(SeedDog.self)
    #expect(puppies.count == 0)
    try await realm.beginWrite()
    realm.create(SeedDog.self, value: ["name": "Fido", "age": 1])
    #expect(puppies.count == 1, "a Results sees its own realm's open write transaction")
    try await realm.commitWrite()
    #expect(puppies.count == 1)
    #expect(puppies.first?.name == "Fido")

    // Fast enumeration iterates the objects that matched when it began, even if the loop deletes them.
    try await realm.beginWrite()
    for i in 0..<4 { realm.create(SeedDog.self, value: ["name": "d\(i)", "age": i]) }
    var visited: [String] = []
    for dog in realm.objects(SeedDog.self) {
        visited.append(dog.name)
        realm.delete(dog)
    }
    try await realm.commitWrite()
    #expect(visited == ["Fido", "d0", "d1", "d2", "d3"])
    #expect(puppies.isEmpty)
}

/// "Deleting Objects": links to a deleted object become nil, lists drop it, and held instances are
/// invalidated.
private func deleteNilsLinksAndLeavesLists(_ realm: isolated Realm) async throws {
    try await realm.beginWrite()
    let jim = realm.create(SeedPerson.self, value: ["name": "Jim"])
    let rex = realm.create(SeedDog.self, value: ["name": "Rex", "owner": jim])
    let fido = realm.create(SeedDog.self, value: ["name": "Fido", "owner": jim])
    jim.dogs.append(contentsOf: [rex, fido, rex])
    try await realm.commitWrite()
    #expect(rex.owner?.name == "Jim")
    #expect(jim.dogs.map(\.name) == ["Rex", "Fido", "Rex"])

    try await realm.beginWrite()
    realm.delete(rex)
    #expect(rex.isInvalidated)
    #expect(jim.dogs.map(\.name) == ["Fido"], "deleted objects leave every list (all occurrences)")
    try await realm.commitWrite()
    #expect(rex.isInvalidated)
    #expect(!fido.isInvalidated)
    #expect(jim.dogs.count == 1)

    try await realm.beginWrite()
    realm.delete(jim)
    try await realm.commitWrite()
    #expect(jim.isInvalidated)
    #expect(fido.owner == nil, "a link to a deleted object reads as nil")
    #expect(realm.objects(SeedDog.self).map(\.name) == ["Fido"])

    // "Delete all objects from the realm".
    try await realm.beginWrite()
    realm.create(SeedPerson.self, value: ["name": "Ann", "dogs": [["name": "Buddy"]]])
    realm.create(Book.self, value: ["id": 1, "title": "Cheese recipes"])
    realm.deleteAll()
    try await realm.commitWrite()
    let isEmpty = realm.isEmpty
    #expect(isEmpty)
    #expect(fido.isInvalidated)
    #expect(realm.objects(SeedDog.self).count == 0)
    #expect(realm.objects(Book.self).count == 0)

    // The schema stays: objects can be created again.
    try await realm.beginWrite()
    realm.create(SeedDog.self, value: ["name": "Again"])
    try await realm.commitWrite()
    #expect(realm.objects(SeedDog.self).map(\.name) == ["Again"])
}

/// Embedded objects are owned by their parent: deleted with it, and when replaced or removed.
private func embeddedObjectsLifecycle(_ realm: isolated Realm) async throws {
    try await realm.beginWrite()
    let ann = realm.create(
        SeedPerson.self,
        value: [
            "name": "Ann", "address": ["street": "Main", "city": "Oslo"],
            "pastAddresses": [["street": "A", "city": "Bergen"], ["B", "Tromsø"]],
        ])
    try await realm.commitWrite()
    let first = try #require(ann.address)
    #expect(first.isManaged)
    #expect(first.city == "Oslo")
    #expect(ann.pastAddresses.map(\.city) == ["Bergen", "Tromsø"])
    let past = ann.pastAddresses.map { $0 }

    // Replacing the embedded object deletes the old one.
    try await realm.beginWrite()
    ann.address = SeedAddress(value: ["street": "High", "city": "Paris"])
    try await realm.commitWrite()
    #expect(first.isInvalidated, "the replaced embedded object is deleted")
    #expect(ann.address?.city == "Paris")
    let second = try #require(ann.address)

    // Setting nil deletes it too.
    try await realm.beginWrite()
    ann.address = nil
    try await realm.commitWrite()
    #expect(second.isInvalidated)
    #expect(ann.address == nil)

    // Removing from a list of embedded objects deletes them.
    try await realm.beginWrite()
    ann.pastAddresses.remove(at: 0)
    try await realm.commitWrite()
    #expect(past[0].isInvalidated)
    #expect(!past[1].isInvalidated)

    // Deleting the parent deletes what it owns.
    try await realm.beginWrite()
    ann.address = SeedAddress(value: ["street": "Last", "city": "Rome"])
    try await realm.commitWrite()
    let third = try #require(ann.address)
    try await realm.beginWrite()
    realm.delete(ann)
    try await realm.commitWrite()
    #expect(third.isInvalidated, "embedded objects are deleted with their parent")
    #expect(past[1].isInvalidated, "embedded objects in a list are deleted with their parent")
}

/// Objects created in a cancelled write transaction are invalidated; the transaction left nothing.
private func cancelledTransaction(_ realm: isolated Realm) async throws {
    var inTransaction = realm.isInWriteTransaction
    #expect(!inTransaction)
    try await realm.beginWrite()
    inTransaction = realm.isInWriteTransaction
    #expect(inTransaction)
    let dog = realm.create(SeedDog.self, value: ["name": "Ghost"])
    let cat = SeedDog(value: ["name": "Added"])
    try await realm.add(cat)
    #expect(realm.objects(SeedDog.self).count == 2)
    realm.cancelWrite()
    inTransaction = realm.isInWriteTransaction
    #expect(!inTransaction)
    #expect(dog.isInvalidated)
    #expect(cat.isInvalidated)
    #expect(realm.objects(SeedDog.self).count == 0)

    // A change to an existing object is rolled back as well.
    try await realm.beginWrite()
    let kept = realm.create(SeedDog.self, value: ["name": "Kept", "age": 1])
    try await realm.commitWrite()
    try await realm.beginWrite()
    kept.age = 99
    realm.cancelWrite()
    #expect(kept.age == 1)
    #expect(!kept.isInvalidated)
}

/// The guide's "Threading" example: many transactions from one isolated function with beginWrite /
/// commitWrite (translated from `realm.beginWrite()` / `try! realm.commitWrite()`).
private func batchedTransactions(_ realm: isolated Realm) async throws -> Int {
    for idx1 in 0..<10 {
        try await realm.beginWrite()
        for idx2 in 0..<20 {
            realm.create(
                SeedNamedPerson.self,
                value: ["name": "\(idx1)", "birthdate": Date(timeIntervalSince1970: TimeInterval(idx2))])
        }
        let during = realm.isInWriteTransaction
        try await realm.commitWrite()
        let after = realm.isInWriteTransaction
        #expect(during && !after)
    }
    return realm.objects(SeedNamedPerson.self).count
}

/// "When you initially open a Realm on a thread, its state will be based off the most recent successful write
/// commit, and it will remain on that version until refreshed."
private func stableUntilRefreshed(_ realm: isolated Realm, other: Realm) async throws -> [Int] {
    guard let dog = realm.objects(SeedDog.self).first else { return [] }
    let before = dog.age
    try await other.write { realm in realm.objects(SeedDog.self).first!.age = 50 }
    let count = realm.objects(SeedDog.self).count
    let unchanged = dog.age
    let refreshed = realm.refresh()
    return [before, unchanged, count, refreshed ? 1 : 0, dog.age, realm.objects(SeedDog.self).count]
}

private func seedBeginTwice(_ realm: isolated Realm) async throws {
    try await realm.beginWrite()
    try await realm.beginWrite()
}

/// The guide's ThreadSafeReference example: add a person, then make a reference to it.
private func addJaneAndMakeReference(_ realm: isolated Realm) async throws -> ThreadSafeReference<SeedNamedPerson> {
    let person = SeedNamedPerson(name: "Jane")
    try await realm.beginWrite()
    try await realm.add(person)
    try await realm.commitWrite()
    return ThreadSafeReference(to: person)
}

private func resolveName(_ realm: isolated Realm, _ reference: ThreadSafeReference<SeedDog>) -> String? {
    realm.resolve(reference)?.name
}

// MARK: Tests

@Suite struct SeedBehaviourTests {
    // MARK: Models

    @Test func createObjectsThreeWays() async throws {
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

    @Test func nestedObjectsFromNestedArraysAndDictionaries() async throws {
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

    @Test func toOneAndToManyRelationships() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let summary = try await realm.write { realm -> [String] in
            let jim = SeedPerson()
            jim.name = "Jim"
            let rex = SeedDog()
            rex.name = "Rex"
            rex.owner = jim
            realm.add(rex)
            #expect(jim.isManaged, "adding an object adds the unmanaged objects it links to")
            jim.dogs.append(rex)
            // A List may contain the same object several times, in insertion order.
            let fido = realm.create(SeedDog.self, value: ["name": "Fido"])
            jim.dogs.append(fido)
            jim.dogs.append(fido)
            jim.dogs.append(contentsOf: realm.objects(SeedDog.self).filter { $0.name.contains("Fido") })
            #expect(jim.dogs[1].isSameObject(as: jim.dogs[2]))
            #expect(jim.dogs[2].isSameObject(as: jim.dogs[3]))
            return [rex.owner?.name ?? "nil", jim.dogs.map(\.name).joined(separator: ",")]
        }
        #expect(summary == ["Jim", "Rex,Fido,Fido,Fido"])
        let counts = await realm.read { realm in
            [realm.objects(SeedPerson.self).count, realm.objects(SeedDog.self).count]
        }
        #expect(counts == [1, 2], "a list holds references, not copies")
    }

    @Test func addingACyclicGraph() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let result = try await realm.write { realm -> [String] in
            let jim = SeedPerson(value: ["name": "Jim"])
            let rex = SeedDog(value: ["name": "Rex"])
            rex.owner = jim
            jim.dogs.append(rex)
            realm.add(jim)
            #expect(jim.isManaged && rex.isManaged)
            return [
                jim.dogs.first?.owner?.name ?? "nil", rex.owner?.dogs.first?.name ?? "nil",
                "\(realm.objects(SeedPerson.self).count) \(realm.objects(SeedDog.self).count)",
            ]
        }
        #expect(result == ["Jim", "Rex", "1 1"])
    }

    @Test func copyingAnObjectWithCreate() async throws {
        // "Copying Realm objects ... is as simple as passing in the original object to create(_:value:update:)".
        let realm = try await Realm(configuration: seedConfiguration())
        let result = try await realm.write { realm -> [String] in
            let jim = realm.create(SeedPerson.self, value: ["name": "Jim", "age": 3, "dogs": [["Rex", 1]]])
            let copy = realm.create(SeedPerson.self, value: jim)
            copy.name = "Jim's copy"
            return [
                jim.name, copy.name, "\(copy.age)", copy.dogs.map(\.name).joined(),
                "\(realm.objects(SeedPerson.self).count) \(realm.objects(SeedDog.self).count)",
                "\(copy.dogs.first?.isSameObject(as: jim.dogs.first) == true)",
            ]
        }
        #expect(result == ["Jim", "Jim's copy", "3", "Rex", "2 1", "true"])
    }

    @Test func inverseRelationships() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let result = try await realm.write { realm -> [String] in
            let rex = realm.create(SeedDog.self, value: ["name": "Rex"])
            let jim = realm.create(SeedPerson.self, value: ["name": "Jim"])
            let ann = realm.create(SeedPerson.self, value: ["name": "Ann"])
            #expect(rex.owners.isEmpty)
            jim.dogs.append(rex)
            ann.dogs.append(rex)
            ann.dogs.append(rex)
            // Appending to dogs does not set the dog's owner: links are unidirectional.
            #expect(rex.owner == nil)
            let before = rex.owners.map(\.name).sorted().joined(separator: ",")
            ann.dogs.removeAll()
            let after = rex.owners.map(\.name).joined(separator: ",")
            return [before, after]
        }
        #expect(result == ["Ann,Ann,Jim", "Jim"])
        // Through a to-one link.
        let owned = try await realm.write { realm -> [String] in
            let ann = realm.objects(SeedPerson.self).first { $0.name == "Ann" }!
            let rex = realm.objects(SeedDog.self).first!
            let spot = realm.create(SeedDog.self, value: ["name": "Spot", "owner": ann])
            rex.owner = ann
            let both = ann.ownedDogs.map(\.name).sorted().joined(separator: ",")
            rex.owner = nil
            realm.delete(spot)
            return [both, "\(ann.ownedDogs.count)"]
        }
        #expect(owned == ["Rex,Spot", "0"])
        // Unmanaged objects have no linking objects.
        #expect(SeedDog().owners.isEmpty)
    }

    @Test func optionalProperties() async throws {
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

    @Test func enumsAreStoredAsTheirRawValues() async throws {
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

    @Test func allPropertyTypesRoundTrip() async throws {
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

    @Test func ignoredPropertiesAreNotStored() async throws {
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

    @Test func keyValueCoding() async throws {
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

    @Test func updateNeedsAPrimaryKey() async {
        // "You may not pass update: true for object types which don't define a primary key." Refusing it by
        // stopping (a programmer error) or by throwing from write is fine; silently adding is not.
        await #expect(processExitsWith: .failure) {
            let realm = try await Realm(configuration: testConfiguration([SeedAnimal.self]))
            try await realm.write { $0.create(SeedAnimal.self, value: ["age": 1], update: .modified) }
        }
    }

    // MARK: Collections

    @Test func invalidMapKeysAreRefused() async {
        // Map keys may not be empty, contain "." or start with "$" (as in Realm). Stopping or throwing from
        // write is fine; storing them is not.
        await #expect(processExitsWith: .failure) {
            let realm = try await Realm(
                configuration: testConfiguration([SeedDog.self, SeedPerson.self, SeedAddress.self]))
            try await realm.write { realm in
                realm.create(SeedPerson.self, value: ["name": "Jim"]).scores["a.b"] = 1
            }
        }
        await #expect(processExitsWith: .failure) {
            let realm = try await Realm(
                configuration: testConfiguration([SeedDog.self, SeedPerson.self, SeedAddress.self]))
            try await realm.write { realm in
                realm.create(SeedPerson.self, value: ["name": "Jim"]).scores["$x"] = 1
            }
        }
        await #expect(processExitsWith: .failure) {
            let realm = try await Realm(
                configuration: testConfiguration([SeedDog.self, SeedPerson.self, SeedAddress.self]))
            try await realm.write { realm in
                realm.create(SeedPerson.self, value: ["name": "Jim"]).scores[""] = 1
            }
        }
    }

    @Test func listOperations() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let log = try await realm.write { realm -> [String] in
            let person = realm.create(SeedPerson.self, value: ["name": "Jim"])
            for name in ["a", "b", "c", "d"] { person.dogs.append(SeedDog(value: ["name": name])) }
            var log: [String] = []
            let names = { person.dogs.map(\.name).joined() }
            log.append(names())
            person.dogs.insert(realm.create(SeedDog.self, value: ["name": "e"]), at: 1)
            log.append(names())
            person.dogs.move(from: 0, to: 4)
            log.append(names())
            person.dogs.swapAt(0, 1)
            log.append(names())
            person.dogs.remove(at: 2)
            log.append(names())
            person.dogs[0] = person.dogs[3]
            log.append(names())
            person.dogs.removeLast()
            person.dogs.removeFirst()
            log.append(names())
            log.append("\(person.dogs.index(of: person.dogs[0]) ?? -1)")
            person.dogs.removeAll()
            log.append("\(person.dogs.count) \(realm.objects(SeedDog.self).count)")
            person.nicknames.append(contentsOf: ["J", "Jimmy", "J"])
            person.nicknames[1] = "Jim"
            log.append(person.nicknames.joined(separator: ","))
            log.append("\(person.nicknames.index(of: "Jim") ?? -1)")
            return log
        }
        #expect(log == ["abcd", "aebcd", "ebcda", "becda", "beda", "aeda", "ed", "0", "0 5", "J,Jim,J", "1"])
        let stored = await realm.read { realm in realm.objects(SeedPerson.self).first!.nicknames.freeze() }
        #expect(stored == ["J", "Jim", "J"])
    }

    @Test func mutableSetOperations() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let log = try await realm.write { realm -> [String] in
            let person = realm.create(SeedPerson.self, value: ["name": "Jim", "tags": ["a", "b", "a"]])
            var log: [String] = ["\(person.tags.count)"]
            person.tags.insert("b")
            person.tags.insert("c")
            log.append("\(person.tags.count) \(person.tags.contains("c")) \(person.tags.contains("z"))")
            person.tags.remove("a")
            log.append(person.tags.sorted().joined())
            person.tags.formUnion(["x", "b"])
            log.append(person.tags.sorted().joined())
            person.tags.formIntersection(["b", "x", "q"])
            log.append(person.tags.sorted().joined())
            person.tags.subtract(["x"])
            log.append(person.tags.sorted().joined())
            log.append("\(person.tags.isSubset(of: ["b", "c"])) \(person.tags.intersects(["c"]))")

            // Objects are distinct by identity.
            let kennel = realm.create(SeedKennel.self, value: ["id": 1])
            let rex = realm.create(SeedDog.self, value: ["name": "Rex"])
            let twin = realm.create(SeedDog.self, value: ["name": "Rex"])
            kennel.dogSet.insert(rex)
            kennel.dogSet.insert(rex)
            kennel.dogSet.insert(realm.objects(SeedDog.self).first!)
            kennel.dogSet.insert(twin)
            log.append("\(kennel.dogSet.count)")
            kennel.numbers.insert(objectsIn: [3, 1, 3, 2])
            log.append(kennel.numbers.sorted().map(String.init).joined())
            return log
        }
        #expect(log == ["2", "3 true false", "bc", "bcx", "bx", "b", "true false", "2", "123"])
        let frozen = await realm.freeze()
        let person = try #require(frozen.objects(SeedPerson.self).first)
        #expect(person.tags == ["b"])
        let kennel = try #require(frozen.object(ofType: SeedKennel.self, forPrimaryKey: 1))
        #expect(kennel.numbers == [1, 2, 3])
        #expect(kennel.dogSet.count == 2)
    }

    @Test func mapOperations() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let log = try await realm.write { realm -> [String] in
            let person = realm.create(SeedPerson.self, value: ["name": "Jim", "scores": ["chess": 1200]])
            var log: [String] = ["\(person.scores["chess"] ?? -1)"]
            person.scores["go"] = 3
            person.scores["chess"] = 1300
            person.scores.updateValue(7, forKey: "arm wrestling")
            log.append(person.scores.keys.joined(separator: ","))
            log.append(person.scores.values.map(String.init).joined(separator: ","))
            person.scores["go"] = nil
            person.scores.removeObject(for: "arm wrestling")
            log.append("\(person.scores.count) \(person.scores["go"] == nil)")
            log.append(person.scores.map { "\($0.key)=\($0.value)" }.joined(separator: ","))

            let kennel = realm.create(SeedKennel.self, value: ["id": 1, "prices": ["a": 1.5]])
            let rex = realm.create(SeedDog.self, value: ["name": "Rex"])
            kennel.dogsByName["rex"] = rex
            kennel.dogsByName["ghost"] = .some(nil)
            kennel.dogsByName["new"] = SeedDog(value: ["name": "New"])
            log.append(kennel.dogsByName.keys.joined(separator: ","))
            log.append("\(kennel.dogsByName["rex"]??.name ?? "nil") \(kennel.dogsByName["new"]??.isManaged == true)")
            log.append("\(kennel.prices["a"] ?? 0)")
            person.scores.removeAll()
            log.append("\(person.scores.isEmpty)")
            return log
        }
        #expect(
            log == [
                "1200", "arm wrestling,chess,go", "7,1300,3", "1 true", "chess=1300", "ghost,new,rex", "Rex true",
                "1.5", "true",
            ])
        let frozen = await realm.freeze()
        let kennel = try #require(frozen.object(ofType: SeedKennel.self, forPrimaryKey: 1))
        #expect(kennel.prices == ["a": 1.5])
        let byName = kennel.dogsByName
        #expect(byName.count == 3)
        #expect(byName["rex"]??.name == "Rex")
        #expect(byName["ghost"] == .some(nil))
    }

    @Test func listOfOptionalValues() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let values = try await realm.write { realm -> [String?] in
            let kennel = realm.create(SeedKennel.self, value: ["id": 1, "optionalNames": ["a", NSNull(), "c"]])
            kennel.optionalNames.append(nil)
            return Array(kennel.optionalNames)
        }
        #expect(values == ["a", nil, "c", nil])
    }

    // MARK: Writes

    @Test func theThreeWriteForms() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        // A single expression whose value is discarded.
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        // A statement block with a loop.
        try await realm.write { realm in
            for i in 0..<3 {
                realm.create(SeedDog.self, value: ["name": "d\(i)", "age": i])
            }
        }
        // A block returning a value.
        let count = try await realm.write { realm -> Int in
            realm.create(SeedDog.self, value: ["name": "last"])
            return realm.objects(SeedDog.self).count
        }
        #expect(count == 5)
        let frozenRex = try await realm.write { realm in
            realm.objects(SeedDog.self).first!.age = 12
            return realm.objects(SeedDog.self).count
        }
        #expect(frozenRex == 5)
        let names = await realm.read { $0.objects(SeedDog.self).map { "\($0.name)\($0.age)" } }
        #expect(names == ["Rex12", "d00", "d11", "d22", "last0"])
    }

    @Test func addThenContinueUsingTheObject() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await addThenKeepUsing(realm)
        // From outside the actor: add gives the object away, in a transaction of its own.
        let fido = SeedDog()
        fido.name = "Fido"
        try await realm.add(fido)
        let names = await realm.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["Fido"])
    }

    @Test func autoUpdatingObjectsAndResults() async throws {
        try await autoUpdatingObjects(try await Realm(configuration: seedConfiguration()))
        try await autoUpdatingResults(try await Realm(configuration: seedConfiguration()))
    }

    @Test func primaryKeysAndAddWithUpdate() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            realm.create(Book.self, value: ["id": 1, "title": "Cheese", "price": 10.0, "subtitle": "a guide"])
        }
        // Creating a book with the same primary key as a previously saved book updates it.
        let updated = try await realm.write { realm -> String in
            let cheeseBook = Book()
            cheeseBook.title = "Cheese recipes"
            cheeseBook.price = 9000
            cheeseBook.id = 1
            realm.add(cheeseBook, update: .modified)
            #expect(cheeseBook.isManaged)
            let stored = realm.object(ofType: Book.self, forPrimaryKey: 1)
            #expect(stored?.isSameObject(as: cheeseBook) == true, "the added object becomes the stored one")
            return "\(realm.objects(Book.self).count) \(stored?.title ?? "nil") \(stored?.price ?? 0)"
        }
        #expect(updated == "1 Cheese recipes 9000.0")
        // Every property of the added object is applied, including nil optionals.
        let subtitle = await realm.read { $0.object(ofType: Book.self, forPrimaryKey: 1)?.subtitle }
        #expect(subtitle == nil)
        // If it did not exist, a new object is added.
        let added = try await realm.write { realm -> Int in
            realm.add(Book(value: ["id": 2, "title": "Bread"]), update: .modified)
            realm.add(Book(value: ["id": 3, "title": "Wine"]), update: .all)
            return realm.objects(Book.self).count
        }
        #expect(added == 3)
        let lookups = await realm.read { realm in
            [
                realm.object(ofType: Book.self, forPrimaryKey: 2)?.title ?? "nil",
                realm.object(ofType: Book.self, forPrimaryKey: 3)?.title ?? "nil",
                realm.object(ofType: Book.self, forPrimaryKey: 4)?.title ?? "nil",
            ]
        }
        #expect(lookups == ["Bread", "Wine", "nil"])
    }

    @Test func partialUpdateKeepsUnspecifiedProperties() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            realm.create(Book.self, value: ["id": 1, "title": "Cheese recipes", "price": 10.0, "subtitle": "vol. 1"])
        }
        // Assuming a "Book" with a primary key of `1` already exists.
        let result = try await realm.write { realm -> String in
            let book = realm.create(Book.self, value: ["id": 1, "price": 9000.0], update: .modified)
            // the book's `title` property will remain unchanged.
            return "\(book.title) \(book.price) \(book.subtitle ?? "nil")"
        }
        #expect(result == "Cheese recipes 9000.0 vol. 1")
        let stored = await realm.read { realm in
            realm.objects(Book.self).map { "\($0.id) \($0.title) \($0.price) \($0.subtitle ?? "nil")" }
        }
        #expect(stored == ["1 Cheese recipes 9000.0 vol. 1"])
        // With .all, too: only the given values change.
        try await realm.write { $0.create(Book.self, value: ["id": 1, "title": "Fromage"], update: .all) }
        let all = await realm.read { realm in
            realm.objects(Book.self).map { "\($0.title) \($0.price) \($0.subtitle ?? "nil")" }
        }
        #expect(all == ["Fromage 9000.0 vol. 1"])
        // Without a primary key match, create with update adds an object with defaults for the rest.
        let created = try await realm.write { realm -> String in
            let book = realm.create(Book.self, value: ["id": 2, "price": 1.0], update: .modified)
            return "\(book.id) '\(book.title)' \(book.price) \(realm.objects(Book.self).count)"
        }
        #expect(created == "2 '' 1.0 2")
    }

    @Test func nestedObjectsWithPrimaryKeysAreUpdatedPartially() async throws {
        // Nested dictionaries combine with partial updates: a nested object whose primary key exists is
        // updated with the values given, the others keep theirs.
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            realm.create(Book.self, value: ["id": 1, "title": "Cheese recipes", "price": 10.0])
            realm.create(Book.self, value: ["id": 2, "title": "Bread", "price": 5.0])
        }
        try await realm.write { realm in
            realm.create(
                SeedLibrary.self,
                value: [
                    "id": 1, "featured": ["id": 1, "price": 9000.0], "books": [["id": 2, "price": 6.0], ["id": 3]],
                ],
                update: .modified)
        }
        let books = await realm.read { realm in
            realm.objects(Book.self).map { "\($0.id) \($0.title) \($0.price)" }
        }
        #expect(books == ["1 Cheese recipes 9000.0", "2 Bread 6.0", "3  0.0"])
        let library = await realm.read { realm in
            realm.objects(SeedLibrary.self).map { "\($0.featured?.id ?? -1) \($0.books.map(\.id))" }
        }
        #expect(library == ["1 [2, 3]"])
    }

    @Test func nilInAnUpdateClearsAnOptional() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            realm.create(Book.self, value: ["id": 1, "title": "T", "subtitle": "S"])
            realm.create(Book.self, value: ["id": 2, "title": "U", "subtitle": "S"])
        }
        try await realm.write { realm in
            realm.create(Book.self, value: ["id": 1, "subtitle": NSNull()], update: .modified)
            let none: String? = nil
            realm.create(Book.self, value: ["id": 2, "subtitle": none as Any], update: .modified)
        }
        let stored = await realm.read { realm in
            realm.objects(Book.self).map { "\($0.id) \($0.title) \($0.subtitle ?? "nil")" }
        }
        #expect(stored == ["1 T nil", "2 U nil"])
        // nil for a required property does not fit (the guide's JSON null for a required property).
        await expectRealmError(.invalidValue) {
            try await realm.write { $0.create(Book.self, value: ["id": 1, "title": NSNull()], update: .modified) }
        }
        let title = await realm.read { $0.object(ofType: Book.self, forPrimaryKey: 1)?.title }
        #expect(title == "T")
    }

    @Test func primaryKeyCannotChangeOnceAdded() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { $0.create(Book.self, value: ["id": 1, "title": "T"]) }
        await expectRealmError(.invalidValue) {
            try await realm.write { realm in realm.object(ofType: Book.self, forPrimaryKey: 1)!.id = 5 }
        }
        let ids = await realm.read { $0.objects(Book.self).map(\.id) }
        #expect(ids == [1])
    }

    @Test func duplicatePrimaryKeyThrowsAndCommitsNothing() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { $0.create(Book.self, value: ["id": 1, "title": "Existing"]) }
        await expectRealmError(.primaryKeyExists) {
            try await realm.write { realm in
                realm.create(Book.self, value: ["id": 2, "title": "New"])
                realm.create(SeedDog.self, value: ["name": "Rex"])
                realm.create(Book.self, value: ["id": 1, "title": "Duplicate"])
                realm.create(Book.self, value: ["id": 3, "title": "After"])
            }
        }
        await expectRealmError(.primaryKeyExists) {
            try await realm.write { realm in
                realm.add(Book(value: ["id": 7]))
                realm.add(Book(value: ["id": 7]))
            }
        }
        let state = await realm.read { realm in
            [realm.objects(Book.self).map(\.title).joined(separator: ","), "\(realm.objects(SeedDog.self).count)"]
        }
        #expect(state == ["Existing", "0"], "nothing of a failed transaction is committed")
        // The realm stays usable.
        try await realm.write { $0.create(Book.self, value: ["id": 2, "title": "New"]) }
        let count = await realm.read { $0.objects(Book.self).count }
        #expect(count == 2)
    }

    @Test func invalidValueInCreateThrows() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        await expectRealmError(.invalidValue) {
            try await realm.write { realm in
                realm.create(SeedDog.self, value: ["name": "Fine"])
                realm.create(SeedDog.self, value: ["name": "Rex", "age": "three"])
            }
        }
        await expectRealmError(.invalidValue) {
            try await realm.write { $0.create(SeedDog.self, value: ["Rex", 3, NSNull(), "extra"]) }
        }
        await expectRealmError(.invalidValue) {
            try await realm.write { $0.create(AllTypes.self, value: ["int8": 300]) }
        }
        await expectRealmError(.invalidValue) {
            try await realm.write { $0.create(SeedPerson.self, value: ["name": "Jim", "dogs": [["name": 5]]]) }
        }
        let count = await realm.read { $0.objects(SeedDog.self).count + $0.objects(SeedPerson.self).count }
        #expect(count == 0)
    }

    @Test func errorThrownByTheBlockCommitsNothing() async throws {
        struct Stop: Error {}
        let realm = try await Realm(configuration: seedConfiguration())
        await #expect(throws: Stop.self) {
            try await realm.write { realm in
                realm.create(SeedDog.self, value: ["name": "Rex"])
                throw Stop()
            }
        }
        let state = await realm.read { realm in (realm.objects(SeedDog.self).count, realm.isInWriteTransaction) }
        #expect(state == (0, false))
    }

    @Test func cancelledTransactionInvalidatesItsObjects() async throws {
        try await cancelledTransaction(try await Realm(configuration: seedConfiguration()))
    }

    @Test func deletingObjects() async throws {
        try await deleteNilsLinksAndLeavesLists(try await Realm(configuration: seedConfiguration()))
    }

    @Test func deleteResultsAndSequences() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let counts = try await realm.write { realm -> [Int] in
            for i in 0..<6 { realm.create(SeedDog.self, value: ["name": "d\(i)", "age": i]) }
            realm.delete(realm.objects(SeedDog.self).filter { $0.age % 2 == 0 })
            let afterSequence = realm.objects(SeedDog.self).count
            realm.delete(realm.objects(SeedDog.self))
            return [afterSequence, realm.objects(SeedDog.self).count]
        }
        #expect(counts == [3, 0])
        await expectRealmError(.invalidObject) {
            try await realm.write { realm in realm.delete(SeedDog(value: ["name": "unmanaged"])) }
        }
    }

    @Test func embeddedObjects() async throws {
        try await embeddedObjectsLifecycle(try await Realm(configuration: seedConfiguration()))
        let realm = try await Realm(configuration: seedConfiguration())
        await expectRealmError(.invalidObject) {
            try await realm.write { realm in realm.add(SeedAddress(value: ["street": "Alone"])) }
        }
    }

    @Test func writeReturnsTheBlockValue() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let frozenDog = try await realm.write { realm -> String in
            realm.create(SeedDog.self, value: ["name": "Rex", "age": 3]).name
        }
        #expect(frozenDog == "Rex")
        let pair = try await realm.write { realm in (realm.objects(SeedDog.self).count, "done") }
        #expect(pair == (1, "done"))
    }

    @Test func beginCommitFromAnIsolatedFunction() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let count = try await batchedTransactions(realm)
        #expect(count == 200)
        let other = try await Realm(configuration: realm.configuration)
        let names = await other.read { realm in Set(realm.objects(SeedNamedPerson.self).map(\.name)) }
        #expect(names == Set((0..<10).map { "\($0)" }))
    }

    @Test func writesWaitForEachOtherOnOneRealm() async throws {
        // "If thread A starts a write operation, then thread B starts a write operation on the same Realm
        // before thread A is finished, thread A must finish ... before thread B's write operation takes place."
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { $0.create(Book.self, value: ["id": 1, "price": 0.0]) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await realm.write { realm in
                        let book = realm.object(ofType: Book.self, forPrimaryKey: 1)!
                        book.price += 1
                    }
                }
            }
            try await group.waitForAll()
        }
        let price = await realm.read { $0.object(ofType: Book.self, forPrimaryKey: 1)?.price }
        #expect(price == 20)
    }

    // MARK: Realms

    @Test func defaultConfigurationIsSettable() async throws {
        let saved = Realm.Configuration.defaultConfiguration
        defer { Realm.Configuration.defaultConfiguration = saved }
        // The guide's setDefaultRealmForUser(username:).
        var config = seedConfiguration()
        config.fileURL = config.fileURL!.deletingLastPathComponent().appendingPathComponent("alice.realm")
        Realm.Configuration.defaultConfiguration = config
        #expect(Realm.Configuration.defaultConfiguration.fileURL == config.fileURL)

        let realm = try await Realm()
        #expect(realm.configuration.fileURL == config.fileURL)
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Alice's dog"]) }
        #expect(FileManager.default.fileExists(atPath: config.fileURL!.path))
        #expect(Realm.fileExists(for: config))
        let viaConfig = try await Realm(configuration: config)
        let names = await viaConfig.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["Alice's dog"])
        // The built-in default lives in a file named default.realm.
        #expect(Realm.Configuration().fileURL?.lastPathComponent == "default.realm")
    }

    @Test func readOnlyRealmsRefuseWrites() async throws {
        var config = seedConfiguration()
        do {
            let writer = try await Realm(configuration: config)
            try await writer.write { $0.create(SeedDog.self, value: ["name": "Bundled", "age": 6]) }
        }
        config.readOnly = true
        let realm = try await Realm(configuration: config)
        let names = await realm.read { realm in realm.objects(SeedDog.self).filter { $0.age > 5 }.map(\.name) }
        #expect(names == ["Bundled"])
        await expectRealmError(.readOnly) {
            try await realm.write { $0.create(SeedDog.self, value: ["name": "Nope"]) }
        }
        await expectRealmError(.readOnly) { try await realm.add(SeedDog(value: ["name": "Nope"])) }
        await expectRealmError(.readOnly) { try await realm.beginWrite() }
        #expect(await !realm.isInWriteTransaction)
        let count = await realm.read { $0.objects(SeedDog.self).count }
        #expect(count == 1)

        // A read-only realm needs an existing file.
        var missing = seedConfiguration()
        missing.readOnly = true
        await expectRealmError(.fileNotFound) { _ = try await Realm(configuration: missing) }
        #expect(!Realm.fileExists(for: missing))
    }

    @Test func readOnlyRealmRefusesWritesWhileAWritableRealmIsOpen() async throws {
        let config = seedConfiguration()
        let writer = try await Realm(configuration: config)
        try await writer.write { $0.create(SeedDog.self, value: ["name": "Original"]) }
        var readOnly = config
        readOnly.readOnly = true
        let reader: Realm
        do {
            reader = try await Realm(configuration: readOnly)
        } catch let error as RealmError {
            // Refusing to open with a different configuration while the file is open is fine too.
            #expect(error.code == .alreadyOpen || error.code == .fileAccess, "\(error)")
            return
        }
        await expectRealmError(.readOnly) {
            try await reader.write { $0.create(SeedDog.self, value: ["name": "Sneaky"]) }
        }
        let names = await writer.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["Original"])
    }

    @Test func inMemoryRealmsShareDataByIdentifier() async throws {
        let identifier = "SeedInMemory-" + UUID().uuidString
        var config = Realm.Configuration(inMemoryIdentifier: identifier)
        config.objectTypes = seedTypes
        #expect(config.fileURL == nil)
        #expect(!Realm.fileExists(for: config))
        var first: Realm? = try await Realm(configuration: config)
        try await first!.write { $0.create(SeedDog.self, value: ["name": "Memory"]) }
        let second = try await Realm(configuration: config)
        let seen = await second.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(seen == ["Memory"], "realms with one identifier share their data")

        var otherConfig = Realm.Configuration(inMemoryIdentifier: identifier + "-other")
        otherConfig.objectTypes = seedTypes
        let other = try await Realm(configuration: otherConfig)
        #expect(await other.isEmpty)

        // A write through either is seen by the other.
        try await second.write { $0.create(SeedDog.self, value: ["name": "Second"]) }
        let fromFirst = await first!.read { $0.objects(SeedDog.self).count }
        #expect(fromFirst == 2)
        first = nil
        let stillThere = await second.read { $0.objects(SeedDog.self).count }
        #expect(stillThere == 2, "the data lives as long as one realm with the identifier does")
        #expect(!Realm.fileExists(for: config))
    }

    @Test func inMemoryDataIsDiscardedWhenTheLastRealmIsReleased() async throws {
        var config = Realm.Configuration(inMemoryIdentifier: "SeedInMemoryGone-" + UUID().uuidString)
        config.objectTypes = seedTypes
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(SeedDog.self, value: ["name": "Ephemeral"]) }
        }
        let realm = try await Realm(configuration: config)
        #expect(await realm.isEmpty)
    }

    @Test func deleteFilesRefusesWhileOpenAndWorksAfterRelease() async throws {
        let config = seedConfiguration()
        var realm: Realm? = try await Realm(configuration: config)
        try await realm!.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        #expect(Realm.fileExists(for: config))
        #expect(throws: RealmError.self) { try Realm.deleteFiles(for: config) }
        do {
            try Realm.deleteFiles(for: config)
        } catch let error as RealmError {
            #expect(error.code == .alreadyOpen)
        }
        #expect(Realm.fileExists(for: config), "a refused delete leaves the file")
        realm = nil
        #expect(try Realm.deleteFiles(for: config))
        #expect(!Realm.fileExists(for: config))
        #expect(try Realm.deleteFiles(for: config) == false, "nothing left to delete")
        let reopened = try await Realm(configuration: config)
        #expect(await reopened.isEmpty)
    }

    @Test func compactingAFile() async throws {
        var config = seedConfiguration()
        config.automaticCompaction = false
        let log = SeedCompactionLog()
        config.shouldCompactOnLaunch = { total, used in
            log.calls.withLock { $0.append((total, used)) }
            return total > 2 * used
        }
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { realm in
                for i in 0..<300 {
                    realm.create(SeedDog.self, value: ["name": String(repeating: "n", count: 200) + "\(i)", "age": i])
                }
            }
            try await realm.write { realm in realm.delete(realm.objects(SeedDog.self).filter { $0.age >= 10 }) }
            let before = await realm.statistics
            #expect(before.usedBytes < before.fileSize)
            try await realm.compact()
            let after = await realm.statistics
            #expect(after.fileSize < before.fileSize, "compaction drops dead space")
            #expect(after.usedBytes <= after.fileSize)
            let ages = await realm.read { $0.objects(SeedDog.self).map(\.age) }
            #expect(ages == Array(0..<10))
            try await realm.write { realm in realm.delete(realm.objects(SeedDog.self).filter { $0.age >= 2 }) }
        }
        #expect(log.calls.withLock { $0.count } == 1, "called when the file is first opened")
        let reopened = try await Realm(configuration: config)
        let calls = log.calls.withLock { $0 }
        #expect(calls.count == 2, "called again when the file is opened after every realm was released")
        if let last = calls.last { #expect(last.total >= last.used && last.used > 0) }
        let ages = await reopened.read { $0.objects(SeedDog.self).map(\.age) }
        #expect(ages == [0, 1])
    }

    @Test func writeCopyThenOpenTheCopy() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            for i in 0..<50 { realm.create(SeedDog.self, value: ["name": "d\(i)", "age": i]) }
            realm.delete(realm.objects(SeedDog.self).filter { $0.age < 10 })
            realm.create(SeedPerson.self, value: ["name": "Jim", "address": ["city": "Oslo"], "dogs": [["Rex", 1]]])
        }
        let copyURL = temporaryRealmURL("copy.realm")
        try await realm.writeCopy(toFile: copyURL)
        #expect(FileManager.default.fileExists(atPath: copyURL.path))
        var copyConfig = config
        copyConfig.fileURL = copyURL
        copyConfig.encryptionKey = nil  // writeCopy without a key writes a plain copy
        let copy = try await Realm(configuration: copyConfig)
        let summary = await copy.read { realm in
            [
                "\(realm.objects(SeedDog.self).count)", realm.objects(SeedDog.self).first?.name ?? "nil",
                realm.objects(SeedPerson.self).first?.address?.city ?? "nil",
                realm.objects(SeedPerson.self).first?.dogs.first?.name ?? "nil",
            ]
        }
        #expect(summary == ["41", "d10", "Oslo", "Rex"])
        // The copy is independent of the original.
        try await copy.write { $0.deleteAll() }
        let original = await realm.read { $0.objects(SeedDog.self).count }
        #expect(original == 41)
        // Copying onto an existing file is refused: alreadyOpen while a realm has it open, else fileExists.
        await expectRealmError(.alreadyOpen) { try await realm.writeCopy(toFile: copyURL) }
        _ = consume copy
        await Realm.waitUntilClosed(configuration: copyConfig)
        await expectRealmError(.fileExists) { try await realm.writeCopy(toFile: copyURL) }
    }

    @Test func schemaVersionMismatchOnReopen() async throws {
        var config = seedConfiguration()
        config.schemaVersion = 2
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(SeedDog.self, value: ["name": "v2"]) }
        }
        // A file written by a newer schema version cannot be opened by an older model.
        var older = config
        older.schemaVersion = 1
        await expectRealmError(.schemaMismatch) { _ = try await Realm(configuration: older) }
        // The same or a newer version opens it with its data.
        config.schemaVersion = 3
        let newer = try await Realm(configuration: config)
        let names = await newer.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["v2"])
    }

    @Test func deleteRealmIfMigrationNeededStartsEmpty() async throws {
        var config = seedConfiguration()
        config.schemaVersion = 2
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(SeedDog.self, value: ["name": "v2"]) }
        }
        config.schemaVersion = 1
        config.deleteRealmIfMigrationNeeded = true
        let realm = try await Realm(configuration: config)
        #expect(await realm.isEmpty)
        try await realm.write { $0.create(SeedDog.self, value: ["name": "fresh"]) }
        let names = await realm.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["fresh"])
    }

    @Test func classSubsets() async throws {
        let config = testConfiguration([SeedAnimal.self, SeedDuck.self])
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(SeedDuck.self, value: ["name": "Gustav", "animal": ["age": 1]]) }
        let count = await realm.read { $0.objects(SeedDuck.self).count }
        #expect(count == 1)
        // A class outside objectTypes is a programmer error (the process stops).
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([SeedAnimal.self, SeedDuck.self]))
            try await realm.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        }
        expectStopMessage(stop, "is not managed by this Realm")
        // A class that links outside objectTypes is refused when opening.
        await expectRealmError(.schemaMismatch) {
            _ = try await Realm(configuration: testConfiguration([SeedDuck.self]))
        }
    }

    // MARK: Programmer errors stop the program, as in Realm

    @Test func writingOutsideAWriteTransactionStops() async {
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([Book.self]))
            try await realm.write { $0.create(Book.self, value: ["id": 1]) }
            await realm.read { realm in realm.objects(Book.self).first!.title = "outside" }
        }
        expectStopMessage(stop, "outside of a write transaction")
    }

    @Test func readingADeletedObjectStops() async {
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([Book.self]))
            try await realm.write { realm in
                let book = realm.create(Book.self, value: ["id": 1])
                realm.delete(book)
                _ = book.title
            }
        }
        expectStopMessage(stop, "has been deleted or invalidated")
    }

    @Test func beginningAWriteTwiceStops() async {
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([Book.self]))
            try await seedBeginTwice(realm)
        }
        expectStopMessage(stop, "already in a write transaction")
    }

    @Test func resolvingAReferenceTwiceStops() async {
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let config = testConfiguration([Book.self])
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(Book.self, value: ["id": 1]) }
            let ref = await realm.read { ThreadSafeReference(to: $0.objects(Book.self).first!) }
            let other = try await Realm(configuration: config)
            await other.read { realm in
                _ = realm.resolve(ref)
                _ = realm.resolve(ref)
            }
        }
        expectStopMessage(stop, "already resolved")
    }

    // MARK: Threading: seeing changes, frozen values

    @Test func seeingChangesFromOtherRealms() async throws {
        let config = seedConfiguration()
        let a = try await Realm(configuration: config)
        let b = try await Realm(configuration: config)
        let before = await a.read { $0.objects(SeedDog.self).count }
        #expect(before == 0)
        let versionBefore = await a.version
        try await b.write { $0.create(SeedDog.self, value: ["name": "From B"]) }
        // Each read (and write) of `a` starts at the newest version.
        let after = await a.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(after == ["From B"])
        #expect(await a.version > versionBefore)
        // refresh() reports whether there was a newer version.
        try await b.write { $0.create(SeedDog.self, value: ["name": "Again"]) }
        #expect(await a.refresh())
        #expect(await !a.refresh())
        // Writes on either start from the newest version.
        try await a.write { realm in realm.objects(SeedDog.self).last!.age = 5 }
        let age = await b.read { $0.objects(SeedDog.self).last!.age }
        #expect(age == 5)
        // Between refreshes, a realm keeps reading the version it is at.
        let seen = try await stableUntilRefreshed(a, other: b)
        #expect(seen == [0, 0, 2, 1, 50, 2])
    }

    @Test func frozenValuesReadPropertiesLinksAndCollections() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            let jim = realm.create(
                SeedPerson.self,
                value: [
                    "name": "Jim", "age": 40, "address": ["street": "Main", "city": "Oslo"],
                    "nicknames": ["J", "Jimbo"], "tags": ["a", "b"], "scores": ["chess": 1200],
                ])
            let rex = realm.create(SeedDog.self, value: ["name": "Rex", "age": 3, "owner": jim])
            jim.dogs.append(rex)
            jim.dogs.append(SeedDog(value: ["name": "Fido", "age": 1, "owner": jim]))
        }
        let frozen = await realm.freeze()
        #expect(frozen.isFrozen)
        let summary = await Task.detached { () -> [String] in
            guard let jim = frozen.objects(SeedPerson.self).first else { return [] }
            let rex = frozen.objects(SeedDog.self)[0]
            return [
                "\(jim.name) \(jim.age)", jim.address?.city ?? "nil", jim.nicknames.joined(separator: ","),
                jim.tags.sorted().joined(), "\(jim.scores)", jim.dogs.map(\.name).joined(separator: ","),
                rex.owner?.name ?? "nil", rex.owners.map(\.name).joined(), "\(frozen.objects(SeedDog.self).count)",
                "\(jim.version == frozen.version) \(rex.owner?.version == frozen.version)",
            ]
        }.value
        #expect(
            summary == [
                "Jim 40", "Oslo", "J,Jimbo", "ab", "[\"chess\": 1200]", "Rex,Fido", "Jim", "Jim", "2", "true true",
            ])
        // An object's own freeze() and a Results' freeze().
        let (frozenDog, frozenDogs) = await realm.read { realm in
            (realm.objects(SeedDog.self).last!.freeze(), realm.objects(SeedDog.self).freeze())
        }
        #expect(frozenDog.name == "Fido")
        #expect(frozenDog.owner?.dogs.count == 2)
        #expect(frozenDogs.map(\.name) == ["Rex", "Fido"])
        #expect(frozenDogs[0] == frozen.objects(SeedDog.self)[0], "the same object at the same version")
    }

    @Test func frozenValuesKeepShowingTheirVersion() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            let jim = realm.create(SeedPerson.self, value: ["name": "Jim", "nicknames": ["J"]])
            jim.dogs.append(SeedDog(value: ["name": "Rex", "age": 1]))
        }
        let frozen = await realm.freeze()
        let frozenJim = try #require(frozen.objects(SeedPerson.self).first)
        let frozenRex = try #require(frozenJim.dogs.first)
        try await realm.write { realm in
            let jim = realm.objects(SeedPerson.self).first!
            jim.name = "James"
            jim.nicknames.append("Jimmy")
            jim.dogs.first!.age = 9
            jim.dogs.append(SeedDog(value: ["name": "Fido"]))
        }
        try await realm.write { realm in realm.delete(realm.objects(SeedDog.self).first!) }
        #expect(frozenJim.name == "Jim")
        #expect(frozenJim.nicknames == ["J"])
        #expect(frozenJim.dogs.map(\.name) == ["Rex"])
        #expect(frozenRex.age == 1, "a deleted object still reads at its frozen version")
        #expect(frozen.objects(SeedDog.self).count == 1)
        #expect(frozen.version < (await realm.version))
        let live = await realm.read { realm -> [String] in
            let jim = realm.objects(SeedPerson.self).first!
            return [jim.name, jim.dogs.map(\.name).joined(separator: ",")]
        }
        #expect(live == ["James", "Fido"])
        let newer = await realm.freeze()
        #expect(newer.objects(SeedPerson.self).first?.name == "James")
        #expect(newer.version > frozen.version)
    }

    @Test func thawFrozenValues() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in
            realm.create(SeedDog.self, value: ["name": "Rex", "age": 1])
            realm.create(SeedDog.self, value: ["name": "Fido", "age": 2])
        }
        let frozen = await realm.freeze()
        let rex = try #require(frozen.objects(SeedDog.self).first)
        let fido = try #require(frozen.objects(SeedDog.self).last)
        try await realm.write { realm in
            realm.objects(SeedDog.self).first!.age = 10
            realm.delete(realm.objects(SeedDog.self).last!)
        }
        let thawed = await realm.read { realm -> [String] in
            let live = rex.thaw(in: realm)
            return [
                "\(live?.age ?? -1)", "\(live?.isManaged ?? false)", "\(fido.thaw(in: realm) == nil)",
                "\(frozen.objects(SeedDog.self).thaw(in: realm).count)",
            ]
        }
        #expect(thawed == ["10", "true", "true", "1"])
        // Thawed objects can be written.
        try await realm.write { realm in rex.thaw(in: realm)?.age = 11 }
        let age = await realm.read { $0.objects(SeedDog.self).first?.age }
        #expect(age == 11)
        // In another realm on the same file, too.
        let other = try await Realm(configuration: realm.configuration)
        let name = await other.read { realm in rex.thaw(in: realm)?.name }
        #expect(name == "Rex")
    }

    @Test func pinnedVersionsAreCountedAndReleased() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { $0.create(SeedDog.self, value: ["name": "v1"]) }
        let baseline = await realm.statistics
        #expect(baseline.pinnedVersions == 1, "the realm pins the version it reads")
        var first: FrozenRealm? = await realm.freeze()
        try await realm.write { $0.create(SeedDog.self, value: ["name": "v2"]) }
        var second: FrozenRealm? = await realm.freeze()
        var firstDog: Frozen<SeedDog>? = first?.objects(SeedDog.self).first
        try await realm.write { $0.create(SeedDog.self, value: ["name": "v3"]) }
        _ = await realm.refresh()
        let held = await realm.statistics
        #expect(held.pinnedVersions == 3, "two frozen versions and the realm's own")
        #expect(held.oldestPinnedVersion == first?.version)
        #expect(held.version == (await realm.version))

        second = nil
        #expect(await realm.statistics.pinnedVersions == 2)
        first = nil
        #expect(await realm.statistics.pinnedVersions == 2, "a frozen object keeps its version pinned")
        #expect(firstDog?.name == "v1")
        firstDog = nil
        let released = await realm.statistics
        #expect(released.pinnedVersions == 1)
        #expect(released.oldestPinnedVersion == released.version)
        _ = second
    }

    @Test func invalidateReleasesTheRealmsVersion() async throws {
        let config = seedConfiguration()
        let a = try await Realm(configuration: config)
        let b = try await Realm(configuration: config)
        try await b.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        _ = await a.read { $0.objects(SeedDog.self).count }
        try await b.write { $0.create(SeedDog.self, value: ["name": "Fido"]) }
        #expect(await b.statistics.pinnedVersions == 2, "a still reads the older version")
        await a.invalidate()
        #expect(await b.statistics.pinnedVersions == 1)
    }

    @Test func maximumNumberOfActiveVersionsProducesTooManyVersions() async throws {
        var config = seedConfiguration()
        config.maximumNumberOfActiveVersions = 3
        let realm = try await Realm(configuration: config)
        var held: [FrozenRealm] = []
        var committed = 0
        var sawTooManyVersions = false
        for i in 0..<8 {
            do {
                try await realm.write { $0.create(SeedDog.self, value: ["name": "d\(i)"]) }
                committed += 1
            } catch let error as RealmError where error.code == .tooManyVersions {
                sawTooManyVersions = true
            }
            // Never silently stale: whatever was acknowledged is visible, in reads and in new frozen values.
            let seen = await realm.read { $0.objects(SeedDog.self).count }
            #expect(seen == committed, "after write \(i)")
            let frozen = await realm.freeze()
            #expect(frozen.objects(SeedDog.self).count == committed, "freeze after write \(i)")
            held.append(frozen)
            #expect(await realm.statistics.pinnedVersions <= 3)
        }
        #expect(sawTooManyVersions, "pinning more versions than allowed must be reported")
        // Releasing the frozen values makes room again.
        held.removeAll()
        try await realm.write { $0.create(SeedDog.self, value: ["name": "after"]) }
        let count = await realm.read { $0.objects(SeedDog.self).count }
        #expect(count == committed + 1)
    }

    @Test func aVersionLimitOfOneStillAllowsWritesWhenNothingElseIsPinned() async throws {
        var config = seedConfiguration()
        config.maximumNumberOfActiveVersions = 1
        let realm = try await Realm(configuration: config)
        // The realm moves from one version to the next: it never needs two at once.
        for i in 0..<3 {
            try await realm.write { $0.create(SeedDog.self, value: ["name": "d\(i)"]) }
        }
        let count = await realm.read { $0.objects(SeedDog.self).count }
        #expect(count == 3)
        #expect(await realm.statistics.pinnedVersions == 1)
        // Holding a frozen value of the current version, the next version would be a second one.
        let frozen = await realm.freeze()
        await expectRealmError(.tooManyVersions) {
            try await realm.write { $0.create(SeedDog.self, value: ["name": "blocked"]) }
        }
        #expect(frozen.objects(SeedDog.self).count == 3)
    }

    // MARK: Threading: ThreadSafeReference

    @Test func threadSafeReferenceResolvesInAnotherRealm() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        // The guide's example.
        let ref = try await addJaneAndMakeReference(realm)
        let renamed = try await Task.detached { () throws -> Bool in
            let realm = try await Realm(configuration: config)
            return try await realm.write { realm -> Bool in
                guard let person = realm.resolve(ref) else { return false }  // person was deleted
                person.name = "Jane Doe"
                return true
            }
        }.value
        #expect(renamed)
        let name = await realm.read { $0.objects(SeedNamedPerson.self).first?.name }
        #expect(name == "Jane Doe")
    }

    @Test func threadSafeReferenceResolvesAtANewerVersion() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        let other = try await Realm(configuration: config)
        _ = await other.read { $0.objects(SeedDog.self).count }  // `other` now reads an older version
        try await realm.write { $0.create(SeedDog.self, value: ["name": "New"]) }
        let ref = await realm.read { realm in ThreadSafeReference(to: realm.objects(SeedDog.self).first!) }
        // Resolve without the refresh that `read` and `write` do first.
        let name = await resolveName(other, ref)
        #expect(name == "New", "resolving advances the realm to the reference's version")
    }

    @Test func threadSafeReferenceIsNilAfterDeletion() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Doomed"]) }
        let ref = await realm.read { realm in ThreadSafeReference(to: realm.objects(SeedDog.self).first!) }
        try await realm.write { realm in realm.delete(realm.objects(SeedDog.self)) }
        let other = try await Realm(configuration: config)
        let resolved = await other.read { realm in realm.resolve(ref) == nil }
        #expect(resolved, "person was deleted")
    }

    @Test func threadSafeReferenceToResultsAndList() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            realm.create(SeedPerson.self, value: ["name": "Jim", "dogs": [["Rex", 1], ["Fido", 2]]])
        }
        let (resultsRef, listRef) = await realm.read { realm in
            (
                ThreadSafeReference(to: realm.objects(SeedDog.self)),
                ThreadSafeReference(to: realm.objects(SeedPerson.self).first!.dogs)
            )
        }
        let other = try await Realm(configuration: config)
        let seen = try await other.write { realm -> [String] in
            let dogs = realm.resolve(resultsRef)
            let list = realm.resolve(listRef)
            list?.append(SeedDog(value: ["name": "Spot"]))
            return [dogs.map(\.name).joined(separator: ","), list?.map(\.name).joined(separator: ",") ?? "nil"]
        }
        #expect(seen == ["Rex,Fido,Spot", "Rex,Fido,Spot"])
        let names = await realm.read { $0.objects(SeedPerson.self).first!.dogs.map(\.name) }
        #expect(names == ["Rex", "Fido", "Spot"])

        // A list reference whose owner was deleted resolves to nil.
        let orphanRef = await realm.read { ThreadSafeReference(to: $0.objects(SeedPerson.self).first!.dogs) }
        try await realm.write { realm in realm.delete(realm.objects(SeedPerson.self)) }
        let orphan = await other.read { realm in realm.resolve(orphanRef) == nil }
        #expect(orphan)
    }

    @Test func threadSafeReferencePinsItsVersionUntilResolved() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        let ref = await realm.read { realm in ThreadSafeReference(to: realm.objects(SeedDog.self).first!) }
        try await realm.write { $0.create(SeedDog.self, value: ["name": "Fido"]) }
        #expect(await realm.statistics.pinnedVersions == 2, "the reference pins the version it was made at")
        let other = try await Realm(configuration: config)
        let name = await other.read { realm in realm.resolve(ref)?.name }
        #expect(name == "Rex")
        #expect(await realm.statistics.pinnedVersions == 1)
    }

    @Test func unmanagedObjectsCrossActorsFreely() async throws {
        // "Unmanaged instances of Objects behave exactly as regular NSObject subclasses" — in Swift 6 they
        // cross by being sent: `add` takes the object (`sending`).
        let realm = try await Realm(configuration: seedConfiguration())
        let dog = await Task.detached { () -> String in
            let dog = SeedDog(value: ["name": "Traveller", "age": 2])
            dog.age += 1
            return "\(dog.name) \(dog.age) \(dog.isManaged)"
        }.value
        #expect(dog == "Traveller 3 false")
        let traveller = SeedDog(value: ["name": "Traveller"])
        try await realm.add(traveller)
        let names = await realm.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["Traveller"])
    }
}
