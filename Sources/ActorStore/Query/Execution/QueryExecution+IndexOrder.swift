import ActorStorePersistence
import Foundation

// Sorting by walking an index: `sorted(by: \.id).limit(1)` reads one index entry instead of sorting every key.

extension QueryExecutor {
    /// The keys of a query whose first ordering is a sort by one indexed integer property (or integer
    /// primary key) of the queried class, in that order, read from the index in order instead of sorted;
    /// nil when no index fits, or when the walk would not pay (a filter without a limit, or a filter an
    /// index answers: its few matches are sorted faster).
    ///
    /// Takes the sort and the limit right after it (when there is one); later orderings apply as usual.
    /// The order is the sort's exactly: nil first when ascending and last when descending, equal values in
    /// key order.
    ///
    /// - Complexity: O(log n + k) index entries for a limit k without a filter (descending: O(k log n)); with
    ///   a filter, each entry visited until k matches is tested against its row. Without a limit, only an
    ///   ascending sort without a filter walks the index (O(n), no sort).
    func indexOrderedKeys(
        _ node: PlanNode?, table: TableID, _ description: QueryDescription, _ plan: ResolvedQuery
    ) -> [ObjectKey]? {
        guard description.base == .table, case .sort(let sortKeys)? = description.orderings.first,
            sortKeys.count == 1, let tableState = store.state.tables[table]
        else { return nil }
        var limit: Int?
        if description.orderings.count > 1, case .limit(let n) = description.orderings[1] { limit = n }
        if let node {
            guard limit != nil, !IndexPlanner.hasIndexedConjunct(node, tableState: tableState) else { return nil }
        }
        // Descending walks look each entry up by rank (O(log n) each): for every object, sorting is as fast.
        if limit == nil, case .sort(let keys) = description.orderings[0], keys.first?.ascending == false {
            return nil
        }
        guard case .sort(let resolvedKeys)? = plan.orderings.first, let path = resolvedKeys.first?.path,
            path.source == 0,
            path.steps.count == 1, let step = path.steps.first, step.column >= 0, step.type.collection == .single
        else { return nil }
        switch step.type.scalar {
        case .int8, .int16, .int32, .int64: break
        default: return nil  // other kinds' index order is not always the sort's (strings, NaN dates)
        }
        let column = step.column
        let isPrimaryKey = tableState.schema.primaryKeyColumn == column
        guard isPrimaryKey || tableState.indexes[column] != nil else { return nil }
        let wanted = limit ?? Int.max
        guard wanted > 0 else { return [] }
        let state = store.state
        var result: [ObjectKey] = []
        /// Takes one object in sort order; false once enough are found.
        func take(_ object: ObjectKey) -> Bool {
            if let node, !matches(node, table: table, key: object, in: state) { return true }
            result.append(object)
            return result.count < wanted
        }
        if sortKeys[0].ascending {
            if isPrimaryKey {
                tableState.primaryIndex.forEach(from: nil, inclusive: true) { _, entry in take(entry.object) }
            } else {
                tableState.indexes[column]?.forEach(from: nil, inclusive: true) { entry, _ in take(entry.object) }
            }
            return result
        }
        if isPrimaryKey {
            tableState.primaryIndex.forEachDescending { _, entry in take(entry.object) }
            return result
        }
        guard let index = tableState.indexes[column] else { return nil }
        // Descending, equal values in key order: each run of equal values is taken in reverse of the walk.
        var run: [ObjectKey] = []
        var runValue: IndexKey?
        for offset in stride(from: index.count - 1, through: 0, by: -1) {
            let entry = index.element(at: offset).key
            if entry.key != runValue {
                for object in run.reversed() { guard take(object) else { return result } }
                run.removeAll(keepingCapacity: true)
                runValue = entry.key
            }
            run.append(entry.object)
        }
        for object in run.reversed() { guard take(object) else { return result } }
        return result
    }
}
