import Foundation
import Testing

@testable import ActorStorePersistence

/// A long scan of a held snapshot keeps about one path of index nodes, not the whole tree (issue 21's
/// bounded export), and drops the file's pages it passed. Structural: nodes held in memory and the page
/// ranges dropped are counted; nothing is timed.
@Suite("scans of a held snapshot stay within their share of memory")
struct ScanMemoryTests {
    /// A store of `rows` small rows, checkpointed (closed), reopened with `nodeCacheLimit`.
    private static func reopened(rows: Int, nodeCacheLimit: Int) async throws -> (StorageEngine, TableID) {
        let fs = MemoryFileSystem()
        var configuration = StorageEngine.Configuration(
            path: "/db/scan.store", fileSystem: fs, durability: .none, autoCompaction: nil)
        let writer = try await StorageEngine.open(configuration)
        let (table, _) = try await writer.write { txn in try txn.createTable(Fixtures.kv) }
        _ = try await writer.write { txn in
            for i in 0..<rows { try txn.insert(table, [.int(Int64(i)), .string("value \(i)")]) }
        }
        await writer.close()
        configuration.nodeCacheLimit = nodeCacheLimit
        return (try await StorageEngine.open(configuration), table)
    }

    @Test("past the scans' share of the node cache, a held snapshot's scan publishes no more nodes")
    func scanKeepsItsShare() async throws {
        let rows = 20_000
        // 64 KiB of cache: scans may keep 8 KiB of it, a few leaves of the ~160 the rows take.
        let (engine, table) = try await Self.reopened(rows: rows, nodeCacheLimit: 64 << 10)
        let held = try engine.snapshot()
        let loadsBefore = engine.statistics.nodesLoaded
        #expect(held.keys(table).nodesInMemory == 0)
        var cursor = held.state.rowCursor(table, releasingPagesOf: held.region)
        var seen = 0
        var previous: ObjectKey?
        while let row = cursor.next() {
            #expect(previous.map { $0 < row.key } ?? true)
            // The row's bytes, by its location (a point read by key would publish its path).
            let value = try held.withRowBytes(at: row.location) { (view) throws(StorageError) in
                try view.value(at: 1, type: ColumnType(.string))
            }
            #expect(value == .string("value \(seen)"))
            previous = row.key
            seen += 1
        }
        #expect(seen == rows)
        let leaves = rows / BTreeLayout.fanout
        // The scan read every leaf from the file...
        #expect(engine.statistics.nodesLoaded - loadsBefore >= leaves)
        // ...and the held version keeps only what fitted in the share: a handful of nodes, and the cache's
        // count stays under the share plus one node.
        let kept = held.keys(table).nodesInMemory
        #expect(kept <= 8, "the held snapshot keeps \(kept) nodes of the rows tree")
        #expect(engine.statistics.nodeCacheBytes <= (64 << 10) / 8 + 20 << 10)

        // A second scan, forEach and point reads of the same held version read the same rows.
        var again = 0
        for (key, _) in held.keys(table) {
            #expect(key == ObjectKey(Int64(again)))
            again += 1
        }
        #expect(again == rows)
        var visited = 0
        held.keys(table).forEach(from: ObjectKey(Int64(rows / 2)), inclusive: true) { _, _ in
            visited += 1
            return true
        }
        #expect(visited == rows - rows / 2)
        #expect(try held.value(table, ObjectKey(Int64(rows - 1)), column: 1) == .string("value \(rows - 1)"))
        #expect(held.object(table, primaryKey: .int(12_345)) == ObjectKey(12_345))
        #expect(held.keys(table).nodesInMemory <= kept + 3, "point reads publish their path only")
        await engine.close()
    }

    @Test("under the share (the default cache), a scan keeps what it loads for the next reader")
    func scanUnderTheShareCaches() async throws {
        let rows = 20_000
        let (engine, table) = try await Self.reopened(rows: rows, nodeCacheLimit: 64 << 20)
        let held = try engine.snapshot()
        var seen = 0
        for _ in held.keys(table) { seen += 1 }
        #expect(seen == rows)
        // Every leaf and the internal nodes above them: the control for the bound above.
        #expect(held.keys(table).nodesInMemory >= rows / BTreeLayout.fanout)
        let loads = engine.statistics.nodesLoaded
        for _ in held.keys(table) {}
        #expect(engine.statistics.nodesLoaded == loads, "a second scan loads nothing")
        await engine.close()
    }

    @Test("scans on several threads and point reads of one held version while it is scanned read the same rows")
    func concurrentScansStayCorrect() async throws {
        let rows = 20_000
        let (engine, table) = try await Self.reopened(rows: rows, nodeCacheLimit: 64 << 10)
        let held = try engine.snapshot()
        let results = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    if worker == 3 {
                        var found = 0
                        for i in stride(from: 0, to: rows, by: 7)
                        where (try? held.value(table, ObjectKey(Int64(i)), column: 1)) == .string("value \(i)") {
                            found += 1
                        }
                        return found == (rows + 6) / 7 ? rows : -1
                    }
                    var count = 0
                    for (key, _) in held.keys(table) where key == ObjectKey(Int64(count)) { count += 1 }
                    return count
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == [rows, rows, rows, rows])
        await engine.close()
    }

    @Test("leaves a scan loads for itself are not kept, and give their pages of the file back in file order")
    func scanDropsLeafPages() throws {
        typealias Tree = PersistentBTree<Int64, Int64>
        // About 6 MiB of leaves: more than one PageWindow.
        let count = 400_000
        let tree = Tree(
            sortedUniqueElements: (0..<count).lazy.map { (Int64($0), Int64($0) &* 3) }, token: MutationToken.next())
        let header = FileHeader.size
        let empty = MappedRegion(base: UnsafeRawPointer(bitPattern: 16)!, length: 0) {}
        var out = ByteWriter(capacity: 1 << 20)
        var written: [ObjectIdentifier: WrittenNode] = [:]
        let root = try #require(
            try tree.writeNodes(to: &out, store: NodeStore(region: empty, end: 0, path: "/none"), written: &written))
        let bytes = [UInt8](repeating: 0, count: header) + out.bytes
        let memory = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 16)
        defer { memory.deallocate() }
        bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        let drops = Drops()
        let region = MappedRegion(
            base: UnsafeRawPointer(memory), length: bytes.count, dropPages: { drops.add($0..<($0 + $1)) }
        ) {}
        // No cache: every node a scan loads is its own.
        let store = NodeStore(region: region, end: UInt64(bytes.count), path: "/scan", cacheLimit: 0)
        let offset = UInt64(header) + (root.reference & ~BTreeNodeFormat.relative)
        let stored = Tree(fileRoot: offset, count: count, bytes: root.bytes, store: store, decoder: Tree.makeDecoder())

        var next: Int64 = 0
        for (key, value) in stored {
            #expect(key == next && value == next &* 3)
            next += 1
        }
        #expect(next == Int64(count))
        #expect(stored.nodesInMemory == 0, "the scan published nothing")
        #expect(store.cachedBytes == 0)
        let ranges = drops.ranges
        #expect(ranges.allSatisfy { $0.lowerBound % 4_096 == 0 && $0.upperBound % 4_096 == 0 })
        #expect(ranges.allSatisfy { $0.lowerBound >= header && $0.upperBound <= bytes.count })
        let dropped = ranges.reduce(0) { $0 + $1.count }
        #expect(dropped >= bytes.count - header - Int(PageWindow.span) - 16_384, "\(dropped) of \(bytes.count)")

        // Point reads still publish their path, and read what was stored.
        let value: Int64? = stored.value(forKey: 123_456)
        #expect(value == Optional(Int64(370_368)), "\(String(describing: value))")
        #expect(stored.nodesInMemory >= 2)
    }

    @Test("a cursor given its region drops the pages of the rows it passed, in file order, never the last two rows")
    func cursorDropsPassedPages() throws {
        // Rows of 1 KiB one after the other over 20 MiB, from a file offset that is not page-aligned.
        let count = 20 << 10
        let start: UInt64 = 4_096 * 3 + 100
        let rows = PersistentBTree<ObjectKey, RowLocation>(
            sortedUniqueElements: (0..<count).map {
                (ObjectKey(Int64($0)), RowLocation(offset: start + UInt64($0) * 1_024, length: 1_000))
            },
            token: MutationToken.next())
        let drops = Drops()
        let length = Int(start) + count * 1_024 + 4_096
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 16)
        defer { memory.deallocate() }
        let region = MappedRegion(
            base: UnsafeRawPointer(memory), length: length, dropPages: { drops.add($0..<($0 + $1)) }
        ) {}
        var cursor = RowCursor(rows, releasingPagesOf: region)
        var handed: [RowLocation] = []
        while let row = cursor.next() {
            handed.append(row.location)
            // Nothing dropped reaches the row just handed out or the one before it.
            let keep = handed.suffix(2).map { Int($0.offset)..<Int($0.offset) + Int($0.length) }
            for range in drops.ranges {
                #expect(!keep.contains { $0.overlaps(range) }, "dropped \(range) while \(keep) may be read")
            }
        }
        #expect(handed.count == count)
        let ranges = drops.ranges
        #expect(ranges.allSatisfy { $0.lowerBound % 4_096 == 0 && $0.upperBound % 4_096 == 0 })
        #expect(ranges.allSatisfy { $0.lowerBound >= Int(start) }, "nothing before the first row")
        // In windows of about PageWindow.span, covering all but the last window of the rows.
        let dropped = ranges.reduce(0) { $0 + $1.count }
        #expect(dropped >= count * 1_024 - Int(PageWindow.span) - 8_192, "\(dropped) bytes dropped")
        #expect(ranges.count <= count * 1_024 / Int(PageWindow.span))

        // Rows out of file order (ascending runs far apart): nothing is dropped.
        let shuffled = PersistentBTree<ObjectKey, RowLocation>(
            sortedUniqueElements: (0..<count).map {
                (ObjectKey(Int64($0)), RowLocation(offset: start + UInt64(($0 * 7_919) % count) * 1_024, length: 1_000))
            },
            token: MutationToken.next())
        let before = drops.ranges.count
        var scattered = RowCursor(shuffled, releasingPagesOf: region)
        while scattered.next() != nil {}
        #expect(drops.ranges.count == before)
    }
}

/// The ranges a test region was told to drop.
private final class Drops: Sendable {
    private let recorded = Locked<[Range<Int>]>([])
    func add(_ range: Range<Int>) { recorded.withLock { $0.append(range) } }
    var ranges: [Range<Int>] { recorded.withLock { $0 } }
}
