import ActorStorePersistence
import Foundation

// Resolving a query once per schema: a `QueryDescription` becomes a `ResolvedQuery` (the predicate's plan,
// the key paths of its sorts and `distinct`s, and the first error found) against one schema, and a
// `QueryPlanCache` keeps it for as long as the schema it was resolved against is the one read. Building a
// query (`filter`, `sorted(byKeyPath:)`, ...) resolves it to check it and hands the plan to the results it
// makes, so their first evaluation does not resolve it again; later evaluations reuse it until the schema
// changes (a migration, or a schema change inside a write transaction), which the version's
// `DatabaseState/schemaGeneration` tells.

/// A query resolved against one schema: what the executor runs.
struct ResolvedQuery: Sendable {
    /// The predicate's plan.
    enum Predicate: Sendable {
        /// No predicate: every object matches.
        case none
        case node(PlanNode)
        /// The predicate does not resolve against this schema: nothing matches. (A query is checked when
        /// it is built, so this happens only when the schema lost a property the query reads.)
        case unresolvable
    }

    /// An ordering with its key paths resolved; a key path that does not resolve is nil and skipped.
    enum Ordering: Sendable {
        case sort([(path: PlanPath?, ascending: Bool)])
        case distinct([PlanPath?])
        case limit(Int)
    }

    let predicate: Predicate
    /// The orderings, in the order of the description's.
    let orderings: [Ordering]
    /// The first error checking the query found (the predicate's first, then the orderings' in order):
    /// what building the query throws.
    let error: RealmError?

    /// The plan of the predicate, nil without one or when it does not resolve.
    var node: PlanNode? {
        if case .node(let node) = predicate { return node }
        return nil
    }

    /// An empty plan (a class the version does not have, read by its stored schema: nothing to check).
    static let unchecked = ResolvedQuery(predicate: .none, orderings: [], error: nil)
}

extension QueryExecutor {
    /// Resolves `description` against the executor's schema: once per query and schema when `cache` is
    /// given (the plan it holds is reused while it was resolved against this schema).
    func resolved(_ description: QueryDescription, cache: QueryPlanCache?) -> ResolvedQuery {
        guard let cache else { return resolve(description) }
        let key = QueryPlanCache.Key(self)
        if let plan = cache.plan(for: key) { return plan }
        let plan = resolve(description)
        cache.store(plan, for: key)
        return plan
    }

    /// Resolves `description` against the executor's schema (see ``resolved(_:cache:)`` for the cached way).
    private func resolve(_ description: QueryDescription) -> ResolvedQuery {
        if isMissingStoredClass { return .unchecked }
        var resolver = QueryResolver(schema: schema, queried: queried)
        var error: RealmError?
        let predicate: ResolvedQuery.Predicate
        if let source = description.predicate {
            do throws(RealmError) {
                predicate = .node(try resolver.resolve(source))
            } catch let failure {
                predicate = .unresolvable
                error = failure
            }
        } else {
            predicate = .none
        }
        func path(_ path: QueryKeyPath, _ purpose: String) -> PlanPath? {
            do throws(RealmError) {
                return try singleValuePath(path, &resolver, purpose: purpose)
            } catch let failure {
                if error == nil { error = failure }
                return nil
            }
        }
        var orderings: [ResolvedQuery.Ordering] = []
        for ordering in description.orderings {
            switch ordering {
            case .sort(let keys):
                orderings.append(.sort(keys.map { (path($0.path, "sort by"), $0.ascending) }))
            case .distinct(let paths):
                orderings.append(.distinct(paths.map { path($0, "distinct by") }))
            case .limit(let n):
                if n < 0, error == nil { error = QueryResolver.error("a limit must be 0 or more, not \(n)") }
                orderings.append(.limit(n))
            }
        }
        return ResolvedQuery(predicate: predicate, orderings: orderings, error: error)
    }
}

/// The plan of one query, kept while the schema it was resolved against is the one read: each
/// ``Results``, ``FrozenResults``, ``DynamicResults`` and query observation has one.
///
/// The plan is keyed by the version's ``DatabaseState/schemaGeneration`` (a number no other schema of the
/// process has had, so a rolled-back schema change cannot be mistaken for the schema before or after it),
/// the class-to-table bindings it was resolved with and the class queried.
final class QueryPlanCache: Sendable {
    /// What a plan depends on besides the query.
    struct Key {
        let generation: UInt64
        /// The bindings the plan read (nil for a class read by its stored schema: its plan reads none).
        let bindings: SchemaBindings?
        /// The model class queried (nil for a class read by its stored schema, which the generation fixes).
        let info: ObjectSchemaInfo?

        init(_ executor: QueryExecutor) {
            generation = executor.schema.state.schemaGeneration
            switch executor.queried {
            case .model(let info): (bindings, self.info) = (executor.schema.bindings, info)
            case .stored: (bindings, info) = (nil, nil)
            }
        }

        func matches(_ other: Key) -> Bool {
            generation == other.generation && bindings === other.bindings && info === other.info
        }
    }

    private let entry = Locked<(key: Key, plan: ResolvedQuery)?>(nil)

    init() {}

    /// A cache holding `plan`, resolved by `executor` (the query built was checked with it).
    init(_ plan: ResolvedQuery, resolvedBy executor: QueryExecutor) {
        store(plan, for: Key(executor))
    }

    func plan(for key: Key) -> ResolvedQuery? {
        entry.withLock { entry in
            guard let entry, entry.key.matches(key) else { return nil }
            return entry.plan
        }
    }

    func store(_ plan: ResolvedQuery, for key: Key) {
        entry.withLock { $0 = (key, plan) }
    }

    /// A cache for this query with a limit of `n` appended: this one's plan, if any, plus the limit.
    func appendingLimit(_ n: Int) -> QueryPlanCache {
        let limited = QueryPlanCache()
        if let (key, plan) = entry.withLock({ $0 }) {
            limited.store(
                ResolvedQuery(predicate: plan.predicate, orderings: plan.orderings + [.limit(n)], error: plan.error),
                for: key)
        }
        return limited
    }
}

/// Counts the resolutions of queries (``QueryResolver``s made) in a task, for tests: bind
/// ``QueryResolutionCounter/current`` around the code measured.
final class QueryResolutionCounter: Sendable {
    /// The counter of the current task, if one is bound.
    @TaskLocal static var current: QueryResolutionCounter?

    private let count = Locked(0)

    init() {}

    /// The number of resolutions counted.
    var resolutions: Int { count.withLock { $0 } }

    func increment() { count.withLock { $0 += 1 } }
}
