import ActorStoreTestSupport
import Dispatch
import Foundation
import Testing

@testable import ActorStorePersistence

private typealias IntTree = PersistentBTree<Int64, Int64>
private typealias KeyTree = PersistentBTree<IndexKey, PrimaryKeyEntry>

/// A growable fake file: the bytes checkpoints append, mapped as a region the node store reads. (Also used by
/// `BulkRemoveTests`.)
final class FakeFile {
    var bytes = [UInt8](repeating: 0, count: FileHeader.size)
    /// The store of the last ``store()`` call: its nodes are in the file.
    var current: NodeStore?

    /// The nodes the last ``write(_:)`` wrote, by identity.
    var written: [ObjectIdentifier: WrittenNode] = [:]

    /// Appends the tree's unwritten nodes; returns the root's offset and the size of the tree's nodes.
    func write<K: NodeCodable, V: NodeCodable>(_ tree: PersistentBTree<K, V>) -> (offset: UInt64, bytes: UInt64)? {
        var out = ByteWriter(capacity: 1 << 16)
        written = [:]
        let base = UInt64(bytes.count)
        let root = try! tree.writeNodes(to: &out, store: current ?? store(), written: &written)
        bytes.append(contentsOf: out.bytes)
        for (node, placed) in written { written[node]?.offset = base + placed.offset }
        return root.map { root in
            let reference = root.reference
            let offset =
                reference & BTreeNodeFormat.relative != 0 ? base + (reference & ~BTreeNodeFormat.relative) : reference
            return (offset, root.bytes)
        }
    }

    /// A store over a copy of the bytes written so far (a region that stays valid while referenced).
    func store() -> NodeStore {
        let store = makeStore()
        current = store
        return store
    }

    private func makeStore() -> NodeStore {
        let length = bytes.count
        let memory = UnsafeMutableRawPointer.allocate(byteCount: max(length, 1), alignment: 16)
        bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: length) }
        let address = UInt(bitPattern: memory)
        let region = MappedRegion(base: UnsafeRawPointer(memory), length: length) {
            UnsafeMutableRawPointer(bitPattern: address)?.deallocate()
        }
        return NodeStore(region: region, end: UInt64(length), path: "/fake")
    }
}

@Suite("B+tree nodes in the file: written by checkpoints, loaded on first use")
struct BTreeStorageTests {
    @Test("a tree written to the file and read back lazily equals the original; changes copy loaded nodes")
    func roundTripAndMutation() throws {
        var random = SplitMix64(seed: testSeed("btree-storage"))
        var tree = IntTree()
        var model: [Int64: Int64] = [:]
        let token = MutationToken.next()
        for _ in 0..<20_000 {
            let key = Int64.random(in: 0..<100_000, using: &random)
            let value = Int64.random(in: .min ... .max, using: &random)
            tree.updateValue(value, forKey: key, token: token)
            model[key] = value
        }
        let file = FakeFile()
        let root = try #require(file.write(tree))
        let loaded = IntTree(
            fileRoot: root.offset, count: tree.count, bytes: root.bytes, store: file.store(),
            decoder: IntTree.makeDecoder())
        #expect(treeDifference(loaded, model) == nil)

        // Changes copy the loaded nodes they touch; the stub-rooted tree keeps its version.
        var changed = loaded
        var changedModel = model
        let next = MutationToken.next()
        for step in 0..<3_000 {
            // Mostly in the first tenth of the keys, so that most nodes stay as they were.
            let key = Int64.random(in: 0..<(step % 50 == 0 ? 100_000 : 10_000), using: &random)
            if step % 3 == 0 {
                changed.removeValue(forKey: key, token: next)
                changedModel[key] = nil
            } else {
                changed.updateValue(Int64(step), forKey: key, token: next)
                changedModel[key] = Int64(step)
            }
        }
        #expect(treeDifference(changed, changedModel) == nil)
        #expect(treeDifference(loaded, model) == nil)

        // A second checkpoint writes only the nodes that changed, and reads back equal.
        let before = file.bytes.count
        let secondRoot = try #require(file.write(changed))
        let secondStore = file.store()
        let reloaded = IntTree(
            fileRoot: secondRoot.offset, count: changed.count, bytes: secondRoot.bytes, store: secondStore,
            decoder: IntTree.makeDecoder())
        #expect(treeDifference(reloaded, changedModel) == nil)
        #expect(file.bytes.count - before < before / 2, "the second checkpoint rewrote most nodes")

        // Dropping loaded nodes keeps the contents.
        #expect(treeDifference(reloaded.unloaded(), changedModel) == nil)
        #expect(secondStore.damage == nil)

        // The changed tree, its written nodes replaced by stubs of the new store, then changed further: the
        // same entries as the model (the written nodes are read from the file).
        var rebased = changed.rebased(onto: file.written, store: secondStore, decoder: IntTree.makeDecoder())
        #expect(treeDifference(rebased, changedModel) == nil)
        let third = MutationToken.next()
        for key in Int64(0)..<200 {
            rebased.updateValue(-key, forKey: key, token: third)
            changedModel[key] = -key
        }
        #expect(treeDifference(rebased, changedModel) == nil)
        #expect(secondStore.damage == nil)
    }

    @Test("variable-length keys (strings, UUIDs, nulls) round-trip")
    func variableLengthKeys() throws {
        var tree = KeyTree()
        var expected: [(IndexKey, PrimaryKeyEntry)] = []
        let token = MutationToken.next()
        for i in 0..<5_000 {
            let key: IndexKey =
                switch i % 4 {
                case 0: .string("name \(i) " + String(repeating: "é", count: i % 40))
                case 1: .uuid(UInt64(i), UInt64(i) * 7)
                case 2: .double(Double(i) / 3)
                default: .objectId(UInt64(i), UInt32(i))
                }
            let entry = PrimaryKeyEntry(
                object: ObjectKey(Int64(i)), location: RowLocation(offset: UInt64(i), length: 9))
            tree.updateValue(entry, forKey: key, token: token)
            expected.append((key, entry))
        }
        tree.updateValue(
            PrimaryKeyEntry(object: ObjectKey(-1), location: RowLocation(offset: 1, length: 1)), forKey: .null,
            token: token)
        let file = FakeFile()
        let root = try #require(file.write(tree))
        let loaded = KeyTree(
            fileRoot: root.offset, count: tree.count, bytes: root.bytes, store: file.store(),
            decoder: KeyTree.makeDecoder())
        loaded.checkInvariants()
        #expect(loaded.count == tree.count)
        #expect(Array(loaded.map(\.key)) == Array(tree.map(\.key)))
        for (key, entry) in expected { #expect(loaded.value(forKey: key) == entry) }
        #expect(loaded.value(forKey: .null)?.object == ObjectKey(-1))
    }

    @Test("a damaged node is found when it is loaded: recorded with its offset, never a trap")
    func damagedNode() throws {
        var tree = IntTree()
        let token = MutationToken.next()
        for key in 0..<Int64(10_000) { tree.updateValue(key * 2, forKey: key, token: token) }
        let file = FakeFile()
        let root = try #require(file.write(tree))
        // Damage a byte in the middle of the first leaf (the first node written).
        file.bytes[FileHeader.size + BTreeNodeFormat.headerSize + 40] ^= 0x10
        let store = file.store()
        let loaded = IntTree(
            fileRoot: root.offset, count: tree.count, bytes: root.bytes, store: store, decoder: IntTree.makeDecoder())
        #expect(loaded.value(forKey: 9_999) == 19_998)
        #expect(store.damage == nil)
        _ = loaded.value(forKey: 1)
        let damage = try #require(store.damage)
        #expect(damage.code == .corrupted)
        #expect(damage.offset == FileOffset(UInt64(FileHeader.size)))
    }

    @Test("a crafted node whose counts disagree with its parent, or whose child lies after it, is damaged")
    func craftedNodes() throws {
        var tree = IntTree()
        let token = MutationToken.next()
        for key in 0..<Int64(1_000) { tree.updateValue(key, forKey: key, token: token) }
        let file = FakeFile()
        let root = try #require(file.write(tree))
        // The tree claims one entry more than its nodes hold.
        let store = file.store()
        let wrongCount = IntTree(
            fileRoot: root.offset, count: tree.count + 1, bytes: root.bytes, store: store,
            decoder: IntTree.makeDecoder())
        _ = wrongCount.value(forKey: 5)
        #expect(store.damage?.code == .corrupted)
        // A root offset past the end of the file.
        let outside = file.store()
        let pastEnd = IntTree(
            fileRoot: UInt64(file.bytes.count + 100), count: 3, bytes: 100, store: outside,
            decoder: IntTree.makeDecoder())
        _ = pastEnd.first
        #expect(outside.damage?.code == .corrupted)
    }

    @Test("many threads loading the same nodes at once all read the same entries")
    func concurrentLoads() throws {
        var tree = IntTree()
        let token = MutationToken.next()
        for key in 0..<Int64(50_000) { tree.updateValue(key &* 3, forKey: key, token: token) }
        let file = FakeFile()
        let root = try #require(file.write(tree))
        let store = file.store()
        let loaded = IntTree(
            fileRoot: root.offset, count: tree.count, bytes: root.bytes, store: store, decoder: IntTree.makeDecoder())
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var random = SplitMix64(seed: UInt64(worker))
            var wrong = 0
            for _ in 0..<5_000 {
                let key = Int64.random(in: 0..<50_000, using: &random)
                if loaded.value(forKey: key) != key &* 3 { wrong += 1 }
            }
            failures.withLock { $0 += wrong }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(store.loadStatistics.nodes <= tree.count / 32, "nodes were loaded again and again")
    }
}
