import ActorStoreTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ActorStorePersistence

@Suite("Compaction")
struct CompactionTests {
    // MARK: Contents

    /// Everything a reader can observe of one version, independent of where the rows are in the file:
    /// every row of every table by key, what the primary-key and secondary-index lookups find for each
    /// row's indexed values, and the backlinks to each row. Two versions with equal dumps are
    /// indistinguishable through the read API. (Also used by ``FaultInjectionTests``.)
    struct Dump: Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomTestStringConvertible {
        struct Link: Hashable {
            var source: String
            var column: Int
            var key: ObjectKey
            var count: Int
        }
        var version: Version
        var schemaVersion: UInt64
        var schema: [TableSchema]
        /// Table name → key → the row's values.
        var rows: [String: [ObjectKey: [Value]]] = [:]
        /// Table name → key → indexed column → the objects a lookup of that row's value in that column finds.
        var lookups: [String: [ObjectKey: [Int: [ObjectKey]]]] = [:]
        /// Table name → key → the links to that row.
        var backlinks: [String: [ObjectKey: [Link]]] = [:]
        /// Table name → the key the next insert gets.
        var nextKeys: [String: Int64] = [:]

        init(_ store: some ReadableStore) throws {
            // Not part of the contents (a reader never sees a location), but every dumped version must
            // have a primary-key index whose row locations are its rows'.
            let problems = primaryIndexLocationProblems(store.state)
            if !problems.isEmpty { Issue.record("primary-key index: \(problems.prefix(3))") }
            version = store.version
            schemaVersion = store.schemaVersion
            schema = store.state.schema
            for table in store.state.orderedTables {
                let name = table.schema.name
                nextKeys[name] = table.nextKey
                var rows: [ObjectKey: [Value]] = [:]
                var lookups: [ObjectKey: [Int: [ObjectKey]]] = [:]
                var links: [ObjectKey: [Link]] = [:]
                for (key, _) in store.keys(table.id) {
                    let values = try #require(try store.values(table.id, key))
                    rows[key] = values
                    for (column, schema) in table.schema.columns.enumerated() where schema.isIndexed {
                        lookups[key, default: [:]][column] = store.objects(
                            table.id, column: column, equalTo: values[column])
                    }
                    let backlinks = store.backlinks(to: table.id, key)
                    if !backlinks.isEmpty {
                        links[key] = backlinks.map {
                            Link(
                                source: store.tableSchema($0.source)?.name ?? "?", column: $0.column, key: $0.key,
                                count: $0.count)
                        }
                    }
                }
                self.rows[name] = rows
                self.lookups[name] = lookups
                self.backlinks[name] = links
            }
        }

        /// A one-line summary (the full contents are too large for a test report).
        var description: String {
            let tables = rows.keys.sorted().map { "\($0): \(rows[$0]!.count) rows" }.joined(separator: ", ")
            return "\(version) [\(tables)]"
        }
        var debugDescription: String { description }
        var testDescription: String { description }

        /// The first few differences from `other`, for failure messages.
        func differences(from other: Dump) -> String {
            var found: [String] = []
            if version != other.version { found.append("version \(version) vs \(other.version)") }
            if schema != other.schema || schemaVersion != other.schemaVersion { found.append("schema differs") }
            if nextKeys != other.nextKeys { found.append("next keys \(nextKeys) vs \(other.nextKeys)") }
            for table in Set(rows.keys).union(other.rows.keys).sorted() {
                let mine = rows[table] ?? [:]
                let theirs = other.rows[table] ?? [:]
                for key in Set(mine.keys).union(theirs.keys).sorted() where mine[key] != theirs[key] {
                    let describe = { (row: [Value]?) in row.map { "\($0)".prefix(60) } ?? "absent" }
                    found.append("\(table) \(key): \(describe(mine[key])) vs \(describe(theirs[key]))")
                }
                if lookups[table] != other.lookups[table] { found.append("\(table) index lookups differ") }
                if backlinks[table] != other.backlinks[table] { found.append("\(table) backlinks differ") }
            }
            return found.isEmpty ? "no differences" : found.prefix(5).joined(separator: "; ")
        }

        /// Index entries that disagree with the rows: each row must be found by its own primary key and by
        /// each of its indexed values, and each backlink must match a link held by its source row.
        static func indexProblems(_ store: some ReadableStore) throws -> [String] {
            var problems = primaryIndexLocationProblems(store.state)
            for table in store.state.orderedTables {
                for (key, _) in store.keys(table.id) {
                    let values = try #require(try store.values(table.id, key))
                    if let pk = table.schema.primaryKeyColumn, store.object(table.id, primaryKey: values[pk]) != key {
                        problems.append("\(table.schema.name) \(key): primary key \(values[pk]) does not find it")
                    }
                    for (column, schema) in table.schema.columns.enumerated() where schema.isIndexed {
                        if store.objects(table.id, column: column, equalTo: values[column])?.contains(key) != true {
                            problems.append("\(table.schema.name) \(key): index of column \(column) does not find it")
                        }
                    }
                    for link in store.backlinks(to: table.id, key) {
                        let held = try store.value(link.source, link.key, column: link.column)
                        let count: Int
                        switch held {
                        case .link(let k): count = k == key ? 1 : 0
                        case .list(let items), .set(let items): count = items.filter { $0 == .link(key) }.count
                        case .map(let entries): count = entries.filter { $0.value == .link(key) }.count
                        default: count = 0
                        }
                        if count != link.count {
                            problems.append(
                                "\(table.schema.name) \(key): backlink from \(link.key) counts \(link.count), row holds \(count)"
                            )
                        }
                    }
                }
            }
            return problems
        }
    }

    // MARK: Where a store lives

    enum Storage: String, CaseIterable, CustomTestStringConvertible {
        case memory, disk
        var testDescription: String { rawValue }
    }

    /// A store on a durability-tracking memory file system or in a fresh temporary directory.
    struct Place {
        let memory: MemoryFileSystem?
        let directory: TemporaryDirectory?
        let path: String

        init(_ storage: Storage) {
            switch storage {
            case .memory:
                memory = MemoryFileSystem(tracksDurability: true)
                directory = nil
                path = "/db/test.store"
            case .disk:
                memory = nil
                let directory = TemporaryDirectory()
                self.directory = directory
                path = directory.file()
            }
        }

        var fs: any FileSystem { memory ?? PosixFileSystem() }
        var folder: String { StorageEngine.directory(of: path) }
        func sibling(_ name: String) -> String { folder + "/" + name }

        /// Opens the store (or another file next to it), without automatic compaction.
        /// Encrypted with ``StorageKind/current``'s key.
        func open(_ path: String? = nil, readOnly: Bool = false) async throws -> StorageEngine {
            var configuration = StorageEngine.Configuration(
                path: path ?? self.path, fileSystem: fs, readOnly: readOnly, autoCompaction: nil)
            configuration.encryptionKey = StorageKind.current.key
            return try await StorageEngine.open(configuration)
        }

        /// The names of the files next to the store.
        /// The directory's files, without the lock files beside stores (kept, as Realm keeps its `.lock`).
        func files() throws -> [String] {
            try fs.contentsOfDirectory(folder).filter { !$0.hasSuffix(".lock") }.sorted()
        }

        func write(_ bytes: [UInt8], to path: String) throws {
            if let memory {
                memory.setContents(of: path, to: bytes)
            } else {
                try Data(bytes).write(to: URL(fileURLWithPath: path))
            }
        }

        func read(_ path: String) throws -> [UInt8] {
            if let memory { return try #require(memory.contents(of: path)) }
            return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        }

        func cleanup() { directory?.cleanup() }
    }

    // MARK: Workload

    struct Tables {
        var person: TableID
        var dog: TableID
        var kv: TableID
        /// The largest KV key ever assigned; its row was deleted.
        var deletedHighestKey: ObjectKey
    }

    /// Person/Dog (links, a list of links, a primary key, a secondary index) and KV rows; then rewrites
    /// and deletes most of them so that most of the file is dead.
    static func populate(_ engine: StorageEngine, kvRows: Int = 400, valueSize: Int = 300) async throws -> Tables {
        let (ids, _) = try await engine.write { txn in
            try txn.setSchema([Fixtures.person, Fixtures.dog, Fixtures.kv], version: 3)
        }
        let (person, dog, kv) = (ids[0], ids[1], ids[2])
        let names = ["Rex", "Fido", "Max", "Bella", "Luna"]
        let (people, _) = try await engine.write { txn in
            let people = try (0..<20).map { i in try txn.insert(person, [.string("Person \(i)"), .list([])]) }
            var dogs: [[Value]] = Array(repeating: [], count: people.count)
            for i in 0..<200 {
                let owner = people[i % people.count]
                let key = try txn.insert(
                    dog, [.int(Int64(i)), .string(names[i % names.count]), .int(Int64(i % 15)), .link(owner)])
                dogs[i % people.count].append(.link(key))
                if i % 7 == 0 { dogs[i % people.count].append(.link(key)) }  // the same dog twice in a list
            }
            for (i, owner) in people.enumerated() { try txn.update(person, owner, [(1, .list(dogs[i]))]) }
            return people
        }
        var kvKeys: [ObjectKey] = []
        for batch in stride(from: 0, to: kvRows, by: 100) {
            let (keys, _) = try await engine.write { txn in
                try (batch..<min(batch + 100, kvRows)).map { i in
                    try txn.insert(kv, [.int(Int64(i)), .string(Self.value(i, 0, valueSize))])
                }
            }
            kvKeys += keys
        }
        // Rewrite every KV row twice, then delete 80% of them (including the newest key).
        for round in 1...2 {
            _ = try await engine.write { txn in
                for (i, key) in kvKeys.enumerated() {
                    try txn.update(kv, key, [(1, .string(Self.value(i, round, valueSize)))])
                }
            }
        }
        _ = try await engine.write { txn in
            for (i, key) in kvKeys.enumerated() where i % 5 != 0 || i == kvKeys.count - 1 { try txn.delete(kv, key) }
            // Deleting dogs removes them from their owners' lists; deleting a person nulls its dogs' owner.
            for id in stride(from: 1, to: 200, by: 3) {
                try txn.delete(dog, try #require(txn.object(dog, primaryKey: .int(Int64(id)))))
            }
            try txn.delete(person, people[3])
            try txn.update(dog, try #require(txn.object(dog, primaryKey: .int(0))), [(1, .string("Renamed"))])
        }
        return Tables(person: person, dog: dog, kv: kv, deletedHighestKey: kvKeys[kvKeys.count - 1])
    }

    static func value(_ i: Int, _ round: Int, _ size: Int) -> String {
        let prefix = "row \(i) round \(round) "
        return prefix
            + String(
                repeating: Character(UnicodeScalar(UInt8(97 + (i + round) % 26))), count: max(0, size - prefix.count))
    }

    /// Waits (without sleeping) until `condition` holds or a generous deadline passes; returns whether it held.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(120)
        var polls = 0
        while !condition() {
            polls += 1
            if polls > 50_000_000 || ContinuousClock.now > deadline { return false }
            await Task.yield()
        }
        return true
    }

    // MARK: Tests

    @Test("compaction keeps contents, keys, indexes and backlinks, and shrinks the file", arguments: Storage.allCases)
    func preservesContents(_ storage: Storage) async throws {
        let place = Place(storage)
        defer { place.cleanup() }
        var engine = try await place.open()
        let tables = try await Self.populate(engine)
        let before = try Dump(engine.snapshot())
        let statsBefore = engine.statistics
        let rowsBefore = engine.core.withLock { $0.published.liveBytes }
        #expect(statsBefore.generation == 0)
        #expect(try Dump.indexProblems(engine.snapshot()).isEmpty)

        try await engine.compact()

        let snapshot = try engine.snapshot()
        #expect(try Dump(snapshot) == before)
        #expect(try Dump.indexProblems(snapshot).isEmpty)
        let stats = engine.statistics
        #expect(stats.version == statsBefore.version)
        #expect(stats.generation == 1)
        #expect(stats.totalBytes < statsBefore.totalBytes / 2, "\(statsBefore.totalBytes) → \(stats.totalBytes)")
        #expect(stats.liveBytes <= stats.totalBytes)
        // The rows are as live as before; the compacted file's checkpoint adds its nodes.
        #expect(engine.core.withLock { $0.published.liveBytes } == rowsBefore)
        #expect(stats.liveBytes > rowsBefore && stats.checkpointVersion == stats.version)
        #expect(try place.files() == ["test.store"])
        print("[compaction] \(storage): \(statsBefore.totalBytes) → \(stats.totalBytes) bytes, \(stats.liveBytes) live")

        // Keys are never reused, even the deleted highest one.
        let (newKey, _) = try await engine.write { txn in try txn.insert(tables.kv, [.int(-1), .string("new")]) }
        #expect(newKey > tables.deletedHighestKey)
        let afterInsert = try Dump(engine.snapshot())

        // A second compaction, then a reopen, see the same store.
        try await engine.compact()
        #expect(engine.statistics.generation == 2)
        #expect(try Dump(engine.snapshot()) == afterInsert)
        await engine.close()
        engine = try await place.open()
        #expect(engine.statistics.generation == 2)
        #expect(try Dump(engine.snapshot()) == afterInsert)
        #expect(try Dump.indexProblems(engine.snapshot()).isEmpty)
        #expect(engine.statistics.liveBytes <= engine.statistics.totalBytes)
        await engine.close()
        if let memory = place.memory {
            let survivor = try await memoryEngine(memory.powerLossImage(), path: place.path)
            #expect(try Dump(survivor.snapshot()) == afterInsert)
            #expect(survivor.statistics.generation == 2)
        }
    }

    @Test("an empty store compacts and stays usable")
    func emptyStore() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs)
        try await engine.compact()
        #expect(engine.statistics.generation == 1)
        #expect(engine.latestVersion == .zero)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await engine.write { txn in try txn.insert(table, [.int(1), .string("one")]) }
        let expected = try Dump(engine.snapshot())
        await engine.close()
        let survivor = try await memoryEngine(fs.powerLossImage())
        #expect(try Dump(survivor.snapshot()) == expected)
    }

    @Test("a snapshot taken before compaction still reads the old file", arguments: Storage.allCases)
    func snapshotSurvivesCompaction(_ storage: Storage) async throws {
        let place = Place(storage)
        defer { place.cleanup() }
        let engine = try await place.open()
        let tables = try await Self.populate(engine, kvRows: 200)
        let old = try engine.snapshot()
        let oldDump = try Dump(old)
        // Change everything the snapshot can see, then compact and write into the new file.
        _ = try await engine.write { txn in
            try txn.deleteAll(tables.kv)
            try txn.deleteAll(tables.dog)
            try txn.insert(tables.kv, [.int(1), .string("after")])
        }
        let current = try Dump(engine.snapshot())
        try await engine.compact()
        #expect(try Dump(engine.snapshot()) == current)
        for i in 0..<50 {
            _ = try await engine.write { txn in
                try txn.insert(tables.kv, [.int(Int64(1000 + i)), .string(String(repeating: "z", count: 2000))])
            }
        }
        // The old snapshot reads its version, through the old file's mapping.
        #expect(old.version < engine.latestVersion)
        #expect(try Dump(old) == oldDump)
        #expect(try Dump.indexProblems(old).isEmpty)
        #expect(engine.statistics.oldestPinnedVersion == old.version)
        #expect(try place.files() == ["test.store"])
        await engine.close()
        // Still readable after the engine is closed.
        #expect(try Dump(old) == oldDump)
    }

    @Test("commits made while a compaction runs are all kept", arguments: Storage.allCases)
    func concurrentCommits(_ storage: Storage) async throws {
        let place = Place(storage)
        defer { place.cleanup() }
        // The gate holds the compaction after it took its snapshot, so that every one of the 200 commits
        // lands after it and must be carried over by the catch-up phases.
        let gate = CompactionGateFileSystem(base: place.fs)
        let engine = try await StorageEngine.open(.init(path: place.path, fileSystem: gate, autoCompaction: nil))
        let tables = try await Self.populate(engine, kvRows: 1500)
        let before = try Dump(engine.snapshot())
        let counter = Counter()
        let kv = tables.kv
        gate.pauseNextCompactionWrite()
        let compaction = Task {
            try await engine.compact()
            return counter.value
        }
        await gate.waitUntilPaused()
        let writer = Task {
            for i in 0..<200 {
                _ = try await engine.write { txn in
                    try txn.insert(kv, [.int(Int64(100_000 + i)), .string("concurrent \(i)")])
                }
                counter.increment()
                if i == 99 { gate.resume() }  // the other 100 race with the rest of the compaction
            }
        }
        let committedDuringCompaction = try await compaction.value
        try await writer.value
        print("[compaction] \(storage): \(committedDuringCompaction) of 200 commits landed before compact() returned")
        #expect(committedDuringCompaction >= 100)

        let snapshot = try engine.snapshot()
        #expect(engine.statistics.generation == 1)
        #expect(snapshot.version == Version(before.version.rawValue + 200))
        var expectedRows = before.rows["KV"]!
        for i in 0..<200 {
            let key = try #require(snapshot.object(kv, primaryKey: .int(Int64(100_000 + i))), "commit \(i) is missing")
            expectedRows[key] = [.int(Int64(100_000 + i)), .string("concurrent \(i)")]
        }
        let after = try Dump(snapshot)
        #expect(after.rows["KV"] == expectedRows)
        #expect(after.rows["Dog"] == before.rows["Dog"])
        #expect(after.rows["Person"] == before.rows["Person"])
        #expect(try Dump.indexProblems(snapshot).isEmpty)
        await engine.close()

        let reopened = try await place.open()
        #expect(try Dump(reopened.snapshot()) == after)
        #expect(reopened.statistics.generation == 1)
        await reopened.close()
        if let memory = place.memory {
            let survivor = try await memoryEngine(memory.powerLossImage(), path: place.path)
            #expect(try Dump(survivor.snapshot()) == after)
        }
    }

    /// Counts across tasks. (A class so that a task can capture it.)
    final class Counter: Sendable {
        private let count = Locked(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    @Test("writeCopy writes a compact store that opens with the same contents", arguments: Storage.allCases)
    func writeCopy(_ storage: Storage) async throws {
        let place = Place(storage)
        defer { place.cleanup() }
        let engine = try await place.open()
        let tables = try await Self.populate(engine)
        let before = try Dump(engine.snapshot())
        let sourceBytes = engine.statistics.totalBytes
        let destination = place.sibling("copy.store")

        try await engine.writeCopy(to: destination)
        #expect(try place.files() == ["copy.store", "test.store"])

        let readOnly = try await place.open(destination, readOnly: true)
        #expect(try Dump(readOnly.snapshot()) == before)
        #expect(try Dump.indexProblems(readOnly.snapshot()).isEmpty)
        let copyBytes = readOnly.statistics.totalBytes
        #expect(copyBytes < sourceBytes / 2)
        #expect(readOnly.statistics.liveBytes <= copyBytes)
        #expect(readOnly.statistics.generation == 0)
        #expect(readOnly.core.withLock { $0.header.fileID } != engine.core.withLock { $0.header.fileID })
        await readOnly.close()

        // The copy is as small as compaction makes the source, but for the checkpoint compaction writes.
        try await engine.compact()
        #expect(engine.statistics.checkpointVersion == engine.statistics.version)
        #expect(engine.statistics.totalBytes > copyBytes && engine.statistics.totalBytes < copyBytes * 2)

        // Writable: accepts commits that survive a reopen.
        let writable = try await place.open(destination)
        #expect(try Dump(writable.snapshot()) == before)
        let (key, _) = try await writable.write { txn in try txn.insert(tables.kv, [.int(-5), .string("in the copy")]) }
        #expect(key > tables.deletedHighestKey)
        let copyAfter = try Dump(writable.snapshot())
        await writable.close()
        let again = try await place.open(destination)
        #expect(try Dump(again.snapshot()) == copyAfter)
        await again.close()
        #expect(try Dump(engine.snapshot()) == before)  // the source is not affected

        // An existing destination is refused and left alone.
        let existing = try place.read(destination)
        let error = await #expect(throws: StorageError.self) { try await engine.writeCopy(to: destination) }
        #expect(error?.code == .fileExists)
        #expect(try place.read(destination) == existing)
        let selfError = await #expect(throws: StorageError.self) { try await engine.writeCopy(to: place.path) }
        // Over the open store itself: on disk, where other processes could have it open too, alreadyOpen.
        #expect(selfError?.code == (place.memory == nil ? .alreadyOpen : .fileExists))
        #expect(try place.files() == ["copy.store", "test.store"])
    }

    @Test("a file with links, lists of links and deleted targets opens without dangling links")
    func noDanglingLinksInAnOrdinaryFile() async throws {
        let place = Place(.disk)
        defer { place.cleanup() }
        let engine = try await place.open()
        let tables = try await Self.populate(engine)
        // Delete dogs that people's lists hold (twice, some of them): the lists are rewritten without them.
        let dogs = try engine.snapshot().keys(tables.dog).map(\.key)
        _ = try await engine.write { txn in for key in dogs.prefix(40) { try txn.delete(tables.dog, key) } }
        #expect(!engine.mayHaveDanglingLinks)
        await engine.close()
        let reopened = try await place.open()
        #expect(!reopened.mayHaveDanglingLinks, "readers of this file would pay a lookup per link for nothing")
        #expect(!(try reopened.snapshot().state.hasDanglingLinks()))
        await reopened.close()
    }

    @Test(
        "writeCopy of an open write transaction copies what it sees, and the transaction goes on",
        arguments: StorageKind.allCases)
    func writeCopyOfATransaction(kind: StorageKind) async throws {
        try await kind.run {
            let place = Place(.disk)
            defer { place.cleanup() }
            let engine = try await place.open()
            let tables = try await Self.populate(engine)
            let committed = try Dump(engine.snapshot())
            let committedKV = try engine.snapshot().count(tables.kv)
            let destination = place.sibling("copy.store")
            // More than one 4 MiB chunk of rows in the transaction's own record, rows of the file rewritten in
            // it (their bytes now in the record too), and deletions (with links to them removed).
            let txn = try await engine.beginWrite()
            for i in 0..<12_000 {
                try txn.insert(tables.kv, [.int(Int64(100_000 + i)), .string(Self.value(i, 9, 400))])
            }
            let dogs = try #require(txn.state.tables[tables.dog]).rows.map(\.key)
            for key in dogs.prefix(50) { try txn.update(tables.dog, key, [(2, .int(99))]) }
            for key in dogs.suffix(30) { try txn.delete(tables.dog, key) }
            let seen = try Dump(txn)
            try await engine.writeCopy(to: destination, transaction: txn, encryptionKey: kind.key)
            #expect(try Dump(txn) == seen, "the copy changed nothing the transaction sees")
            #expect(try Dump(engine.snapshot()) == committed, "nor anything committed")
            try txn.insert(tables.kv, [.int(-1), .string("after the copy")])
            _ = try await txn.commit()

            let copy = try await place.open(destination, readOnly: true)
            #expect(try Dump(copy.snapshot()) == seen)
            #expect(try Dump.indexProblems(copy.snapshot()).isEmpty)
            await copy.close()
            #expect(try engine.snapshot().count(tables.kv) == committedKV + 12_001)
        }
    }

    @Test("writeCopy closes its file once when the directory sync fails")
    func writeCopyDirectorySyncFailure() async throws {
        let memory = MemoryFileSystem(tracksDurability: true)
        let tracking = DescriptorTrackingFileSystem(base: memory)
        let engine = try await memoryEngine(tracking)
        _ = try await engine.write { txn in
            let kv = try txn.createTable(Fixtures.kv)
            try txn.insert(kv, [.int(1), .string("one")])
        }
        tracking.failDirectorySync.withLock { $0 = true }
        let error = await #expect(throws: StorageError.self) { try await engine.writeCopy(to: "/db/copy.store") }
        #expect(error?.code == .ioFailure)
        // A second close of a descriptor number is a bug: with POSIX descriptors the number may already
        // belong to a file another thread has opened since, which the second close then closes.
        #expect(tracking.doubleCloses == [], "descriptors closed twice: \(tracking.doubleCloses)")
    }

    @Test("shouldCompactOnLaunch is asked with (total, used) and compacts when it says so")
    func compactOnLaunch() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs)
        _ = try await Self.populate(engine)
        let before = try Dump(engine.snapshot())
        await engine.close()
        let stats = engine.statistics

        let asked = AskLog()
        func open(answer: Bool, readOnly: Bool = false) async throws -> StorageEngine {
            try await StorageEngine.open(
                .init(
                    path: "/db/test.store", fileSystem: fs, readOnly: readOnly, autoCompaction: nil,
                    shouldCompactOnLaunch: { total, used in
                        asked.append([total, used])
                        return answer
                    }))
        }

        let declined = try await open(answer: false)
        #expect(asked.entries == [[stats.totalBytes, stats.liveBytes]])
        #expect(declined.recoveryReport.compactedOnLaunch == false)
        #expect(declined.statistics.generation == 0)
        #expect(declined.statistics.totalBytes == stats.totalBytes)
        await declined.close()

        let readOnly = try await open(answer: true, readOnly: true)
        #expect(asked.entries.count == 1, "a read-only open must not ask")
        #expect(readOnly.statistics.generation == 0)
        await readOnly.close()

        let compacted = try await open(answer: true)
        #expect(asked.entries == [[stats.totalBytes, stats.liveBytes], [stats.totalBytes, stats.liveBytes]])
        #expect(compacted.recoveryReport.compactedOnLaunch)
        #expect(compacted.statistics.generation == 1)
        #expect(compacted.statistics.totalBytes < stats.totalBytes / 2)
        #expect(try Dump(compacted.snapshot()) == before)
        await compacted.close()

        let reopened = try await memoryEngine(fs.powerLossImage())
        #expect(reopened.statistics.generation == 1)
        #expect(try Dump(reopened.snapshot()) == before)
    }

    final class AskLog: Sendable {
        private let log = Locked<[[UInt64]]>([])
        func append(_ entry: [UInt64]) { log.withLock { $0.append(entry) } }
        var entries: [[UInt64]] { log.withLock { $0 } }
    }

    @Test("automatic compaction starts when the dead ratio passes the threshold")
    func automaticCompaction() async throws {
        let fs = MemoryFileSystem(tracksDurability: true)
        let engine = try await memoryEngine(fs, autoCompaction: .init(deadRatio: 0.5, minimumFileSize: 64 * 1024))
        let (kv, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        let (keys, _) = try await engine.write { txn in
            try (0..<40).map { i in try txn.insert(kv, [.int(Int64(i)), .string(Self.value(i, 0, 500))]) }
        }
        var rng = SplitMix64(seed: 42)
        var commits = 0
        var conditionMet = false
        var peak: UInt64 = 0
        while commits < 2_000 && engine.statistics.generation == 0 {
            commits += 1
            _ = try await engine.write { txn in
                for _ in 0..<8 {
                    let i = Int.random(in: 0..<keys.count, using: &rng)
                    try txn.update(kv, keys[i], [(1, .string(Self.value(i, commits, 500)))])
                }
            }
            let stats = engine.statistics
            peak = max(peak, stats.totalBytes)
            if stats.totalBytes >= 64 * 1024
                && Double(stats.totalBytes - stats.liveBytes) >= 0.5 * Double(stats.totalBytes)
            {
                conditionMet = true
                break
            }
        }
        #expect(
            conditionMet || engine.statistics.generation > 0,
            "the trigger condition was never met in \(commits) commits")
        let expected = try Dump(engine.snapshot())
        let compacted = await Self.eventually { engine.statistics.generation > 0 }
        #expect(compacted, "no automatic compaction after \(commits) commits")
        print(
            "[compaction] automatic compaction after \(commits) churn commits; \(peak) → \(engine.statistics.totalBytes) bytes"
        )
        #expect(engine.lastCompactionError == nil)
        #expect(try Dump(engine.snapshot()) == expected)
        #expect(engine.statistics.totalBytes < peak)
        // Commits still work afterwards, and everything survives a power loss.
        _ = try await engine.write { txn in try txn.insert(kv, [.int(-1), .string("after")]) }
        let final = try Dump(engine.snapshot())
        await engine.close()
        let survivor = try await memoryEngine(fs.powerLossImage())
        #expect(try Dump(survivor.snapshot()) == final)
    }

    @Test("stale temporary files next to a store are removed on open", arguments: Storage.allCases)
    func staleTemporaryFiles(_ storage: Storage) async throws {
        let place = Place(storage)
        defer { place.cleanup() }
        var engine = try await place.open()
        let (kv, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await engine.write { txn in try txn.insert(kv, [.int(1), .string("kept")]) }
        let expected = try Dump(engine.snapshot())
        await engine.close()

        let junk = [UInt8](repeating: 0xAB, count: 5000)
        try place.write(junk, to: place.path + ".compacting")
        try place.write(junk, to: place.path + ".creating")
        try place.write(junk, to: place.sibling("other.store.compacting"))  // another store's: not ours to remove
        engine = try await place.open()
        #expect(
            engine.recoveryReport.removedTemporaryFiles.sorted() == [
                place.path + ".compacting", place.path + ".creating",
            ])
        #expect(try place.files() == ["other.store.compacting", "test.store"])
        #expect(try Dump(engine.snapshot()) == expected)
        try await engine.compact()  // compaction works with the name free again
        #expect(try Dump(engine.snapshot()) == expected)
        await engine.close()

        // Also when there is no store yet.
        let fresh = place.sibling("fresh.store")
        try place.write(junk, to: fresh + ".compacting")
        let created = try await place.open(fresh)
        #expect(created.recoveryReport.removedTemporaryFiles == [fresh + ".compacting"])
        #expect(created.latestVersion == .zero)
        await created.close()
        #expect(try place.files() == ["fresh.store", "other.store.compacting", "test.store"])
    }

    @Test("an open refused by the lock does not delete the running compaction's file")
    func refusedOpenLeavesCompactionAlone() async throws {
        let memory = MemoryFileSystem(tracksDurability: true)
        let gate = CompactionGateFileSystem(base: memory)
        let engine = try await memoryEngine(gate)
        _ = try await Self.populate(engine, kvRows: 100)
        let before = try Dump(engine.snapshot())

        gate.pauseNextCompactionWrite()
        let compaction = Task { () async -> StorageError? in
            do throws(StorageError) {
                try await engine.compact()
                return nil
            } catch {
                return error
            }
        }
        await gate.waitUntilPaused()
        #expect(memory.fileExists("/db/test.store.compacting"))
        // Another opener of the same store is refused; it must not touch the live engine's files.
        let refused = await #expect(throws: StorageError.self) { try await memoryEngine(memory) }
        #expect(refused?.code == .alreadyOpen)
        #expect(memory.fileExists("/db/test.store.compacting"), "the refused open removed a file in use")
        gate.resume()
        let failure = await compaction.value
        #expect(failure == nil, "compaction failed: \(failure.map(String.init(describing:)) ?? "")")
        #expect(try Dump(engine.snapshot()) == before)
    }

    /// What a primary-key lookup finds, read through the index entry's own row location (the one walk
    /// `object(ofType:forPrimaryKey:)` makes), for every key of `model`; and that no other key finds a row.
    static func lookupProblems(_ store: Snapshot, _ table: TableID, _ model: [Int64: String]) throws -> [String] {
        var problems = primaryIndexLocationProblems(store.state)
        for k in Int64(0)..<1400 {
            let entry = store.state.tables.object(table, primaryKey: .int(k))
            guard let entry else {
                if model[k] != nil { problems.append("key \(k): not found") }
                continue
            }
            let row = try store.withRowBytes(at: entry.location) { (row) throws(StorageError) in
                (try row.value(at: 0, type: ColumnType(.int64)), try row.value(at: 1, type: ColumnType(.string)))
            }
            if row.0 != .int(k) || row.1 != model[k].map(Value.string) {
                problems.append("key \(k): read \(row), expected \(model[k] ?? "nothing")")
            }
        }
        return problems
    }

    @Test("primary-key lookups read the current row after updates, deletes, re-inserts, compaction and reopen")
    func primaryKeyLookupsFollowRows() async throws {
        let place = Place(.memory)
        var engine = try await place.open()
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        var model: [Int64: String] = [:]
        _ = try await engine.write { txn in
            for k in Int64(0)..<400 {
                try txn.insert(table, [.int(k), .string("v\(k)")])
                model[k] = "v\(k)"
            }
        }
        #expect(try Self.lookupProblems(engine.snapshot(), table, model).isEmpty)
        // Updates that keep the primary key move the row: the index entry must move with it, within the
        // transaction (reads of its own writes) and after the commit.
        _ = try await engine.write { txn in
            for k in stride(from: Int64(0), to: 400, by: 3) {
                let object = try #require(txn.object(table, primaryKey: .int(k)))
                try txn.update(table, object, [(1, .string("u\(k)"))])
                try txn.update(table, object, [(1, .string("w\(k)"))])
                model[k] = "w\(k)"
                let entry = try #require(txn.state.tables.object(table, primaryKey: .int(k)))
                #expect(entry.location == txn.state.rowLocation(table, object))
            }
        }
        #expect(try Self.lookupProblems(engine.snapshot(), table, model).isEmpty)
        // Deletes, inserts under new keys and a rolled-back transaction.
        _ = try await engine.write { txn in
            for k in stride(from: Int64(1), to: 400, by: 5) {
                let object = try #require(txn.object(table, primaryKey: .int(k)))
                if k % 2 == 0 {
                    try txn.delete(table, object)
                    model[k] = nil
                } else {
                    // A primary key cannot change: the object is replaced by a new one.
                    try txn.delete(table, object)
                    try txn.insert(table, [.int(k + 1000), .string("moved \(k)")])
                    model[k + 1000] = "moved \(k)"
                    model[k] = nil
                }
            }
        }
        let rolledBack = try await engine.beginWrite()
        for k in Int64(2)..<40 {
            if let object = rolledBack.object(table, primaryKey: .int(k)) {
                try rolledBack.update(table, object, [(1, .string("rolled back"))])
            }
        }
        rolledBack.rollback()
        let beforeCompaction = try Self.lookupProblems(engine.snapshot(), table, model)
        #expect(beforeCompaction.isEmpty, "\(beforeCompaction.prefix(3))")
        // Compaction moves every row; then more updates, and a reopen (the index rebuilt by replay).
        try await engine.compact()
        let afterCompaction = try Self.lookupProblems(engine.snapshot(), table, model)
        #expect(afterCompaction.isEmpty, "\(afterCompaction.prefix(3))")
        _ = try await engine.write { txn in
            for k in stride(from: Int64(0), to: 400, by: 7) {
                guard let object = txn.object(table, primaryKey: .int(k)) else { continue }
                try txn.update(table, object, [(1, .string("after \(k)"))])
                model[k] = "after \(k)"
            }
        }
        #expect(try Self.lookupProblems(engine.snapshot(), table, model).isEmpty)
        await engine.close()
        engine = try await place.open()
        let reopened = try Self.lookupProblems(engine.snapshot(), table, model)
        #expect(reopened.isEmpty, "\(reopened.prefix(3))")
        await engine.close()
    }
}

/// Forwards to a base file system, fails `syncDirectory` on demand, and records descriptors closed twice.
private final class DescriptorTrackingFileSystem: ForwardingFileSystem {
    let base: any FileSystem
    var forwardee: any FileSystem { base }
    let failDirectorySync = Locked(false)
    private let state = Locked<(open: Set<Int32>, doubleCloses: [String])>(([], []))

    init(base: any FileSystem) { self.base = base }

    var doubleCloses: [String] { state.withLock { $0.doubleCloses } }

    func open(_ path: String, create: Bool, readOnly: Bool) throws(StorageError) -> OpenFile {
        let file = try base.open(path, create: create, readOnly: readOnly)
        state.withLock { _ = $0.open.insert(file.descriptor) }
        return file
    }
    func close(_ file: OpenFile) {
        state.withLock {
            if $0.open.remove(file.descriptor) == nil { $0.doubleCloses.append("\(file.descriptor) (\(file.path))") }
        }
        base.close(file)
    }
    func syncDirectory(_ path: String) throws(StorageError) {
        if failDirectorySync.withLock({ $0 }) {
            throw StorageError(errno: 5, operation: "Syncing the directory", path: path)
        }
        try base.syncDirectory(path)
    }
    func createExclusive(_ path: String) throws(StorageError) -> OpenFile {
        let file = try base.createExclusive(path)
        state.withLock { _ = $0.open.insert(file.descriptor) }
        return file
    }
}

/// Forwards to a base file system; when asked, holds the next write to a `.compacting` file until resumed.
private final class CompactionGateFileSystem: ForwardingFileSystem {
    let base: any FileSystem
    var forwardee: any FileSystem { base }
    private let armed = Locked(false)
    private let paused = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(base: any FileSystem) { self.base = base }

    func pauseNextCompactionWrite() { armed.withLock { $0 = true } }
    func resume() { released.signal() }
    /// Returns once a compaction write is being held (the waiting happens on a Dispatch thread).
    func waitUntilPaused() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.paused.wait()
                continuation.resume()
            }
        }
    }

    func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) -> Int {
        let hold =
            file.path.hasSuffix(".compacting")
            && armed.withLock { armed in
                defer { armed = false }
                return armed
            }
        if hold {
            paused.signal()
            released.wait()
        }
        return try base.write(file, bytes, at: offset)
    }
}
