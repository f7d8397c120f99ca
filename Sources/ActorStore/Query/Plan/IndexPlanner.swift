import ActorStorePersistence
import Foundation

/// Chooses an index for a query: equality and `IN` on the primary key or an indexed property, and
/// ranges (`<`, `<=`, `>`, `>=`, `BETWEEN`) on an indexed integer or date property. Only a condition that
/// must hold for every match qualifies (the whole predicate, or one part of a top-level `AND`).
enum IndexPlanner {
    /// The keys to test instead of a full scan, in key order; `exact` when they are exactly the matches;
    /// `column` the column whose index gave them.
    static func candidates<Store: ReadableStore>(
        _ node: PlanNode, table: TableID, store: Store
    )
        -> (keys: [ObjectKey], exact: Bool, column: Int)?
    {
        guard let tableState = store.state.tables[table] else { return nil }
        let conjuncts: [PlanNode]
        switch node {
        case .and(let parts): conjuncts = parts
        default: conjuncts = [node]
        }
        func isIndexed(_ column: Int) -> Bool {
            tableState.indexes[column] != nil || tableState.schema.primaryKeyColumn == column
        }
        // Range bounds per indexed column (`<`, `<=`, `>`, `>=`, and `BETWEEN` as `>=` and `<=`), with how
        // many conjuncts they came from, in the order the columns first appear.
        var bounds: [(column: Int, scalar: ScalarType, bounds: [Bound], conjuncts: Int)] = []
        for conjunct in conjuncts {
            if case .rowTest(let test) = conjunct, test.options.isEmpty, isIndexed(test.column) {
                if test.op == .equal || test.op == .in, let keys = equality(test, table: table, store: store) {
                    return (keys, conjuncts.count == 1, test.column)
                }
            }
            guard let (column, scalar, found) = rangeBounds(conjunct), isIndexed(column) else { continue }
            if let i = bounds.firstIndex(where: { $0.column == column }) {
                bounds[i].bounds += found
                bounds[i].conjuncts += 1
            } else {
                bounds.append((column, scalar, found, 1))
            }
        }
        // The column bounded on both sides walks the fewest keys; else the first bounded.
        let closed = bounds.first { entry in
            entry.bounds.contains { $0.isLower } && entry.bounds.contains { !$0.isLower }
        }
        for entry in (closed.map { [$0] } ?? []) + bounds {
            if let keys = range(entry.bounds, column: entry.column, scalar: entry.scalar, tableState: tableState) {
                return (keys, entry.conjuncts == conjuncts.count, entry.column)
            }
        }
        return nil
    }

    /// Whether some condition of `node` that every match must meet could be answered by an index of
    /// `tableState` (an equality, `IN` or range on an indexed property), judged from the query alone.
    static func hasIndexedConjunct(_ node: PlanNode, tableState: TableState) -> Bool {
        let conjuncts: [PlanNode]
        switch node {
        case .and(let parts): conjuncts = parts
        default: conjuncts = [node]
        }
        return conjuncts.contains { conjunct in
            let column: Int
            if case .rowTest(let test) = conjunct, test.options.isEmpty, test.op == .equal || test.op == .in {
                column = test.column
            } else if let bounds = rangeBounds(conjunct) {
                column = bounds.column
            } else {
                return false
            }
            return tableState.indexes[column] != nil || tableState.schema.primaryKeyColumn == column
        }
    }

    /// One side of a range: `column op constant`, `op` one of `<`, `<=`, `>`, `>=`.
    struct Bound {
        let op: QueryOperator
        let constant: Value
        /// Whether it bounds the values from below (`>`, `>=`).
        var isLower: Bool { op == .greater || op == .greaterOrEqual }
    }

    /// The range bounds a conjunct puts on one column of the queried object's own row: a comparison with a
    /// constant, or `BETWEEN` (as `>=` lower and `<=` upper); nil for anything else.
    private static func rangeBounds(_ node: PlanNode) -> (column: Int, scalar: ScalarType, [Bound])? {
        switch node {
        case .rowTest(let test):
            guard test.options.isEmpty,
                test.op == .less || test.op == .lessOrEqual || test.op == .greater || test.op == .greaterOrEqual,
                case .constant(let constant) = test.operand
            else { return nil }
            return (test.column, test.scalar, [Bound(op: test.op, constant: constant)])
        case .between(.path(let path), let low, let high, nil):
            guard path.source == 0, path.steps.count == 1, case .values = path.terminal, let step = path.steps.first,
                step.column >= 0, step.type.collection == .single, !step.isLinkingObjects
            else { return nil }
            return (
                step.column, step.type.scalar,
                [Bound(op: .greaterOrEqual, constant: low), Bound(op: .lessOrEqual, constant: high)]
            )
        default:
            return nil
        }
    }

    /// The value to look up for a constant, converted to the column's stored kind; nil when no stored
    /// value can equal it (`age == 2.5`), and `.some(nil)` when the lookup is impossible.
    private static func lookupValue(_ value: Value, _ scalar: ScalarType) -> Value?? {
        switch (scalar, value) {
        case (_, .null): return .some(.null)
        case (.int8, _), (.int16, _), (.int32, _), (.int64, _):
            if case .int = value { return .some(value) }
            guard let d = QueryValues.double(value) else { return .some(nil) }
            // 2^63 is no Int64, but the scan finds the integers that convert to it (see `range`).
            if d == 0x1p63 { return .some(nil) }
            return Int64(exactly: d).map { .some(.int($0)) } ?? nil
        case (.date, .date(let d)) where d.timeIntervalSinceReferenceDate.isNaN:
            // NaN equals nothing in a query (as a full scan decides), though the index keeps NaN dates
            // under one key.
            return nil
        case (.bool, .bool), (.string, .string), (.date, .date), (.uuid, .uuid), (.objectId, .objectId):
            return .some(value)
        default: return .some(nil)
        }
    }

    private static func equality<Store: ReadableStore>(
        _ test: RowTest, table: TableID, store: Store
    )
        -> [ObjectKey]?
    {
        let constants: [Value]
        switch test.operand {
        case .constant(let value): constants = [value]
        case .list(let values): constants = values
        default: return nil
        }
        var lookups: [Value] = []
        for constant in constants {
            switch lookupValue(constant, test.scalar) {
            case .none: continue  // can never match
            case .some(.none): return nil
            case .some(.some(let value)): lookups.append(value)
            }
        }
        if lookups.count == 1 { return store.objects(table, column: test.column, equalTo: lookups[0]) }
        return store.objects(table, column: test.column, in: lookups)
    }

    /// Candidates for a range on an indexed integer or date column, sorted by key: the index is walked from
    /// the greatest lower bound and stops at the first value past an upper bound, so a closed range
    /// (`age BETWEEN {10, 20}`, `age >= 10 AND age < 20`) visits only the keys inside it.
    private static func range(
        _ bounds: [Bound], column: Int, scalar: ScalarType, tableState: TableState
    ) -> [ObjectKey]? {
        guard !bounds.isEmpty, !bounds.contains(where: { $0.constant.isNull }) else { return nil }
        let isDate: Bool
        switch scalar {
        case .int8, .int16, .int32, .int64: isDate = false
        case .date: isDate = true
        default: return nil
        }
        func value(_ key: IndexKey) -> Value? {
            switch key {
            case .int(let v) where !isDate: .int(v)
            case .double(let t) where isDate: .date(Date(timeIntervalSinceReferenceDate: t))
            default: nil
            }
        }
        // NaN is unordered (`QueryValues.order`), so no range against it matches, as in the scan.
        for bound in bounds {
            switch bound.constant {
            case .date(let d) where d.timeIntervalSinceReferenceDate.isNaN: return []
            case _ where QueryValues.double(bound.constant)?.isNaN == true: return []
            default: break
            }
        }
        if !isDate, let (low, high) = integerBounds(bounds) {
            // Integer bounds against integer values: plain comparisons, no `Value` per entry.
            var keys: [ObjectKey] = []
            guard low <= high else { return keys }
            func visit(_ key: IndexKey, _ object: ObjectKey) -> Bool {
                guard case .int(let v) = key, v <= high else { return false }
                keys.append(object)
                return true
            }
            if tableState.schema.primaryKeyColumn == column {
                tableState.primaryIndex.forEach(from: .int(low), inclusive: true) { key, entry in
                    visit(key, entry.object)
                }
            } else if let index = tableState.indexes[column] {
                index.forEach(from: IndexEntry(.int(low), ObjectKey(Int64.min)), inclusive: true) { entry, _ in
                    visit(entry.key, entry.object)
                }
            } else {
                return nil
            }
            keys.sort()
            return keys
        }
        // The walk starts at the greatest of the lower bounds' starts (every match is at or after each).
        var start: IndexKey = isDate ? .double(-Double.infinity) : .int(Int64.min)
        for bound in bounds where bound.isLower {
            guard let first = lowerStart(bound.constant, isDate: isDate) else { return nil }
            start = Swift.max(start, first)
        }
        var keys: [ObjectKey] = []
        func visit(_ key: IndexKey, _ object: ObjectKey) -> Bool {
            guard let v = value(key) else { return false }
            var matches = true
            for bound in bounds where !QueryValues.test(v, bound.op, bound.constant, []) {
                // Past an upper bound: so is every later key. Below a lower bound: keep going.
                if !bound.isLower { return false }
                matches = false
            }
            if matches { keys.append(object) }
            return true
        }
        if tableState.schema.primaryKeyColumn == column {
            tableState.primaryIndex.forEach(from: start, inclusive: true) { key, entry in visit(key, entry.object) }
        } else if let index = tableState.indexes[column] {
            index.forEach(from: IndexEntry(start, ObjectKey(Int64.min)), inclusive: true) { entry, _ in
                visit(entry.key, entry.object)
            }
        } else {
            return nil
        }
        keys.sort()
        return keys
    }

    /// The column and closed interval of integers that `node` is exactly, when it is an equality with an
    /// integer, or integer range bounds (one comparison, `BETWEEN`, or a top-level `AND` of them), on one
    /// integer property that is indexed or the primary key; nil otherwise.
    static func integerRange(_ node: PlanNode, tableState: TableState) -> (column: Int, low: Int64, high: Int64)? {
        let conjuncts: [PlanNode]
        switch node {
        case .and(let parts): conjuncts = parts
        default: conjuncts = [node]
        }
        var column: Int?
        var bounds: [Bound] = []
        for conjunct in conjuncts {
            let found: (Int, ScalarType, [Bound])
            if case .rowTest(let test) = conjunct, test.options.isEmpty, test.op == .equal,
                case .constant(let constant) = test.operand
            {
                found = (
                    test.column, test.scalar,
                    [Bound(op: .greaterOrEqual, constant: constant), Bound(op: .lessOrEqual, constant: constant)]
                )
            } else if let range = rangeBounds(conjunct) {
                found = range
            } else {
                return nil
            }
            switch found.1 {
            case .int8, .int16, .int32, .int64: break
            default: return nil
            }
            guard column == nil || column == found.0 else { return nil }
            column = found.0
            bounds += found.2
        }
        guard let column, tableState.indexes[column] != nil || tableState.schema.primaryKeyColumn == column,
            let (low, high) = integerBounds(bounds)
        else { return nil }
        return (column, low, high)
    }

    /// The closed interval of integers that meets every bound, when every bound's constant is an integer;
    /// nil otherwise (the general walk then compares as the scan does).
    private static func integerBounds(_ bounds: [Bound]) -> (low: Int64, high: Int64)? {
        var low = Int64.min
        var high = Int64.max
        for bound in bounds {
            guard case .int(let c) = bound.constant else { return nil }
            switch bound.op {
            case .greater:
                guard c < Int64.max else { return (1, 0) }  // nothing is greater
                low = Swift.max(low, c + 1)
            case .greaterOrEqual: low = Swift.max(low, c)
            case .less:
                guard c > Int64.min else { return (1, 0) }  // nothing is less
                high = Swift.min(high, c - 1)
            default: high = Swift.min(high, c)
            }
        }
        return (low, high)
    }

    /// The first index key a walk for `column > constant` or `>= constant` must visit, or nil when the
    /// constant cannot bound the column (a date against a number).
    private static func lowerStart(_ constant: Value, isDate: Bool) -> IndexKey? {
        if isDate {
            guard case .date(let d) = constant else { return nil }
            return .double(d.timeIntervalSinceReferenceDate)
        }
        // Exact: an integer compares with integers as integers (through a double, 2^53 + 3 would round up
        // to 2^53 + 4 and the walk would start past it).
        if case .int(let v) = constant { return .int(v) }
        guard let d = QueryValues.double(constant) else { return nil }
        // Every match must be at or after the key returned (visits test each key). Below -2^63 (-infinity
        // included) every value may match; in [-2^63, 2^63) `rounded(.down)` stays in Int64's range. At 2^63
        // or more (+infinity included), no Int64 is greater, but the scan compares an integer with a double
        // that is not an Int64 as doubles, and the integers within 512 of Int64.max convert to 2^63 itself:
        // start before them.
        if d >= 0x1p63 { return .int(Int64.max - 1024) }
        return .int(d < -0x1p63 ? Int64.min : Int64(d.rounded(.down)))
    }
}
