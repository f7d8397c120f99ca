import ActorStorePersistence
import Foundation

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
    /// `min`, `max`, `sum` or `average` of a property over the matches.
    func aggregate(
        _ description: QueryDescription, _ path: QueryKeyPath, _ terminal: PlanTerminal,
        cache: QueryPlanCache? = nil
    )
        throws(RealmError) -> Value
    {
        if isMissingStoredClass { return .null }  // no objects: no minimum, and a sum of 0
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
        let values = columnValues(keys(description, cache: cache), table: table, resolved)
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
