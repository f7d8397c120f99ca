import Testing

@testable import ActorStorePersistence

/// Compares a tree with its model completely, after checking the tree's invariants (which trap): count,
/// every entry in order, select and rank at every 7th position, point reads of every key, first and last,
/// floor between stored keys, and that each of `removed` is gone. Nil when they agree, else the first
/// difference.
func treeDifference(
    _ tree: PersistentBTree<Int64, Int64>, _ model: [Int64: Int64], removed: [Int64] = []
) -> String? {
    tree.checkInvariants()
    if tree.count != model.count { return "count \(tree.count), expected \(model.count)" }
    let sorted = model.keys.sorted()
    var position = 0
    for (key, value) in tree {
        guard position < sorted.count, sorted[position] == key, model[key] == value else {
            return "entry \(position) is (\(key), \(value))"
        }
        if position % 7 == 0 {
            if tree.element(at: position).key != key { return "element(at: \(position))" }
            if tree.offset(of: key) != position { return "offset(of: \(key))" }
        }
        position += 1
    }
    if position != sorted.count { return "iteration yields \(position) entries" }
    for key in sorted where tree.value(forKey: key) != model[key] { return "value(forKey: \(key))" }
    if let first = sorted.first, tree.first?.key != first { return "first" }
    if let last = sorted.last, tree.last?.key != last { return "last" }
    for key in sorted.prefix(50) {
        // The floor of a key between two stored ones is the smaller.
        let probe = key + 1
        let expected = model[probe] != nil ? probe : key
        if tree.floor(probe)?.key != expected { return "floor(\(probe))" }
    }
    for key in removed where tree.contains(key) { return "removed key \(key) is still there" }
    return nil
}

/// Checks the store of the engine model tests (`PatchedUpdateTests`, `BatchDeleteTests`) against their
/// model: every row of `items` equals the model's and nothing else is there; the primary keys (column 0), the
/// index on column 1 (values `0..<tags`) and the backlinks of the five `owners` (column `linkColumn` links to
/// them) list exactly the model's objects.
func checkItems(
    _ store: some ReadableStore, _ items: TableID, owners: TableID, tags: Int, linkColumn: Int,
    _ model: [ObjectKey: [Value]]
) throws {
    #expect(store.count(items) == model.count)
    for (key, row) in model {
        let stored = try #require(try store.values(items, key))
        if stored != row { Issue.record("object \(key): stored \(stored), model \(row)") }
        #expect(store.object(items, primaryKey: row[0]) == key)
    }
    for tag in 0..<tags {
        let expected = model.filter { $0.value[1] == .int(Int64(tag)) }.keys.sorted()
        #expect(store.objects(items, column: 1, equalTo: .int(Int64(tag)))?.sorted() == expected, "tag \(tag)")
    }
    for owner in 0..<5 {
        let key = ObjectKey(Int64(owner))
        let expected = model.filter { $0.value[linkColumn] == .link(key) }.keys.sorted()
        let linked = store.backlinks(to: owners, key).filter { $0.source == items }.map(\.key).sorted()
        #expect(linked == expected, "owner \(owner)")
    }
}
