import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Write transactions: the write forms, cancel and rollback, `beginWrite`/`commitWrite`, and how
// transactions of other tasks and realms wait for each other.

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

@Suite(.timeLimit(.minutes(30))) struct TransactionTests {
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

    @Test(.tags(.seed)) func theThreeWriteForms() async throws {
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

    @Test(.tags(.seed)) func errorThrownByTheBlockCommitsNothing() async throws {
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

    @Test(.tags(.seed)) func cancelledTransactionInvalidatesItsObjects() async throws {
        try await cancelledTransaction(try await Realm(configuration: seedConfiguration()))
    }

    @Test(.tags(.seed)) func writeReturnsTheBlockValue() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let frozenDog = try await realm.write { realm -> String in
            realm.create(SeedDog.self, value: ["name": "Rex", "age": 3]).name
        }
        #expect(frozenDog == "Rex")
        let pair = try await realm.write { realm in (realm.objects(SeedDog.self).count, "done") }
        #expect(pair == (1, "done"))
    }

    @Test(.tags(.seed)) func beginCommitFromAnIsolatedFunction() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let count = try await batchedTransactions(realm)
        #expect(count == 200)
        let other = try await Realm(configuration: realm.configuration)
        let names = await other.read { realm in Set(realm.objects(SeedNamedPerson.self).map(\.name)) }
        #expect(names == Set((0..<10).map { "\($0)" }))
    }

    @Test(.tags(.seed)) func writesWaitForEachOtherOnOneRealm() async throws {
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

    @Test(.tags(.audit)) func cancelWriteRestoresDeletedObjectsAndTheirInstances() async throws {
        let realm = try await Realm(configuration: auditConfiguration())
        let result = try await auditCancelAfterAddAndDelete(realm)
        #expect(result[1] == "true", "an object added in the cancelled transaction is invalidated")
        #expect(result[2] == "Old", "re-running the query returns the deleted object again")
        // A documented difference (ObjectBase.isInvalidated): validity follows the realm's version, so the
        // instance deleted in the cancelled transaction works again instead of staying invalidated.
        #expect(result[0] == "false", "the deleted instance is valid again")
    }

    @Test(.tags(.audit)) func beginWriteAdvancesToTheNewestVersion() async throws {
        let config = auditConfiguration()
        let realm = try await Realm(configuration: config)
        let other = try await Realm(configuration: config)
        try await realm.write { $0.create(AuditDog.self, value: ["name": "First"]) }
        let ages = try await auditBeginWriteAdvances(realm, other: other)
        #expect(ages == [0, 1, 7, 2, 8])
        let stored = await other.read { $0.objects(AuditDog.self).first?.age }
        #expect(stored == 8)
    }

    @Test(.tags(.audit)) func anotherRealmsWriteWaitsUntilTheTransactionIsCancelled() async throws {
        let config = auditConfiguration()
        let realm = try await Realm(configuration: config)
        let other = try await Realm(configuration: config)
        let result = try await auditOtherWriterWaitsForCancel(realm, other: other)
        #expect(result == ["0", "Waited"])
    }

    @Test(.tags(.regression)) func asyncAddFromAnotherTaskDoesNotJoinItsTransaction() async throws {
        let realm = try await Realm(configuration: regressionConfiguration(types: [RegDog.self]))
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

    @Test(.tags(.regression)) func actorMembersDoNotSeeAnotherTasksOpenTransaction() async throws {
        let realm = try await Realm(configuration: regressionConfiguration(types: [RegDog.self]))
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

    @Test(.tags(.regression)) func cancellingInsideAWriteBlockCommitsNothing() async throws {
        let realm = try await Realm(configuration: regressionConfiguration(types: [RegDog.self]))
        try await realm.write { realm in
            realm.create(RegDog.self, value: ["name": "gone"])
            realm.cancelWrite()
        }
        #expect(await realm.read { $0.objects(RegDog.self).count } == 0)
        #expect(await realm.isInWriteTransaction == false)
    }

    @Test(.tags(.regression)) func objectsReadInACancelledTransactionStayValid() async throws {
        let url = temporaryRealmURL()
        let a = try await Realm(configuration: regressionConfiguration(url, types: [RegDog.self]))
        let b = try await Realm(configuration: regressionConfiguration(url, types: [RegDog.self]))
        try await b.write { $0.create(RegDog.self, value: ["name": "Tom"]) }
        let (before, after) = try await readThenCancel(a)
        #expect(before == false)
        #expect(after == false)
    }

    // This test and the next: a manual transaction (`beginWrite` … `await` … `commitWrite`) and the other
    // tasks that run on the realm while it is suspended.
    @Test(.tags(.regression)) func anotherTasksInvalidateLeavesTheTransactionAlone() async throws {
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

    @Test(.tags(.regression)) func writeCopyOfAFailedTransactionThrowsItsError() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        try await realm.write { $0.create(Book.self, value: ["id": 1]) }
        let url = temporaryRealmURL("failed-copy.realm")
        let error = await #expect(throws: RealmError.self) { try await Self.copyAfterDuplicate(realm, to: url) }
        #expect(error?.code == .primaryKeyExists)
        #expect(!FileManager.default.fileExists(atPath: url.path), "nothing was copied")
        #expect(await realm.read { $0.objects(Book.self).count } == 1)
    }
}
