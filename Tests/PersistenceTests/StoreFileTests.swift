import Dispatch
import Foundation
import Testing

@testable import ActorStorePersistence

/// Regression tests for the findings of the outside test campaign (issue 16).
@Suite("Store files: one writer, temporary files, links, crafted files", .tags(.reliabilityCampaign))
struct StoreFileTests {
    static let path = "/db/test.store"

    /// Writes to `engine`, compacts, and checks the outcome: compaction succeeds and everything reads back
    /// the same, or it fails with a clear `.corrupted` error and the store keeps working.
    static func writeAndCompact(_ engine: StorageEngine) async throws {
        let (extra, _) = try await engine.write { txn in
            let id = try txn.createTable(TableSchema("Extra", columns: [ColumnSchema("n", ColumnType(.int64))]))
            try txn.insert(id, [.int(7)])
            return id
        }
        let before = try engine.snapshot()
        let tables = before.state.tableIDs.keys.sorted()
        // A crafted file's rows may not decode (reading them throws `.corrupted`): compared when they do.
        let contents = try? tables.map { try before.contents($0) }
        do {
            try await engine.compact()
            let after = try engine.snapshot()
            if let contents { #expect(try tables.map { try after.contents($0) } == contents) }
            #expect(try after.contents("Extra").count == 1)
        } catch let error as StorageError {
            #expect(error.code == .corrupted, "\(error)")
            #expect(error.message.contains("damaged") || error.message.contains("backup"), "\(error.message)")
        }
        // The store is usable either way.
        let (key, _) = try await engine.write { txn in try txn.insert(extra, [.int(8)]) }
        #expect(try engine.snapshot().values(extra, key) == [.int(8)])
    }

    @Test("compacting the crafted file of repro/compaction-trap does not trap")
    func craftedCompactionTrap() async throws {
        #expect(ReproFixtures.compactionTrap.count == 5228)
        let fs = MemoryFileSystem(files: [Self.path: ReproFixtures.compactionTrap])
        let engine = try await memoryEngine(fs, path: Self.path)
        try await Self.writeAndCompact(engine)
        await engine.close()
    }

    @Test("an object key far below the table's others (the subtraction would wrap) compacts without trapping")
    func farNegativeObjectKeyCompacts() async throws {
        // Keys 0...4 (primary keys in the opposite order, so the index walk does not meet them in key order),
        // then key -9223372036854775805: from key 3 on, `key - firstKey` overflows Int64.
        let source = MemoryFileSystem()
        let writer = try await memoryEngine(source, path: Self.path)
        let (id, _) = try await writer.write { txn in try txn.createTable(Fixtures.kv) }
        var version: UInt64 = 0
        for i in 0..<5 {
            let (_, result) = try await writer.write { txn in
                try txn.insert(id, [.int(Int64(10 - i)), .string("\(i)")])
            }
            version = result.version.rawValue
        }
        await writer.close()
        let file = try #require(source.contents(of: Self.path))
        var w = ByteWriter()
        w.append(version + 1)
        MalformedFileTests.appendUpsert(
            &w, id, -9_223_372_036_854_775_805, [.int(100), .string("far")], Fixtures.kv.columns.map(\.type))
        let fs = MemoryFileSystem(files: [Self.path: MalformedFileTests.appending(w, to: file)])
        let engine = try await memoryEngine(fs, path: Self.path)
        try await Self.writeAndCompact(engine)
        #expect(try engine.snapshot().contents("KV").count == 6)
        await engine.close()
    }

    /// Runs `work` to the end on a Dispatch thread while the calling thread waits (a fault hook runs on
    /// the thread of the engine call it interrupts, which is a Dispatch thread, not the cooperative pool).
    static func runBlocking(_ work: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await work()
            done.signal()
        }
        done.wait()
    }

    @Test("a second engine whose lock lands on the file a compaction just replaced refuses to open (one writer)")
    func lockRaceWithCompaction() async throws {
        let base = MemoryFileSystem()
        let engineA = try await memoryEngine(base, path: Self.path)
        let (table, _) = try await engineA.write { txn in try txn.createTable(Fixtures.kv) }
        for i in 0..<20 {
            _ = try await engineA.write { txn in try txn.insert(table, [.int(Int64(i)), .string("v\(i)")]) }
        }
        let inodeBefore = try base.identity(atPath: Self.path)
        // Engine B has opened the store's path for its lock; before it locks that descriptor, engine A
        // compacts: A's new file replaces the path and A unlocks the old one.
        let faulty = FaultInjectingFileSystem(base: base)
        let compacted = Locked<(any Error)?>(nil)
        faulty.onNextCall(where: { $0.operation == "Locking" && $0.path == Self.path }) {
            Self.runBlocking {
                do { try await engineA.compact() } catch { compacted.withLock { $0 = error } }
            }
        }
        let refused = await #expect(throws: StorageError.self) {
            let engineB = try await memoryEngine(faulty, path: Self.path)
            // Had it opened, B would be a second writer of A's file.
            _ = try await engineB.write { txn in try txn.insert(table, [.int(1000), .string("B")]) }
            await engineB.close()
        }
        #expect(refused?.code == .alreadyOpen, "\(String(describing: refused))")
        #expect(compacted.withLock { $0 } == nil)
        #expect(try base.identity(atPath: Self.path) != inodeBefore, "the compaction replaced the file")
        // A is the only writer, and its file has exactly its commits.
        let (key, _) = try await engineA.write { txn in try txn.insert(table, [.int(20), .string("v20")]) }
        #expect(try engineA.snapshot().values(table, key) == [.int(20), .string("v20")])
        await engineA.close()
        let reopened = try await memoryEngine(base, path: Self.path)
        let rows = try reopened.snapshot().contents("KV")
        #expect(rows.count == 21)
        #expect(!rows.values.contains { $0.first == .int(1000) })
        await reopened.close()
    }

    @Test("after a compaction, an I/O error names the store, not its temporary file")
    func errorsAfterCompactionNameTheStore() async throws {
        let faulty = FaultInjectingFileSystem(base: MemoryFileSystem(tracksDurability: true))
        let engine = try await memoryEngine(faulty, path: Self.path)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await engine.write { txn in try txn.insert(table, [.int(1), .string("one")]) }
        try await engine.compact()
        faulty.onNextCall(where: { $0.operation == "Writing" }, fail: .error(5))
        let error = await #expect(throws: StorageError.self) {
            _ = try await engine.write { txn in try txn.insert(table, [.int(2), .string("two")]) }
        }
        #expect(error?.code == .ioFailure)
        #expect(error?.message.contains("'\(Self.path)'") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(".compacting") == false, "\(error?.message ?? "")")
        await engine.close()
    }

    // MARK: Symbolic links and temporary files (repro/symlink)

    static func engine(_ path: String) async throws -> StorageEngine {
        try await StorageEngine.open(.init(path: path, durability: .none, autoCompaction: nil))
    }

    static func isSymbolicLink(_ path: String) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil
    }

    @Test("a symbolic link planted at <store>.creating is removed, not written through (repro/symlink case a)")
    func plantedCreatingLink() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let victim = directory.file("victim.txt")
        try Data("victim".utf8).write(to: URL(fileURLWithPath: victim))
        let store = directory.file("new.store")
        try FileManager.default.createSymbolicLink(atPath: store + ".creating", withDestinationPath: victim)
        let engine = try await Self.engine(store)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await engine.write { txn in try txn.insert(table, [.int(1), .string("one")]) }
        await engine.close()
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "victim")
        #expect(!Self.isSymbolicLink(store))
        #expect(!FileManager.default.fileExists(atPath: store + ".creating"))
        let reopened = try await Self.engine(store)
        #expect(try reopened.snapshot().contents("KV").count == 1)
        await reopened.close()
    }

    @Test("a symbolic link planted at <store>.compacting is removed, not written through (repro/symlink case b)")
    func plantedCompactingLink() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let victim = directory.file("victim.txt")
        try Data("victim".utf8).write(to: URL(fileURLWithPath: victim))
        let store = directory.file("s.store")
        let engine = try await Self.engine(store)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await engine.write { txn in try txn.insert(table, [.int(1), .string("one")]) }
        // Planted while the store is open, after open removed stale temporary files.
        try FileManager.default.createSymbolicLink(atPath: store + ".compacting", withDestinationPath: victim)
        try await engine.compact()
        _ = try await engine.write { txn in try txn.insert(table, [.int(2), .string("two")]) }
        await engine.close()
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "victim")
        #expect(!Self.isSymbolicLink(store))
        let reopened = try await Self.engine(store)
        #expect(try reopened.snapshot().contents("KV").count == 2)
        await reopened.close()
    }

    @Test("a store opened through a symbolic link is compacted next to the real file, keeping its mode (case c)")
    func storeOpenedThroughLink() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        try FileManager.default.createDirectory(atPath: directory.file("real"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.file("other"), withIntermediateDirectories: true)
        let real = directory.file("real/r.store")
        let link = directory.file("other/l.store")
        let first = try await Self.engine(real)
        let (table, _) = try await first.write { txn in try txn.createTable(Fixtures.kv) }
        await first.close()
        #expect(chmod(real, 0o644) == 0)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        let engine = try await Self.engine(link)
        _ = try await engine.write { txn in try txn.insert(table, [.int(1), .string("one")]) }
        try await engine.compact()
        _ = try await engine.write { txn in try txn.insert(table, [.int(2), .string("two")]) }
        await engine.close()
        #expect(Self.isSymbolicLink(link), "the link was replaced by a regular file")
        let attributes = try FileManager.default.attributesOfItem(atPath: real)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o644)
        let reopened = try await Self.engine(real)
        #expect(try reopened.snapshot().contents("KV").count == 2)
        await reopened.close()
    }

    @Test("creating a store does not replace one another process created meanwhile")
    func creationDoesNotReplaceAnotherStore() async throws {
        // The other process's store: one row.
        let elsewhere = MemoryFileSystem()
        let writer = try await memoryEngine(elsewhere, path: Self.path)
        let (table, _) = try await writer.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await writer.write { txn in try txn.insert(table, [.int(1), .string("first")]) }
        await writer.close()
        let otherStore = try #require(elsewhere.contents(of: Self.path))
        let base = MemoryFileSystem()
        let faulty = FaultInjectingFileSystem(base: base)
        // Between this engine's writing of <store>.creating and its move into place, the other process
        // creates the store.
        faulty.onNextCall(where: { $0.operation == "Renaming" && $0.path.hasSuffix(".creating") }) {
            base.setContents(of: Self.path, to: otherStore)
        }
        let engine = try await memoryEngine(faulty, path: Self.path)
        #expect(try engine.snapshot().contents("KV").count == 1, "the other process's store was replaced")
        #expect(!base.fileExists(Self.path + ".creating"))
        await engine.close()
    }

}
