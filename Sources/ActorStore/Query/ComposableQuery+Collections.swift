import ActorStorePersistence
import Foundation

/// A managed collection of objects that is queried as ``Results``: `List`, `MutableSet` and `LinkingObjects`
/// of `Object`s. The query methods of ``ComposableQuery`` return live `Results` over the collection's
/// members, in the collection's order.
public protocol _QueryableCollection: ComposableQuery
where Element: Object, Root == Element, QueryResults == Results<Element> {
    /// The members as `Results` (a managed collection only: querying an unmanaged one is a programmer
    /// error).
    var _queryResults: Results<Element> { get }
}

extension _QueryableCollection {
    /// The members' query (see ``ComposableQuery``).
    public var _query: _QueryValue { _queryResults._query }

    /// Runs queries against the version the owner's realm reads (see ``ComposableQuery``).
    public var _queryRunner: _QueryRunner { _queryResults._queryRunner }

    /// Live results of `query` in the owner's realm (see ``ComposableQuery``).
    public func _withQuery(_ query: _QueryValue) -> Results<Element> { _queryResults._withQuery(query) }
}

extension QueryCalls {
    /// The `Results` over a managed collection property of `owner`.
    static func results<E: Object>(_ owner: ObjectBase?, _ ordinal: Int, _ type: E.Type, what: String) -> Results<E> {
        guard let owner, let managed = owner._managed else {
            preconditionFailure("Only a managed \(what) can be queried: add its owner to a realm first.")
        }
        let column = managed.table.columns[ordinal]
        var query = QueryDescription()
        query.base = .collection(owner: managed.table.tableID, key: managed.key, column: column)
        return Results(context: managed.context, query: query)
    }
}

extension List: ComposableQuery, _QueryableCollection where Element: Object {
    public var _queryResults: Results<Element> { QueryCalls.results(owner, ordinal, Element.self, what: "List") }
}

extension MutableSet: ComposableQuery, _QueryableCollection where Element: Object {
    public var _queryResults: Results<Element> { QueryCalls.results(owner, ordinal, Element.self, what: "MutableSet") }
}

extension LinkingObjects: ComposableQuery, _QueryableCollection where Element: Object {
    public var _queryResults: Results<Element> {
        guard let owner, let managed = owner._managed else {
            preconditionFailure("Only the LinkingObjects of a managed object can be queried.")
        }
        let context = managed.context
        var query = QueryDescription()
        if let origin = context.binding(for: Element.self),
            let ordinal = origin.info.property(named: originProperty)?.ordinal, origin.columns[ordinal] >= 0
        {
            query.base = .backlinks(
                target: managed.table.tableID, key: managed.key, origin: origin.tableID, column: origin.columns[ordinal]
            )
        } else {
            query.predicates = [.constant(false)]
        }
        return Results(context: context, query: query)
    }
}
