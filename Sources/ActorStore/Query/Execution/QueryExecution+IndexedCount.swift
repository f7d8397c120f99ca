import ActorStorePersistence
import Foundation

// Counting the matches of an indexed equality or range from the index's ranks, without visiting entries or rows.

extension QueryExecutor {
    /// The number of objects matching `description`, counted from an index when its predicate is exactly one
    /// equality or range (`==`, `<`, `<=`, `>`, `>=`, `BETWEEN`, or two bounds joined by `AND`) on an integer
    /// property that is indexed or the primary key, with integer constants; nil otherwise.
    ///
    /// - Complexity: O(log n): two rank lookups in the index.
    func indexedCount(_ description: QueryDescription, cache: QueryPlanCache? = nil) -> Int? {
        guard description.base == .table, description.orderings.isEmpty, description.predicate != nil,
            let table, let tableState = store.state.tables[table]
        else { return nil }
        guard let node = resolved(description, cache: cache).node,
            let (column, low, high) = IndexPlanner.integerRange(node, tableState: tableState)
        else { return nil }
        guard low <= high else { return 0 }
        if tableState.schema.primaryKeyColumn == column {
            let integers = tableState.primaryIndex
            return integers.count(from: low, through: high)
        }
        guard let index = tableState.indexes[column] else { return nil }
        // Object keys are below Int64.max, so (high, Int64.max) is past every entry of `high`.
        return index.countBelow(IndexEntry(.int(high), ObjectKey(Int64.max)))
            - index.countBelow(IndexEntry(.int(low), ObjectKey(Int64.min)))
    }
}
