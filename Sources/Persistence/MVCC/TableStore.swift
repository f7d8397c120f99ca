/// The tables of a version, by id: an array indexed by `TableID` (ids are small and dense).
///
/// Why not a `Dictionary`: every row operation looks its table up several times, and a dictionary read
/// hashes the id and copies the whole ``TableState`` out (retaining each of its trees). The array's
/// borrowing accessors read one field of a table in place, and mutate a table in place.
package struct TableStore: Sendable {
    private var slots: [TableState?] = []
    package private(set) var count = 0

    package init() {}

    package init(_ tables: [TableID: TableState]) {
        for (id, table) in tables { self[id] = table }
    }

    package subscript(id: TableID) -> TableState? {
        _read {
            let i = Int(id.rawValue)
            if i < slots.count { yield slots[i] } else { yield nil }
        }
        _modify {
            let i = Int(id.rawValue)
            if i >= slots.count { slots.append(contentsOf: repeatElement(nil, count: i + 1 - slots.count)) }
            let wasPresent = slots[i] != nil
            yield &slots[i]
            count += (slots[i] != nil ? 1 : 0) - (wasPresent ? 1 : 0)
        }
    }

    /// Where row `key` of table `id` is, or nil. Reads the table in place: going through the optional
    /// `subscript` and `?.rows` copies the whole ``TableState`` out (retaining and releasing each of its
    /// trees and arrays), which was a measurable share of every point read.
    ///
    /// - Complexity: O(log n); no allocation, no reference counting.
    @inline(__always)
    package func rowLocation(_ id: TableID, _ key: ObjectKey) -> RowLocation? {
        let i = Int(id.rawValue)
        guard i < slots.count else { return nil }
        return slots.withUnsafeBufferPointer { $0[i]?.rows.value(forKey: key) }
    }

    /// The object whose primary-key index entry is `key` in table `id`, and where its row is, or nil; in
    /// place, as ``rowLocation(_:_:)``. One tree walk: the primary-key index holds the row location too.
    ///
    /// - Complexity: O(log n); no allocation, no reference counting.
    @inline(__always)
    package func object(_ id: TableID, primaryKey key: IndexKey) -> PrimaryKeyEntry? {
        let i = Int(id.rawValue)
        guard i < slots.count else { return nil }
        return slots.withUnsafeBufferPointer { $0[i]?.primaryIndex.value(forKey: key) }
    }

    /// Whether primary key `key` is above every key of its tree in table `id`'s primary index (see
    /// ``PrimaryIndex/isAboveItsTree(_:)``); false if there is no such table. In place, as
    /// ``rowLocation(_:_:)``.
    ///
    /// - Complexity: O(log n).
    package func primaryKey(_ key: IndexKey, isAboveThoseOf id: TableID) -> Bool {
        let i = Int(id.rawValue)
        guard i < slots.count else { return false }
        return slots.withUnsafeBufferPointer { $0[i]?.primaryIndex.isAboveItsTree(key) ?? false }
    }

    /// The number of rows of table `id` (0 if there is no such table); in place, as ``rowLocation(_:_:)``.
    ///
    /// - Complexity: O(1); no reference counting.
    @inline(__always)
    package func rowCount(_ id: TableID) -> Int {
        let i = Int(id.rawValue)
        guard i < slots.count else { return 0 }
        return slots.withUnsafeBufferPointer { $0[i]?.rows.count ?? 0 }
    }

    /// The row at rank `offset` of table `id` (0-based, key order), or nil if out of range; in place.
    ///
    /// - Complexity: O(log n); no allocation, no reference counting.
    @inline(__always)
    package func row(_ id: TableID, at offset: Int) -> (key: ObjectKey, location: RowLocation)? {
        let i = Int(id.rawValue)
        guard i < slots.count else { return nil }
        return slots.withUnsafeBufferPointer { slots -> (key: ObjectKey, location: RowLocation)? in
            // Each `slots[i]?.rows` reads the tree in place; binding it to a name would copy (retain) it.
            guard offset >= 0, offset < slots[i]?.rows.count ?? 0, let entry = slots[i]?.rows.element(at: offset)
            else { return nil }
            return (entry.key, entry.value)
        }
    }

    /// The rank of row `key` in table `id`, or nil; in place.
    ///
    /// - Complexity: O(log n); no allocation, no reference counting.
    @inline(__always)
    package func rowOffset(_ id: TableID, _ key: ObjectKey) -> Int? {
        let i = Int(id.rawValue)
        guard i < slots.count else { return nil }
        return slots.withUnsafeBufferPointer { $0[i]?.rows.offset(of: key) }
    }

    /// Whether table `id` exists; in place, as ``rowLocation(_:_:)``.
    @inline(__always)
    package func contains(_ id: TableID) -> Bool {
        let i = Int(id.rawValue)
        guard i < slots.count else { return false }
        return slots.withUnsafeBufferPointer { $0[i] != nil }
    }

    /// Takes a table out (so it can be mutated without another reference to its trees), or nil.
    package mutating func removeValue(forKey id: TableID) -> TableState? {
        let i = Int(id.rawValue)
        guard i < slots.count, slots[i] != nil else { return nil }
        var taken: TableState?
        swap(&taken, &slots[i])  // a move: no retain of the table's trees
        count -= 1
        return taken
    }

    /// Puts a table (taken out with ``removeValue(forKey:)``) back, moving it rather than copying it.
    package mutating func put(_ id: TableID, _ table: consuming TableState) {
        let i = Int(id.rawValue)
        if i >= slots.count { slots.append(contentsOf: repeatElement(nil, count: i + 1 - slots.count)) }
        if slots[i] == nil { count += 1 }
        slots[i] = consume table
    }

    /// The ids of the tables, ascending.
    package var keys: [TableID] { slots.indices.compactMap { slots[$0] == nil ? nil : TableID(UInt32($0)) } }

    /// The tables in id order.
    package var values: [TableState] { slots.compactMap { $0 } }
}
