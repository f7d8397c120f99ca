import ActorStorePersistence
import Foundation

// `changes` on every observable collection: Results, FrozenResults, and List, MutableSet and
// LinkingObjects of objects.

enum KeyPathNames {
    /// Property names of string key paths (`"dogs.age"`), checked against the class's stored schema.
    static func parse(
        _ keyPaths: [String], _ info: ObjectSchemaInfo, in state: DatabaseState
    ) throws(RealmError)
        -> [[String]]
    {
        let paths = keyPaths.map { $0.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
        for (path, text) in zip(paths, keyPaths) where path.isEmpty || path.contains("") {
            throw RealmError(.invalidKeyPath, "'\(text)' is not a key path: name properties separated by dots.")
        }
        if let table = state.tableIDs[info.className] {
            _ = try WatchTree.keyPaths(paths, from: table, className: info.className, in: state)
        } else {
            for path in paths {
                guard let property = info.property(named: path[0]), !property.kind.isLinkingObjects else {
                    throw RealmError(
                        .invalidKeyPath,
                        "'\(path[0])' in the key path '\(path.joined(separator: "."))' is not a stored "
                            + "property of \(info.className).")
                }
            }
        }
        return paths
    }

    /// Property names of typed key paths (`\Dog.name`, `\Dog.owner?.name`, `\Person.dogs.age`).
    static func names<T: ObjectBase>(_ keyPaths: [PartialKeyPath<T>], _ info: ObjectSchemaInfo) -> [[String]] {
        keyPaths.map { keyPath in
            guard let path = info.observedPath(of: keyPath) else {
                preconditionFailure(
                    "\(keyPath) does not read a @Persisted property of \(info.className) (or one through links, "
                        + "lists and sets): observe stored properties, or use string key paths such as "
                        + "\"dogs.age\".")
            }
            return path.map(\.name)
        }
    }
}

extension Results {
    /// The changes of these results, from any task: see ``CollectionChanges``. Every property of the
    /// objects, and of the objects they link to (up to four links away), counts as a modification.
    public var changes: CollectionChanges<Element> { changes(paths: nil) }

    /// The changes of these results, where only the given key paths (`"name"`, `"dogs.age"`) count as
    /// modifications; objects entering and leaving the results always count.
    /// - Throws: `RealmError.invalidKeyPath` when a key path names no stored property.
    public func changes(keyPaths: [String]) throws(RealmError) -> CollectionChanges<Element> {
        changes(paths: try KeyPathNames.parse(keyPaths, context.info(for: Element.self), in: context.state))
    }

    /// The changes of these results, where only the given key paths (`\.name`, `\.owner?.name`) count as
    /// modifications.
    public func changes(keyPaths: [PartialKeyPath<Element>]) -> CollectionChanges<Element> {
        changes(paths: KeyPathNames.names(keyPaths, context.info(for: Element.self)))
    }

    func changes(paths: [[String]]?) -> CollectionChanges<Element> {
        CollectionChanges(
            source: CollectionSource(
                engine: context.engine, fileKey: context.fileKey, info: context.info(for: Element.self), query: query,
                keyPaths: paths))
    }
}

extension FrozenResults {
    /// The changes of this query from this version on, from any task: the initial delivery is the query
    /// at the newest version. See ``CollectionChanges``. The file must still be open (a `Realm` on it
    /// alive) when iteration begins, else the sequence delivers `.error(.closed)`.
    public var changes: CollectionChanges<Element> { changes(paths: nil) }

    /// The changes, where only the given key paths count as modifications.
    /// - Throws: `RealmError.invalidKeyPath` when a key path names no stored property.
    public func changes(keyPaths: [String]) throws(RealmError) -> CollectionChanges<Element> {
        changes(
            paths: try KeyPathNames.parse(keyPaths, ClassRegistry.info(for: Element.self), in: context.snapshot.state))
    }

    /// The changes, where only the given key paths count as modifications.
    public func changes(keyPaths: [PartialKeyPath<Element>]) -> CollectionChanges<Element> {
        changes(paths: KeyPathNames.names(keyPaths, ClassRegistry.info(for: Element.self)))
    }

    func changes(paths: [[String]]?) -> CollectionChanges<Element> {
        CollectionChanges(
            source: CollectionSource(
                engine: context.engine, fileKey: context.fileKey, info: ClassRegistry.info(for: Element.self),
                query: query, keyPaths: paths))
    }
}

extension _QueryableCollection {
    /// The changes of the collection's members, from any task: additions, removals and reordering of the
    /// collection itself, and changes to its objects. Observation ends after the owner is deleted (with
    /// an update removing every member). See ``CollectionChanges``.
    public var changes: CollectionChanges<Element> { _queryResults.changes }

    /// The changes, where only the given key paths count as modifications.
    /// - Throws: `RealmError.invalidKeyPath` when a key path names no stored property.
    public func changes(keyPaths: [String]) throws(RealmError) -> CollectionChanges<Element> {
        try _queryResults.changes(keyPaths: keyPaths)
    }

    /// The changes, where only the given key paths count as modifications.
    public func changes(keyPaths: [PartialKeyPath<Element>]) -> CollectionChanges<Element> {
        _queryResults.changes(keyPaths: keyPaths)
    }
}
