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
