import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStore

// Many tasks writing and reading one file through several `Realm` actors: every acknowledged write
// survives closing and reopening, every snapshot is consistent, and writes never lose each other's updates.
// Realm's guide: "You can have any number of threads working on the same Realms in parallel, and since
// they all have their own snapshots, they will never cause each other to see inconsistent state."

// MARK: Models of these tests

final class ConcurrencyEntry: Object {
    @Persisted(primaryKey: true) var key = ""
    @Persisted var writer = 0
    @Persisted var task = 0
    @Persisted var sequence = 0
    /// writer * 1_000_000 + task * 1_000 + sequence: what readers check, in one property read.
    @Persisted var tag = 0
    @Persisted var payload = ""
}

final class ConcurrencyCounter: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var value = 0
}

private let concurrencyTypes: [ObjectBase.Type] = [ConcurrencyEntry.self, ConcurrencyCounter.self, Account.self]

/// What one snapshot of the entries says: how many, and whether each writer task's entries are a prefix of
/// its sequence (a task commits its writes in order, so a consistent snapshot holds a prefix of them).
private struct EntrySummary: Sendable, Equatable {
    var count = 0
    var sequenceSum = 0
    var consistent = true
}

private func summarize(_ tags: some Sequence<Int>) -> EntrySummary {
    var summary = EntrySummary()
    var sequences: [Int: [Int]] = [:]
    for tag in tags {
        summary.count += 1
        summary.sequenceSum += tag % 1_000
        sequences[tag / 1_000, default: []].append(tag % 1_000)
    }
    for list in sequences.values where list.sorted() != Array(0..<list.count) { summary.consistent = false }
    return summary
}

private func summarize(_ frozen: FrozenRealm) -> EntrySummary {
    summarize(frozen.objects(ConcurrencyEntry.self).lazy.map(\.tag))
}

private func summarize(_ realm: isolated Realm) -> EntrySummary {
    summarize(realm.objects(ConcurrencyEntry.self).lazy.map(\.tag))
}

/// Sum and minimum of the balances of one snapshot.
private struct Ledger: Sendable, Equatable {
    var accounts = 0
    var total = 0
    var minimum = Int.max
}

private func ledger(_ frozen: FrozenRealm) -> Ledger {
    var ledger = Ledger()
    for account in frozen.objects(Account.self) {
        ledger.accounts += 1
        ledger.total += account.balance
        ledger.minimum = min(ledger.minimum, account.balance)
    }
    return ledger
}

private func ledger(_ realm: isolated Realm) -> Ledger {
    var ledger = Ledger()
    for account in realm.objects(Account.self) {
        ledger.accounts += 1
        ledger.total += account.balance
        ledger.minimum = min(ledger.minimum, account.balance)
    }
    return ledger
}

/// A transfer written with beginWrite/commitWrite that suspends between the debit and the credit (as any
/// code awaiting something inside a transaction does). `cancel` discards it instead of committing.
private func transferWithSuspension(
    _ realm: isolated Realm, from: Int, to: Int, amount: Int, cancel: Bool
) async throws {
    try await realm.beginWrite()
    guard let source = realm.object(ofType: Account.self, forPrimaryKey: from),
        let target = realm.object(ofType: Account.self, forPrimaryKey: to)
    else {
        realm.cancelWrite()
        return
    }
    source.balance -= amount
    for _ in 0..<8 { await Task.yield() }  // other tasks run on the actor meanwhile
    target.balance += amount
    if cancel {
        realm.cancelWrite()
    } else {
        try await realm.commitWrite()
    }
}

/// Opens `count` realms on one configuration.
private func openRealms(_ count: Int, _ config: Realm.Configuration) async throws -> [Realm] {
    var realms: [Realm] = []
    for _ in 0..<count { realms.append(try await Realm(configuration: config)) }
    return realms
}

/// Moves a closed realm file elsewhere and returns a configuration for it: opening that is a fresh open from
/// disk. `Realm.deleteFiles` on the old configuration proves that no realm still holds the file open.
///
/// First waits until the realms released on the file are gone and its engine closed: a task that used a
/// realm can drop its reference a moment after its result was delivered, on another thread.
private func reopenFromDisk(_ config: Realm.Configuration) async throws -> Realm.Configuration {
    let url = try #require(config.fileURL)
    await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(url, config.fileSystem))
    let moved = temporaryRealmURL("reopened.realm")
    try FileManager.default.moveItem(at: url, to: moved)
    // Throws alreadyOpen if any Realm on the file is still alive.
    try Realm.deleteFiles(for: config)
    var reopened = config
    reopened.fileURL = moved
    return reopened
}

/// Serialized: each test loads both cores on its own; side by side they would mostly measure each other.
@Suite(.serialized) struct ConcurrencyTests {
    @Test func manyWritersThroughSeveralRealmsWhileReadersHoldFrozenSnapshots() async throws {
        let actors = 4
        let tasksPerActor = 8
        let writesPerTask = 25
        let config = testConfiguration(concurrencyTypes, durability: .none)
        var realms = try await openRealms(actors, config)
        let shared = realms

        // Readers: freeze, verify, keep a few snapshots and verify them again later; read live; read one
        // frozen snapshot from several detached tasks at once.
        let readers = Task { () -> [Int] in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for reader in 0..<4 {
                    group.addTask {
                        let realm = shared[reader % shared.count]
                        var held: [(FrozenRealm, EntrySummary)] = []
                        var lastVersion: UInt64 = 0
                        var rounds = 0
                        repeat {
                            let frozen = await realm.freeze()
                            #expect(frozen.version >= lastVersion, "a realm's versions only move forward")
                            lastVersion = frozen.version
                            let summary = summarize(frozen)
                            #expect(summary.consistent, "frozen snapshot v\(frozen.version) is consistent")
                            if rounds % 2 == 0 {
                                let live = await realm.read { realm in summarize(realm) }
                                #expect(live.consistent)
                                #expect(live.count >= summary.count, "a later read sees at least as much")
                            }
                            if reader == 0 && rounds % 4 == 0 {
                                let copies = await withTaskGroup(of: EntrySummary.self) { copies in
                                    for _ in 0..<3 { copies.addTask { summarize(frozen) } }
                                    return await copies.reduce(into: []) { $0.append($1) }
                                }
                                #expect(copies.allSatisfy { $0 == summary })
                            }
                            held.append((frozen, summary))
                            if held.count > 3 {
                                // The oldest held snapshot still reads as it did, however much was written since.
                                let (old, oldSummary) = held.removeFirst()
                                #expect(summarize(old) == oldSummary, "a frozen snapshot never changes")
                            }
                            rounds += 1
                            // Reads on a realm wait for its writes and the reverse: leave the writers room.
                            for _ in 0..<50 { await Task.yield() }
                        } while !Task.isCancelled
                        return rounds
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }

        let acknowledged = try await withThrowingTaskGroup(of: [String].self) { group in
            for (index, realm) in shared.enumerated() {
                for task in 0..<tasksPerActor {
                    group.addTask {
                        var keys: [String] = []
                        for sequence in 0..<writesPerTask {
                            let key = "\(index)-\(task)-\(sequence)"
                            try await realm.write { realm in
                                realm.create(
                                    ConcurrencyEntry.self,
                                    value: [
                                        "key": key, "writer": index, "task": task, "sequence": sequence,
                                        "tag": index * 1_000_000 + task * 1_000 + sequence,
                                        "payload": String(repeating: "x", count: sequence * 4),
                                    ])
                            }
                            keys.append(key)
                        }
                        return keys
                    }
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.formUnion($1) }
        }
        readers.cancel()
        let rounds = try await readers.value
        #expect(rounds.allSatisfy { $0 > 0 }, "every reader ran: \(rounds)")
        #expect(acknowledged.count == actors * tasksPerActor * writesPerTask)

        // Every realm sees everything.
        for realm in realms {
            let summary = await realm.read { realm in summarize(realm) }
            #expect(summary.count == acknowledged.count)
            #expect(summary.consistent)
        }

        // Close every realm, then reopen the file from disk.
        realms.removeAll()
        _ = consume shared
        let reopenedConfig = try await reopenFromDisk(config)
        let reopened = try await Realm(configuration: reopenedConfig)
        let keys = await reopened.read { realm in Set(realm.objects(ConcurrencyEntry.self).map(\.key)) }
        #expect(keys == acknowledged)
        let payloads = await reopened.read { realm in
            realm.objects(ConcurrencyEntry.self).allSatisfy { $0.payload.count == $0.sequence * 4 }
        }
        #expect(payloads)
    }

    @Test func bankTransfersKeepTheTotalConstant() async throws {
        let accounts = 10
        let initialBalance = 1_000
        let total = accounts * initialBalance
        let config = testConfiguration(concurrencyTypes, durability: .none)
        var realms = try await openRealms(3, config)
        let shared = realms
        try await shared[0].write { realm in
            for number in 0..<accounts {
                realm.create(Account.self, value: ["number": number, "balance": initialBalance])
            }
        }

        let readers = Task { () -> Int in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for reader in 0..<3 {
                    group.addTask {
                        let realm = shared[reader]
                        var held: [FrozenRealm] = []
                        var checks = 0
                        repeat {
                            let frozen = await realm.freeze()
                            let snapshot = ledger(frozen)
                            #expect(snapshot.accounts == accounts)
                            #expect(snapshot.total == total, "frozen snapshot v\(frozen.version)")
                            #expect(snapshot.minimum >= 0)
                            let live = await realm.read { realm in ledger(realm) }
                            #expect(live.total == total, "read")
                            #expect(live.minimum >= 0)
                            held.append(frozen)
                            if held.count > 4 { held.removeFirst() }
                            for old in held { #expect(ledger(old).total == total) }
                            checks += 1
                            for _ in 0..<10 { await Task.yield() }  // leave the writers room
                        } while !Task.isCancelled
                        return checks
                    }
                }
                return try await group.reduce(0, +)
            }
        }

        let transfers = try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, realm) in shared.enumerated() {
                for task in 0..<4 {
                    group.addTask {
                        var rng = SplitMix64(seed: UInt64(index * 100 + task))
                        var moved = 0
                        for _ in 0..<60 {
                            let from = Int.random(in: 0..<accounts, using: &rng)
                            let to = (from + Int.random(in: 1..<accounts, using: &rng)) % accounts
                            let amount = Int.random(in: 1...300, using: &rng)
                            let done = try await realm.write { realm -> Bool in
                                guard let source = realm.object(ofType: Account.self, forPrimaryKey: from),
                                    let target = realm.object(ofType: Account.self, forPrimaryKey: to),
                                    source.balance >= amount
                                else { return false }
                                source.balance -= amount
                                target.balance += amount
                                return true
                            }
                            if done { moved += 1 }
                        }
                        return moved
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        readers.cancel()
        let checks = try await readers.value
        #expect(checks > 0)
        #expect(transfers > 0)

        let final = await shared[1].read { realm in ledger(realm) }
        #expect(final.total == total)
        #expect(final.accounts == accounts)
        realms.removeAll()
        _ = consume shared
        let reopened = try await Realm(configuration: try await reopenFromDisk(config))
        let fromDisk = await reopened.read { realm in ledger(realm) }
        #expect(fromDisk == final)
    }

    @Test func readsOnOneRealmNeverSeeAnotherTasksOpenTransaction() async throws {
        // Transfers written with beginWrite/commitWrite suspend mid-transaction; reads and freezes of the
        // same realm by other tasks must still see only committed states (and nothing of cancelled ones).
        let accounts = 4
        let total = accounts * 100
        let config = testConfiguration(concurrencyTypes, durability: .none)
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            for number in 0..<accounts { realm.create(Account.self, value: ["number": number, "balance": 100]) }
        }
        let readers = Task { () -> (reads: [Int], freezes: [Int]) in
            var totals: (reads: [Int], freezes: [Int]) = ([], [])
            repeat {
                totals.reads.append(await realm.read { realm in ledger(realm).total })
                totals.freezes.append(ledger(await realm.freeze()).total)
                await Task.yield()
            } while !Task.isCancelled
            return totals
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    for i in 0..<10 {
                        try await transferWithSuspension(
                            realm, from: (task + i) % accounts, to: (task + i + 1) % accounts, amount: 7,
                            cancel: i % 3 == 0)
                    }
                }
            }
            try await group.waitForAll()
        }
        readers.cancel()
        let totals = await readers.value
        #expect(!totals.reads.isEmpty)
        let wrongReads = totals.reads.filter { $0 != total }
        #expect(
            wrongReads.count == 0,
            "\(wrongReads.count) of \(totals.reads.count) reads saw a half-done transfer: \(wrongReads.prefix(3))")
        let wrongFreezes = totals.freezes.filter { $0 != total }
        let freezeReport = "\(wrongFreezes.count) of \(totals.freezes.count) freezes saw a half-done transfer"
        #expect(wrongFreezes.count == 0, "\(freezeReport): \(wrongFreezes.prefix(3))")
        let final = await realm.read { realm in ledger(realm).total }
        #expect(final == total)
    }

    @Test func concurrentIncrementsLoseNoUpdates() async throws {
        // "Write operations always refresh automatically before committing data, so no race condition is
        // created by overlapping writes."
        let config = testConfiguration(concurrencyTypes, durability: .none)
        let realms = try await openRealms(4, config)
        try await realms[0].write { $0.create(ConcurrencyCounter.self, value: ["id": 1]) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for realm in realms {
                for _ in 0..<8 {
                    group.addTask {
                        for _ in 0..<10 {
                            try await realm.write { realm in
                                realm.object(ofType: ConcurrencyCounter.self, forPrimaryKey: 1)!.value += 1
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        for realm in realms {
            let value = await realm.read { $0.object(ofType: ConcurrencyCounter.self, forPrimaryKey: 1)?.value }
            #expect(value == 4 * 8 * 10)
        }
    }

    @Test func realmsOpenedConcurrentlyOnANewFile() async throws {
        // Many realms opening a new file at once create its schema once, and can all write.
        let config = testConfiguration(concurrencyTypes, durability: .none)
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<8 {
                group.addTask {
                    let realm = try await Realm(configuration: config)
                    try await realm.write { realm in
                        realm.create(ConcurrencyEntry.self, value: ["key": "open-\(index)", "writer": index])
                    }
                    return await realm.read { $0.objects(ConcurrencyEntry.self).count }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counts.count == 8)
        #expect(counts.allSatisfy { (1...8).contains($0) })
        let realm = try await Realm(configuration: config)
        let keys = await realm.read { realm in Set(realm.objects(ConcurrencyEntry.self).map(\.key)) }
        #expect(keys == Set((0..<8).map { "open-\($0)" }))
    }

    @Test func threadSafeReferencesHandOffWhileOthersWrite() async throws {
        let config = testConfiguration(concurrencyTypes, durability: .none)
        let source = try await Realm(configuration: config)
        let targets = try await openRealms(3, config)
        try await source.write { realm in
            for i in 0..<12 { realm.create(ConcurrencyCounter.self, value: ["id": i]) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<12 {
                let reference = await source.read { realm in
                    ThreadSafeReference(to: realm.object(ofType: ConcurrencyCounter.self, forPrimaryKey: i)!)
                }
                let target = targets[i % targets.count]
                group.addTask {
                    try await target.write { realm in realm.resolve(reference)?.value += 100 + i }
                }
                group.addTask {
                    try await source.write { realm in
                        realm.create(ConcurrencyEntry.self, value: ["key": "noise-\(i)", "sequence": i])
                    }
                }
            }
            try await group.waitForAll()
        }
        for target in targets { await target.refresh() }
        let values = await source.read { realm in
            realm.objects(ConcurrencyCounter.self).sorted { $0.id < $1.id }.map(\.value)
        }
        #expect(values == (0..<12).map { 100 + $0 })
        #expect(await source.statistics.pinnedVersions == 1, "resolved references release their versions")
    }

    @Test func durableWritesFromSeveralRealmsSurviveReopening() async throws {
        let config = testConfiguration(concurrencyTypes, durability: .full)
        var realms = try await openRealms(2, config)
        let shared = realms
        let acknowledged = try await withThrowingTaskGroup(of: [String].self) { group in
            for (index, realm) in shared.enumerated() {
                for task in 0..<4 {
                    group.addTask {
                        var keys: [String] = []
                        for sequence in 0..<5 {
                            let key = "durable-\(index)-\(task)-\(sequence)"
                            try await realm.write { realm in
                                realm.create(
                                    ConcurrencyEntry.self,
                                    value: [
                                        "key": key, "writer": index, "task": task, "sequence": sequence,
                                        "tag": index * 1_000_000 + task * 1_000 + sequence,
                                    ])
                            }
                            keys.append(key)
                        }
                        return keys
                    }
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.formUnion($1) }
        }
        #expect(acknowledged.count == 40)
        realms.removeAll()
        _ = consume shared
        let reopened = try await Realm(configuration: try await reopenFromDisk(config))
        let keys = await reopened.read { realm in Set(realm.objects(ConcurrencyEntry.self).map(\.key)) }
        #expect(keys == acknowledged)
        let summary = await reopened.read { realm in summarize(realm) }
        #expect(summary.consistent)
    }
}
