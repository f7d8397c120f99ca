import ActorStorePersistence
import Foundation

/// The fast path of filtering: a comparison of one column of the queried object with a constant,
/// compiled into a closure that reads the column straight from the row's bytes — no `Value`, no `String`
/// for case-sensitive string operators, no whole-row decoding.
///
/// Every test here must agree exactly with the generic evaluation (`QueryValues.test`); the differential
/// tests check both against plain Swift.
enum RowTestCompiler {
    /// A row test for `node`, or nil when it is not a single-column comparison with a constant.
    static func compile(_ node: PlanNode) -> PlanNode? {
        guard case .compare(.path(let path), let op, let rhs, let options, nil) = node, path.source == 0,
            path.steps.count == 1, case .values = path.terminal, let step = path.steps.first, step.column >= 0,
            step.type.collection == .single, !step.isLinkingObjects
        else { return nil }
        let column = step.column
        let optional = step.type.isOptional
        let test: RowPredicate?
        switch (step.type.scalar, rhs) {
        case (.int8, .constant(let value)), (.int16, .constant(let value)), (.int32, .constant(let value)),
            (.int64, .constant(let value)):
            test = integer(column, step.type.scalar, optional, op, value)
        case (.int8, .list(let values)), (.int16, .list(let values)), (.int32, .list(let values)),
            (.int64, .list(let values)):
            test = integerIn(column, step.type.scalar, optional, op, values)
        case (.double, .constant(let value)), (.float, .constant(let value)):
            test = floating(column, optional, op, value, date: false)
        case (.date, .constant(let value)):
            test = floating(column, optional, op, value, date: true)
        case (.bool, .constant(let value)):
            test = boolean(column, optional, op, value)
        case (.string, .constant(let value)):
            test = string(column, optional, op, value, options)
        case (.string, .list(let values)) where op == .in && options.isEmpty:
            test = stringIn(column, optional, values)
        default:
            test = nil
        }
        return test.map {
            .rowTest(
                RowTest(
                    column: column, scalar: step.type.scalar, op: op, operand: rhs, options: options, test: $0.test))
        }
    }

    private static func compare<T: Comparable>(_ x: T, _ op: QueryOperator, _ c: T) -> Bool {
        switch op {
        case .equal, .in: x == c
        case .notEqual: x != c
        case .less: x < c
        case .lessOrEqual: x <= c
        case .greater: x > c
        case .greaterOrEqual: x >= c
        default: false
        }
    }

    /// `null op value` (the column read nil).
    private static func nullResult(_ op: QueryOperator, _ value: Value) -> Bool {
        switch op {
        case .equal, .in: value.isNull
        case .notEqual: !value.isNull
        default: false
        }
    }

    private static func integer(
        _ column: Int, _ scalar: ScalarType, _ optional: Bool, _ op: QueryOperator, _ value: Value
    ) -> RowPredicate? {
        let nullMatches = nullResult(op, value)
        switch value {
        case .null:
            return RowPredicate { row in
                let isNull = ((try? row.int64(at: column, type: scalar, optional: optional)) ?? nil) == nil
                return isNull ? nullMatches : !nullMatches
            }
        case .int(let c):
            return RowPredicate { row in
                guard let x = try? row.int64(at: column, type: scalar, optional: optional) else { return nullMatches }
                return compare(x, op, c)
            }
        case .double, .float:
            guard let c = QueryValues.double(value) else { return nil }
            if let exact = Int64(exactly: c) {
                return RowPredicate { row in
                    guard let x = try? row.int64(at: column, type: scalar, optional: optional) else {
                        return nullMatches
                    }
                    return compare(x, op, exact)
                }
            }
            return RowPredicate { row in
                guard let x = try? row.int64(at: column, type: scalar, optional: optional) else { return nullMatches }
                return c.isNaN ? op == .notEqual : compare(Double(x), op, c)
            }
        default: return nil
        }
    }

    private static func integerIn(
        _ column: Int, _ scalar: ScalarType, _ optional: Bool, _ op: QueryOperator, _ values: [Value]
    ) -> RowPredicate? {
        guard op == .in else { return nil }
        var set = Set<Int64>()
        var matchesNull = false
        for value in values {
            switch value {
            case .null: matchesNull = true
            case .int(let v): set.insert(v)
            case .double, .float:
                if let d = QueryValues.double(value), let exact = Int64(exactly: d) { set.insert(exact) }
            default: return nil
            }
        }
        return RowPredicate { [set, matchesNull] row in
            guard let x = try? row.int64(at: column, type: scalar, optional: optional) else { return matchesNull }
            return set.contains(x)
        }
    }

    private static func floating(
        _ column: Int, _ optional: Bool, _ op: QueryOperator, _ value: Value, date: Bool
    ) -> RowPredicate? {
        let nullMatches = nullResult(op, value)
        let constant: Double
        switch value {
        case .null:
            return RowPredicate { row in
                let isNull = ((try? row.double(at: column, optional: optional)) ?? nil) == nil
                return isNull ? nullMatches : !nullMatches
            }
        case .date(let d) where date: constant = d.timeIntervalSinceReferenceDate
        case .int, .double, .float:
            guard !date, let c = QueryValues.double(value) else { return nil }
            constant = c
        default: return nil
        }
        guard op != .in else { return nil }
        return RowPredicate { row in
            guard let x = try? row.double(at: column, optional: optional) else { return nullMatches }
            return compare(x, op, constant)
        }
    }

    private static func boolean(
        _ column: Int, _ optional: Bool, _ op: QueryOperator, _ value: Value
    )
        -> RowPredicate?
    {
        let nullMatches = nullResult(op, value)
        guard op == .equal || op == .notEqual || op == .in else { return nil }
        let constant: Bool?
        switch value {
        case .null: constant = nil
        case .bool(let b): constant = b
        default: return nil
        }
        return RowPredicate { row in
            guard let x = try? row.bool(at: column, optional: optional) else { return nullMatches }
            guard let constant else { return !nullMatches }
            return (x == constant) == (op != .notEqual)
        }
    }

    /// The UTF-8 bytes of a string column (without the optional marker), or nil for null.
    @inline(__always)
    private static func utf8(_ row: RowView, _ column: Int, _ optional: Bool) -> UnsafeRawBufferPointer?? {
        guard let bytes = row.columnBytes(column) else {
            return optional ? .some(nil) : .some(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        guard optional else { return .some(bytes) }
        if bytes.isEmpty { return .some(nil) }
        guard bytes[0] == RowFormat.presentMarker else { return nil }  // corrupt
        return .some(UnsafeRawBufferPointer(rebasing: bytes[1...]))
    }

    private static func string(
        _ column: Int, _ optional: Bool, _ op: QueryOperator, _ value: Value, _ options: QueryOptions
    ) -> RowPredicate? {
        let nullMatches = nullResult(op, value)
        guard case .string(let constantString) = value else {
            guard value.isNull else { return nil }
            return RowPredicate { row in
                guard let read = utf8(row, column, optional) else { return false }
                return read == nil ? nullMatches : !nullMatches
            }
        }
        if !options.isEmpty {
            // Folding needs the decoded string.
            let folded = QueryValues.fold(constantString, options)
            return RowPredicate { row in
                guard let s = try? row.string(at: column, optional: optional) else { return nullMatches }
                return QueryValues.test(.string(s), op, .string(folded), options)
            }
        }
        let needle = Array(constantString.utf8)
        let pattern = Array(constantString.unicodeScalars)
        return RowPredicate { row in
            guard let read = utf8(row, column, optional) else { return false }
            guard let bytes = read else { return nullMatches }
            return needle.withUnsafeBytes { n in
                switch op {
                case .equal, .in: return bytes.count == n.count && same(bytes, 0, n)
                case .notEqual: return !(bytes.count == n.count && same(bytes, 0, n))
                case .beginsWith: return bytes.count >= n.count && same(bytes, 0, n)
                case .endsWith: return bytes.count >= n.count && same(bytes, bytes.count - n.count, n)
                case .contains: return QueryValues.contains(bytes, n)
                case .like:
                    guard let s = String(validating: bytes, as: UTF8.self) else { return false }
                    return QueryValues.like(Array(s.unicodeScalars), pattern)
                case .less, .lessOrEqual, .greater, .greaterOrEqual:
                    let m = Swift.min(bytes.count, n.count)
                    var c = 0
                    if m > 0, let a = bytes.baseAddress, let b = n.baseAddress { c = Int(memcmp(a, b, m)) }
                    if c == 0 { c = bytes.count == n.count ? 0 : (bytes.count < n.count ? -1 : 1) }
                    return compare(c, op, 0)
                }
            }
        }
    }

    /// Whether `a[offset..<offset + b.count]` equals `b` (the caller checked the length).
    @inline(__always)
    private static func same(_ a: UnsafeRawBufferPointer, _ offset: Int, _ b: UnsafeRawBufferPointer) -> Bool {
        guard b.count > 0 else { return true }
        guard let pa = a.baseAddress, let pb = b.baseAddress else { return false }
        return memcmp(pa + offset, pb, b.count) == 0
    }

    private static func stringIn(_ column: Int, _ optional: Bool, _ values: [Value]) -> RowPredicate? {
        var set = Set<[UInt8]>()
        var matchesNull = false
        for value in values {
            switch value {
            case .null: matchesNull = true
            case .string(let s): set.insert(Array(s.utf8))
            default: return nil
            }
        }
        return RowPredicate { [set, matchesNull] row in
            guard let read = utf8(row, column, optional) else { return false }
            guard let bytes = read else { return matchesNull }
            return set.contains(Array(bytes))
        }
    }
}
