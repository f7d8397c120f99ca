import Foundation
import Testing

@testable import ActorStore

// Regression tests for defects found in review; each states the behaviour that now holds.

final class RegDog: Object {
    @Persisted var name = ""
}

final class RegAddress: EmbeddedObject {
    @Persisted var street = ""
}

final class RegContact: Object {
    @Persisted var name = ""
    @Persisted var address: RegAddress?
    @Persisted var addresses: List<RegAddress>
}

final class RegTag: Object {
    @Persisted var label = ""
}

final class RegBook: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var title = ""
    @Persisted var note: RegTag?
}

final class RegOwner: Object {
    @Persisted var name = ""
    @Persisted var items: List<String>
}

final class RegInitSetter: Object {
    @Persisted var count = 0
    required init() {
        super.init()
        count = 5
    }
}

enum RegMigV1 { final class RegMigPet: Object { @Persisted var name = "" } }
enum RegMigV2 {
    final class RegMigPet: Object {
        @Persisted var name = ""
        @Persisted var age = 0
    }
}
enum RegIdxV1 { final class RegIdxPet: Object { @Persisted var name = "" } }
enum RegIdxV2 { final class RegIdxPet: Object { @Persisted(indexed: true) var name = "" } }
enum RegTasteFull: String, PersistableEnum { case sweet, bitter }
enum RegTasteShort: String, PersistableEnum { case sweet }
enum RegEnumV1 { final class RegEnumPet: Object { @Persisted var tastes: List<RegTasteFull> } }
enum RegEnumV2 { final class RegEnumPet: Object { @Persisted var tastes: List<RegTasteShort> } }

private func config(
    _ url: URL = temporaryRealmURL(), version: UInt64 = 0, types: [ObjectBase.Type]? = nil
)
    -> Realm.Configuration
{
    var configuration = Realm.Configuration(fileURL: url, schemaVersion: version, objectTypes: types)
    configuration.durability = .none
    return configuration
}

/// Begins a transaction, says so through `opened`, keeps it open (suspended, the actor free for other
/// tasks) until `release` holds, then cancels it.
private func holdTransactionThenCancel(
    _ realm: isolated Realm, createDog: Bool, opened: Locked<Bool>, release: @Sendable () async -> Bool
) async throws {
    try await realm.beginWrite()
    if createDog { realm.create(RegDog.self, value: ["name": "uncommitted"]) }
    opened.withLock { $0 = true }
    try await waitUntil("the transaction's release", release)
    realm.cancelWrite()
}

private func readThenCancel(_ realm: isolated Realm) async throws -> (Bool, Bool) {
    try await realm.beginWrite()
    let dog = realm.objects(RegDog.self).first!
    let before = dog.isInvalidated
    realm.cancelWrite()
    return (before, dog.isInvalidated)
}

@Suite(.serialized) struct RegressionTests {
    @Test func asyncAddFromAnotherTaskDoesNotJoinItsTransaction() async throws {
        let realm = try await Realm(configuration: config(types: [RegDog.self]))
        let opened = Locked(false)
        let added = Locked(false)
        // The holder cancels once the add below is queued behind its transaction (or, were the add to join
        // the transaction instead, once it returned: then the cancel discards the dog).
        let holder = Task {
            try await holdTransactionThenCancel(realm, createDog: false, opened: opened) {
                await realm.waitingWriterCount >= 1 || added.withLock { $0 }
            }
        }
        try await waitUntil("the holder's transaction opening") { opened.withLock { $0 } }
        let dog = RegDog()
        dog.name = "Rex"
        try await realm.add(dog)  // waits for the other transaction, then commits its own
        added.withLock { $0 = true }
        try await holder.value
        #expect(await realm.read { $0.objects(RegDog.self).count } == 1)
    }

    @Test func actorMembersDoNotSeeAnotherTasksOpenTransaction() async throws {
        let realm = try await Realm(configuration: config(types: [RegDog.self]))
        let opened = Locked(false)
        let checked = Locked(false)
        // The holder keeps its transaction (with an uncommitted dog) open until the checks below are done.
        let holder = Task {
            try await holdTransactionThenCancel(realm, createDog: true, opened: opened) { checked.withLock { $0 } }
        }
        try await waitUntil("the holder's transaction opening") { opened.withLock { $0 } }
        #expect(await realm.isEmpty)
        #expect(await realm.read { $0.objects(RegDog.self).count } == 0)
        #expect(await realm.freeze().objects(RegDog.self).isEmpty)
        checked.withLock { $0 = true }
        try await holder.value
        #expect(await realm.isEmpty)
    }

    @Test func aManagedEmbeddedObjectCannotGetASecondParent() async throws {
        let realm = try await Realm(configuration: config(types: [RegContact.self, RegAddress.self]))
        do {
            try await realm.write { realm in
                let c1 = realm.create(RegContact.self, value: ["name": "c1", "address": ["street": "Main"]])
                let c2 = realm.create(RegContact.self, value: ["name": "c2"])
                c2.address = c1.address
            }
            Issue.record("sharing an embedded object committed")
        } catch let error as RealmError {
            #expect(error.code == .invalidObject)
            #expect(error.message.contains("one parent"))
        }
        #expect(await realm.read { $0.objects(RegContact.self).isEmpty })
    }

    @Test func copyingAnObjectCopiesItsEmbeddedObjects() async throws {
        let realm = try await Realm(configuration: config(types: [RegContact.self, RegAddress.self]))
        try await realm.write { realm in
            let original = realm.create(
                RegContact.self, value: ["name": "orig", "address": ["street": "Main"], "addresses": [["street": "A"]]])
            let copy = realm.create(RegContact.self, value: original)
            copy.name = "copy"
        }
        try await realm.write { realm in realm.delete(realm.objects(RegContact.self).first { $0.name == "orig" }!) }
        let copy = await realm.read { realm -> [String] in
            let copy = realm.objects(RegContact.self).first { $0.name == "copy" }
            return [copy?.address?.street ?? "nil"] + (copy?.addresses.map(\.street) ?? [])
        }
        #expect(copy == ["Main", "A"])
    }

    @Test func reorderingAListOfEmbeddedObjectsKeepsThem() async throws {
        let realm = try await Realm(configuration: config(types: [RegContact.self, RegAddress.self]))
        try await realm.write { realm in
            realm.create(
                RegContact.self,
                value: ["name": "c", "addresses": [["street": "A"], ["street": "B"], ["street": "C"]]])
        }
        try await realm.write { realm in realm.objects(RegContact.self).first!.addresses.move(from: 0, to: 2) }
        #expect(await realm.read { $0.objects(RegContact.self).first!.addresses.map(\.street) } == ["B", "C", "A"])
        try await realm.write { realm in realm.objects(RegContact.self).first!.addresses.swapAt(0, 1) }
        #expect(await realm.read { $0.objects(RegContact.self).first!.addresses.map(\.street) } == ["C", "B", "A"])
    }

    @Test func nestedObjectsWithoutAPrimaryKeyAreCreatedInUpdateMode() async throws {
        let realm = try await Realm(configuration: config(types: [RegBook.self, RegTag.self]))
        try await realm.write { realm in
            realm.create(RegBook.self, value: ["id": 1, "title": "A", "note": ["label": "x"]], update: .modified)
        }
        #expect(await realm.read { $0.objects(RegBook.self).first?.note?.label } == "x")
    }

    @Test func cancellingInsideAWriteBlockCommitsNothing() async throws {
        let realm = try await Realm(configuration: config(types: [RegDog.self]))
        try await realm.write { realm in
            realm.create(RegDog.self, value: ["name": "gone"])
            realm.cancelWrite()
        }
        #expect(await realm.read { $0.objects(RegDog.self).count } == 0)
        #expect(await realm.isInWriteTransaction == false)
    }

    @Test func aVersionBumpIsNotRecordedForTablesNotChecked() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: config(url, types: [RegMigV1.RegMigPet.self]))
            try await realm.write { $0.create(RegMigV1.RegMigPet.self, value: ["name": "Rex"]) }
        }
        _ = RegMigV2.RegMigPet()  // both versions are known to the process: the name is ambiguous
        do {
            // Without objectTypes, the table is not checked: the version must not be recorded, and writing
            // the changed class is refused with directions.
            let realm = try await Realm(configuration: config(url, version: 1))
            do {
                try await realm.write { $0.create(RegMigV2.RegMigPet.self, value: ["name": "Tom", "age": 3]) }
                Issue.record("a changed class was written without migration")
            } catch let error as RealmError {
                #expect(error.code == .schemaMismatch)
                #expect(error.message.contains("objectTypes"))
            }
        }
        // Listing the class migrates it at the same version.
        let realm = try await Realm(configuration: config(url, version: 1, types: [RegMigV2.RegMigPet.self]))
        try await realm.write { $0.create(RegMigV2.RegMigPet.self, value: ["name": "Tom", "age": 3]) }
        #expect(await realm.read { $0.objects(RegMigV2.RegMigPet.self).map(\.age) } == [0, 3])
    }

    @Test func hostileDecimalTextIsRejected() {
        #expect(Decimal128("1e-9223372036854775808") == nil)
        #expect(Decimal128("1e9223372036854775807") == nil)
        #expect(Decimal128("12.50") == Decimal128("12.5"))
    }

    @Test func objectsReadInACancelledTransactionStayValid() async throws {
        let url = temporaryRealmURL()
        let a = try await Realm(configuration: config(url, types: [RegDog.self]))
        let b = try await Realm(configuration: config(url, types: [RegDog.self]))
        try await b.write { $0.create(RegDog.self, value: ["name": "Tom"]) }
        let (before, after) = try await readThenCancel(a)
        #expect(before == false)
        #expect(after == false)
    }

    @Test func indexChangesNeedNoVersionBump() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: config(url, types: [RegIdxV1.RegIdxPet.self]))
            try await realm.write { $0.create(RegIdxV1.RegIdxPet.self, value: ["name": "Rex"]) }
        }
        let realm = try await Realm(configuration: config(url, types: [RegIdxV2.RegIdxPet.self]))
        #expect(await realm.read { $0.objects(RegIdxV2.RegIdxPet.self).map(\.name) } == ["Rex"])
    }

    @Test func aListReferenceResolvesInARealmThatNeverUsedItsClass() async throws {
        let url = temporaryRealmURL()
        let b = try await Realm(configuration: config(url))
        let a = try await Realm(configuration: config(url))
        try await a.write { $0.create(RegOwner.self, value: ["name": "o", "items": ["x"]]) }
        let reference = await a.read { ThreadSafeReference(to: $0.objects(RegOwner.self).first!.items) }
        #expect(await b.read { $0.resolve(reference)?.count ?? -1 } == 1)
    }

    @Test func anInitThatSetsPropertiesWorksForManagedObjects() async throws {
        let realm = try await Realm(configuration: config(types: [RegInitSetter.self]))
        try await realm.write { realm in realm.add(RegInitSetter()) }
        try await realm.write { realm in realm.objects(RegInitSetter.self).first!.count = 7 }
        #expect(await realm.read { $0.objects(RegInitSetter.self).first!.count } == 7)
    }

    @Test func listElementsOfAnEnumCaseNoLongerDeclaredReadAsTheDefault() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(configuration: config(url, types: [RegEnumV1.RegEnumPet.self]))
            try await realm.write { $0.create(RegEnumV1.RegEnumPet.self, value: ["tastes": ["sweet", "bitter"]]) }
        }
        let realm = try await Realm(configuration: config(url, types: [RegEnumV2.RegEnumPet.self]))
        let tastes = await realm.read { $0.objects(RegEnumV2.RegEnumPet.self).first!.tastes.map(\.rawValue) }
        #expect(tastes == ["sweet", "sweet"])
    }

    @Test func aSecondRealmWithAnotherDurabilityIsRefused() async throws {
        let url = temporaryRealmURL()
        var fast = Realm.Configuration(fileURL: url)
        fast.durability = .none
        let a = try await Realm(configuration: fast)
        do {
            _ = try await Realm(configuration: Realm.Configuration(fileURL: url))
            Issue.record("a .full realm silently shared a .none engine")
        } catch let error as RealmError {
            #expect(error.code == .alreadyOpen)
            #expect(error.message.contains("durability"))
        }
        _ = a
    }
}

@Suite struct EmbeddedOwnershipTests {
    @Test func oneUnmanagedEmbeddedObjectCannotBeAddedUnderTwoProperties() async throws {
        let realm = try await Realm(configuration: testConfiguration([RegContact.self, RegAddress.self]))
        do {
            try await realm.write { realm in
                let contact = RegContact()
                let address = RegAddress(value: ["street": "Main"])
                contact.address = address
                contact.addresses.append(address)
                realm.add(contact)
            }
            Issue.record("one embedded object was given two links")
        } catch let error as RealmError {
            #expect(error.code == .invalidObject)
        }
        #expect(await realm.read { $0.objects(RegContact.self).isEmpty })
        // Separate embedded objects are fine.
        try await realm.write { realm in
            let contact = RegContact()
            contact.address = RegAddress(value: ["street": "Main"])
            contact.addresses.append(RegAddress(value: ["street": "Side"]))
            realm.add(contact)
        }
        let streets = await realm.read { realm in
            realm.objects(RegContact.self).map { [$0.address?.street ?? "nil"] + $0.addresses.map(\.street) }
        }
        #expect(streets == [["Main", "Side"]])
    }
}

@Suite struct SchemaBindingTests {
    /// A realm keeps its schema bindings across ordinary commits and rebuilds them when the file's tables
    /// change: here another realm on the file adds a table, and the first realm, which never used that
    /// class, writes and reads both classes afterwards.
    @Test func bindingsFollowTablesAnotherRealmAdds() async throws {
        let a = try await Realm(configuration: testConfiguration(nil))
        try await a.write { $0.create(RegDog.self, value: ["name": "Rex"]) }
        try await a.write { $0.create(RegDog.self, value: ["name": "Rex 2"]) }
        let b = try await Realm(configuration: a.configuration)
        try await b.write { realm in
            realm.create(RegTag.self, value: ["label": "t"])
            realm.create(RegDog.self, value: ["name": "Fido"])
            realm.create(RegBook.self, value: ["id": 1, "title": "B", "note": ["label": "n"]])
        }
        try await a.write { realm in
            realm.create(RegDog.self, value: ["name": "Max"])
            realm.create(RegTag.self, value: ["label": "u"])
            realm.create(RegBook.self, value: ["id": 2, "title": "C"])
        }
        let (dogs, tags, books) = await a.read { realm in
            (
                realm.objects(RegDog.self).map(\.name), realm.objects(RegTag.self).map(\.label),
                realm.objects(RegBook.self).map { "\($0.id) \($0.title) \($0.note?.label ?? "-")" }
            )
        }
        #expect(dogs == ["Rex", "Rex 2", "Fido", "Max"])
        #expect(tags == ["t", "n", "u"])
        #expect(books == ["1 B n", "2 C -"])
        let seenByB = await b.read { realm in realm.objects(RegTag.self).count + realm.objects(RegDog.self).count }
        #expect(seenByB == 7)
    }
}

private func deleteSomeResults(_ realm: isolated Realm) -> [String] {
    for i in 0..<6 {
        let tag = realm.create(RegTag.self, value: ["label": "t\(i)"])
        realm.create(RegBook.self, value: ["id": i, "title": "b\(i)", "note": tag])
        realm.create(
            RegContact.self,
            value: ["name": "c\(i)", "address": ["street": "s\(i)"], "addresses": [["street": "x\(i)"]]])
    }
    let held = realm.objects(RegTag.self).where { $0.label == "t1" }.first!
    realm.delete(realm.objects(RegTag.self).where { $0.label == "t1" || $0.label == "t4" })
    realm.delete(realm.objects(RegContact.self).where { $0.name != "c2" })
    let tags: [String] = realm.objects(RegTag.self).map(\.label)
    let notes: [String] = realm.objects(RegBook.self).map { $0.note?.label ?? "nil" }
    let contacts: [String] = realm.objects(RegContact.self).map { contact in
        "\(contact.name) \(contact.address?.street ?? "-") \(contact.addresses.count)"
    }
    return [
        "\(held.isInvalidated)", tags.joined(separator: ","), notes.joined(separator: ","),
        contacts.joined(separator: ","),
    ]
}

@Suite struct DeleteResultsTests {
    /// `delete(results)` deletes by key (no object per row): exactly the matches go, links to them become
    /// nil, live objects of them become invalidated, and the objects that remain keep their embedded objects.
    @Test func deletingResultsDeletesTheMatchesAndOnlyThem() async throws {
        let realm = try await Realm(
            configuration: testConfiguration([RegTag.self, RegBook.self, RegContact.self, RegAddress.self]))
        let outcome = try await realm.write { realm in deleteSomeResults(realm) }
        #expect(outcome == ["true", "t0,t2,t3,t5", "t0,nil,t2,t3,nil,t5", "c2 s2 1"])
        #expect(await realm.read { $0.objects(RegTag.self).count } == 4)
    }
}

@Suite struct CollectionCacheTests {
    @Test func collectionReadsFollowWritesThroughAnyInstance() async throws {
        let realm = try await Realm(configuration: testConfiguration([RegOwner.self]))
        let seen = try await realm.write { realm -> [String] in
            let owner = realm.create(RegOwner.self, value: ["name": "o", "items": ["a", "b"]])
            let list = owner.items
            var seen = [list[0], "\(list.count)"]
            let other = realm.objects(RegOwner.self).first!  // another instance of the same object
            other.items[0] = "z"
            other.items.append("c")
            seen += [list[0], "\(list.count)", owner.items[2]]
            return seen
        }
        #expect(seen == ["a", "2", "z", "3", "c"])
        let b = try await Realm(configuration: realm.configuration)
        try await b.write { $0.objects(RegOwner.self).first!.items.removeAll() }
        #expect(await realm.read { $0.objects(RegOwner.self).first!.items.count } == 0)
    }
}

/// A manual transaction (`beginWrite` … `await` … `commitWrite`) and the other tasks that run on the realm
/// while it is suspended.
@Suite struct ManualTransactionTests {
    /// Opens a transaction, adds a book, and waits for `gate` before committing.
    private static func addBook(
        _ realm: isolated Realm, id: Int, opened: @Sendable () -> Void, gate: AsyncStream<Void>
    ) async throws {
        try await realm.beginWrite()
        realm.create(Book.self, value: ["id": id])
        opened()
        for await _ in gate { break }
        try await realm.commitWrite()
    }

    @Test func anotherTasksInvalidateLeavesTheTransactionAlone() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        let (gate, open) = AsyncStream<Void>.makeStream()
        let (opened, signal) = AsyncStream<Void>.makeStream()
        let writer = Task { try await Self.addBook(realm, id: 1, opened: { signal.yield() }, gate: gate) }
        for await _ in opened { break }
        await realm.invalidate()  // another task: must not cancel the writer's transaction
        #expect(await realm.isInWriteTransaction)
        open.yield()
        try await writer.value
        #expect(await realm.read { $0.objects(Book.self).map(\.id) } == [1])
    }

    @Test func writeCopyOfAFailedTransactionThrowsItsError() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        try await realm.write { $0.create(Book.self, value: ["id": 1]) }
        let url = temporaryRealmURL("failed-copy.realm")
        let error = await #expect(throws: RealmError.self) { try await Self.copyAfterDuplicate(realm, to: url) }
        #expect(error?.code == .primaryKeyExists)
        #expect(!FileManager.default.fileExists(atPath: url.path), "nothing was copied")
        #expect(await realm.read { $0.objects(Book.self).count } == 1)
    }

    private static func copyAfterDuplicate(_ realm: isolated Realm, to url: URL) async throws {
        try await realm.beginWrite()
        realm.create(Book.self, value: ["id": 1])  // a duplicate primary key: recorded, the commit would throw
        do {
            try await realm.writeCopy(toFile: url)
        } catch {
            realm.cancelWrite()
            throw error
        }
        try await realm.commitWrite()
    }
}
