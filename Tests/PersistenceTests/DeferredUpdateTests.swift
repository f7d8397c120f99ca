import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// Updates of the row a loop is at (``WriteTransaction/deferrableRow``) wait in the transaction and reach the
/// trees a chunk at a time. Checked against a plain-Swift model and against the same script run with every
/// update applied at once: the rows, the primary keys, the index and backlinks agree at every read, the
/// record bytes are the same, and the reopened store replays to the model.
@Suite("Deferred updates")
struct DeferredUpdateTests {
    private typealias Model = [ObjectKey: [Value]]

    /// One run of the random script: loops over the rows (all, a sample, or shuffled) updating each one
    /// or two times from the location the loop has, now and then deleting it, with reads, inserts, deletes,
    /// other rows' updates and set-based updates between; each round commits or rolls back. Returns the
    /// committed model.
    private static func play(
        _ engine: StorageEngine, seed: UInt64, deferring: Bool, rounds: Int, tables: (owners: TableID, items: TableID)
    ) async throws -> Model {
        var rng = SplitMix64(seed: seed)
        let (owners, items) = tables
        let columns = PatchedUpdateTests.item.columns.count
        var committed: Model = [:]
        var nextID: Int64 = 0
        func newRow(_ rng: inout SplitMix64) -> [Value] {
            defer { nextID += 1 }
            return [.int(nextID)] + (1..<columns).map { PatchedUpdateTests.randomValue($0, &rng) }
        }
        func normalized(_ row: [Value]) throws -> [Value] {
            try row.enumerated().map { i, v in
                try RowEncoder.validate(v, for: PatchedUpdateTests.item.columns[i].type, column: "c")
            }
        }
        // Enough rows that a loop over all of them applies its updates in more than one chunk.
        let initial = try await engine.write { txn -> Model in
            var model: Model = [:]
            for _ in 0..<(WriteTransaction.updateChunk + 900) {
                let row = try normalized(newRow(&rng))
                model[try txn.insert(items, row)] = row
            }
            return model
        }.0
        committed = initial
        for round in 0..<rounds {
            let txn = try await engine.beginWrite()
            var working = committed
            // The net change the transaction must report (see `TableChanges`).
            var expected = ExpectedChanges(existing: Set(committed.keys))
            for _ in 0..<Int(rng.next() % 2 + 1) {
                var keys = working.keys.sorted()
                // Every third round, all rows (more than a chunk); otherwise a sample, ascending or not, or a
                // short run.
                switch rng.next() % 3 {
                case _ where round % 3 == 0: break
                case 0: keys = keys.filter { _ in rng.next() % 6 == 0 }
                case 1: keys = keys.filter { _ in rng.next() % 6 == 0 }.shuffled(using: &rng)
                default: keys = Array(keys.prefix(Int(rng.next() % 300)))
                }
                let loop = txn.newLoop()
                let locations = txn.rowLocations(items, keys[...])
                // The loop's locations hold until something other than its own row's update moves a row.
                var holds = true
                for (key, location) in zip(keys, locations) {
                    guard working[key] != nil else { continue }  // deleted by an operation between
                    if deferring { txn.deferrableRow = .init(table: items, key: key, loop: loop) }
                    var known = holds ? location : nil
                    for _ in 0..<(rng.next() % 4 == 0 ? 2 : 1) {
                        var given: [(column: Int, value: Value)] = []
                        for column in 1..<columns where rng.next() % 3 == 0 {
                            given.append((column, PatchedUpdateTests.randomValue(column, &rng)))
                        }
                        if given.isEmpty { given.append((3, .double(Double(rng.next() % 1000)))) }
                        known = try txn.update(items, key, given, knownLocation: known)
                        for (column, value) in given {
                            expected.modify(key, column, from: working[key]![column], to: value)
                            working[key]![column] = value
                        }
                    }
                    // Now and then the loop deletes the row it is at (the delete may wait, as the updates do).
                    if rng.next() % 7 == 0 {
                        #expect(try txn.deleteIfPresent(items, key), "round \(round): delete of \(key)")
                        working[key] = nil
                        expected.delete(key)
                        // A second delete of the same row finds nothing.
                        if rng.next() % 4 == 0 { #expect(try !txn.deleteIfPresent(items, key)) }
                    }
                    // Now and then, something between two rows of the loop.
                    switch rng.next() % 60 {
                    case 0:
                        let other = keys[Int(rng.next() % UInt64(keys.count))]
                        #expect(try txn.values(items, other) == working[other], "round \(round): read of \(other)")
                    case 1:
                        let row = try normalized(newRow(&rng))
                        let key = try txn.insert(items, row)
                        working[key] = row
                        expected.inserted.insert(key)
                        holds = false
                    case 2:
                        let other = keys[Int(rng.next() % UInt64(keys.count))]
                        if working[other] != nil {
                            try txn.delete(items, other)
                            working[other] = nil
                            expected.delete(other)
                            holds = false
                        }
                    case 3:
                        let other = keys[Int(rng.next() % UInt64(keys.count))]
                        if working[other] != nil {
                            let value = PatchedUpdateTests.randomValue(1, &rng)
                            try txn.update(items, other, [(1, value)])
                            expected.modify(other, 1, from: working[other]![1], to: value)
                            working[other]![1] = value
                            holds = false
                        }
                    case 4:
                        let chosen = keys.filter { _ in rng.next() % 9 == 0 }
                        try txn.update(items, keys: chosen, column: 3, to: .double(-1))
                        for key in chosen where working[key] != nil {
                            expected.modify(key, 3, from: working[key]![3], to: .double(-1))
                            working[key]![3] = .double(-1)
                        }
                        holds = false
                    case 5 where rng.next() % 40 == 0:
                        // A read of the index and the backlinks mid-loop sees every update so far.
                        try checkItems(txn, items, owners: owners, tags: 6, linkColumn: 4, working)
                    default: break
                    }
                }
            }
            try checkItems(txn, items, owners: owners, tags: 6, linkColumn: 4, working)
            expected.check(txn.changes, items, "round \(round)")
            if rng.next() % 5 == 0 {
                txn.rollback()
            } else {
                try await txn.commit()
                committed = working
            }
        }
        return committed
    }

    /// The net effect a transaction must report for the items table: an object inserted and deleted appears
    /// nowhere, an inserted one is only inserted, a modified then deleted one only deleted; a modified one
    /// in exactly the columns whose values changed.
    private struct ExpectedChanges {
        let existing: Set<ObjectKey>
        var inserted: Set<ObjectKey> = []
        var deleted: Set<ObjectKey> = []
        var modified: [ObjectKey: Set<Int>] = [:]

        mutating func modify(_ key: ObjectKey, _ column: Int, from old: Value, to new: Value) {
            if old != new, existing.contains(key) { modified[key, default: []].insert(column) }
        }

        mutating func delete(_ key: ObjectKey) {
            if inserted.remove(key) == nil { deleted.insert(key) }
            modified[key] = nil
        }

        func check(_ changes: ChangeSet, _ table: TableID, _ context: String) {
            let reported = changes.tables[table] ?? TableChanges()
            #expect(Set(reported.inserted) == inserted, "\(context): inserted")
            #expect(Set(reported.deleted) == deleted, "\(context): deleted")
            var modifiedReported: [ObjectKey: Set<Int>] = [:]
            for (key, columns) in reported.modified { modifiedReported[key] = Set(columns) }
            #expect(modifiedReported == modified, "\(context): modified")
            #expect(changes.tables.allSatisfy { $0.key == table || $0.value.isEmpty }, "\(context): other tables")
        }
    }

    @Test(
        "Loops of deferred updates agree with a model at every read, write the bytes immediate updates write, and replay after reopening",
        arguments: StorageKind.allCases)
    func deferredUpdatesAgreeWithAModel(_ kind: StorageKind) async throws {
        try await kind.run {
            let seed = testSeed("deferredUpdatesAgreeWithAModel")
            var files: [[UInt8]] = []
            for deferring in [true, false] {
                let fs = MemoryFileSystem()
                // No checkpoints: their nodes may be laid out differently; the records must not be.
                var engine = try await memoryEngine(fs, durability: .none, checkpoints: false)
                let tables = try await engine.write { txn in
                    let owners = try txn.createTable(PatchedUpdateTests.owner)
                    for i in 0..<5 { try txn.insert(owners, [.int(Int64(i))]) }
                    return (owners, try txn.createTable(PatchedUpdateTests.item))
                }.0
                let model = try await Self.play(
                    engine, seed: seed, deferring: deferring, rounds: TestDepth.long ? 15 : 4, tables: tables)
                try checkItems(try engine.snapshot(), tables.1, owners: tables.0, tags: 6, linkColumn: 4, model)
                #expect(primaryIndexLocationProblems(try engine.snapshot().state).isEmpty)
                files.append(try #require(fs.contents(of: "/db/test.store")))
                await engine.close()
                engine = try await memoryEngine(fs, durability: .none, checkpoints: false)
                try checkItems(try engine.snapshot(), tables.1, owners: tables.0, tags: 6, linkColumn: 4, model)
                await engine.close()
            }
            // After the file header (which names each file uniquely), byte for byte. Encrypted units carry
            // random nonces: only plain files compare.
            if kind == .plain {
                let same = files[0].dropFirst(FileHeader.size).elementsEqual(files[1].dropFirst(FileHeader.size))
                #expect(same, "deferring changed the records written")
                #expect(files[0].count > 1_000_000)
            }
        }
    }

    @Test("Rows recorded modified a run at a time keep their order with the deletes and inserts between them")
    func waitingModificationsKeepTheirOrder() async throws {
        let engine = try await memoryEngine(MemoryFileSystem(), durability: .none)
        let items = try await engine.write { txn in
            _ = try txn.createTable(PatchedUpdateTests.owner)
            let items = try txn.createTable(PatchedUpdateTests.item)
            for i in 0..<10 {
                try txn.insert(items, [.int(Int64(i)), .int(1), .null, .double(0), .null, .list([])])
            }
            return items
        }.0
        let txn = try await engine.beginWrite()
        // Same table, same column: these wait to be recorded together.
        for key in 0..<5 { try txn.update(items, ObjectKey(Int64(key)), [(3, .double(1))]) }
        try txn.delete(items, ObjectKey(2))  // modified, then deleted: only deleted
        let added = try txn.insert(items, [.int(10), .int(1), .null, .double(0), .null, .list([])])
        try txn.update(items, added, [(3, .double(1))])  // inserted, then modified: only inserted
        try txn.update(items, ObjectKey(7), [(3, .double(1))])
        try txn.update(items, ObjectKey(8), [(1, .int(3))])  // another column
        var expected = ExpectedChanges(existing: Set((0..<10).map { ObjectKey(Int64($0)) }))
        expected.inserted = [added]
        expected.deleted = [ObjectKey(2)]
        expected.modified = [
            ObjectKey(0): [3], ObjectKey(1): [3], ObjectKey(3): [3], ObjectKey(4): [3], ObjectKey(7): [3],
            ObjectKey(8): [1],
        ]
        expected.check(txn.changes, items, "one transaction")
        let result = try await txn.commit()
        expected.check(result.changes, items, "committed")
        await engine.close()
    }

    @Test("A failed transaction's waiting updates are dropped with it; a rollback leaves the store as it was")
    func rollbackDropsWaitingUpdates() async throws {
        let fs = MemoryFileSystem()
        let engine = try await memoryEngine(fs, durability: .none)
        let (owners, items) = try await engine.write { txn in
            let owners = try txn.createTable(PatchedUpdateTests.owner)
            for i in 0..<5 { try txn.insert(owners, [.int(Int64(i))]) }
            let items = try txn.createTable(PatchedUpdateTests.item)
            for i in 0..<50 {
                try txn.insert(items, [.int(Int64(i)), .int(1), .null, .double(0), .null, .list([])])
            }
            return (owners, items)
        }.0
        let before = try engine.snapshot().contents("Item")
        let txn = try await engine.beginWrite()
        let loop = txn.newLoop()
        for key in before.keys.sorted() {
            txn.deferrableRow = .init(table: items, key: key, loop: loop)
            try txn.update(items, key, [(1, .int(2)), (3, .double(9))], knownLocation: nil)
        }
        txn.rollback()
        try checkItems(try engine.snapshot(), items, owners: owners, tags: 6, linkColumn: 4, before)
        await engine.close()
    }
}
