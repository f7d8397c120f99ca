import ActorStorePersistence
import Foundation

/// What a query runs over: every object of the class, or the members of one collection.
enum QueryBase: Sendable, Hashable {
    /// All objects of the class, in key (insertion) order.
    case table
    /// The objects of a `List` or `MutableSet` of objects, in the collection's order (duplicates kept).
    case collection(owner: TableID, key: ObjectKey, column: Int)
    /// The objects linking to one object through one column (`LinkingObjects`), by key.
    case backlinks(target: TableID, key: ObjectKey, origin: TableID, column: Int)
}

/// A sort key: a key path through to-one links, and a direction.
struct QuerySortKey: Hashable, Sendable {
    var path: QueryKeyPath
    var ascending: Bool
}

/// What happens to the matches after filtering, in the order the calls were chained.
enum QueryOrdering: Hashable, Sendable {
    case sort([QuerySortKey])
    case distinct([QueryKeyPath])
    case limit(Int)
}

/// A whole query: what it runs over, its conditions (all must hold) and its orderings. A plain value:
/// `Results` and `FrozenResults` carry one and evaluate it against their version when read.
struct QueryDescription: Hashable, Sendable {
    var base: QueryBase = .table
    var predicates: [QueryPredicate] = []
    var orderings: [QueryOrdering] = []

    var predicate: QueryPredicate? {
        switch predicates.count {
        case 0: nil
        case 1: predicates[0]
        default: .and(predicates)
        }
    }

    /// Whether the query is all objects of the class in key order (the O(1) count, O(log n) index case).
    var isWholeTable: Bool { base == .table && predicates.isEmpty && orderings.isEmpty }

    /// A limit at the end that a scan may stop at, when nothing reorders the matches.
    var scanLimit: Int? {
        guard orderings.count == 1, case .limit(let n) = orderings[0] else { return nil }
        return n
    }
}

/// Runs a query against one version (a snapshot, or a write transaction reading its own writes).
struct QueryExecutor {
    let store: any ReadableStore
    let schema: QuerySchema
    /// The class queried.
    let queried: QueryClass

    /// An executor for the objects of a model class.
    init(store: any ReadableStore, bindings: SchemaBindings, info: ObjectSchemaInfo) {
        self.init(store: store, bindings: bindings, queried: .model(info))
    }

    /// An executor for the objects of `queried`.
    init(store: any ReadableStore, bindings: SchemaBindings, queried: QueryClass) {
        self.store = store
        self.schema = QuerySchema(bindings: bindings, state: store.state)
        self.queried = queried
    }

    /// An executor for the class named `className` as the version stores it, without its model class (a
    /// class the version does not have: no properties, no objects).
    init(store: any ReadableStore, bindings: SchemaBindings, className: String) {
        let table = store.tableID(named: className).flatMap { store.tableSchema($0) }
        self.init(store: store, bindings: bindings, queried: .stored(table ?? TableSchema(className, columns: [])))
    }

    /// The table of the class queried, or nil when the version has none (then it has no objects).
    var table: TableID? { schema.tableID(for: queried) }

    /// The objects bound while evaluating: index 0 is the object tested, then `SUBQUERY` variables.
    struct Scope {
        var root: (table: TableID, key: ObjectKey)
        /// The objects bound to `SUBQUERY` variables, by depth - 1.
        var variables: [(table: TableID, key: ObjectKey)] = []
        /// The root object's row, when at hand.
        var row: RowView?

        init(_ table: TableID, _ key: ObjectKey, row: RowView?) {
            self.root = (table, key)
            self.row = row
        }

        func object(at depth: Int) -> (table: TableID, key: ObjectKey)? {
            depth == 0 ? root : variables[checked: depth - 1]
        }
    }

    // MARK: Running

    /// Checks `description` against the schema without running it.
    func validate(_ description: QueryDescription) throws(RealmError) {
        var resolver = QueryResolver(schema: schema, queried: queried)
        if let predicate = description.predicate { _ = try resolver.resolve(predicate) }
        for ordering in description.orderings {
            switch ordering {
            case .sort(let keys):
                for key in keys { _ = try singleValuePath(key.path, &resolver, purpose: "sort by") }
            case .distinct(let paths):
                for path in paths { _ = try singleValuePath(path, &resolver, purpose: "distinct by") }
            case .limit(let n):
                guard n >= 0 else { throw QueryResolver.error("a limit must be 0 or more, not \(n)") }
            }
        }
    }

    /// The keys of the matching objects, in the query's order.
    func keys(_ description: QueryDescription) -> [ObjectKey] {
        var locations: [RowLocation]? = nil
        return keys(description, locations: &locations)
    }

    /// The keys of the matching objects, in the query's order; and, when `locations` is non-nil on entry and
    /// the query is a scan of the class's rows with no ordering, the matches' row locations (parallel to the
    /// keys, read by the scan, so that iterating the matches looks none up). Otherwise `locations` is nil.
    func keys(_ description: QueryDescription, locations: inout [RowLocation]?) -> [ObjectKey] {
        if !description.orderings.isEmpty { locations = nil }
        guard let table else {
            locations = nil
            return []
        }
        var resolver = QueryResolver(schema: schema, queried: queried)
        let node: PlanNode?
        do throws(RealmError) {
            node = try description.predicate.map { (p) throws(RealmError) in try resolver.resolve(p) }
        } catch {
            locations = nil
            return []  // validated when the query was built; the schema cannot have lost the property since
        }
        var keys: [ObjectKey]
        var first = 0
        if let ordered = indexOrderedKeys(node, table: table, description, &resolver) {
            keys = ordered
            first = 1  // the sort is done (a limit after it is then a no-op)
            locations = nil
        } else {
            keys = filter(node, table: table, base: description.base, limit: description.scanLimit, &locations)
        }
        for (index, ordering) in description.orderings.enumerated() where index >= first {
            switch ordering {
            case .sort(let sortKeys):
                var limit: Int?
                if index + 1 < description.orderings.count, case .limit(let n) = description.orderings[index + 1] {
                    limit = n
                }
                keys = sort(keys, table: table, by: sortKeys, limit: limit, &resolver)
            case .distinct(let paths): keys = distinct(keys, table: table, by: paths, &resolver)
            case .limit(let n): if keys.count > n { keys.removeSubrange(max(n, 0)...) }
            }
        }
        return keys
    }

    /// The keys of the objects of `base` matching `node`, in base order, stopping after `limit`.
    func filter(_ node: PlanNode?, table: TableID, base: QueryBase, limit: Int?) -> [ObjectKey] {
        var locations: [RowLocation]? = nil
        return filter(node, table: table, base: base, limit: limit, &locations)
    }

    /// ``filter(_:table:base:limit:)``, also giving the matches' row locations when `locations` is non-nil
    /// on entry and the filter scans the rows (see ``keys(_:locations:)``); otherwise `locations` is nil.
    func filter(
        _ node: PlanNode?, table: TableID, base: QueryBase, limit: Int?, _ locations: inout [RowLocation]?
    ) -> [ObjectKey] {
        let collect = locations != nil
        locations = nil
        let limit = limit ?? Int.max
        var result: [ObjectKey] = []
        if limit == 0 { return result }
        switch base {
        case .table:
            guard let node else {
                var cursor = store.state.rowCursor(table)
                while result.count < limit, let row = cursor.next() { result.append(row.key) }
                return result
            }
            if let candidates = IndexPlanner.candidates(node, table: table, store: store) {
                if candidates.exact { return Array(candidates.keys.prefix(limit)) }
                let state = store.state
                for key in candidates.keys {
                    guard result.count < limit else { break }
                    if matches(node, table: table, key: key, in: state) { result.append(key) }
                }
                return result
            }
            // The scan: specialised per store type, as it runs once per object of the class.
            var found: [RowLocation]? = collect ? [] : nil
            defer { locations = found }
            switch store {
            case let snapshot as Snapshot: return scan(snapshot, node, table: table, limit: limit, &found)
            case let transaction as WriteTransaction:
                return scan(transaction, node, table: table, limit: limit, &found)
            default: return scan(store, node, table: table, limit: limit, &found)
            }
        case .collection, .backlinks:
            let state = store.state
            for key in baseKeys(base) {
                guard result.count < limit else { break }
                if let node {
                    if matches(node, table: table, key: key, in: state) { result.append(key) }
                } else if state.rowLocation(table, key) != nil {
                    result.append(key)
                }
            }
            return result
        }
    }

    /// The keys of the rows of `table` that match `node`, in key order, stopping after `limit`; their
    /// locations too, appended to `locations` unless it is nil.
    private func scan<S: ReadableStore>(
        _ store: S, _ node: PlanNode, table: TableID, limit: Int, _ locations: inout [RowLocation]?
    ) -> [ObjectKey] {
        var result: [ObjectKey] = []
        // Collected in a local array (not through the inout optional) and handed back at the end.
        let collect = locations != nil
        var found: [RowLocation] = []
        defer { if collect { locations = found } }
        // A snapshot's scan drops the file's pages it passed (see RowCursor); a transaction's rows may be
        // in its own buffers.
        var cursor = store.state.rowCursor(table, releasingPagesOf: (store as? Snapshot)?.region)
        if let test = Self.rowOnly(node)?.test {
            // Every condition reads the object's own row: no scope, no recursion.
            while let row = cursor.next() {
                if (try? store.withRowBytes(at: row.location, { (view) throws(StorageError) in test(view) })) ?? false {
                    result.append(row.key)
                    if collect { found.append(row.location) }
                    if result.count >= limit { break }
                }
            }
            return result
        }
        while let row = cursor.next() {
            let matched =
                (try? store.withRowBytes(at: row.location) { (view) throws(StorageError) in
                    var scope = Scope(table, row.key, row: view)
                    return evaluate(node, &scope)
                }) ?? false
            if matched {
                result.append(row.key)
                if collect { found.append(row.location) }
                if result.count >= limit { break }
            }
        }
        return result
    }

    /// `node` as one test of the object's row, when every part of it is a row test.
    static func rowOnly(_ node: PlanNode) -> RowPredicate? {
        switch node {
        case .rowTest(let test): return RowPredicate(test.test)
        case .constant(let value): return RowPredicate { _ in value }
        case .not(let inner):
            guard let test = rowOnly(inner)?.test else { return nil }
            return RowPredicate { !test($0) }
        case .and(let parts):
            let tests = parts.compactMap(rowOnly)
            guard tests.count == parts.count else { return nil }
            if tests.count == 2 {
                let (a, b) = (tests[0].test, tests[1].test)
                return RowPredicate { a($0) && b($0) }
            }
            return RowPredicate { row in tests.allSatisfy { $0.test(row) } }
        case .or(let parts):
            let tests = parts.compactMap(rowOnly)
            guard tests.count == parts.count else { return nil }
            if tests.count == 2 {
                let (a, b) = (tests[0].test, tests[1].test)
                return RowPredicate { a($0) || b($0) }
            }
            return RowPredicate { row in tests.contains { $0.test(row) } }
        default: return nil
        }
    }

    /// The members of a collection base.
    func baseKeys(_ base: QueryBase) -> [ObjectKey] {
        switch base {
        case .table: return []
        case .collection(let owner, let key, let column):
            guard let value = try? store.value(owner, key, column: column) else { return [] }
            switch value {
            case .list(let items), .set(let items):
                return items.compactMap { if case .link(let k) = $0 { k } else { nil } }
            default: return []
            }
        case .backlinks(let target, let key, let origin, let column):
            var keys: [ObjectKey] = []
            for link in store.backlinks(to: target, key) where link.source == origin && link.column == column {
                keys += repeatElement(link.key, count: link.count)
            }
            return keys
        }
    }

    /// Whether object `key` of `table` matches `node` (`state` is the store's, taken once per loop).
    func matches(_ node: PlanNode, table: TableID, key: ObjectKey, in state: DatabaseState) -> Bool {
        guard let location = state.rowLocation(table, key) else { return false }
        return
            (try? store.withRowBytes(at: location) { (view) throws(StorageError) in
                var scope = Scope(table, key, row: view)
                return evaluate(node, &scope)
            }) ?? false
    }

    // MARK: Evaluating conditions

    func evaluate(_ node: PlanNode, _ scope: inout Scope) -> Bool {
        switch node {
        case .constant(let value): return value
        case .not(let inner): return !evaluate(inner, &scope)
        case .and(let parts):
            for part in parts where !evaluate(part, &scope) { return false }
            return true
        case .or(let parts):
            for part in parts where evaluate(part, &scope) { return true }
            return false
        case .rowTest(let test):
            if let row = scope.row { return test.test(row) }
            return false
        case .compare(let lhs, let op, let rhs, let options, let quantifier):
            let left = values(lhs, &scope)
            let right = values(rhs, &scope)
            if op == .in {
                let test = { (value: Value) in right.contains { QueryValues.equal(value, $0, options) } }
                return lhs.isMulti ? quantify(left, quantifier, test) : test(left.first ?? .null)
            }
            if lhs.isMulti {
                return quantify(left, quantifier) { value in
                    rhs.isMulti
                        ? right.contains { QueryValues.test(value, op, $0, options) }
                        : QueryValues.test(value, op, right.first ?? .null, options)
                }
            }
            let value = left.first ?? .null
            if rhs.isMulti { return right.contains { QueryValues.test(value, op, $0, options) } }
            return QueryValues.test(value, op, right.first ?? .null, options)
        case .between(let operand, let low, let high, let quantifier):
            let test = { (value: Value) -> Bool in
                guard !value.isNull, let a = QueryValues.order(value, low), let b = QueryValues.order(value, high)
                else { return false }
                return a >= 0 && b <= 0
            }
            let left = values(operand, &scope)
            return operand.isMulti ? quantify(left, quantifier, test) : test(left.first ?? .null)
        }
    }

    private func quantify(_ values: [Value], _ quantifier: QueryQuantifier?, _ test: (Value) -> Bool) -> Bool {
        switch quantifier ?? .any {
        case .any: values.contains(where: test)
        case .all: values.allSatisfy(test)
        case .none: !values.contains(where: test)
        }
    }

    func values(_ operand: PlanOperand, _ scope: inout Scope) -> [Value] {
        switch operand {
        case .constant(let value): return [value]
        case .list(let values): return values
        case .path(let path): return values(path, &scope)
        case .subqueryCount(let path, let depth, let node):
            guard let last = path.steps.last,
                let table = last.backlink.map({ $0.table }) ?? last.targetTable
            else { return [.int(0)] }
            var count: Int64 = 0
            let saved = scope.variables
            for value in values(path, &scope) {
                guard case .link(let key) = value else { continue }
                scope.variables.removeSubrange(min(depth - 1, scope.variables.count)...)
                scope.variables.append((table, key))
                if evaluate(node, &scope) { count += 1 }
            }
            scope.variables = saved
            return [.int(count)]
        }
    }

    // MARK: Key paths

    /// The values `path` yields for the objects in scope.
    func values(_ path: PlanPath, _ scope: inout Scope) -> [Value] {
        guard let start = scope.object(at: path.source) else { return [.null] }
        var objects = [start]
        let useRow = path.source == 0
        var first = true
        for step in path.steps.dropLast() {
            var next: [(table: TableID, key: ObjectKey)] = []
            for object in objects {
                follow(step, object, row: first && useRow ? scope.row : nil, into: &next)
            }
            objects = next
            first = false
        }
        guard let last = path.steps.last else { return [.null] }
        var result: [Value] = []
        for object in objects {
            terminal(path, last, object, row: first && useRow ? scope.row : nil, into: &result)
        }
        if !path.isMulti { return [result.first ?? .null] }
        return result
    }

    /// One column of one object (from `row` when given, the object's own row).
    func read(_ step: PlanStep, _ object: (table: TableID, key: ObjectKey), row: RowView?) -> Value {
        guard step.column >= 0 else { return step.type.defaultValue }
        if let row { return (try? row.value(at: step.column, type: step.type)) ?? .null }
        return (try? store.value(object.table, object.key, column: step.column)) ?? .null
    }

    /// The objects a link step leads to.
    private func follow(
        _ step: PlanStep, _ object: (table: TableID, key: ObjectKey), row: RowView?,
        into objects: inout [(table: TableID, key: ObjectKey)]
    ) {
        if let backlink = step.backlink {
            for link in store.backlinks(to: object.table, object.key)
            where link.source == backlink.table && link.column == backlink.column {
                for _ in 0..<link.count { objects.append((backlink.table, link.key)) }
            }
            return
        }
        guard let target = step.targetTable else { return }
        switch read(step, object, row: row) {
        case .link(let key): objects.append((target, key))
        case .list(let items), .set(let items):
            for case .link(let key) in items { objects.append((target, key)) }
        case .map(let entries):
            for entry in entries { if case .link(let key) = entry.value { objects.append((target, key)) } }
        default: break
        }
    }

    private func terminal(
        _ path: PlanPath, _ step: PlanStep, _ object: (table: TableID, key: ObjectKey), row: RowView?,
        into result: inout [Value]
    ) {
        if let backlink = step.backlink {
            var links: [Value] = []
            for link in store.backlinks(to: object.table, object.key)
            where link.source == backlink.table && link.column == backlink.column {
                links += repeatElement(.link(link.key), count: link.count)
            }
            switch path.terminal {
            case .count: result.append(.int(Int64(links.count)))
            case .min, .max, .sum, .avg:
                result.append(aggregate(path, elements(of: links, inner: path.inner, table: backlink.table)))
            default: result += links
            }
            return
        }
        let value = read(step, object, row: row)
        switch path.terminal {
        case .values:
            switch value {
            case .list(let items), .set(let items): result += items
            case .map(let entries): result += entries.map(\.value)
            default: result.append(value)
            }
        case .count:
            switch value {
            case .list(let items), .set(let items): result.append(.int(Int64(items.count)))
            case .map(let entries): result.append(.int(Int64(entries.count)))
            default: result.append(.int(0))
            }
        case .min, .max, .sum, .avg:
            let items: [Value]
            switch value {
            case .list(let values), .set(let values): items = values
            case .map(let entries): items = entries.map(\.value)
            default: items = []
            }
            result.append(aggregate(path, elements(of: items, inner: path.inner, table: step.targetTable)))
        case .allKeys:
            if case .map(let entries) = value { result += entries.map { .string($0.key) } }
        case .allValues:
            if case .map(let entries) = value { result += entries.map(\.value) }
        case .mapKey(let key):
            if case .map(let entries) = value { result.append(entries.first { $0.key == key }?.value ?? .null) }
        }
    }

    /// The values aggregated: the elements themselves, or one property of each linked element.
    private func elements(of items: [Value], inner: PlanStep?, table: TableID?) -> [Value] {
        guard let inner else { return items }
        guard let table else { return [] }
        return items.compactMap { item in
            guard case .link(let key) = item else { return nil }
            return read(inner, (table, key), row: nil)
        }
    }

    private func aggregate(_ path: PlanPath, _ values: [Value]) -> Value {
        switch path.terminal {
        case .min: Aggregates.min(values)
        case .max: Aggregates.max(values)
        case .sum: Aggregates.sum(values, type: path.type)
        default: Aggregates.average(values)
        }
    }

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

    private func sort(
        _ keys: [ObjectKey], table: TableID, by sortKeys: [QuerySortKey], limit: Int?, _ resolver: inout QueryResolver
    ) -> [ObjectKey] {
        var paths: [(path: PlanPath, ascending: Bool)] = []
        for key in sortKeys {
            guard let path = try? singleValuePath(key.path, &resolver, purpose: "sort by") else { continue }
            paths.append((path, key.ascending))
        }
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

    private func distinct(
        _ keys: [ObjectKey], table: TableID, by paths: [QueryKeyPath], _ resolver: inout QueryResolver
    )
        -> [ObjectKey]
    {
        var columns: [[Value]] = []
        for path in paths {
            guard let resolved = try? singleValuePath(path, &resolver, purpose: "distinct by") else { continue }
            columns.append(columnValues(keys, table: table, resolved))
        }
        guard !columns.isEmpty else { return keys }
        var seen = Set<[Value]>()
        var result: [ObjectKey] = []
        for (i, key) in keys.enumerated() where seen.insert(columns.map { $0[i] }).inserted {
            result.append(key)
        }
        return result
    }
}

/// `@min`, `@max`, `@sum`, `@avg` and the `Results` aggregates. Nulls are skipped; the minimum, maximum
/// and average of nothing are nil, the sum of nothing is zero.
enum Aggregates {
    static func min(_ values: [Value]) -> Value {
        values.lazy.filter { !$0.isNull }.min { QueryValues.sortOrder($0, $1) < 0 } ?? .null
    }

    static func max(_ values: [Value]) -> Value {
        values.lazy.filter { !$0.isNull }.max { QueryValues.sortOrder($0, $1) < 0 } ?? .null
    }

    static func sum(_ values: [Value], type: QueryType) -> Value {
        switch type {
        case .int:
            var total: Int64 = 0
            for case .int(let v) in values { total &+= v }
            return .int(total)
        case .decimal:
            var total = Decimal(0)
            for case .decimal128(let v) in values { total += Decimal128(bits: v).decimalValue }
            return .decimal128(Decimal128(total).bits)
        default:
            var total = 0.0
            for value in values { if let v = QueryValues.double(value) { total += v } }
            return type == .float ? .float(Float(total)) : .double(total)
        }
    }

    static func average(_ values: [Value]) -> Value {
        let present = values.filter { !$0.isNull }
        guard !present.isEmpty else { return .null }
        if case .decimal128 = present[0] {
            var total = Decimal(0)
            for case .decimal128(let v) in present { total += Decimal128(bits: v).decimalValue }
            return .decimal128(Decimal128(total / Decimal(present.count)).bits)
        }
        var total = 0.0
        for value in present { total += QueryValues.double(value) ?? 0 }
        return .double(total / Double(present.count))
    }
}

extension QueryExecutor {
    /// How `description` runs at this version: the index used or the scan, then the orderings.
    func explain(_ description: QueryDescription) -> String {
        guard let table, let tableState = store.state.tables[table] else {
            return "\(queried.className): no objects stored yet"
        }
        var lines: [String] = []
        switch description.base {
        case .table: lines.append("\(queried.className): \(tableState.rows.count) objects")
        case .collection: lines.append("\(queried.className): the members of a collection")
        case .backlinks: lines.append("\(queried.className): the objects linking to one object")
        }
        if let predicate = description.predicate {
            var resolver = QueryResolver(schema: schema, queried: queried)
            if let node = try? resolver.resolve(predicate) {
                if description.base == .table,
                    let candidates = IndexPlanner.candidates(node, table: table, store: store)
                {
                    let column = tableState.schema.columns[checked: candidates.column]?.name ?? "?"
                    lines.append(
                        "index on '\(column)': \(candidates.keys.count) candidates"
                            + (candidates.exact ? ", all matches (no further test)" : ", each tested for: \(predicate)")
                    )
                } else {
                    lines.append("scan testing: \(predicate)")
                }
            }
        }
        for ordering in description.orderings {
            switch ordering {
            case .sort(let keys):
                lines.append(
                    "sort by "
                        + keys.map { "\($0.path) \($0.ascending ? "ascending" : "descending")" }.joined(separator: ", ")
                )
            case .distinct(let paths): lines.append("distinct by " + paths.map(\.description).joined(separator: ", "))
            case .limit(let n): lines.append("limit \(n)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `min`, `max`, `sum` or `average` of a property over the matches.
    func aggregate(
        _ description: QueryDescription, _ path: QueryKeyPath, _ terminal: PlanTerminal
    )
        throws(RealmError) -> Value
    {
        var resolver = QueryResolver(schema: schema, queried: queried)
        let resolved = try singleValuePath(path, &resolver, purpose: "aggregate")
        let comparable = resolved.type == .date || resolved.type == .string
        guard resolved.type.isNumeric || (comparable && !terminal.isSumOrAverage) else {
            throw QueryResolver.error(
                "'\(path)' is \(resolved.type); "
                    + (terminal.isSumOrAverage
                        ? "sum and average need numbers" : "min and max need numbers, dates or strings"))
        }
        guard let table else {
            return terminal.isSumOrAverage && terminal.isSum ? Aggregates.sum([], type: resolved.type) : .null
        }
        let values = columnValues(keys(description), table: table, resolved)
        switch terminal {
        case .min: return Aggregates.min(values)
        case .max: return Aggregates.max(values)
        case .sum: return Aggregates.sum(values, type: resolved.type)
        default: return Aggregates.average(values)
        }
    }
}

extension PlanTerminal {
    var isSumOrAverage: Bool {
        switch self {
        case .sum, .avg: true
        default: false
        }
    }

    var isSum: Bool {
        if case .sum = self { return true }
        return false
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
