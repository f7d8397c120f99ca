import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

/// The primary-key index keeps integer keys, the null key and every other key in separate parts; it must
/// behave exactly as one ordered map of ``IndexKey``s.
@Suite("Primary-key index")
struct PrimaryIndexTests {
    /// A key of a random kind from a small domain (so keys repeat), including the integer extremes.
    static func randomKey(_ rng: inout SplitMix64) -> IndexKey {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: return .null
        case 1..<5:
            let extremes: [Int64] = [.min, .min + 1, -1, 0, 1, .max - 1, .max]
            return Bool.random(using: &rng)
                ? .int(extremes.randomElement(using: &rng)!) : .int(Int64.random(in: -300...300, using: &rng))
        case 5: return .double(Double(Int.random(in: -20...20, using: &rng)) / 4)
        case 6, 7: return .string(String(repeating: "k", count: Int.random(in: 0...30, using: &rng)))
        case 8: return .uuid(UInt64.random(in: 0...3, using: &rng), UInt64.random(in: 0...3, using: &rng))
        default: return .objectId(UInt64.random(in: 0...3, using: &rng), UInt32.random(in: 0...3, using: &rng))
        }
    }

    static func entry(_ n: Int64) -> PrimaryKeyEntry {
        PrimaryKeyEntry(object: ObjectKey(n), location: RowLocation(offset: UInt64(n) &* 16, length: UInt32(n & 0xFFF)))
    }

    /// The entries of `index` that `forEach(from:inclusive:)` visits, all of them (the visitor never stops).
    static func visited(_ index: PrimaryIndex, from: IndexKey?, inclusive: Bool) -> [IndexKey] {
        var keys: [IndexKey] = []
        index.forEach(from: from, inclusive: inclusive) { key, _ in
            keys.append(key)
            return true
        }
        return keys
    }

    @Test("random updates and removals of mixed keys agree with a sorted dictionary")
    func agreesWithModel() throws {
        let seed = testSeed("primary index")
        var rng = SplitMix64(seed: seed)
        var index = PrimaryIndex()
        var model: [IndexKey: PrimaryKeyEntry] = [:]
        var token = MutationToken.next()
        var held: [(PrimaryIndex, [IndexKey: PrimaryKeyEntry])] = []
        for step in 0..<6_000 {
            let key = Self.randomKey(&rng)
            if Int.random(in: 0..<3, using: &rng) == 0 {
                #expect(index.removeValue(forKey: key, token: token) == model.removeValue(forKey: key), "step \(step)")
            } else {
                let entry = Self.entry(Int64(step))
                #expect(index.updateValue(entry, forKey: key, token: token) == model[key], "step \(step)")
                model[key] = entry
            }
            #expect(index.count == model.count)
            if step % 500 == 0 {
                // A value shared before the next mutations (under a new token) must keep its contents.
                held.append((index, model))
                token = MutationToken.next()
            }
        }
        #expect(index.isEmpty == model.isEmpty)
        let sorted = model.keys.sorted()
        #expect(Self.visited(index, from: nil, inclusive: true) == sorted)
        for key in sorted { #expect(index.value(forKey: key) == model[key]) }
        // Lower bounds of every kind, present or not, inclusive and exclusive.
        var bounds: [IndexKey] = [.null, .int(.min), .int(.max), .int(0), .double(-.infinity), .string("")]
        for _ in 0..<200 { bounds.append(Self.randomKey(&rng)) }
        for bound in bounds {
            #expect(Self.visited(index, from: bound, inclusive: true) == sorted.filter { $0 >= bound }, "\(bound)")
            #expect(Self.visited(index, from: bound, inclusive: false) == sorted.filter { $0 > bound }, "\(bound)")
        }
        // Stopping early stops across the parts too.
        for limit in [1, 2, 5, sorted.count] where limit <= sorted.count {
            var seen: [IndexKey] = []
            index.forEach(from: nil, inclusive: true) { key, _ in
                seen.append(key)
                return seen.count < limit
            }
            #expect(seen == Array(sorted.prefix(limit)))
        }
        for (value, expected) in held {
            #expect(Self.visited(value, from: nil, inclusive: true) == expected.keys.sorted())
            for (key, entry) in expected { #expect(value.value(forKey: key) == entry) }
        }
        // Relocating keeps keys and objects and replaces every location.
        let relocated = try index.relocated(token: MutationToken.next()) { (entry) throws(StorageError) in
            RowLocation(offset: UInt64(entry.object.rawValue) + 7, length: 3)
        }
        #expect(Self.visited(relocated, from: nil, inclusive: true) == sorted)
        for key in sorted {
            let object = try #require(model[key]).object
            #expect(
                relocated.value(forKey: key)
                    == PrimaryKeyEntry(
                        object: object, location: RowLocation(offset: UInt64(object.rawValue) + 7, length: 3)))
        }
        #expect(throws: StorageError.self) {
            _ = try index.relocated(token: MutationToken.next()) { (_) throws(StorageError) in
                throw StorageError(.corrupted, "test")
            }
        }
    }

    @Test("sortedUnique: ascending as given, descending reversed, anything else sorted without duplicates")
    func sortedUnique() {
        #expect(PrimaryIndex.sortedUnique([Int64]()) == [])
        #expect(PrimaryIndex.sortedUnique([Int64(7)]) == [7])
        #expect(PrimaryIndex.sortedUnique([1, 2, 5] as [Int64]) == [1, 2, 5])
        #expect(PrimaryIndex.sortedUnique([5, 2, 1] as [Int64]) == [1, 2, 5])
        #expect(PrimaryIndex.sortedUnique([5, 2, 2, 1] as [Int64]) == [1, 2, 5])
        #expect(PrimaryIndex.sortedUnique([2, 5, 1, 5, 2] as [Int64]) == [1, 2, 5])
        var rng = SplitMix64(seed: 11)
        for _ in 0..<200 {
            let keys = (0..<Int.random(in: 0..<40, using: &rng)).map { _ in Int64.random(in: -20...20, using: &rng) }
            #expect(PrimaryIndex.sortedUnique(keys) == Array(Set(keys)).sorted())
            let descending = Array(Set(keys)).sorted(by: >)
            #expect(PrimaryIndex.sortedUnique(descending) == descending.reversed())
        }
    }

    @Test("compaction's relocation finds every object: in order, dense, sparse and out of order; a missing one throws")
    func compactionRelocation() throws {
        var rng = SplitMix64(seed: testSeed("relocation"))
        // Sparse keys (every third deleted), with a dense run at the start.
        let keys = (0..<50).map { Int64($0) } + stride(from: Int64(50), to: 3_000, by: 3).map { $0 }
        let rows = keys.map { (ObjectKey($0), RowLocation(offset: UInt64($0) * 10 + 1, length: UInt32($0 % 97))) }
        var index = PrimaryIndex()
        let token = MutationToken.next()
        // Primary keys in key order for some objects, shuffled for the others, and string keys.
        var shuffled = keys.shuffled(using: &rng)
        for (i, key) in keys.enumerated() {
            let primaryKey: IndexKey
            switch i % 3 {
            case 0: primaryKey = .int(key)
            case 1: primaryKey = .int(-shuffled.removeLast() - 10_000)
            default: primaryKey = .string("s\(Int.random(in: 0..<1_000_000, using: &rng))-\(key)")
            }
            index.updateValue(
                PrimaryKeyEntry(object: ObjectKey(key), location: RowLocation(offset: 0, length: 0)),
                forKey: primaryKey,
                token: token)
        }
        let relocated = try CompactedFile.relocated(index, rows, token: MutationToken.next())
        var checked = 0
        relocated.forEach(from: nil, inclusive: true) { _, entry in
            let raw = entry.object.rawValue
            #expect(entry.location == RowLocation(offset: UInt64(raw) * 10 + 1, length: UInt32(raw % 97)))
            checked += 1
            return true
        }
        #expect(checked == keys.count)
        // An entry whose object has no row: the file is inconsistent, which compaction reports.
        index.updateValue(
            PrimaryKeyEntry(object: ObjectKey(52), location: RowLocation(offset: 0, length: 0)), forKey: .int(-1),
            token: token)
        #expect(throws: StorageError.self) { _ = try CompactedFile.relocated(index, rows, token: MutationToken.next()) }
    }
}
