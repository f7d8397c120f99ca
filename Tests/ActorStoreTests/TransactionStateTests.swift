import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

// The transitions of a realm's write transaction (idle → writing → failed → idle, and the writers waiting
// for it; see `TransactionState`) that other suites do not reach.

/// How the transaction the waiters wait for ends.
enum TransactionEnding: String, CaseIterable, Sendable {
    case commit, cancel, failedCommit
}

/// What a waiting writer's write did.
enum WaiterOutcome: Equatable, Sendable {
    /// It committed, having seen `seen` books.
    case wrote(seen: Int)
    /// It threw (a `RealmError`'s code, or nil for another error).
    case failed(RealmError.Code?)
}

@Suite struct TransactionStateTests {
    @Test func aFailedTransactionSkipsLaterOperationsAndItsCommitThrowsThenTheRealmWritesAgain() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        let (stillOpen, thrown) = try await failThenCommit(realm)
        #expect(stillOpen, "a failed operation leaves the transaction open until it ends")
        #expect(thrown == .primaryKeyExists, "the commit throws the first failure")
        #expect(await realm.isInWriteTransaction == false)
        #expect(await realm.read { $0.objects(Book.self).isEmpty }, "nothing of the failed transaction committed")
        try await realm.write { $0.create(Book.self, value: ["id": 1, "title": "After"]) }
        #expect(await realm.read { $0.objects(Book.self).map(\.title) } == ["After"])
    }

    @Test func aBlockThatThrowsAfterAFailureThrowsItsOwnErrorAndTheRealmWritesAgain() async throws {
        struct Stop: Error {}
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        await #expect(throws: Stop.self) {
            try await realm.write { realm in
                realm.create(Book.self, value: ["id": 1])
                realm.create(Book.self, value: ["id": 1])
                throw Stop()
            }
        }
        #expect(await realm.isInWriteTransaction == false)
        try await realm.write { $0.create(Book.self, value: ["id": 2]) }
        #expect(await realm.read { $0.objects(Book.self).map(\.id) } == [2])
    }

    @Test func anotherTasksReadDuringAFailedTransactionKeepsItsFailure() async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        try await realm.write { $0.create(Book.self, value: ["id": 7, "title": "Committed"]) }
        let (seen, stillOpen, thrown) = try await failThenReadFromAnotherTask(realm)
        #expect(seen == ["Committed"], "the other task sees the last committed version")
        #expect(stillOpen)
        #expect(thrown == .primaryKeyExists, "the failure survives the read that hid the transaction")
        #expect(await realm.read { $0.objects(Book.self).map(\.title) } == ["Committed"])
    }

    @Test(arguments: TransactionEnding.allCases)
    func waitingWritersResumeInTheOrderTheyCame(after ending: TransactionEnding) async throws {
        let realm = try await Realm(configuration: testConfiguration([Book.self]))
        let (thrown, outcomes) = try await endWithWaiters(realm, ending: ending, waiters: 4)
        #expect(thrown == (ending == .failedCommit ? .primaryKeyExists : nil))
        let base = ending == .commit ? 1 : 0
        // Each waiter saw the books of the writers before it: the waiters wrote first come, first served.
        #expect(outcomes == (0..<4).map { .wrote(seen: base + $0) })
        #expect(await realm.read { $0.objects(Book.self).count } == base + 4)
        #expect(await realm.waitingWriterCount == 0)
    }

    // The limit turns a waiter left waiting (the turn not passed on) into a failure instead of a hang.
    @Test(.timeLimit(.minutes(30)))
    func waitingWritersEachGetTheirTurnWhenTheCommitPoisonsTheFile() async throws {
        let faulty = FaultInjectingFileSystem(base: MemoryFileSystem(tracksDurability: true))
        let path = "/db/\(UUID().uuidString).realm"
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [Book.self])
        config.fileSystem = faulty
        config.durability = .full
        config.automaticCompaction = false
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(Book.self, value: ["id": 0]) }
        // The next commit's fsync fails: the engine refuses every later write until the file is reopened.
        faulty.onNextCall(where: { $0.operation == "Syncing" && $0.path == path }, fail: .error(EIO))
        let (thrown, outcomes) = try await endWithWaiters(realm, ending: .commit, waiters: 3)
        #expect(thrown == .poisoned)
        // No waiter began a transaction, and each one that could not passed the turn to the next.
        #expect(outcomes == Array(repeating: .failed(.poisoned), count: 3))
        #expect(await realm.isInWriteTransaction == false)
        #expect(await realm.waitingWriterCount == 0)
    }
}

/// Begins a transaction, makes an operation of it fail (a duplicate primary key), goes on with a valid
/// one (which the latch skips), and commits.
private func failThenCommit(_ realm: isolated Realm) async throws -> (stillOpen: Bool, thrown: RealmError.Code?) {
    try await realm.beginWrite()
    realm.create(Book.self, value: ["id": 1, "title": "First"])
    realm.create(Book.self, value: ["id": 1, "title": "Duplicate"])
    realm.create(Book.self, value: ["id": 2, "title": "Skipped"])
    let stillOpen = realm.isInWriteTransaction
    do {
        try await realm.commitWrite()
        return (stillOpen, nil)
    } catch let error as RealmError {
        return (stillOpen, error.code)
    }
}

/// Begins a transaction, makes it fail, lets another task read the realm (which hides the open
/// transaction meanwhile), and commits.
private func failThenReadFromAnotherTask(
    _ realm: isolated Realm
) async throws -> (seen: [String], stillOpen: Bool, thrown: RealmError.Code?) {
    try await realm.beginWrite()
    realm.create(Book.self, value: ["id": 1, "title": "Uncommitted"])
    realm.create(Book.self, value: ["id": 1, "title": "Duplicate"])
    let reader = Task.detached { await realm.read { $0.objects(Book.self).map(\.title) } }
    let seen = await reader.value
    let stillOpen = realm.isInWriteTransaction
    do {
        try await realm.commitWrite()
        return (seen, stillOpen, nil)
    } catch let error as RealmError {
        return (seen, stillOpen, error.code)
    }
}

/// Begins a transaction, queues `waiters` writers behind it one after another (each waits until the one
/// before it is queued), ends it as `ending` says, and returns what the commit threw and what each
/// waiter's write did (how many books it saw, or what it threw), in the order the waiters came.
private func endWithWaiters(
    _ realm: isolated Realm, ending: TransactionEnding, waiters: Int
) async throws -> (thrown: RealmError.Code?, outcomes: [WaiterOutcome]) {
    try await realm.beginWrite()
    realm.create(Book.self, value: ["id": 1, "title": "Owner"])
    var tasks: [Task<WaiterOutcome, Never>] = []
    for index in 0..<waiters {
        tasks.append(
            Task.detached {
                do {
                    return .wrote(
                        seen: try await realm.write { realm in
                            let count = realm.objects(Book.self).count
                            realm.create(Book.self, value: ["id": 100 + index])
                            return count
                        })
                } catch let error as RealmError {
                    return .failed(error.code)
                } catch {
                    return .failed(nil)
                }
            })
        var turns = 0
        while realm.waitingWriterCount < index + 1 {
            turns += 1
            try #require(turns < 1_000_000, "writer \(index) never queued")
            await Task.yield()
        }
    }
    var thrown: RealmError.Code?
    do {
        switch ending {
        case .commit:
            try await realm.commitWrite()
        case .cancel:
            realm.cancelWrite()
        case .failedCommit:
            realm.create(Book.self, value: ["id": 1, "title": "Duplicate"])
            try await realm.commitWrite()
        }
    } catch let error as RealmError {
        thrown = error.code
    }
    var outcomes: [WaiterOutcome] = []
    for task in tasks { outcomes.append(await task.value) }
    return (thrown, outcomes)
}
