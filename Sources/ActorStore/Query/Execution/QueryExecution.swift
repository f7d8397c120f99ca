import ActorStorePersistence
import Foundation

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

    /// Whether the class queried is read by its stored schema (without its model class) and the version does
    /// not have it: a class with no properties and no objects, against which queries are not checked.
    var isMissingStoredClass: Bool {
        guard case .stored = queried else { return false }
        return table == nil
    }

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

    /// Checks `description` against the schema without running it, and returns its plan (resolved once,
    /// here, for the results built from it to run). A class read by its stored schema that the version does
    /// not have is not checked (it has no properties to check against; its results are empty).
    /// - Throws: ``RealmError/Code/invalidQuery`` for the first problem found (the predicate's, then the
    ///   orderings' in order).
    func validate(_ description: QueryDescription) throws(RealmError) -> QueryPlanCache {
        let plan = resolved(description, cache: nil)
        if let error = plan.error { throw error }
        return QueryPlanCache(plan, resolvedBy: self)
    }

    /// The keys of the matching objects, in the query's order (its plan taken from `cache` when it holds
    /// this schema's, and kept there otherwise).
    func keys(_ description: QueryDescription, cache: QueryPlanCache? = nil) -> [ObjectKey] {
        var locations: [RowLocation]? = nil
        return keys(description, cache: cache, locations: &locations)
    }

    /// The keys of the matching objects, in the query's order; and, when `locations` is non-nil on entry and
    /// the query is a scan of the class's rows with no ordering, the matches' row locations (parallel to the
    /// keys, read by the scan, so that iterating the matches looks none up). Otherwise `locations` is nil.
    func keys(
        _ description: QueryDescription, cache: QueryPlanCache?, locations: inout [RowLocation]?
    ) -> [ObjectKey] {
        if !description.orderings.isEmpty { locations = nil }
        guard let table else {
            locations = nil
            return []
        }
        let plan = resolved(description, cache: cache)
        if case .unresolvable = plan.predicate {
            locations = nil
            return []  // validated when the query was built; the schema lost a property it reads since
        }
        let node = plan.node
        var keys: [ObjectKey]
        var first = 0
        if let ordered = indexOrderedKeys(node, table: table, description, plan) {
            keys = ordered
            first = 1  // the sort is done (a limit after it is then a no-op)
            locations = nil
        } else {
            keys = filter(node, table: table, base: description.base, limit: description.scanLimit, &locations)
        }
        for (index, ordering) in plan.orderings.enumerated() where index >= first {
            switch ordering {
            case .sort(let sortKeys):
                var limit: Int?
                if index + 1 < plan.orderings.count, case .limit(let n) = plan.orderings[index + 1] {
                    limit = n
                }
                keys = sort(keys, table: table, by: sortKeys, limit: limit)
            case .distinct(let paths): keys = distinct(keys, table: table, by: paths)
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

    /// The test that decides on its own whether a row of the class matches, when the query is answered by
    /// scanning every row of the class and testing each (objects of the class, no ordering or limit, no
    /// condition an index could answer, every condition reading only the object's row); nil otherwise. A
    /// set-based delete then tests and deletes in one pass over the rows
    /// (`WriteTransaction.deleteRows(_:where:)`).
    func scanTest(_ description: QueryDescription, cache: QueryPlanCache?) -> (@Sendable (RowView) -> Bool)? {
        guard description.orderings.isEmpty, case .table = description.base, let table,
            let tableState = store.state.tables[table]
        else { return nil }
        let plan = resolved(description, cache: cache)
        if case .unresolvable = plan.predicate { return nil }
        guard let node = plan.node, !IndexPlanner.hasIndexedConjunct(node, tableState: tableState) else { return nil }
        return Self.rowOnly(node)?.test
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

}

extension QueryExecutor {
    /// How `description` runs at this version: the index used or the scan, then the orderings.
    func explain(_ description: QueryDescription, cache: QueryPlanCache? = nil) -> String {
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
            if let node = resolved(description, cache: cache).node {
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
}
