import ActorStorePersistence

/// Updates a query's matches from the objects a commit changed, instead of running the query again: for
/// queries over all objects of a class whose conditions and sort keys read only the objects' own
/// properties (no links), without `distinct` or `limit`.
///
/// Objects the commit did not change keep their relative order (their sort values did not change), so the
/// new matches are the old ones minus the changed objects, plus the changed objects that match now, each
/// placed by binary search. O(n) copying and O(c log n) comparisons for c changed objects, against a scan
/// and an O(n log n) sort; the diff likewise needs only the changed objects' positions.
struct IncrementalQuery {
    let executor: QueryExecutor
    let table: TableID
    let node: PlanNode?
    let sortPaths: [(path: PlanPath, ascending: Bool)]

    /// Nil when the query is not of the supported shape (or does not resolve). Its plan comes from
    /// `plans` when that holds this schema's.
    init?(
        _ query: QueryDescription, info: ObjectSchemaInfo, table: TableID, context: FrozenContext,
        plans: QueryPlanCache
    ) {
        guard query.base == .table else { return nil }
        executor = QueryExecutor(store: context.snapshot, bindings: context.bindings, info: info)
        let plan = executor.resolved(query, cache: plans)
        guard plan.error == nil else { return nil }
        node = plan.node
        var paths: [(PlanPath, Bool)] = []
        for ordering in plan.orderings {
            guard case .sort(let keys) = ordering, paths.isEmpty else { return nil }
            for key in keys {
                guard let path = key.path, path.steps.count == 1 else { return nil }
                paths.append((path, key.ascending))
            }
        }
        sortPaths = paths
        self.table = table
    }

    /// The matches after a commit that changed (inserted, deleted, or modified in a column the query
    /// reads) the objects `changed`, given the matches before it.
    func update(_ old: [ObjectKey], changed: Set<ObjectKey>) -> [ObjectKey] {
        let state = executor.store.state
        let filter = KeyFilter(changed)
        var rest = old
        rest.removeAll { filter.mayContain($0) && changed.contains($0) }
        var entering = Array(changed).filter { key in
            guard state.rowLocation(table, key) != nil else { return false }
            return node.map { executor.matches($0, table: table, key: key, in: state) } ?? true
        }
        guard !entering.isEmpty else { return rest }
        if sortPaths.isEmpty {
            entering.sort()
            return Self.merge(rest, entering) { $0 < $1 }
        }
        // Each sort path is one step on the object's own row (checked in `init`): read it directly.
        func sortValue(_ key: ObjectKey, _ i: Int) -> Value {
            executor.read(sortPaths[i].path.steps[0], (table, key), row: nil)
        }
        // Ties keep key order: the scan runs in key order and the sort is stable.
        func precedes(_ a: ObjectKey, _ b: ObjectKey) -> Bool {
            for (i, path) in sortPaths.enumerated() {
                let c = QueryValues.sortOrder(sortValue(a, i), sortValue(b, i))
                if c != 0 { return path.ascending ? c < 0 : c > 0 }
            }
            return a < b
        }
        entering.sort(by: precedes)
        return Self.merge(rest, entering, precedes)
    }

    /// `rest` with each of `entering` (in order) placed by binary search.
    private static func merge(
        _ rest: [ObjectKey], _ entering: [ObjectKey], _ precedes: (ObjectKey, ObjectKey) -> Bool
    ) -> [ObjectKey] {
        var result: [ObjectKey] = []
        result.reserveCapacity(rest.count + entering.count)
        var from = 0
        for key in entering {
            var lo = from
            var hi = rest.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if precedes(rest[mid], key) { lo = mid + 1 } else { hi = mid }
            }
            result.append(contentsOf: rest[from..<lo])
            result.append(key)
            from = lo
        }
        result.append(contentsOf: rest[from...])
        return result
    }
}

extension CollectionDiff {
    /// The diff when only the elements of `changed` can have moved, appeared or disappeared (every other
    /// element is in both, in the same relative order). Two scans with cheap membership tests, no hashing
    /// of the whole collection.
    static func between(
        _ old: [ObjectKey], _ new: [ObjectKey], changed: Set<ObjectKey>, modified: Set<ObjectKey>
    ) -> CollectionDiff {
        // Most elements are neither changed nor modified: a bit test rules them out before any hashing.
        let filter = KeyFilter(changed.union(modified))
        func mayBe(_ key: ObjectKey) -> Bool { filter.mayContain(key) }
        // Positions of changed elements, with their slot (how many unchanged elements precede them), and of
        // modified unchanged ones.
        func scan(_ keys: [ObjectKey]) -> (changed: [ObjectKey: (index: Int, slot: Int)], modified: [ObjectKey: Int]) {
            var positions: [ObjectKey: (Int, Int)] = [:]
            var modifiedPositions: [ObjectKey: Int] = [:]
            var changedSeen = 0
            for (i, key) in keys.enumerated() where mayBe(key) {
                if changed.contains(key) {
                    positions[key] = (i, i - changedSeen)
                    changedSeen += 1
                } else if modified.contains(key) {
                    modifiedPositions[key] = i
                }
            }
            return (positions, modifiedPositions)
        }
        let before = scan(old)
        let after = scan(new)
        var diff = CollectionDiff()
        var candidates: [(old: Int, new: Int, key: ObjectKey)] = []
        for (key, position) in before.changed {
            guard let now = after.changed[key] else {
                diff.deletions.append(position.index)
                continue
            }
            if position.slot == now.slot {
                candidates.append((position.index, now.index, key))
            } else {
                diff.deletions.append(position.index)
                diff.insertions.append(now.index)
            }
        }
        for (key, now) in after.changed where before.changed[key] == nil { diff.insertions.append(now.index) }
        candidates.sort { $0.new < $1.new }
        let kept = longestIncreasing(candidates.map(\.old))
        var next = 0
        for (position, candidate) in candidates.enumerated() {
            if next < kept.count && kept[next] == position {
                next += 1
                if modified.contains(candidate.key) {
                    diff.modifications.append(candidate.new)
                    diff.modificationsInOld.append(candidate.old)
                }
            } else {
                diff.deletions.append(candidate.old)
                diff.insertions.append(candidate.new)
            }
        }
        for (key, index) in before.modified {
            if let now = after.modified[key] {
                diff.modificationsInOld.append(index)
                diff.modifications.append(now)
            }
        }
        diff.deletions.sort()
        diff.insertions.sort()
        diff.modifications.sort()
        diff.modificationsInOld.sort()
        return diff
    }
}

/// A 4096-bit filter over object keys: `mayContain` is false for most keys not in the set, in one bit test.
struct KeyFilter {
    private var bits = [UInt64](repeating: 0, count: 64)

    init(_ keys: Set<ObjectKey>) {
        for key in keys {
            let bit = Self.bit(key)
            bits[bit >> 6] |= 1 << UInt64(bit & 63)
        }
    }

    @inline(__always) private static func bit(_ key: ObjectKey) -> Int {
        Int(truncatingIfNeeded: UInt64(bitPattern: key.rawValue) & 4095)
    }

    @inline(__always) func mayContain(_ key: ObjectKey) -> Bool {
        let bit = Self.bit(key)
        return bits[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }
}
