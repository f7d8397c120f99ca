import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ActorStorePersistence

/// Fails the k-th I/O call of a commit, an open and a compaction, for every k until the operation no longer
/// reaches the fault, with each kind of fault; and simulates a crash at every call of a commit and of a
/// compaction. After each, the error must be a clean `StorageError`, the engine's visible state must not
/// have moved, no acknowledged commit may be missing after a power loss or a process crash, the failed
/// operation must be all or nothing, and the store must take new commits (after a reopen if poisoned).
@Suite("Fault injection")
struct FaultInjectionTests {
    typealias Dump = CompactionTests.Dump
    typealias Fault = FaultInjectingFileSystem.Fault

    struct Kind: Sendable, CustomTestStringConvertible {
        var name: String
        var fault: Fault
        var testDescription: String { name }
        static let all = [
            Kind(name: "EIO", fault: .error(5)), Kind(name: "ENOSPC", fault: .error(28)),
            Kind(name: "short write", fault: .shortWrite), Kind(name: "torn write", fault: .tornWrite(28)),
        ]
        static let crash = Kind(name: "crash", fault: .crash)
    }

    static let path = "/db/test.store"
    /// No operation here makes this many calls; reaching it means the loop would not end.
    static let callLimit = 100

    /// The store every run starts from: Person/Dog (links, a primary key, an index) and KV, in three commits.
    struct World {
        var person: TableID
        var dog: TableID
        var kv: TableID
        var alice: ObjectKey
    }

    static func seed(_ engine: StorageEngine) async throws -> World {
        let (ids, _) = try await engine.write { txn in
            try txn.setSchema([Fixtures.person, Fixtures.dog, Fixtures.kv], version: 1)
        }
        let (person, dog, kv) = (ids[0], ids[1], ids[2])
        let (alice, _) = try await engine.write { txn in
            let alice = try txn.insert(person, [.string("Alice"), .list([])])
            let rex = try txn.insert(dog, [.int(1), .string("Rex"), .int(3), .link(alice)])
            try txn.update(person, alice, [(1, .list([.link(rex)]))])
            for i in 0..<20 { try txn.insert(kv, [.int(Int64(i)), .string("value \(i)")]) }
            return alice
        }
        _ = try await engine.write { txn in
            try txn.delete(kv, try #require(txn.object(kv, primaryKey: .int(3))))
            try txn.update(kv, try #require(txn.object(kv, primaryKey: .int(4))), [(1, .string("four"))])
        }
        return World(person: person, dog: dog, kv: kv, alice: alice)
    }

    /// The operations of the commit under test: several tables, an insert, an update, a delete, new links.
    /// `large` adds 1.2 MB of rows: the record is written off the cooperative pool and the file outgrows
    /// its mapping, so the commit also remaps.
    static func change(_ txn: WriteTransaction, _ world: World, large: Bool) throws {
        let fido = try txn.insert(world.dog, [.int(2), .string("Fido"), .int(1), .link(world.alice)])
        let rex = try #require(txn.object(world.dog, primaryKey: .int(1)))
        try txn.update(world.person, world.alice, [(1, .list([.link(rex), .link(fido)]))])
        try txn.update(world.kv, try #require(txn.object(world.kv, primaryKey: .int(5))), [(1, .string("five"))])
        try txn.delete(world.kv, try #require(txn.object(world.kv, primaryKey: .int(6))))
        try txn.insert(world.kv, [.int(100), .string("hundred")])
        if large {
            for i in 0..<300 {
                try txn.insert(
                    world.kv, [.int(Int64(1000 + i)), .string("\(i)" + String(repeating: "L", count: 4000))])
            }
        }
    }

    /// Opens `fs` with a fresh engine (no faults), checks that it holds one of `expected` and that no
    /// temporary file is left, commits one more row, and checks that the row survives a power loss.
    static func expectStore(
        _ fs: MemoryFileSystem, isOneOf expected: [Dump], _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            let engine = try await memoryEngine(fs, path: path)
            let found = try Dump(engine.snapshot())
            let matches = expected.contains(found)
            #expect(
                matches, "\(label): found \(found); \(expected.map { found.differences(from: $0) })",
                sourceLocation: sourceLocation)
            let leftovers = fs.allPaths.filter { $0.hasSuffix(".compacting") || $0.hasSuffix(".creating") }
            #expect(
                leftovers.isEmpty, "\(label): temporary files left after open: \(leftovers)",
                sourceLocation: sourceLocation)
            _ = try await engine.write { txn in
                try txn.insert(try txn.createTable(Fixtures.kv), [.int(-1), .string("after reopen")])
            }
            let after = try Dump(engine.snapshot())
            await engine.close()
            let survivor = try await memoryEngine(fs.powerLossImage(), path: path)
            let survived = try Dump(survivor.snapshot())
            let same = survived == after
            #expect(
                same,
                "\(label): after a power loss, a commit acknowledged after reopening: \(survived.differences(from: after))",
                sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(label): \(error)", sourceLocation: sourceLocation)
        }
    }

    /// After a failed operation that poisoned the engine: every write is refused with `.poisoned`.
    static func expectPoisoned(_ engine: StorageEngine, _ label: String) async {
        for attempt in 0..<2 {
            do {
                let txn = try await engine.beginWrite()
                txn.rollback()
                Issue.record("\(label): write \(attempt) was accepted by a poisoned engine")
            } catch {
                #expect(error.code == .poisoned, "\(label): \(error)")
            }
        }
        do {
            try await engine.compact()
            Issue.record("\(label): a poisoned engine compacted")
        } catch {
            #expect(error.code == .poisoned, "\(label): \(error)")
        }
    }

    static func isPoisoned(_ engine: StorageEngine) async -> Bool {
        do {
            try await engine.beginWrite().rollback()
            return false
        } catch {
            return error.code == .poisoned
        }
    }

    // MARK: Commit

    @Test("a fault at any call of a commit", arguments: Kind.all, StorageKind.allCases)
    func commitFaults(_ kind: Kind, storage: StorageKind) async throws {
        try await storage.run {
            var injections = 0
            for large in [false, true] {
                for k in 1...Self.callLimit {
                    let label = "\(large ? "large" : "small") commit, \(kind.name) at call \(k)"
                    guard try await commitRun(kind.fault, atCall: k, large: large, label) else { break }
                    injections += 1
                    #expect(k < Self.callLimit, "\(label): the commit never stops reaching the fault")
                }
            }
            print("[faults] \(injections) injections (commit, \(kind.name))")
            #expect(injections > 0)
        }
    }

    @Test("a crash at any call of a commit", arguments: StorageKind.allCases)
    func commitCrashes(storage: StorageKind) async throws {
        try await storage.run {
            var injections = 0
            for large in [false, true] {
                for k in 1...Self.callLimit {
                    let label = "\(large ? "large" : "small") commit, crash at call \(k)"
                    guard try await commitRun(.crash, atCall: k, large: large, label) else { break }
                    injections += 1
                }
            }
            print("[faults] \(injections) injections (commit, crash)")
            #expect(injections > 0)
        }
    }

    /// The large commit with its record streamed to the file while it is built (see `RecordStream`), 64 KiB at
    /// a time: the fault is armed before the transaction's operations, so that it may hit a chunk's write
    /// (which fails the commit) as well as the commit's own calls.
    @Test("a fault or crash at any call of a commit that streams its record", arguments: Kind.all + [.crash])
    func streamedCommitFaults(_ kind: Kind) async throws {
        var injections = 0
        for k in 1...Self.callLimit {
            let label = "streamed commit, \(kind.name) at call \(k)"
            guard try await commitRun(kind.fault, atCall: k, large: true, label, streamed: true) else { break }
            injections += 1
            #expect(k < Self.callLimit, "\(label): the commit never stops reaching the fault")
        }
        print("[faults] \(injections) injections (streamed commit, \(kind.name))")
        // 1.2 MB in 64 KiB chunks: about 19 chunk writes before the commit's calls.
        #expect(injections > 19)
    }

    /// One commit with `fault` armed at its `k`th call (`streamed`: at the `k`th call from the transaction's
    /// first operation, its record streamed in 64 KiB chunks); returns whether the fault fired.
    func commitRun(
        _ fault: Fault, atCall k: Int, large: Bool, _ label: String, streamed: Bool = false
    ) async throws -> Bool {
        let base = MemoryFileSystem(tracksDurability: true)
        let faulty = FaultInjectingFileSystem(base: base)
        let engine = try await memoryEngine(faulty, path: Self.path, recordStreamChunk: streamed ? 64 << 10 : nil)
        let world = try await Self.seed(engine)
        let versionBefore = engine.latestVersion
        let before = try Dump(engine.snapshot())
        let txn = try await engine.beginWrite()
        if streamed { faulty.inject(fault, atCall: k) }
        try Self.change(txn, world, large: large)
        let attempted = try Dump(txn)

        if !streamed { faulty.inject(fault, atCall: k) }
        var failure: StorageError?
        do { try await txn.commit() } catch { failure = error }
        let fired = faulty.didInject
        guard fired else {
            faulty.reset()
            #expect(failure == nil, "\(label): failed without a fault: \(String(describing: failure))")
            await engine.close()
            return false
        }

        // The caller learns the outcome, and the visible state matches it.
        if let failure {
            #expect([.ioFailure, .diskFull, .poisoned].contains(failure.code), "\(label): \(failure)")
            #expect(engine.latestVersion == versionBefore, "\(label)")
            #expect(try Dump(engine.snapshot()) == before, "\(label)")
        } else {
            #expect(engine.latestVersion == versionBefore.next, "\(label)")
            #expect(try Dump(engine.snapshot()) == attempted, "\(label)")
        }
        // Nothing acknowledged is lost; the failed commit is all or nothing. (Reading images does not use
        // `faulty`, so this holds for a crash too, while the crashed file system keeps failing.)
        let allowed = failure == nil ? [attempted] : [before, attempted]
        await Self.expectStore(base.powerLossImage(), isOneOf: allowed, "\(label), power loss")
        await Self.expectStore(base.processCrashImage(), isOneOf: allowed, "\(label), process crash")
        if fault == .crash {
            #expect(failure != nil, "\(label): a commit that crashed reported success")
            await engine.close()
            return true
        }
        faulty.reset()

        // The engine takes a new commit, or refuses every write until reopened.
        if await Self.isPoisoned(engine) {
            #expect(
                failure?.code == .poisoned,
                "\(label): poisoned, but the commit failed with \(String(describing: failure))")
            await Self.expectPoisoned(engine, label)
            await engine.close()
            await Self.expectStore(base, isOneOf: allowed, "\(label), reopened after poisoning")
        } else {
            let expected: Dump
            do {
                let next = try await engine.beginWrite()
                try next.insert(world.kv, [.int(10_000), .string("next")])
                expected = try Dump(next)
                try await next.commit()
            } catch {
                Issue.record("\(label): the next commit failed: \(error)")
                return true
            }
            do {
                let found = try Dump(engine.snapshot())
                #expect(
                    found == expected, "\(label): the next commit reads back as \(found.differences(from: expected))")
            } catch {
                Issue.record("\(label): the next commit succeeded, but reading it back failed: \(error)")
            }
            await engine.close()
            await Self.expectStore(base.powerLossImage(), isOneOf: [expected], "\(label), next commit, power loss")
        }
        return true
    }

    // MARK: Checkpoint

    @Test("a fault at any call of a checkpoint", arguments: Kind.all, StorageKind.allCases)
    func checkpointFaults(_ kind: Kind, storage: StorageKind) async throws {
        try await storage.run {
            var injections = 0
            for large in [false, true] {
                for k in 1...Self.callLimit {
                    let label = "\(large ? "large" : "small") checkpoint, \(kind.name) at call \(k)"
                    guard try await checkpointRun(kind.fault, atCall: k, large: large, label) else { break }
                    injections += 1
                    #expect(k < Self.callLimit, "\(label): the checkpoint never stops reaching the fault")
                }
            }
            print("[faults] \(injections) injections (checkpoint, \(kind.name))")
            #expect(injections > 0)
        }
    }

    @Test("a crash at any call of a checkpoint", arguments: StorageKind.allCases)
    func checkpointCrashes(storage: StorageKind) async throws {
        try await storage.run {
            var injections = 0
            for large in [false, true] {
                for k in 1...Self.callLimit {
                    let label = "\(large ? "large" : "small") checkpoint, crash at call \(k)"
                    guard try await checkpointRun(.crash, atCall: k, large: large, label) else { break }
                    injections += 1
                }
            }
            print("[faults] \(injections) injections (checkpoint, crash)")
            #expect(injections > 0)
        }
    }

    /// One checkpoint (of a store with commits after an earlier checkpoint) with `fault` armed at its `k`th
    /// call; returns whether the fault fired. A checkpoint changes no data: whatever fails, every commit is
    /// there afterwards, in the engine, after a power loss, a process crash and a reopen.
    func checkpointRun(_ fault: Fault, atCall k: Int, large: Bool, _ label: String) async throws -> Bool {
        let base = MemoryFileSystem(tracksDurability: true)
        let faulty = FaultInjectingFileSystem(base: base)
        let engine = try await memoryEngine(faulty, path: Self.path)
        let world = try await Self.seed(engine)
        try await engine.checkpoint()
        _ = try await engine.write { txn in try Self.change(txn, world, large: large) }
        let committed = try Dump(engine.snapshot())

        faulty.inject(fault, atCall: k)
        var failure: StorageError?
        do { try await engine.checkpoint() } catch { failure = error }
        guard faulty.didInject else {
            faulty.reset()
            #expect(failure == nil, "\(label): failed without a fault: \(String(describing: failure))")
            await engine.close()
            return false
        }
        if let failure {
            #expect([.ioFailure, .diskFull, .poisoned].contains(failure.code), "\(label): \(failure)")
        }
        #expect(try Dump(engine.snapshot()) == committed, "\(label)")
        await Self.expectStore(base.powerLossImage(), isOneOf: [committed], "\(label), power loss")
        await Self.expectStore(base.processCrashImage(), isOneOf: [committed], "\(label), process crash")
        if fault == .crash {
            await engine.close()
            return true
        }
        faulty.reset()
        if await Self.isPoisoned(engine) {
            await Self.expectPoisoned(engine, label)
            await engine.close()
            await Self.expectStore(base, isOneOf: [committed], "\(label), reopened after poisoning")
            return true
        }
        // The engine goes on: a commit, a checkpoint, a reopen from it.
        let expected: Dump
        do {
            _ = try await engine.write { txn in try txn.insert(world.kv, [.int(10_000), .string("next")]) }
            expected = try Dump(engine.snapshot())
            try await engine.checkpoint()
            #expect(try Dump(engine.snapshot()) == expected, "\(label): the checkpoint changed what a reader sees")
        } catch {
            Issue.record("\(label): the store did not go on after the failed checkpoint: \(error)")
            return true
        }
        await engine.close()
        let reopened = try await memoryEngine(base, path: Self.path)
        #expect(reopened.recoveryReport.checkpointVersion == reopened.latestVersion, "\(label)")
        #expect(try Dump(reopened.snapshot()) == expected, "\(label), reopened from the checkpoint")
        await reopened.close()
        return true
    }

    // MARK: Open

    enum OpenCase: String, CaseIterable {
        /// No file yet: open creates it (temporary file, sync, rename, directory sync).
        case create
        case clean
        /// Half of a last record: open truncates it and syncs.
        case tornTail
        /// The last record's footer is damaged: open rewrites it and syncs.
        case damagedFooter
        /// The file as a crash leaves it: the records, then the zeros reserved ahead of them. Open cuts the
        /// zeros off and syncs.
        case reservedTail
        case readOnly
    }

    /// The starting file of each case and what opening it must show.
    static func openCases() async throws -> [(OpenCase, [UInt8]?, Dump)] {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs, path: path)
        let world = try await seed(engine)
        // While the engine is open, the file ends with zeros reserved for the next commits: the records are
        // the first `totalBytes`.
        let seeded = Array(try #require(fs.contents(of: path)).prefix(Int(engine.statistics.totalBytes)))
        let seededDump = try Dump(engine.snapshot())
        _ = try await engine.write { txn in try change(txn, world, large: false) }
        let reserved = try #require(fs.contents(of: path))
        let changed = Array(reserved.prefix(Int(engine.statistics.totalBytes)))
        #expect(reserved.count > changed.count && reserved[changed.count...].allSatisfy { $0 == 0 })
        let changedDump = try Dump(engine.snapshot())
        await engine.close()
        let empty = try Dump(try await StorageEngine.open(.inMemory()).snapshot())
        var footer = changed
        footer[footer.count - 1] ^= 0x40
        let torn = Array(changed[..<(seeded.count + (changed.count - seeded.count) / 2)])
        return [
            (.create, nil, empty), (.clean, changed, changedDump), (.tornTail, torn, seededDump),
            (.damagedFooter, footer, changedDump), (.reservedTail, reserved, changedDump),
            (.readOnly, changed, changedDump),
        ]
    }

    @Test("a fault at any call of an open", arguments: Kind.all, StorageKind.allCases)
    func openFaults(_ kind: Kind, storage: StorageKind) async throws {
        try await storage.run {
            var injections = 0
            for (openCase, image, expected) in try await Self.openCases() {
                for k in 1...Self.callLimit {
                    let label = "open (\(openCase)), \(kind.name) at call \(k)"
                    let base =
                        image.map { MemoryFileSystem(files: [Self.path: $0]) }
                        ?? MemoryFileSystem(tracksDurability: true)
                    let faulty = FaultInjectingFileSystem(base: base)
                    let readOnly = openCase == .readOnly
                    var configuration = StorageEngine.Configuration(
                        path: Self.path, fileSystem: faulty, readOnly: readOnly, autoCompaction: nil)
                    configuration.encryptionKey = storage.key
                    faulty.inject(kind.fault, atCall: k)
                    var opened: StorageEngine?
                    var failure: StorageError?
                    do throws(StorageError) { opened = try await StorageEngine.open(configuration) } catch {
                        failure = error
                    }
                    let fired = faulty.didInject
                    faulty.reset()
                    if let failure {
                        #expect(fired, "\(label): failed without a fault: \(failure)")
                        #expect([.ioFailure, .diskFull].contains(failure.code), "\(label): \(failure)")
                    }
                    if let opened {
                        #expect(try Dump(opened.snapshot()) == expected, "\(label)")
                        if openCase == .tornTail || openCase == .reservedTail {
                            #expect(opened.recoveryReport.truncatedBytes > 0, "\(label)")
                        }
                        if openCase == .damagedFooter {
                            #expect(opened.recoveryReport.repairedFooterAt != nil, "\(label)")
                        }
                        await opened.close()
                    }
                    if !fired { break }
                    injections += 1
                    #expect(k < Self.callLimit, "\(label): open never stops reaching the fault")
                    let powerLoss = base.powerLossImage()

                    // A later open without faults sees everything (which also shows the failed open released
                    // its lock and descriptors), and the store keeps what is committed after it.
                    if readOnly {
                        do {
                            var readOnly = StorageEngine.Configuration(
                                path: Self.path, fileSystem: base, readOnly: true)
                            readOnly.encryptionKey = storage.key
                            let later = try await StorageEngine.open(readOnly)
                            #expect(try Dump(later.snapshot()) == expected, "\(label)")
                        } catch {
                            Issue.record("\(label): a later read-only open failed: \(error)")
                        }
                    } else {
                        await Self.expectStore(base, isOneOf: [expected], "\(label), later open")
                    }
                    // A power loss right after the failed open loses nothing that was committed.
                    if image != nil { await Self.expectStore(powerLoss, isOneOf: [expected], "\(label), power loss") }
                }
            }
            print("[faults] \(injections) injections (open, \(kind.name))")
            #expect(injections > 0)
        }
    }

    // MARK: Compaction

    /// A 1.3 MB store with dead rows: its compacted copy outgrows the first mapping, so compaction remaps.
    static func compactionImage() async throws -> [UInt8] {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs, path: path)
        let world = try await seed(engine)
        _ = try await engine.write { txn in try change(txn, world, large: true) }
        _ = try await engine.write { txn in
            for i in stride(from: 1000, to: 1300, by: 10) {
                try txn.delete(world.kv, try #require(txn.object(world.kv, primaryKey: .int(Int64(i)))))
            }
        }
        await engine.close()
        return try #require(fs.contents(of: path))
    }

    @Test("a fault at any call of a compaction", arguments: Kind.all, StorageKind.allCases)
    func compactionFaults(_ kind: Kind, storage: StorageKind) async throws {
        try await storage.run {
            let image = try await Self.compactionImage()
            var injections = 0
            for k in 1...Self.callLimit {
                let label = "compaction, \(kind.name) at call \(k)"
                guard try await compactionRun(kind.fault, atCall: k, image: image, label) else { break }
                injections += 1
                #expect(k < Self.callLimit, "\(label): compaction never stops reaching the fault")
            }
            print("[faults] \(injections) injections (compaction, \(kind.name))")
            #expect(injections > 0)
        }
    }

    @Test("a crash at any call of a compaction", arguments: StorageKind.allCases)
    func compactionCrashes(storage: StorageKind) async throws {
        try await storage.run {
            let image = try await Self.compactionImage()
            var injections = 0
            for k in 1...Self.callLimit {
                guard try await compactionRun(.crash, atCall: k, image: image, "compaction, crash at call \(k)") else {
                    break
                }
                injections += 1
            }
            print("[faults] \(injections) injections (compaction, crash)")
            #expect(injections > 0)
        }
    }

    /// One compaction with `fault` armed at its `k`th call; returns whether the fault fired.
    func compactionRun(_ fault: Fault, atCall k: Int, image: [UInt8], _ label: String) async throws -> Bool {
        let base = MemoryFileSystem(files: [Self.path: image])
        let faulty = FaultInjectingFileSystem(base: base)
        let engine = try await memoryEngine(faulty, path: Self.path)
        let before = try Dump(engine.snapshot())
        let generation = engine.statistics.generation

        faulty.inject(fault, atCall: k)
        var failure: StorageError?
        do { try await engine.compact() } catch { failure = error }
        let fired = faulty.didInject
        if !fired { faulty.reset() }

        // Compaction never changes what a reader sees, failed or not.
        #expect(try Dump(engine.snapshot()) == before, "\(label)")
        if let failure {
            #expect(fired, "\(label): failed without a fault: \(failure)")
            #expect([.ioFailure, .diskFull, .poisoned].contains(failure.code), "\(label): \(failure)")
            if failure.code != .poisoned { #expect(engine.statistics.generation == generation, "\(label)") }
        } else {
            #expect(engine.statistics.generation == generation + 1, "\(label)")
        }
        await Self.expectStore(base.powerLossImage(), isOneOf: [before], "\(label), power loss")
        await Self.expectStore(base.processCrashImage(), isOneOf: [before], "\(label), process crash")
        if fault == .crash || !fired {
            await engine.close()
            return fired
        }
        faulty.reset()
        let leftovers = base.allPaths.filter { $0.hasSuffix(".compacting") }
        #expect(leftovers.isEmpty, "\(label): a failed compaction left \(leftovers)")

        if await Self.isPoisoned(engine) {
            await Self.expectPoisoned(engine, label)
            await engine.close()
            await Self.expectStore(base, isOneOf: [before], "\(label), reopened after poisoning")
        } else {
            do {
                let kv = try #require(try engine.snapshot().tableID(named: "KV"))
                _ = try await engine.write { txn in try txn.insert(kv, [.int(10_000), .string("next")]) }
                let expected = try Dump(engine.snapshot())
                await engine.close()
                let powerLoss = base.powerLossImage()
                await Self.expectStore(base, isOneOf: [expected], "\(label), next commit, reopened")
                await Self.expectStore(powerLoss, isOneOf: [expected], "\(label), next commit, power loss")
            } catch {
                Issue.record("\(label): the next commit failed: \(error)")
            }
        }
        return true
    }

    // MARK: Specific windows

    @Test("a transaction begun before a sync failure cannot commit after it")
    func writerAdmittedBeforePoisoning() async throws {
        let base = MemoryFileSystem(tracksDurability: true)
        let gate = SyncGateFileSystem(base: base)
        let engine = try await memoryEngine(gate, path: Self.path)
        let (kv, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        let versionBefore = engine.latestVersion

        // A's record is appended; its fsync is held, then fails.
        gate.holdNextSyncThenFail()
        let a = Task { try await engine.write { txn in try txn.insert(kv, [.int(1), .string("a")]) } }
        await gate.waitUntilHeld()
        // B gets the writer lock before the failure is known.
        let b = try await engine.beginWrite()
        try b.insert(kv, [.int(2), .string("b")])
        gate.release()
        let errorA = await #expect(throws: StorageError.self) { try await a.value }
        #expect(errorA?.code == .poisoned)

        // The engine is poisoned: B's fsync could succeed while A's pages were dropped by the failed one
        // (Linux marks them clean), so acknowledging B would acknowledge a file with a hole before B.
        var failureB: StorageError?
        do { try await b.commit() } catch { failureB = error }
        #expect(failureB?.code == .poisoned, "a commit was acknowledged by a poisoned engine")
        #expect(engine.latestVersion == versionBefore)
        await engine.close()
    }

    @Test("a memory-mapped region sees later writes below its length after the file grows")
    func memoryMappingStaysCoherent() throws {
        // The `FileSystem.map` contract: "Writes made later through write(_:_:at:) at offsets below `length`
        // become visible through the region." The engine relies on it after a failed append is cut back.
        let fs = MemoryFileSystem()
        let file = try fs.open("/f", create: true, readOnly: false)
        let region = try fs.map(file, length: 4096)
        try fs.writeAll(file, [UInt8](repeating: 1, count: 8192), at: 0)  // grows the file past the mapping
        #expect(region.bytes(at: 0, count: 1)[0] == 1)
        try fs.truncate(file, to: 0)
        try fs.writeAll(file, [7], at: 0)
        #expect(region.bytes(at: 0, count: 1)[0] == 7)
        fs.close(file)
    }
}

/// Forwards to a base file system; when armed, holds the next `sync` until released and then fails it with EIO.
private final class SyncGateFileSystem: ForwardingFileSystem {
    let base: any FileSystem
    var forwardee: any FileSystem { base }
    private let armed = Locked(false)
    private let held = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(base: any FileSystem) { self.base = base }

    func holdNextSyncThenFail() { armed.withLock { $0 = true } }
    func release() { released.signal() }
    /// Returns once a sync is being held (the waiting happens on a Dispatch thread).
    func waitUntilHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.held.wait()
                continuation.resume()
            }
        }
    }

    func sync(_ file: OpenFile) throws(StorageError) {
        let hold = armed.withLock { armed in
            defer { armed = false }
            return armed
        }
        if hold {
            held.signal()
            released.wait()
            throw StorageError(errno: 5, operation: "Syncing", path: file.path)
        }
        try base.sync(file)
    }
}
