import ActorStoreTestSupport
import Foundation
import Synchronization
import Testing

@testable import ActorStorePersistence

@Suite("Group commit and concurrency")
struct GroupCommitTests {
    @Test("many concurrent durable writers: every acknowledged commit is present after reopen")
    func concurrentWriters() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try await StorageEngine.open(.init(path: dir.file()))
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        let writers = 16
        let perWriter = 40
        let acknowledged = try await withThrowingTaskGroup(of: [Version].self) { group in
            for w in 0..<writers {
                group.addTask {
                    var versions: [Version] = []
                    for i in 0..<perWriter {
                        let (_, result) = try await engine.write { txn in
                            try txn.insert(table, [.int(Int64(w * 1000 + i)), .string("w\(w)-\(i)")])
                        }
                        // Visible as soon as acknowledged.
                        #expect(engine.latestVersion >= result.version)
                        versions.append(result.version)
                    }
                    return versions
                }
            }
            var all: [Version] = []
            for try await versions in group { all += versions }
            return all
        }
        #expect(Set(acknowledged).count == writers * perWriter)
        await engine.close()
        let reopened = try await StorageEngine.open(.init(path: dir.file()))
        let snapshot = try reopened.snapshot()
        #expect(snapshot.count(table) == writers * perWriter)
        #expect(snapshot.version == Version(UInt64(writers * perWriter + 1)))
        for w in 0..<writers {
            for i in 0..<perWriter {
                #expect(snapshot.object(table, primaryKey: .int(Int64(w * 1000 + i))) != nil)
            }
        }
    }

    @Test("readers never see a version before it is durable, and every snapshot is consistent")
    func bankTransfers() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs)
        let accounts = TableSchema(
            "Account",
            columns: [
                ColumnSchema("id", ColumnType(.int64), primaryKey: true), ColumnSchema("balance", ColumnType(.int64)),
            ])
        let (table, _) = try await engine.write { txn in
            let table = try txn.createTable(accounts)
            for i in 0..<10 { try txn.insert(table, [.int(Int64(i)), .int(100)]) }
            return table
        }
        let done = Box(false)
        async let readers: Int = withTaskGroup(of: Int.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    var checks = 0
                    while !done.value.withLock({ $0 }) {
                        let snapshot = try! engine.snapshot()
                        var total: Int64 = 0
                        for (key, _) in snapshot.keys(table) {
                            if case .int(let b) = try! snapshot.value(table, key, column: 1) { total += b }
                        }
                        #expect(total == 1000, "snapshot \(snapshot.version) is inconsistent")
                        // Whatever a reader sees has been synced: it is in the power-loss image.
                        checks += 1
                        await Task.yield()
                    }
                    return checks
                }
            }
            var sum = 0
            for await n in group { sum += n }
            return sum
        }
        var rng = SplitMix64(seed: testSeed("bank"))
        for _ in 0..<300 {
            let from = Int64.random(in: 0..<10, using: &rng)
            let to = Int64.random(in: 0..<10, using: &rng)
            let amount = Int64.random(in: 1...20, using: &rng)
            _ = try await engine.write { txn in
                let a = try #require(txn.object(table, primaryKey: .int(from)))
                let b = try #require(txn.object(table, primaryKey: .int(to)))
                guard case .int(let balanceA) = try txn.value(table, a, column: 1),
                    case .int(let balanceB) = try txn.value(table, b, column: 1), a != b
                else { return }
                try txn.update(table, a, [(1, .int(balanceA - amount))])
                try txn.update(table, b, [(1, .int(balanceB + amount))])
            }
            let visible = engine.latestVersion
            let durable = try await memoryEngine(fs.powerLossImage()).latestVersion
            #expect(durable >= visible, "version \(visible) was visible before it was durable")
        }
        done.value.withLock { $0 = true }
        let checks = await readers
        #expect(checks > 0)
    }

    /// `CommitResult.suspended` lets the realm skip giving its thread up after a commit that already did, so
    /// it must never claim a suspension that did not happen (a commit without a sync never suspends; a
    /// durable one whose sync finished first — the in-memory file system's is instant — does not either),
    /// and the commit must be durable and visible when it returns either way.
    @Test("a commit says whether it suspended for its sync, and is durable when it returns")
    func commitReportsSuspension() async throws {
        for durability in [StorageEngine.Durability.full, .none] {
            let fs = MemoryFileSystem(tracksDurability: true)
            let engine = try await memoryEngine(fs, durability: durability)
            let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
            for i in 0..<20 {
                let (_, result) = try await engine.write { txn in
                    try txn.insert(table, [.int(Int64(i)), .string("v\(i)")])
                }
                #expect(engine.latestVersion == result.version)
                if durability == .none {
                    #expect(!result.suspended, "a commit without a sync has nothing to suspend for")
                } else {
                    let durable = try await memoryEngine(fs.powerLossImage()).latestVersion
                    #expect(durable >= result.version, "commit \(i) was acknowledged before it was durable")
                }
            }
            await engine.close()
        }
    }

    @Test("the write lock is FIFO and never blocks a thread")
    func fifoLock() async throws {
        let lock = AsyncWriteLock()
        await lock.lock()
        let order = Box<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<50 {
                group.addTask {
                    await lock.lock()
                    order.value.withLock { $0.append(i) }
                    lock.unlock()
                }
                // Let task i enqueue before task i + 1.
                while lock.waiterCount < i + 1 { await Task.yield() }
            }
            lock.unlock()
            try await group.waitForAll()
        }
        #expect(order.value.withLock { $0 } == Array(0..<50))
    }
}

/// A lock-protected value shared between test tasks.
final class Box<T: Sendable>: Sendable {
    let value: Locked<T>
    init(_ initial: T) { value = Locked(initial) }
}
