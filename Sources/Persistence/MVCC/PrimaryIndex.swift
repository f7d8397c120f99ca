/// A table's primary-key index: primary-key value → ``PrimaryKeyEntry`` (the object and its row's location).
///
/// Split by the key's case, so that the common integer primary key gets a tree of plain `Int64` keys:
/// - `.int` keys (every integer primary key, of any width) are in a tree keyed by `Int64`;
/// - every other key (an optional primary key's `.null`, strings, dates, UUIDs, object ids) is in a tree
///   keyed by ``IndexKey``.
///
/// Why not one `IndexKey` tree: an `IndexKey` is 17 bytes (24 with padding; its string and UUID payloads
/// are 16), so an integer key took three times the room of an `Int64`. A random lookup among a million
/// objects misses the cache at every level below the top, and the smaller nodes of the `Int64` tree (a
/// leaf's keys are 8 cache lines instead of 25) keep more of its inner levels in cache and touch fewer
/// lines per node; comparisons are plain integer ones.
///
/// The split is by the key, not the column's type, so any mixture of keys is indexed correctly, whatever
/// the schema says. Key order is ``IndexKey``'s: null, then integers, then the others, which is the order
/// of ``forEach(from:inclusive:_:)``.
package struct PrimaryIndex: Sendable {
    /// The entries of `.int` keys.
    var integers: PersistentBTree<Int64, PrimaryKeyEntry>
    /// The entries of every other kind of key (never `.int`).
    var others: PersistentBTree<IndexKey, PrimaryKeyEntry>

    /// An empty index. Allocates nothing.
    package init() {
        integers = PersistentBTree()
        others = PersistentBTree()
    }

    /// The number of entries. O(1).
    package var count: Int { integers.count &+ others.count }

    /// Whether there are no entries. O(1).
    package var isEmpty: Bool { count == 0 }

    /// The entry for `key`, or nil.
    ///
    /// - Complexity: O(log n); no allocation, no reference counting.
    @inline(__always)
    package func value(forKey key: IndexKey) -> PrimaryKeyEntry? {
        if case .int(let value) = key { return integers.value(forKey: value) }
        return others.value(forKey: key)
    }

    /// Sets the entry for `key`; returns the one it replaced, if any.
    ///
    /// - Complexity: O(log n), plus the path copying of ``PersistentBTree/updateValue(_:forKey:token:)``.
    @discardableResult
    package mutating func updateValue(
        _ entry: PrimaryKeyEntry, forKey key: IndexKey, token: MutationToken
    ) -> PrimaryKeyEntry? {
        if case .int(let value) = key { return integers.updateValue(entry, forKey: value, token: token) }
        return others.updateValue(entry, forKey: key, token: token)
    }

    /// Replaces the entries of keys already in the index, in one pass per tree (see
    /// ``PersistentBTree/replaceExistingValues(_:token:)``): `entries` sorted by key, strictly ascending.
    /// Keys not in the index are set one by one, so every key ends up with its entry.
    package mutating func replaceEntries(_ entries: [(key: IndexKey, value: PrimaryKeyEntry)], token: MutationToken) {
        var integerEntries: [(key: Int64, value: PrimaryKeyEntry)] = []
        var otherEntries: [(key: IndexKey, value: PrimaryKeyEntry)] = []
        integerEntries.reserveCapacity(entries.count)
        for entry in entries {
            if case .int(let value) = entry.key {
                integerEntries.append((value, entry.value))
            } else {
                otherEntries.append(entry)
            }
        }
        for (i, old) in integers.replaceExistingValues(integerEntries, token: token).enumerated() where old == nil {
            integers.updateValue(integerEntries[i].value, forKey: integerEntries[i].key, token: token)
        }
        for (i, old) in others.replaceExistingValues(otherEntries, token: token).enumerated() where old == nil {
            others.updateValue(otherEntries[i].value, forKey: otherEntries[i].key, token: token)
        }
    }

    /// Whether `key` is above every key of its tree (integers or the others): then a run of such keys,
    /// ascending, can be added by ``append(integerKeys:otherKeys:of:token:)``. Never true of a key the index holds.
    ///
    /// - Complexity: O(log n).
    package func isAboveItsTree(_ key: IndexKey) -> Bool {
        if case .int(let value) = key { return integers.last.map { $0.key < value } ?? true }
        return others.last.map { $0.key < key } ?? true
    }

    /// Adds the entries of `rows` (each row's object and location) under `integerKeys` or, if that is
    /// empty, `otherKeys` (the other is empty; the one used has one key per row), strictly ascending and each
    /// above every key of its tree (see ``isAboveItsTree(_:)``), at the tree's right edge in one pass (see
    /// ``PersistentBTree/append(sortedElements:token:)``).
    package mutating func append(
        integerKeys: [Int64], otherKeys: [IndexKey], of rows: [(key: ObjectKey, value: RowLocation)],
        token: MutationToken
    ) {
        if !integerKeys.isEmpty {
            precondition(integerKeys.count == rows.count && otherKeys.isEmpty, "one primary key per row")
            integers.append(
                sortedElements: zip(integerKeys, rows).lazy.map { key, row -> (key: Int64, value: PrimaryKeyEntry) in
                    (key, PrimaryKeyEntry(object: row.key, location: row.value))
                }, token: token)
        } else if !otherKeys.isEmpty {
            precondition(otherKeys.count == rows.count, "one primary key per row")
            others.append(
                sortedElements: zip(otherKeys, rows).lazy.map { key, row -> (key: IndexKey, value: PrimaryKeyEntry) in
                    (key, PrimaryKeyEntry(object: row.key, location: row.value))
                }, token: token)
        }
    }

    /// Removes the entry for `key`; returns it, or nil if there was none.
    @discardableResult
    package mutating func removeValue(forKey key: IndexKey, token: MutationToken) -> PrimaryKeyEntry? {
        if case .int(let value) = key { return integers.removeValue(forKey: value, token: token) }
        return others.removeValue(forKey: key, token: token)
    }

    /// ``removeValue(forKey:token:)`` for a key known to be there (the key of a row being deleted): one walk
    /// instead of two (see ``PersistentBTree/removeExistingValue(forKey:token:)``).
    @discardableResult
    package mutating func removeExistingValue(forKey key: IndexKey, token: MutationToken) -> PrimaryKeyEntry? {
        if case .int(let value) = key { return integers.removeExistingValue(forKey: value, token: token) }
        return others.removeExistingValue(forKey: key, token: token)
    }

    /// Removes the entries of `keys` in one pass per tree (see ``PersistentBTree/removeValues(sortedKeys:token:)``);
    /// keys it does not hold are skipped. `keys` need not be sorted (integer primary keys usually ascend with
    /// the object keys, so they are sorted only when they do not); duplicates are removed once.
    /// - Returns: the number of entries removed.
    @discardableResult
    package mutating func removeValues(forKeys keys: [IndexKey], token: MutationToken) -> Int {
        var integerKeys: [Int64] = []
        var otherKeys: [IndexKey] = []
        integerKeys.reserveCapacity(keys.count)
        for key in keys {
            if case .int(let value) = key { integerKeys.append(value) } else { otherKeys.append(key) }
        }
        return integers.removeValues(sortedKeys: Self.sortedUnique(integerKeys), token: token)
            &+ others.removeValues(sortedKeys: Self.sortedUnique(otherKeys), token: token)
    }

    /// `keys` sorted, strictly ascending; as given when they already are, reversed when strictly descending.
    static func sortedUnique<K: Comparable>(_ keys: [K]) -> [K] {
        if zip(keys, keys.dropFirst()).allSatisfy({ $0 < $1 }) { return keys }
        // Descending (what a batch of deletes collects, largest key first): reversed, not sorted.
        if zip(keys, keys.dropFirst()).allSatisfy({ $0 > $1 }) { return Array(keys.reversed()) }
        var sorted = keys.sorted()
        var write = 0
        for read in sorted.indices where write == 0 || sorted[write - 1] < sorted[read] {
            sorted[write] = sorted[read]
            write += 1
        }
        sorted.removeLast(sorted.count - write)
        return sorted
    }

    /// Calls `body` with each entry in key order, starting at the first key `>= lowerBound` (`>` when
    /// `inclusive` is false) or at the first entry when `lowerBound` is nil, until `body` returns false or
    /// the entries run out.
    ///
    /// - Complexity: O(log n + k) for k visited entries; no allocation.
    package func forEach(
        from lowerBound: IndexKey?, inclusive: Bool, _ body: (IndexKey, PrimaryKeyEntry) throws -> Bool
    ) rethrows {
        // The null key (first in `others`, before every integer), then the integers, then the rest of `others`.
        var visitNull = true
        var integerStart: Int64? = nil
        var visitIntegers = true
        var otherStart = IndexKey.null
        var otherInclusive = false
        switch lowerBound {
        case nil:
            break
        case .some(.null):
            visitNull = inclusive
        case .some(.int(let value)):
            visitNull = false
            integerStart = value
        case .some(let key):
            visitNull = false
            visitIntegers = false
            otherStart = key
            otherInclusive = inclusive
        }
        if visitNull, let nullEntry = others.value(forKey: .null) {
            guard try body(.null, nullEntry) else { return }
        }
        if visitIntegers {
            var stopped = false
            try integers.forEach(from: integerStart, inclusive: inclusive) { key, entry in
                let more = try body(.int(key), entry)
                stopped = !more
                return more
            }
            if stopped { return }
        }
        try others.forEach(from: otherStart, inclusive: otherInclusive) { key, entry in try body(key, entry) }
    }

    /// The number of integer keys in `low...high`.
    ///
    /// - Complexity: O(log n); no allocation.
    package func count(from low: Int64, through high: Int64) -> Int {
        guard low <= high else { return 0 }
        let below = integers.countBelow(low)
        let upTo = high == Int64.max ? integers.count : integers.countBelow(high + 1)
        return upTo - below
    }

    /// Calls `body` with each entry in descending key order (the reverse of ``forEach(from:inclusive:_:)``),
    /// until `body` returns false or the entries run out.
    ///
    /// - Complexity: O(k log n) for k visited entries.
    package func forEachDescending(_ body: (IndexKey, PrimaryKeyEntry) throws -> Bool) rethrows {
        // Key order is null, the integers, then the other kinds (`others` holds null and the other kinds).
        let nonNull = others.value(forKey: .null) == nil ? others.count : others.count &- 1
        for offset in stride(from: others.count &- 1, through: others.count &- nonNull, by: -1) {
            let (key, entry) = others.element(at: offset)
            guard try body(key, entry) else { return }
        }
        for offset in stride(from: integers.count &- 1, through: 0, by: -1) {
            let (key, entry) = integers.element(at: offset)
            guard try body(.int(key), entry) else { return }
        }
        if let nullEntry = others.value(forKey: .null) { _ = try body(.null, nullEntry) }
    }

    /// The same index with every entry's row location replaced by `location(entry)`, rebuilt in one ordered
    /// pass (full nodes, owned by `token`).
    ///
    /// - Complexity: O(n) plus the calls of `location`.
    package func relocated(
        token: MutationToken, _ location: (PrimaryKeyEntry) throws(StorageError) -> RowLocation
    ) throws(StorageError) -> PrimaryIndex {
        var result = PrimaryIndex()
        var integerEntries: [(Int64, PrimaryKeyEntry)] = []
        integerEntries.reserveCapacity(integers.count)
        for (key, entry) in integers {
            integerEntries.append((key, PrimaryKeyEntry(object: entry.object, location: try location(entry))))
        }
        result.integers = PersistentBTree(sortedUniqueElements: integerEntries, token: token)
        var otherEntries: [(IndexKey, PrimaryKeyEntry)] = []
        otherEntries.reserveCapacity(others.count)
        for (key, entry) in others {
            otherEntries.append((key, PrimaryKeyEntry(object: entry.object, location: try location(entry))))
        }
        result.others = PersistentBTree(sortedUniqueElements: otherEntries, token: token)
        return result
    }
}
