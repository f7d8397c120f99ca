import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Writes: add and create, updates by primary key (`.modified`, `.all`, partial and nested), values from
// JSON, and the objects a write keeps using afterwards.

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

@Suite(.timeLimit(.minutes(30))) struct WriteTests {
    @Test(.tags(.seed)) func updateNeedsAPrimaryKey() async {
        // "You may not pass update: true for object types which don't define a primary key." Refusing it by
        // stopping (a programmer error) or by throwing from write is fine; silently adding is not.
        await #expect(processExitsWith: .failure) {
            let realm = try await Realm(configuration: testConfiguration([SeedAnimal.self]))
            try await realm.write { $0.create(SeedAnimal.self, value: ["age": 1], update: .modified) }
        }
    }

    @Test(.tags(.seed)) func addThenContinueUsingTheObject() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await addThenKeepUsing(realm)
        // From outside the actor: add gives the object away, in a transaction of its own.
        let fido = SeedDog()
        fido.name = "Fido"
        try await realm.add(fido)
        let names = await realm.read { $0.objects(SeedDog.self).map(\.name) }
        #expect(names == ["Fido"])
    }

    @Test(.tags(.seed)) func autoUpdatingObjectsAndResults() async throws {
        try await autoUpdatingObjects(try await Realm(configuration: seedConfiguration()))
        try await autoUpdatingResults(try await Realm(configuration: seedConfiguration()))
    }

    @Test(.tags(.seed)) func primaryKeysAndAddWithUpdate() async throws {
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

    @Test(.tags(.seed)) func partialUpdateKeepsUnspecifiedProperties() async throws {
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

    @Test(.tags(.seed)) func nestedObjectsWithPrimaryKeysAreUpdatedPartially() async throws {
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

    @Test(.tags(.seed)) func nilInAnUpdateClearsAnOptional() async throws {
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

    @Test(.tags(.seed)) func primaryKeyCannotChangeOnceAdded() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { $0.create(Book.self, value: ["id": 1, "title": "T"]) }
        await expectRealmError(.invalidValue) {
            try await realm.write { realm in realm.object(ofType: Book.self, forPrimaryKey: 1)!.id = 5 }
        }
        let ids = await realm.read { $0.objects(Book.self).map(\.id) }
        #expect(ids == [1])
    }

    @Test(.tags(.seed)) func duplicatePrimaryKeyThrowsAndCommitsNothing() async throws {
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

    @Test(.tags(.seed)) func invalidValueInCreateThrows() async throws {
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

    @Test(.tags(.audit)) func createFromJSONSerializationOutput() async throws {
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
        await expectRealmError(.invalidValue) {
            try await realm.write { $0.create(AuditCity.self, value: ["id": 1, "founded": "1776-06-29"]) }
        }
    }

    @Test(.tags(.audit)) func jsonPropertiesNotInTheModelAreIgnored() async throws {
        // "Realm will ignore any properties in the JSON not defined by the Object."
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { realm in
            realm.create(
                AuditCity.self, value: ["id": 1, "city": "San Francisco", "population": 870_000], update: .modified)
        }
        let cities = await realm.read { $0.objects(AuditCity.self).map(\.city) }
        #expect(cities == ["San Francisco"])
    }

    @Test(.tags(.audit)) func addWithUpdateForASequenceUpdatesExistingObjectsAndAddsNewOnes() async throws {
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

    @Test(.tags(.audit)) func modifiedReportsOnlyChangedObjectsWhileAllReportsEveryGivenOne() async throws {
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

    @Test(.tags(.audit)) func addingADeletedObjectIsRefused() async throws {
        // RLMRealm `addObject:`: "The object to be added must be valid and cannot have been previously deleted
        // from a Realm (i.e. isInvalidated must be NO)." And "all child relationships referenced by this object
        // will also be added": a link to a deleted object cannot be.
        let realm = try await Realm(configuration: auditConfiguration())
        await expectRealmError(.invalidObject) {
            try await realm.write { realm in
                let dog = realm.create(AuditDog.self, value: ["name": "Gone"])
                realm.delete(dog)
                realm.add(dog)
            }
        }
        // A link to a deleted object is refused (this holds).
        await expectRealmError(.invalidObject) {
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

    @Test(.tags(.regression)) func nestedObjectsWithoutAPrimaryKeyAreCreatedInUpdateMode() async throws {
        let realm = try await Realm(configuration: regressionConfiguration(types: [RegBook.self, RegTag.self]))
        try await realm.write { realm in
            realm.create(RegBook.self, value: ["id": 1, "title": "A", "note": ["label": "x"]], update: .modified)
        }
        #expect(await realm.read { $0.objects(RegBook.self).first?.note?.label } == "x")
    }
}
