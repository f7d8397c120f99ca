import ActorStorePersistence
import Foundation

/// A collection of objects that a query describes and that composes further queries: ``Results``,
/// ``FrozenResults``, ``DynamicResults``, and the ``List``, ``MutableSet`` and ``LinkingObjects`` of objects.
///
/// The query methods are written once, here, for all of them. `filter`, `where`, `sorted`, `distinct` and
/// `limit` only compose a query and return a ``QueryResults`` (nothing runs until you read it); `min`, `max`,
/// `sum` and `average` run it. Each kind returns its own kind of results:
///
/// | called on | returns |
/// | --- | --- |
/// | ``Results`` | ``Results``, live in the same realm |
/// | ``FrozenResults`` | ``FrozenResults`` of the same frozen version |
/// | ``DynamicResults`` | ``DynamicResults`` (predicate strings and key paths by name only) |
/// | ``List``, ``MutableSet``, ``LinkingObjects`` of objects | live ``Results`` over the members, in the collection's order |
///
/// ```swift
/// // Works on realm.objects(Person.self), a frozen copy of it, or a List<Person>.
/// func adults<People: ComposableQuery>(_ people: People) throws -> People.QueryResults
///     where People.Root == Person
/// {
///     try people.filter("age >= 18").sorted(byKeyPath: "name")
/// }
/// ```
///
/// The methods taking Swift key paths, a `#Predicate` or the type-safe `where` builder need a model class
/// (`Root: Object`); ``DynamicResults`` names properties by strings. See <doc:Queries> for the predicate
/// language.
///
/// Only ActorStore's types conform: the underscored requirements take values only ActorStore makes.
///
/// - Important: The results keep the isolation of the collection they come from: those of a ``Results``, a
///   ``DynamicResults`` or a managed collection are live, not `Sendable`, and stay inside their ``Realm``
///   actor (or migration block); those of a ``FrozenResults`` are `Sendable` and usable from any task.
public protocol ComposableQuery: Sequence {
    /// The class of the objects queried, where the key paths the methods take start (`Dog` for
    /// `Results<Dog>`, `FrozenResults<Dog>` or `List<Dog>`; ``DynamicObject`` for ``DynamicResults``).
    associatedtype Root
    /// What the query methods return: the same kind of results (live, frozen or dynamic) with the query
    /// composed further.
    associatedtype QueryResults: ComposableQuery
    where QueryResults.Root == Root, QueryResults.QueryResults == QueryResults

    /// The query evaluated (an implementation detail of the query methods).
    var _query: _QueryValue { get }

    /// Runs queries against the version and schema this collection reads (an implementation detail of the
    /// query methods).
    var _queryRunner: _QueryRunner { get }

    /// The results of `query` read where this collection reads (an implementation detail of the query
    /// methods: `query` is checked against the schema before).
    func _withQuery(_ query: _QueryValue) -> QueryResults
}

/// A query composed by ``ComposableQuery``'s methods: an opaque implementation detail.
public struct _QueryValue: Sendable {
    let description: QueryDescription
    /// Where the query's plan is kept (see `QueryPlanCache`): the results' own, or, for a query just
    /// built, the plan that checked it, which the results made of it start with. Nil: a fresh one.
    let plans: QueryPlanCache?

    init(_ description: QueryDescription, plans: QueryPlanCache? = nil) {
        self.description = description
        self.plans = plans
    }
}

/// Runs queries for ``ComposableQuery``'s methods: an opaque implementation detail.
public struct _QueryRunner {
    let executor: QueryExecutor

    init(_ executor: QueryExecutor) { self.executor = executor }
}

// MARK: Composing

extension ComposableQuery {
    /// The results of this query changed by `change`, checked against the schema.
    func adding(_ change: (inout QueryDescription) -> Void) throws(RealmError) -> QueryResults {
        var query = _query.description
        change(&query)
        let plans = try _queryRunner.executor.validate(query)
        return _withQuery(_QueryValue(query, plans: plans))
    }

    /// The results of this query changed by `change`, which cannot make it invalid (a key path a Swift key
    /// path gave, or a limit).
    func addingValidated(_ change: (inout QueryDescription) -> Void) -> QueryResults {
        var query = _query.description
        change(&query)
        return _withQuery(_QueryValue(query))
    }

    /// The results of this query with a limit of `n` after its orderings, starting with this query's plan
    /// plus the limit (a limit has no key path to resolve).
    func addingLimit(_ n: Int) -> QueryResults {
        let current = _query
        var query = current.description
        query.orderings.append(.limit(n))
        return _withQuery(_QueryValue(query, plans: current.plans?.appendingLimit(n)))
    }

    /// The value of an aggregate of the property at `path` over the matches.
    func aggregate(_ path: QueryKeyPath, _ terminal: PlanTerminal) throws(RealmError) -> Value {
        let query = _query
        return try _queryRunner.executor.aggregate(query.description, path, terminal, cache: query.plans)
    }

    private func aggregate(_ property: String, _ terminal: PlanTerminal) throws(RealmError) -> Value {
        try aggregate(try PredicateParser.parseKeyPath(property), terminal)
    }

    /// The objects matching a predicate string, as in Realm:
    /// `filter("age < %@ AND name BEGINSWITH[c] %@", 2, "b")`. See <doc:Queries> for the grammar. An object
    /// given as an argument (a managed object, a ``DynamicObject``) is matched by identity (`owner == %@`).
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` with the position and what was expected, for a syntax
    ///   error, an unknown property, a type mismatch or missing arguments.
    public func filter(_ predicateFormat: String, _ args: Any...) throws(RealmError) -> QueryResults {
        let predicate = try PredicateParser.parse(predicateFormat, args)
        return try adding { $0.predicates.append(predicate) }
    }

    /// The results sorted by a property (or a property of a to-one link: `"owner.name"`). Sorts are
    /// stable: sorting sorted results again keeps their previous order among ties, so the last sort decides first.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property, a collection or a link.
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) throws(RealmError) -> QueryResults {
        let path = try PredicateParser.parseKeyPath(keyPath)
        return try adding { $0.orderings.append(.sort([QuerySortKey(path: path, ascending: ascending)])) }
    }

    /// The first object for each distinct combination of values of the key paths, in the current order.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property, a collection or a link.
    public func distinct(by keyPaths: [String]) throws(RealmError) -> QueryResults {
        var paths: [QueryKeyPath] = []
        for keyPath in keyPaths { paths.append(try PredicateParser.parseKeyPath(keyPath)) }
        return try adding { $0.orderings.append(.distinct(paths)) }
    }

    /// At most `maxCount` objects. Without a sort before it, evaluation stops after `maxCount` matches.
    public func limit(_ maxCount: Int) -> QueryResults {
        addingLimit(Swift.max(0, maxCount))
    }

    /// A short description of how the query runs (which index it uses, or a scan), for debugging.
    public func explain() -> String {
        let query = _query
        return _queryRunner.executor.explain(query.description, cache: query.plans)
    }

    // MARK: Aggregates by property name

    /// The smallest value of a property (numbers, dates, strings) among the matches; nil if there are none.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property or one of another type.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func min<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .min), to: T.self)
    }

    /// The largest value of a property (numbers, dates, strings) among the matches; nil if there are none.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property or one of another type.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func max<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .max), to: T.self)
    }

    /// The sum of a numeric property over the matches (0 when there are none).
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property or one that is not a number.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func sum<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T {
        QueryCalls.convert(try aggregate(property, .sum), to: T.self) ?? T._rlmScalarDefault
    }

    /// The average of a numeric property over the matches; nil if there are none.
    ///
    /// - Throws: ``RealmError/Code/invalidQuery`` for an unknown property or one that is not a number.
    /// - Complexity: O(n) in the matches: evaluates the query, then reads the property of each match.
    public func average<T: _PersistableScalar>(ofProperty property: String) throws(RealmError) -> T? {
        QueryCalls.convert(try aggregate(property, .avg), to: T.self)
    }
}
