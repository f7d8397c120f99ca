import Foundation
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// An audit of the seeds (the Realm Swift guide's Models, Writes, Realms and Threading sections, the Realms
// overview and the RLMRealm API reference) for examples and stated behaviours SeedBehaviourTests does not
// cover yet, written against ActorStore's API. Each divergence the audit found was fixed, or (an object
// deleted in a cancelled transaction is valid again) documented as a deliberate difference and tested as such.

// MARK: Models of these tests

final class AuditDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: AuditPerson?
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<AuditPerson>
}

final class AuditPerson: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<AuditDog>
    @Persisted var address: AuditAddress?
    @Persisted var favorites: MutableSet<AuditDog>
    @Persisted var dogsByNickname: Map<String, AuditDog?>
    /// Not `@Persisted`: ignored (the guide's `ignoredProperties()` returning `["tmpID"]`).
    var tmpID = 0
}

/// A to-one target for the guide's `rex.owner?.address.country`.
final class AuditAddress: Object {
    @Persisted var country = ""
}

/// The guide's "Indexed Properties" `Book`, with an index on each type the guide lists as indexable.
final class AuditBook: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var title = ""
    @Persisted(indexed: true) var price = 0
    @Persisted(indexed: true) var inStock = false
    @Persisted(indexed: true) var published = Date(timeIntervalSince1970: 0)
}

final class AuditLibrary: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var books: List<AuditBook>
}

/// "A common pattern is to set the default property value to NSUUID().UUIDString to generate unique string
/// IDs", and "a createdAt property with a default value of NSDate()".
final class AuditTicket: Object {
    @Persisted(primaryKey: true) var id = UUID().uuidString
    @Persisted var createdAt = Date()
    @Persisted var name = ""
}

/// "RealmOptional supports Int, Float, Double, Bool, and all of the sized versions of Int".
final class AuditOptionals: Object {
    @Persisted var int8: Int8?
    @Persisted var int16: Int16?
    @Persisted var int32: Int32?
    @Persisted var int64: Int64?
    @Persisted var float: Float?
    @Persisted var bool: Bool?
}

/// The guide's JSON `City`, with a primary key (needed for `update:`) and a nested to-many relationship.
final class AuditCity: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var city = ""
    @Persisted var area: Float = 0
    @Persisted var founded = Date(timeIntervalSince1970: 0)
    @Persisted var districts: List<AuditDistrict>
}

final class AuditDistrict: Object {
    @Persisted var name = ""
}

/// An Int-backed enum, alone and in each kind of collection.
enum AuditPriority: Int, PersistableEnum {
    case low = 1, normal = 5, high = 10
}

final class AuditTask: Object {
    @Persisted var title = ""
    @Persisted var priority = AuditPriority.normal
    @Persisted var previous: AuditPriority?
    @Persisted var history: List<AuditPriority>
    @Persisted var seen: MutableSet<AuditPriority>
    @Persisted var byOwner: Map<String, AuditPriority>
}

/// "Model Inheritance": "Class methods, instance methods and properties on parent classes are inherited in
/// their child classes."
class AuditAnimal: Object {
    @Persisted var age = 0

    func ageInDogYears() -> Int { age * 7 }
}

final class AuditCat: AuditAnimal {
    @Persisted var name = ""
}

private let auditTypes: [ObjectBase.Type] = [
    AuditDog.self, AuditPerson.self, AuditAddress.self, AuditBook.self, AuditLibrary.self, AuditTicket.self,
    AuditOptionals.self, AuditCity.self, AuditDistrict.self, AuditAnimal.self, AuditCat.self, AuditTask.self,
]

private func auditConfiguration() -> Realm.Configuration {
    testConfiguration(auditTypes)
}

/// Expects `body` to throw a `RealmError` with `code`.
private func expectAuditError(
    _ code: RealmError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    let error = await #expect(throws: RealmError.self, comment, sourceLocation: sourceLocation) { try await body() }
    #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
}

/// Generic code over any collection of dogs (the guide's `operateOn<C: RealmCollection>(collection:)`).
private func auditDescribe<C: RandomAccessCollection>(_ collection: C) -> String where C.Element == AuditDog {
    "\(collection.count): " + collection.map(\.name).joined(separator: ",")
}

// MARK: Scenarios that keep live objects across transactions (functions isolated to the realm)

/// RLMRealm `cancelWriteTransaction`: "Both oldObject and newObject will return YES for isInvalidated, but
/// re-running the query which provided oldObject will once again return the valid object."
private func auditCancelAfterAddAndDelete(_ realm: isolated Realm) async throws -> [String] {
    try await realm.beginWrite()
    realm.create(AuditDog.self, value: ["name": "Old"])
    try await realm.commitWrite()
    let oldObject = try #require(realm.objects(AuditDog.self).first)
    let newObject = AuditDog(value: ["name": "New"])
    try await realm.beginWrite()
    try await realm.add(newObject)
    realm.delete(oldObject)
    realm.cancelWrite()
    let rerun = realm.objects(AuditDog.self).map(\.name).joined(separator: ",")
    return ["\(oldObject.isInvalidated)", "\(newObject.isInvalidated)", rerun]
}

/// RLMRealm `beginWriteTransaction`: "Before beginning the write transaction, beginWriteTransaction updates
/// the RLMRealm instance to the latest Realm version, as if refresh had been called".
private func auditBeginWriteAdvances(_ realm: isolated Realm, other: Realm) async throws -> [Int] {
    realm.refresh()
    let dog = try #require(realm.objects(AuditDog.self).first)
    try await other.write { realm in
        realm.objects(AuditDog.self).first!.age = 7
        realm.create(AuditDog.self, value: ["name": "Second"])
    }
    let stale = [dog.age, realm.objects(AuditDog.self).count]
    try await realm.beginWrite()
    let fresh = [dog.age, realm.objects(AuditDog.self).count]
    dog.age += 1
    try await realm.commitWrite()
    return stale + fresh + [dog.age]
}

/// RLMRealm `beginWriteTransaction`: "Calls to beginWriteTransaction from RLMRealm instances for the same
/// Realm file in other threads or other processes will block until the current write transaction completes
/// or is cancelled."
private func auditOtherWriterWaitsForCancel(_ realm: isolated Realm, other: Realm) async throws -> [String] {
    try await realm.beginWrite()
    realm.create(AuditDog.self, value: ["name": "Cancelled"])
    let waiter = Task { try await other.write { $0.create(AuditDog.self, value: ["name": "Waited"]) } }
    // The other realm's writer queues for the engine's writer lock, which this transaction holds.
    let writeLock = realm.context.engine.writeLock
    try await waitUntil("the other realm's writer queueing") { writeLock.waiterCount >= 1 }
    let whileOpen = await other.read { $0.objects(AuditDog.self).count }
    realm.cancelWrite()
    try await waiter.value
    realm.refresh()
    return ["\(whileOpen)", realm.objects(AuditDog.self).map(\.name).joined(separator: ",")]
}

/// RLMRealm `writeCopyToURL`: "if this method is called from within a write transaction, the current data is
/// written, not the data from the point when the previous write transaction was committed."
private func auditWriteCopyInsideATransaction(_ realm: isolated Realm, to url: URL) async throws {
    try await realm.beginWrite()
    realm.objects(AuditDog.self).first?.age = 5  // the committed row, rewritten in the transaction
    realm.create(AuditDog.self, value: ["name": "Uncommitted"])
    do {
        try await realm.writeCopy(toFile: url)
    } catch {
        realm.cancelWrite()
        throw error
    }
    realm.create(AuditDog.self, value: ["name": "After"])  // the transaction is still open
    try await realm.commitWrite()
}

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

/// RLMRealm `invalidate`: "Calling this method multiple times in a row without reading any data from the
/// Realm, or before ever reading any data from the Realm, is a no-op ... The Realm itself remains valid, and a
/// new read transaction is implicitly begun the next time data is read from the Realm."
private func auditInvalidateThenRead(_ realm: isolated Realm, other: Realm) async throws -> [Int] {
    realm.invalidate()
    realm.invalidate()
    let before = realm.objects(AuditDog.self).count
    try await other.write { $0.create(AuditDog.self, value: ["name": "Later"]) }
    realm.invalidate()
    realm.invalidate()
    return [before, realm.objects(AuditDog.self).count]
}

// MARK: Tests

@Suite(.timeLimit(.minutes(10))) struct SeedAuditTests {
    // MARK: Models

    @Test func indexedPropertiesOfEachSupportedTypeAnswerEqualityAndIn() async throws {
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

    @Test func uuidStringDefaultPrimaryKeysAreUniquePerObject() async throws {
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

    @Test func nestedPropertySyntaxTraversesLinks() async throws {
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

    @Test func optionalNumbersOfEverySize() async throws {
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

    @Test func intBackedEnumsAloneAndInCollections() async throws {
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
        await expectAuditError(.invalidValue) {
            try await realm.write { $0.create(AuditTask.self, value: ["priority": 7]) }
        }
    }

    @Test func ignoredPropertiesDoNotAutoUpdateAndCannotBeQueried() async throws {
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

    @Test func subclassesInheritPersistedPropertiesAndMethods() async throws {
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

    @Test func aListHoldsTheSameObjectWithAPrimaryKeyAtSeveralIndices() async throws {
        // "A List may contain multiple references to the same Realm object, including objects with primary
        // keys ... insert the same object into it three times; the List will then return that object if the
        // element at any of the indices 0, 1, and 2 is accessed."
        let realm = try await Realm(configuration: auditConfiguration())
        let same = try await realm.write { realm -> [Bool] in
            let library = realm.create(AuditLibrary.self, value: ["id": 1])
            let book = realm.create(AuditBook.self, value: ["id": 7, "title": "Cheese"])
            library.books.insert(book, at: 0)
            library.books.insert(book, at: 0)
            library.books.insert(book, at: 0)
            return [
                library.books.count == 3, library.books.allSatisfy { $0.isSameObject(as: book) },
                realm.objects(AuditBook.self).count == 1,
            ]
        }
        #expect(same == [true, true, true])
        let frozenIDs = await realm.read { $0.objects(AuditLibrary.self).first!.books.map(\.id) }
        #expect(frozenIDs == [7, 7, 7])
    }

    @Test func genericCodeWorksOnEveryKindOfCollection() async throws {
        // The guide's `operateOn<C: RealmCollection>(collection:)`: ActorStore has no RealmCollection protocol;
        // Results, List and LinkingObjects are RandomAccessCollections, which generic code can take instead.
        let realm = try await Realm(configuration: auditConfiguration())
        let described = try await realm.write { realm -> [String] in
            let jim = realm.create(
                AuditPerson.self, value: ["name": "Jim", "dogs": [["name": "Rex"], ["name": "Fido"]]])
            let rex = jim.dogs[0]
            return [auditDescribe(realm.objects(AuditDog.self)), auditDescribe(jim.dogs), "\(rex.owners.count)"]
        }
        #expect(described == ["2: Rex,Fido", "2: Rex,Fido", "1"])
    }

    // MARK: Writes

    @Test func createFromJSONSerializationOutput() async throws {
        // The guide's JSON section: "it's possible to add Objects from JSON using the output of
        // NSJSONSerialization.JSONObjectWithData(_:options:) ... If there are nested objects or arrays in the
        // JSON, these will be mapped automatically to to-one and to-many relationships".
        let realm = try await Realm(configuration: auditConfiguration())
        let data = Data(
            #"{"id": 123, "city": "San Francisco", "area": 121.5, "districts": [{"name": "Mission"}]}"#.utf8)
        try await realm.write { realm in
            let json = try JSONSerialization.jsonObject(with: data, options: [])
            realm.create(AuditCity.self, value: json, update: .modified)
        }
        let city = await realm.read { realm in
            realm.object(ofType: AuditCity.self, forPrimaryKey: 123).map {
                "\($0.city) \($0.area) \($0.districts.map(\.name))"
            }
        }
        #expect(city == "San Francisco 121.5 [\"Mission\"]")
        // The same JSON shape updates the object with the primary key.
        let update = Data(#"{"id": 123, "city": "SF"}"#.utf8)
        try await realm.write { realm in
            realm.create(AuditCity.self, value: try JSONSerialization.jsonObject(with: update), update: .modified)
        }
        let updated = await realm.read { realm in
            realm.objects(AuditCity.self).map { "\($0.city) \($0.area) \($0.districts.count)" }
        }
        #expect(updated == ["SF 121.5 1"])
        // "NSDate and NSData properties cannot be automatically inferred from strings".
        await expectAuditError(.invalidValue) {
            try await realm.write { $0.create(AuditCity.self, value: ["id": 1, "founded": "1776-06-29"]) }
        }
    }

    @Test func jsonPropertiesNotInTheModelAreIgnored() async throws {
        // "Realm will ignore any properties in the JSON not defined by the Object."
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            realm.create(
                AuditCity.self, value: ["id": 1, "city": "San Francisco", "population": 870_000], update: .modified)
        }
        let cities = await realm.read { $0.objects(AuditCity.self).map(\.city) }
        #expect(cities == ["San Francisco"])
    }

    @Test func addWithUpdateForASequenceUpdatesExistingObjectsAndAddsNewOnes() async throws {
        // RLMRealm `addOrUpdateObjects:`: "the equivalent of calling addOrUpdateObject: for every object in a
        // collection"; "If no objects exist in the Realm with the same primary key value, the object is
        // inserted. Otherwise, the existing object is updated with any changed values."
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            realm.create(AuditBook.self, value: ["id": 1, "title": "Cheese", "price": 10])
            realm.create(AuditBook.self, value: ["id": 2, "title": "Bread", "price": 5])
            realm.create(
                AuditLibrary.self, value: ["id": 1, "name": "Main", "books": [["id": 1], ["id": 2]]], update: .modified)
        }
        try await realm.write { realm in
            let books = [
                AuditBook(value: ["id": 2, "title": "Bread", "price": 6]),
                AuditBook(value: ["id": 3, "title": "Wine", "price": 30]),
            ]
            realm.add(books, update: .modified)
            // A list given by the added object replaces the stored one (and .all writes the default name too).
            realm.add(AuditLibrary(value: ["id": 1, "books": [books[1]]]), update: .all)
        }
        let state = await realm.read { realm in
            [
                realm.objects(AuditBook.self).map { "\($0.id) \($0.title) \($0.price)" }.joined(separator: ","),
                realm.objects(AuditLibrary.self).map { "\($0.name)|\($0.books.map(\.id))" }.joined(),
            ]
        }
        #expect(state == ["1 Cheese 10,2 Bread 6,3 Wine 30", "|[3]"])
    }

    @Test func modifiedReportsOnlyChangedObjectsWhileAllReportsEveryGivenOne() async throws {
        // UpdatePolicy: `.modified` writes (and reports) only the values that differ; `.all` writes every value
        // given.
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { $0.create(AuditBook.self, value: ["id": 1, "title": "Cheese", "price": 10]) }
        let changes = await realm.read { $0.objects(AuditBook.self).changes }
        let reader = ChangeReader(changes)
        guard case .initial(let initial)? = try await reader.next() else {
            Issue.record("no initial delivery")
            return
        }
        #expect(initial.count == 1)
        try await realm.write { realm in
            realm.create(AuditBook.self, value: ["id": 1, "title": "Cheese", "price": 10], update: .modified)
            realm.create(AuditBook.self, value: ["id": 2, "title": "Bread"])
        }
        let first = update(try await reader.next())
        #expect(first?.insertions == [1])
        #expect(first?.modifications == [], "the same values with .modified change nothing")
        try await realm.write { realm in
            realm.add(AuditBook(value: ["id": 2, "title": "Bread", "price": 3]), update: .modified)
        }
        let second = update(try await reader.next())
        #expect(second?.modifications == [1], "a changed value with .modified is written and reported")
        try await realm.write { realm in
            realm.create(AuditBook.self, value: ["id": 1, "title": "Cheese", "price": 10], update: .all)
        }
        let third = update(try await reader.next())
        #expect(third?.modifications == [0], "the same values with .all are written and reported")
    }

    @Test func addingADeletedObjectIsRefused() async throws {
        // RLMRealm `addObject:`: "The object to be added must be valid and cannot have been previously deleted
        // from a Realm (i.e. isInvalidated must be NO)." And "all child relationships referenced by this object
        // will also be added": a link to a deleted object cannot be.
        let realm = try await Realm(configuration: auditConfiguration())
        await expectAuditError(.invalidObject) {
            try await realm.write { realm in
                let dog = realm.create(AuditDog.self, value: ["name": "Gone"])
                realm.delete(dog)
                realm.add(dog)
            }
        }
        // A link to a deleted object is refused (this holds).
        await expectAuditError(.invalidObject) {
            try await realm.write { realm in
                let jim = realm.create(AuditPerson.self, value: ["name": "Jim"])
                realm.delete(jim)
                let rex = AuditDog(value: ["name": "Rex"])
                rex.owner = jim
                realm.add(rex)
            }
        }
        let count = await realm.read { $0.objects(AuditDog.self).count + $0.objects(AuditPerson.self).count }
        #expect(count == 0)
    }

    @Test func deletingTheObjectsOfAListAndOfLinkingObjects() async throws {
        // RLMRealm `deleteObjects:`: "An enumerable collection such as NSArray, RLMArray, or RLMResults,
        // containing objects to be deleted from the Realm."
        let realm = try await Realm(configuration: auditConfiguration())
        let counts = try await realm.write { realm -> [Int] in
            let jim = realm.create(
                AuditPerson.self,
                value: ["name": "Jim", "dogs": [["name": "Rex"], ["name": "Fido"], ["name": "Spot"]]])
            let ann = realm.create(AuditPerson.self, value: ["name": "Ann", "dogs": [["name": "Max"]]])
            let maxDog = ann.dogs[0]
            realm.delete(jim.dogs)
            let afterList = [jim.dogs.count, ann.dogs.count, realm.objects(AuditDog.self).count]
            realm.delete(maxDog.owners)
            return afterList + [realm.objects(AuditPerson.self).count, realm.objects(AuditDog.self).count]
        }
        #expect(counts == [0, 1, 1, 1, 1], "Ann (who links to Max) is deleted, Jim stays")
    }

    @Test func deletingAListThatHoldsAnObjectTwice() async throws {
        // A List may hold one object several times; deleting the list's objects deletes each object.
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            let jim = realm.create(AuditPerson.self, value: ["name": "Jim"])
            let rex = realm.create(AuditDog.self, value: ["name": "Rex"])
            jim.dogs.append(contentsOf: [rex, rex])
        }
        try await realm.write { realm in realm.delete(realm.objects(AuditPerson.self).first!.dogs) }
        let dogs = await realm.read { $0.objects(AuditDog.self).count }
        #expect(dogs == 0)
    }

    @Test func deletedObjectsLeaveSetsAndMapValuesBecomeNil() async throws {
        // "Deleting Objects": links to a deleted object are nil'd, in every kind of collection.
        let realm = try await Realm(configuration: auditConfiguration())
        let state = try await realm.write { realm -> [String] in
            let jim = realm.create(AuditPerson.self, value: ["name": "Jim"])
            let rex = realm.create(AuditDog.self, value: ["name": "Rex"])
            let fido = realm.create(AuditDog.self, value: ["name": "Fido"])
            jim.favorites.insert(objectsIn: [rex, fido])
            jim.dogsByNickname["rexy"] = rex
            jim.dogsByNickname["fifi"] = fido
            realm.delete(rex)
            return [
                jim.favorites.map(\.name).joined(), jim.dogsByNickname.keys.joined(separator: ","),
                "\(jim.dogsByNickname["rexy"] == .some(nil))", jim.dogsByNickname["fifi"]??.name ?? "nil",
            ]
        }
        #expect(state == ["Fido", "fifi,rexy", "true", "Fido"])
        let frozen = await realm.freeze()
        let jim = try #require(frozen.objects(AuditPerson.self).first)
        #expect(jim.favorites.map(\.name) == ["Fido"])
        #expect(jim.dogsByNickname["rexy"] == .some(nil))
    }

    @Test func cancelWriteRestoresDeletedObjectsAndTheirInstances() async throws {
        let realm = try await Realm(configuration: auditConfiguration())
        let result = try await auditCancelAfterAddAndDelete(realm)
        #expect(result[1] == "true", "an object added in the cancelled transaction is invalidated")
        #expect(result[2] == "Old", "re-running the query returns the deleted object again")
        // A documented difference (ObjectBase.isInvalidated): validity follows the realm's version, so the
        // instance deleted in the cancelled transaction works again instead of staying invalidated.
        #expect(result[0] == "false", "the deleted instance is valid again")
    }

    @Test func beginWriteAdvancesToTheNewestVersion() async throws {
        let config = auditConfiguration()
        let realm = try await Realm(configuration: config)
        let other = try await Realm(configuration: config)
        try await realm.write { $0.create(AuditDog.self, value: ["name": "First"]) }
        let ages = try await auditBeginWriteAdvances(realm, other: other)
        #expect(ages == [0, 1, 7, 2, 8])
        let stored = await other.read { $0.objects(AuditDog.self).first?.age }
        #expect(stored == 8)
    }

    @Test func anotherRealmsWriteWaitsUntilTheTransactionIsCancelled() async throws {
        let config = auditConfiguration()
        let realm = try await Realm(configuration: config)
        let other = try await Realm(configuration: config)
        let result = try await auditOtherWriterWaitsForCancel(realm, other: other)
        #expect(result == ["0", "Waited"])
    }

    @Test func deleteAllKeepsTheFileSize() async throws {
        // "You can also delete all objects stored in a Realm. Note the Realm file will maintain its size on
        // disk to efficiently reuse that space for future objects."
        var config = auditConfiguration()
        config.automaticCompaction = false
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            for i in 0..<200 {
                realm.create(AuditDog.self, value: ["name": String(repeating: "x", count: 100), "age": i])
            }
        }
        let before = await realm.statistics
        try await realm.write { $0.deleteAll() }
        let after = await realm.statistics
        #expect(after.fileSize >= before.fileSize)
        #expect(after.usedBytes < before.usedBytes)
        #expect(await realm.isEmpty)
    }

    // MARK: Realms

    @Test func writeCopyInsideAWriteTransactionWritesTheCurrentData() async throws {
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { $0.create(AuditDog.self, value: ["name": "Committed"]) }
        let url = temporaryRealmURL("copy-in-transaction.realm")
        try await auditWriteCopyInsideATransaction(realm, to: url)
        var copyConfig = auditConfiguration()
        copyConfig.fileURL = url
        copyConfig.encryptionKey = nil  // writeCopy without a key writes a plain copy
        let copy = try await Realm(configuration: copyConfig)
        let copied = await copy.read { $0.objects(AuditDog.self).map { "\($0.name) \($0.age)" } }
        #expect(copied == ["Committed 5", "Uncommitted 0"], "the copy has the transaction's changes so far")
        let original = await realm.read { $0.objects(AuditDog.self).map(\.name) }
        #expect(original == ["Committed", "Uncommitted", "After"], "the transaction went on and committed")
    }

    @Test func writeCopyOfAnInMemoryRealm() async throws {
        // "In-memory Realms do not save data across app launches, but all other features of Realm will work as
        // expected"; writeCopy is how an in-memory realm's data is saved.
        var config = Realm.Configuration(inMemoryIdentifier: "SeedAudit-" + UUID().uuidString)
        config.objectTypes = auditTypes
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(AuditDog.self, value: ["name": "Memory"]) }
        let url = temporaryRealmURL("from-memory.realm")
        try await realm.writeCopy(toFile: url)
        #expect(FileManager.default.fileExists(atPath: url.path), "the copy is a file on disk")
        var copyConfig = auditConfiguration()
        copyConfig.fileURL = url
        copyConfig.encryptionKey = nil  // writeCopy without a key writes a plain copy
        let copy = try await Realm(configuration: copyConfig)
        let names = await copy.read { $0.objects(AuditDog.self).map(\.name) }
        #expect(names == ["Memory"])
    }

    @Test func deleteFilesLeavesNoAuxiliaryFiles() async throws {
        // "you should delete auxiliary Realm files as well as the main Realm file"; deleteFiles "deletes the
        // .realm ... and associated temporary files" and returns whether any were deleted.
        let config = auditConfiguration()
        let directory = try #require(config.fileURL?.deletingLastPathComponent())
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(AuditDog.self, value: ["name": "Rex"]) }
            try await realm.compact()
            try await realm.writeCopy(toFile: directory.appendingPathComponent("elsewhere.realm"))
        }
        #expect(try Realm.deleteFiles(for: config))
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        // The lock file stays, as Realm's `.lock` does ("It does not delete the .lock file"): it holds no data.
        #expect(left.sorted() == ["elsewhere.realm", "test.realm.lock"], "only the unrelated copy is left")
    }

    @Test func objectsReadFromAFrozenRealmAreFrozen() async throws {
        // RLMRealm `freeze`: "All objects and collections read from a frozen Realm will also be frozen."
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            realm.create(AuditDog.self, value: ["name": "Rex", "owner": ["name": "Jim"]])
        }
        let frozen = await realm.freeze()
        let dogs = frozen.objects(AuditDog.self)
        let rex = try #require(dogs.first)
        let owner = try #require(rex.owner)
        #expect(frozen.isFrozen && dogs.isFrozen && rex.isFrozen && owner.isFrozen)
        #expect(owner.version == frozen.version && dogs.version == frozen.version)
        let filtered = try dogs.filter("name == 'Rex'")
        #expect(filtered.isFrozen && filtered.count == 1)
        // And it does not live-update.
        try await realm.write { realm in realm.objects(AuditDog.self).first!.name = "Max" }
        #expect(rex.name == "Rex")
        #expect(try dogs.filter("name == 'Rex'").count == 1)
    }

    // MARK: Threading

    @Test func anUnresolvedReferencePinsItsVersionUntilReleased() async throws {
        // "Failing to resolve a ThreadSafeReference will result in the source version of the Realm being pinned
        // until the reference is deallocated."
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { $0.create(AuditDog.self, value: ["name": "Rex"]) }
        var reference: ThreadSafeReference<AuditDog>? = await realm.read { realm in
            ThreadSafeReference(to: realm.objects(AuditDog.self).first!)
        }
        try await realm.write { $0.create(AuditDog.self, value: ["name": "Fido"]) }
        #expect(await realm.statistics.pinnedVersions == 2)
        #expect(reference != nil)
        reference = nil
        #expect(await realm.statistics.pinnedVersions == 1, "releasing the reference releases its version")
    }

    @Test func invalidateTwiceIsHarmlessAndTheNextReadSeesTheNewestVersion() async throws {
        let config = auditConfiguration()
        let realm = try await Realm(configuration: config)
        let other = try await Realm(configuration: config)
        try await other.write { $0.create(AuditDog.self, value: ["name": "First"]) }
        let counts = try await auditInvalidateThenRead(realm, other: other)
        #expect(counts == [1, 2])
    }

    @Test func threadSafeReferenceToAFilteredSortedResultsKeepsItsQuery() async throws {
        // "Instances of Realm, Results, or List ... are thread-confined"; a ThreadSafeReference carries them.
        let config = auditConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            for (name, age) in [("Rex", 3), ("Fido", 1), ("Spot", 7), ("Max", 5)] {
                realm.create(AuditDog.self, value: ["name": name, "age": age])
            }
        }
        let reference = try await realm.read { realm in
            ThreadSafeReference(to: try realm.objects(AuditDog.self).filter("age > 2").sorted(byKeyPath: "name"))
        }
        let other = try await Realm(configuration: config)
        let names = try await other.write { realm -> [String] in
            let dogs = realm.resolve(reference)
            realm.create(AuditDog.self, value: ["name": "Bolt", "age": 4])
            realm.create(AuditDog.self, value: ["name": "Pup", "age": 0])
            return dogs.map(\.name)
        }
        #expect(names == ["Bolt", "Max", "Rex", "Spot"], "the resolved Results keeps its filter and sort, live")
    }

    @Test func copyingAnObjectToARealmOnAnotherFile() async throws {
        // "Copying Realm objects to other Realms is as simple as passing in the original object to
        // Realm().create(_:value:update:)". Live objects cannot leave their actor; a frozen one can.
        let source = try await Realm(configuration: auditConfiguration())
        try await source.write { $0.create(AuditDog.self, value: ["name": "Rex", "age": 3]) }
        let frozenRex = try #require(await source.freeze().objects(AuditDog.self).first)
        let destination = try await Realm(configuration: auditConfiguration())
        try await destination.write { realm in realm.create(AuditDog.self, value: frozenRex) }
        let copied = await destination.read { realm in realm.objects(AuditDog.self).map { "\($0.name) \($0.age)" } }
        #expect(copied == ["Rex 3"])

        // With the objects it links to (a list, a set, a map, a to-one link), copied at the same version.
        try await source.write { realm in
            let jim = realm.create(AuditPerson.self, value: ["name": "Jim", "address": ["country": "NZ"]])
            let rex = realm.objects(AuditDog.self)[0]
            let fido = realm.create(AuditDog.self, value: ["name": "Fido", "age": 1])
            jim.dogs.append(objectsIn: [rex, fido, rex])
            jim.favorites.insert(fido)
            jim.dogsByNickname["boss"] = rex
        }
        let frozenJim = try #require(await source.freeze().objects(AuditPerson.self).first)
        try await destination.write { realm in realm.create(AuditPerson.self, value: frozenJim) }
        let person = await destination.read { realm -> [String] in
            guard let jim = realm.objects(AuditPerson.self).first else { return [] }
            return [
                jim.name, jim.address?.country ?? "-", jim.dogs.map(\.name).joined(separator: ","),
                jim.favorites.map(\.name).joined(), jim.dogsByNickname["boss"]??.name ?? "-",
                "\(realm.objects(AuditDog.self).count)",
            ]
        }
        // An object reached several times (twice in the list, in the set, in the map) is copied once.
        #expect(person == ["Jim", "NZ", "Rex,Fido,Rex", "Fido", "Rex", "3"])
        let sameRex = await destination.read { realm in
            realm.objects(AuditPerson.self).first.map { $0.dogs[0].isSameObject(as: $0.dogs[2]) }
        }
        #expect(sameRex == true)

        // Objects that link back to the one being copied (Rex's owner is Jim, who lists Rex): the cycle is
        // copied too, each object once, the links between the copies as between the originals.
        try await source.write { realm in realm.objects(AuditDog.self)[0].owner = realm.objects(AuditPerson.self)[0] }
        let cyclic = try #require(await source.freeze().objects(AuditPerson.self).first)
        let third = try await Realm(configuration: auditConfiguration())
        try await third.write { realm in realm.create(AuditPerson.self, value: cyclic) }
        let graph = await third.read { realm -> [String] in
            guard let jim = realm.objects(AuditPerson.self).first else { return [] }
            let rex = jim.dogs[0]
            return [
                "\(realm.objects(AuditPerson.self).count) \(realm.objects(AuditDog.self).count)",
                rex.owner.map { $0.isSameObject(as: jim) ? "owner is Jim" : "owner is another" } ?? "no owner",
                jim.dogs[2].isSameObject(as: rex) ? "same Rex" : "two Rexes",
            ]
        }
        #expect(graph == ["1 2", "owner is Jim", "same Rex"])
        // Frozen objects among nested values are copied the same way, once each.
        try await third.write { realm in
            realm.create(AuditPerson.self, value: ["name": "Ann", "dogs": [frozenRex, frozenRex]])
        }
        let ann = await third.read { realm in
            realm.objects(AuditPerson.self).first { $0.name == "Ann" }.map {
                "\($0.dogs.count) \($0.dogs[0].isSameObject(as: $0.dogs[1]))"
            }
        }
        #expect(ann == "2 true")
        // And as a to-one link's nested value.
        try await third.write { realm in
            realm.create(AuditDog.self, value: ["name": "Spot", "owner": frozenJim])
        }
        let spotsOwner = await third.read { realm in
            realm.objects(AuditDog.self).first { $0.name == "Spot" }?.owner.map { "\($0.name) \($0.dogs.count)" }
        }
        #expect(spotsOwner == "Jim 3")
        // A frozen object of another class is refused.
        await expectAuditError(.invalidValue) {
            try await destination.write { realm in realm.create(AuditPerson.self, value: frozenRex) }
        }
    }
}
