import ActorStorePersistence
import Foundation

// The query methods that name properties by Swift key paths, a `#Predicate` or the `where` builder: for the
// collections of a model class (not `DynamicResults`).

extension ComposableQuery where Root: Object {
    /// The objects matching a Foundation `#Predicate`:
    /// `filter(#Predicate<Dog> { $0.age < 2 && $0.name.starts(with: "B") })`.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` naming an expression that has no translation.
    public func filter(_ predicate: Foundation.Predicate<Root>) throws(RealmError) -> QueryResults {
        let translated = try translatePredicate(predicate)
        return try adding { $0.predicates.append(translated) }
    }

    /// The objects matching a type-safe query: `where { $0.age < 2 && $0.name.starts(with: "B") }`.
    public func `where`(_ isIncluded: (Query<Root>) -> Query<Bool>) -> QueryResults {
        let predicate = makeWherePredicate(Root.self, isIncluded)
        do {
            return try adding { $0.predicates.append(predicate) }
        } catch {
            preconditionFailure("where { … } built an invalid query: \(error.message)")
        }
    }

    /// The results sorted by a property: `sorted(by: \.name)`, `sorted(by: \.owner?.name, ascending: false)`.
    public func sorted<V: _PersistableScalar>(by keyPath: KeyPath<Root, V>, ascending: Bool = true) -> QueryResults {
        let path = QueryCalls.keyPath(keyPath, Root.self)
        return addingValidated { $0.orderings.append(.sort([QuerySortKey(path: path, ascending: ascending)])) }
    }

    /// The results sorted by several keys, the first deciding first:
    /// `sorted(by: [SortDescriptor(\.age, order: .reverse), SortDescriptor(\.name)])`. Only the key path
    /// and order of each descriptor are used.
    public func sorted(by descriptors: [SortDescriptor<Root>]) -> QueryResults {
        let keys = QueryCalls.sortKeys(descriptors)
        return addingValidated { $0.orderings.append(.sort(keys)) }
    }

    /// The first object for each distinct combination of values of the key paths, in the current order.
    public func distinct(by keyPaths: [PartialKeyPath<Root>]) -> QueryResults {
        let paths = keyPaths.map { QueryCalls.keyPath($0, Root.self) }
        return addingValidated { $0.orderings.append(.distinct(paths)) }
    }

    // MARK: Aggregates by key path

    /// The smallest value of a property among the matches: `min(of: \.age)`.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func min<T: _PersistableScalar & Comparable>(of keyPath: KeyPath<Root, T>) -> T? {
        QueryCalls.convert(aggregate(keyPath, .min), to: T.self)
    }

    /// The largest value of a property among the matches: `max(of: \.age)`.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func max<T: _PersistableScalar & Comparable>(of keyPath: KeyPath<Root, T>) -> T? {
        QueryCalls.convert(aggregate(keyPath, .max), to: T.self)
    }

    /// The sum of a numeric property over the matches: `sum(of: \.price)`.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func sum<T: _PersistableScalar & AdditiveArithmetic>(of keyPath: KeyPath<Root, T>) -> T {
        QueryCalls.convert(aggregate(keyPath, .sum), to: T.self) ?? .zero
    }

    /// The average of a numeric property over the matches, or nil if there are none: `average(of: \.age)`.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func average<T: _PersistableScalar & AdditiveArithmetic>(of keyPath: KeyPath<Root, T>) -> Double? {
        QueryCalls.convert(aggregate(keyPath, .avg), to: Double.self)
    }

    /// An aggregate of the property a Swift key path reads (whose type the compiler checked).
    private func aggregate(_ keyPath: AnyKeyPath, _ terminal: PlanTerminal) -> Value {
        do {
            return try aggregate(QueryCalls.keyPath(keyPath, Root.self), terminal)
        } catch {
            preconditionFailure("Cannot aggregate \(keyPath): \(error.message)")
        }
    }
}
