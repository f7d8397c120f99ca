import ActorStorePersistence
import Foundation

/// Chooses an index for a query: equality and `IN` on the primary key or an indexed property, and
/// ranges (`<`, `<=`, `>`, `>=`, `BETWEEN`) on an indexed integer or date property. Only a condition that
/// must hold for every match qualifies (the whole predicate, or one part of a top-level `AND`).
enum IndexPlanner {
    /// The keys to test instead of a full scan, in key order; `exact` when they are exactly the matches.
    static func candidates<Store: ReadableStore>(
        _ node: PlanNode, table: TableID, store: Store
    )
        -> (keys: [ObjectKey], exact: Bool)?
    {
        guard let tableState = store.state.tables[table] else { return nil }
        let conjuncts: [PlanNode]
        switch node {
        case .and(let parts): conjuncts = parts
        default: conjuncts = [node]
        }
        var range: (RowTest, [ObjectKey])?
        for case .rowTest(let test) in conjuncts where test.options.isEmpty {
            let indexed = tableState.indexes[test.column] != nil || tableState.schema.primaryKeyColumn == test.column
            guard indexed else { continue }
            if test.op == .equal || test.op == .in, let keys = equality(test, table: table, store: store) {
                return (keys, conjuncts.count == 1)
            }
            if range == nil, let keys = self.range(test, tableState: tableState) { range = (test, keys) }
        }
        if let range { return (range.1, conjuncts.count == 1) }
        return nil
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

    /// Candidates for a range on an indexed integer or date column, sorted by key.
    private static func range(_ test: RowTest, tableState: TableState) -> [ObjectKey]? {
        guard test.op == .less || test.op == .lessOrEqual || test.op == .greater || test.op == .greaterOrEqual,
            case .constant(let constant) = test.operand, !constant.isNull
        else { return nil }
        let isDate: Bool
        switch test.scalar {
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
        switch constant {
        case .date(let d) where d.timeIntervalSinceReferenceDate.isNaN: return []
        case _ where QueryValues.double(constant)?.isNaN == true: return []
        default: break
        }
        let start: IndexKey
        let ascendingFromConstant = test.op == .greater || test.op == .greaterOrEqual
        if ascendingFromConstant {
            if isDate {
                guard case .date(let d) = constant else { return nil }
                start = .double(d.timeIntervalSinceReferenceDate)
            } else if case .int(let v) = constant {
                // Exact: an integer compares with integers as integers (through a double, 2^53 + 3 would
                // round up to 2^53 + 4 and the walk would start past it).
                start = .int(v)
            } else {
                guard let d = QueryValues.double(constant) else { return nil }
                // The first key to visit: every match must be at or after it (visits test each key). Below
                // -2^63 (-infinity included) every value may match; in [-2^63, 2^63) `rounded(.down)` stays
                // in Int64's range. At 2^63 or more (+infinity included), no Int64 is greater, but the scan
                // compares an integer with a double that is not an Int64 as doubles, and the integers within
                // 512 of Int64.max convert to 2^63 itself: start before them.
                if d >= 0x1p63 {
                    start = .int(Int64.max - 1024)
                } else {
                    start = .int(d < -0x1p63 ? Int64.min : Int64(d.rounded(.down)))
                }
            }
        } else {
            start = isDate ? .double(-Double.infinity) : .int(Int64.min)
        }
        var keys: [ObjectKey] = []
        func visit(_ key: IndexKey, _ object: ObjectKey) -> Bool {
            guard let v = value(key) else { return false }
            if QueryValues.test(v, test.op, constant, []) {
                keys.append(object)
                return true
            }
            return ascendingFromConstant  // below the constant for `>`: keep going; past it for `<`: stop
        }
        if tableState.schema.primaryKeyColumn == test.column {
            tableState.primaryIndex.forEach(from: start, inclusive: true) { key, entry in visit(key, entry.object) }
        } else if let index = tableState.indexes[test.column] {
            index.forEach(from: IndexEntry(start, ObjectKey(Int64.min)), inclusive: true) { entry, _ in
                visit(entry.key, entry.object)
            }
        } else {
            return nil
        }
        keys.sort()
        return keys
    }
}
