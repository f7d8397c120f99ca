import ActorStorePersistence
import Foundation

extension QueryExecutor {
    // MARK: Orderings

    /// Resolves a key path that must give one value per object (sorting, distinct, aggregates).
    func singleValuePath(
        _ path: QueryKeyPath, _ resolver: inout QueryResolver, purpose: String
    )
        throws(RealmError) -> PlanPath
    {
        let resolved = try resolver.resolve(path)
        guard !resolved.isMulti, !resolved.steps.contains(where: \.isToMany), case .values = resolved.terminal else {
            throw QueryResolver.error(
                "cannot \(purpose) '\(path)': it is or goes through a collection; only properties and to-one links can be used",
                at: path.position)
        }
        if case .object = resolved.type {
            throw QueryResolver.error(
                "cannot \(purpose) '\(path)': it is a link; use a property of the linked object, as in owner.name",
                at: path.position)
        }
        return resolved
    }

    /// One value per key for `path` (a single-value path).
    func columnValues(_ keys: [ObjectKey], table: TableID, _ path: PlanPath) -> [Value] {
        // Fast case: a property of the object itself.
        if path.steps.count == 1, let step = path.steps.first {
            return keys.map { key in read(step, (table, key), row: nil) }
        }
        return keys.map { key in
            var scope = Scope(table, key, row: nil)
            return values(path, &scope).first ?? .null
        }
    }

    func sort(
        _ keys: [ObjectKey], table: TableID, by sortKeys: [(path: PlanPath?, ascending: Bool)], limit: Int?
    ) -> [ObjectKey] {
        let paths = sortKeys.compactMap { key in key.path.map { (path: $0, ascending: key.ascending) } }
        guard !paths.isEmpty else { return keys }
        let order: [Int]
        if paths.count == 1, let typed = TypedSortKeys(self, keys, table: table, paths[0].path) {
            order = typed.order(ascending: paths[0].ascending, limit: limit)
        } else {
            let columns = paths.map { (values: columnValues(keys, table: table, $0.path), ascending: $0.ascending) }
            // Stable: ties keep their previous order (so chained sorts refine each other).
            order = Self.order(count: keys.count, limit: limit) { a, b in
                for column in columns {
                    let c = QueryValues.sortOrder(column.values[a], column.values[b])
                    if c != 0 { return column.ascending ? c < 0 : c > 0 }
                }
                return a < b
            }
        }
        return order.map { keys[$0] }
    }

    /// The positions `0..<count` sorted by `less` (a strict total order), only the first `limit` when given:
    /// a bounded heap then, O(n log limit) instead of a full sort.
    static func order(count: Int, limit: Int?, _ less: (Int, Int) -> Bool) -> [Int] {
        guard let limit, limit < count / 4 else { return (0..<count).sorted(by: less) }
        guard limit > 0 else { return [] }
        // A max-heap of the `limit` smallest positions seen so far.
        var heap: [Int] = []
        heap.reserveCapacity(limit)
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1
                let r = l + 1
                var largest = i
                if l < heap.count, less(heap[largest], heap[l]) { largest = l }
                if r < heap.count, less(heap[largest], heap[r]) { largest = r }
                if largest == i { return }
                heap.swapAt(i, largest)
                i = largest
            }
        }
        for i in 0..<count {
            if heap.count < limit {
                heap.append(i)
                var child = heap.count - 1
                while child > 0 {
                    let parent = (child - 1) / 2
                    guard less(heap[parent], heap[child]) else { break }
                    heap.swapAt(parent, child)
                    child = parent
                }
            } else if less(i, heap[0]) {
                heap[0] = i
                siftDown(0)
            }
        }
        return heap.sorted(by: less)
    }

    func distinct(_ keys: [ObjectKey], table: TableID, by paths: [PlanPath?]) -> [ObjectKey] {
        let columns = paths.compactMap { path in path.map { columnValues(keys, table: table, $0) } }
        guard !columns.isEmpty else { return keys }
        var seen = Set<[Value]>()
        var result: [ObjectKey] = []
        for (i, key) in keys.enumerated() where seen.insert(columns.map { $0[i] }).inserted {
            result.append(key)
        }
        return result
    }
}

extension Array {
    /// The element at `index`, or nil when it is out of bounds.
    subscript(checked index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

/// Sort keys of one property of the queried objects, read straight from the rows into a typed array, so
/// the comparisons of a sort do not go through `Value`.
struct TypedSortKeys {
    enum Column {
        case int([Int64?])
        case double([Double?])
        /// Strings as UTF-8 bytes in one arena: `ranges[i]` is nil for null.
        case bytes([UInt8], [Range<Int>?])
    }
    let column: Column

    init?(_ executor: QueryExecutor, _ keys: [ObjectKey], table: TableID, _ path: PlanPath) {
        guard path.steps.count == 1, path.source == 0, let step = path.steps.first, step.column >= 0,
            step.type.collection == .single
        else { return nil }
        let state = executor.store.state
        let column = step.column
        let optional = step.type.isOptional
        // When the keys are the table's rows in order (no filter), walk the rows instead of looking each up.
        var cursor = keys.count == state.rowCount(table) ? state.rowCursor(table) : nil
        func location(_ key: ObjectKey) -> RowLocation? {
            if cursor != nil, let row = cursor?.next(), row.key == key { return row.location }
            cursor = nil
            return state.rowLocation(table, key)
        }
        func read<T>(_ body: (RowView) throws(StorageError) -> T?) -> [T?] {
            keys.map { key in
                guard let location = location(key) else { return nil }
                return (try? executor.store.withRowBytes(at: location, body)) ?? nil
            }
        }
        switch step.type.scalar {
        case .int8, .int16, .int32, .int64:
            let scalar = step.type.scalar
            self.column = .int(
                read { (row) throws(StorageError) in try row.int64(at: column, type: scalar, optional: optional) })
        case .double, .float, .date:
            self.column = .double(read { (row) throws(StorageError) in try row.double(at: column, optional: optional) })
        case .string:
            var arena: [UInt8] = []
            let ranges: [Range<Int>?] = read { (row) throws(StorageError) -> Range<Int>? in
                guard var bytes = row.columnBytes(column) else { return optional ? nil : arena.count..<arena.count }
                if optional {
                    if bytes.isEmpty { return nil }
                    bytes = UnsafeRawBufferPointer(rebasing: bytes[1...])
                }
                let start = arena.count
                arena.append(contentsOf: bytes)
                return start..<arena.count
            }
            self.column = .bytes(arena, ranges)
        default: return nil
        }
    }

    /// Positions in sorted order (nil first when ascending; ties by position).
    func order(ascending: Bool, limit: Int?) -> [Int] {
        func make<T>(_ values: [T?], _ compare: @escaping (T, T) -> Int) -> (Int, Int) -> Bool {
            { a, b in
                let c: Int
                switch (values[a], values[b]) {
                case (nil, nil): c = 0
                case (nil, _): c = -1
                case (_, nil): c = 1
                case (let x?, let y?): c = compare(x, y)
                }
                if c != 0 { return ascending ? c < 0 : c > 0 }
                return a < b
            }
        }
        switch column {
        case .int(let values):
            return QueryExecutor.order(
                count: values.count, limit: limit, make(values) { $0 < $1 ? -1 : ($0 == $1 ? 0 : 1) })
        case .double(let values):
            return QueryExecutor.order(
                count: values.count, limit: limit,
                make(values) { x, y in
                    if x < y { return -1 }
                    if x > y { return 1 }
                    if x == y { return 0 }
                    return x.isNaN ? (y.isNaN ? 0 : -1) : 1  // NaN first among numbers, as QueryValues.sortOrder
                })
        case .bytes(let arena, let ranges):
            return arena.withUnsafeBytes { base in
                QueryExecutor.order(
                    count: ranges.count, limit: limit,
                    make(ranges) { x, y in
                        let n = Swift.min(x.count, y.count)
                        if n > 0, let p = base.baseAddress {
                            let c = memcmp(p + x.lowerBound, p + y.lowerBound, n)
                            if c != 0 { return c < 0 ? -1 : 1 }
                        }
                        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
                    })
            }
        }
    }
}
