import Foundation
import Testing

@testable import ActorStorePersistence

/// A read-only engine follows a writer's commits only as far as the writer says they are durable (the end
/// it publishes in the lock file after each sync): never a commit a power loss could still take back.
@Suite struct FollowDurabilityTests {
    private func directory() throws -> String {
        let path = NSTemporaryDirectory() + "actorstore-follow-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func rows(_ engine: StorageEngine, _ table: TableID) throws -> Int {
        try engine.snapshot().count(table)
    }

    @Test func aReaderFollowsOnlyWhatTheWriterPublishedAsDurable() async throws {
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/test.store"
        let writer = try await StorageEngine.open(.init(path: path, durability: .full))
        let (table, _) = try await writer.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await writer.write { txn in try txn.insert(table, [.int(1), .string("a")]) }
        let reader = try await StorageEngine.open(.init(path: path, readOnly: true))
        #expect(try rows(reader, table) == 1)

        // Each durable commit publishes its end: the reader follows.
        _ = try await writer.write { txn in try txn.insert(table, [.int(2), .string("b")]) }
        #expect(try rows(reader, table) == 2)
        let (presence, generation, durable) = writer.core.withLock {
            ($0.presence, $0.header.generation, $0.durableEnd)
        }
        let lock = try #require(presence, "a store on a real file system holds its presence lock")
        #expect(lock.durableEnd(generation: generation) == durable)
        #expect(lock.durableEnd(generation: generation + 1) == nil, "another generation's end is not this one's")

        // A commit whose sync has not been published yet (as while its fsync runs) stays invisible, then
        // appears once its end is published.
        _ = try await writer.write { txn in try txn.insert(table, [.int(3), .string("c")]) }
        let third = writer.core.withLock { $0.durableEnd }
        lock.publishDurableEnd(durable, generation: generation)
        #expect(try rows(reader, table) == 2, "a commit past the published durable end is not visible")
        lock.publishDurableEnd(third, generation: generation)
        #expect(try rows(reader, table) == 3)

        await reader.close()
        await writer.close()
    }

    /// Records before a published durable end are complete and synced: one a follower cannot read there is
    /// damage, and its snapshots say so instead of staying at the version before it without a word. (The
    /// reads of a writing process take the same path, `scanFollowing`; a second writable engine cannot be
    /// opened in one process to show it here.)
    @Test func damageAmongPublishedRecordsIsReportedToFollowers() async throws {
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/test.store"
        let writer = try await StorageEngine.open(.init(path: path, durability: .full))
        let (table, _) = try await writer.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await writer.write { txn in try txn.insert(table, [.int(1), .string("a")]) }
        let follower = try await StorageEngine.open(.init(path: path, readOnly: true))
        #expect(try rows(follower, table) == 1)

        let second = writer.core.withLock { $0.appendedEnd }
        _ = try await writer.write { txn in try txn.insert(table, [.int(2), .string("b")]) }
        _ = try await writer.write { txn in try txn.insert(table, [.int(3), .string("c")]) }
        // A byte of the second record's payload changes on disk after its writer published it as durable.
        let fs = PosixFileSystem()
        let file = try fs.open(path, create: false, readOnly: false)
        var byte: UInt8 = 0x5a
        _ = try withUnsafeBytes(of: &byte) { try fs.write(file, $0, at: second + UInt64(Record.headerSize) + 3) }
        fs.close(file)

        // Before, the follower stayed at one row, as if nothing had been committed since.
        let error = #expect(throws: StorageError.self) { try follower.snapshot() }
        #expect(error?.code == .corrupted)
        #expect(error?.message.contains("restore it from a backup") == true)
        await follower.close()
        await writer.close()
    }

    @Test func aWriterWithoutDurabilityLetsReadersFollowTheFile() async throws {
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/test.store"
        let writer = try await StorageEngine.open(.init(path: path, durability: .none))
        let (table, _) = try await writer.write { txn in try txn.createTable(Fixtures.kv) }
        let reader = try await StorageEngine.open(.init(path: path, readOnly: true))
        for i in 0..<3 {
            _ = try await writer.write { txn in try txn.insert(table, [.int(Int64(i)), .string("v")]) }
            #expect(try rows(reader, table) == i + 1)
        }
        let (presence, generation) = writer.core.withLock { ($0.presence, $0.header.generation) }
        #expect(presence?.durableEnd(generation: generation) == .max, "durability .none promises nothing")
        await reader.close()
        await writer.close()
    }
}
