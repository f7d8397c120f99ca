import ActorStorePersistence

/// Which changes make an observed object "modified": its own columns and, through forward links (to-one,
/// lists, sets and maps of objects — never inverse links), the columns of the objects it reaches, up to
/// ``WatchTree/maximumDepth`` links away. Key paths narrow it: `["name", "dogs.age"]` watches the object's
/// `name` and `dogs` (membership and order), and `age` of the dogs in `dogs`.
final class WatchTree: Sendable {
    /// How many links away changes still count, as in Realm.
    static let maximumDepth = 4

    let table: TableID
    /// The watched columns; nil for all.
    let columns: ColumnSet?
    /// Watched objects linked through a column.
    let children: [(column: Int, node: WatchTree)]
    /// This table and every table below (to skip untouched subtrees at once).
    let tables: Set<TableID>

    init(table: TableID, columns: ColumnSet?, children: [(column: Int, node: WatchTree)]) {
        self.table = table
        self.columns = columns
        self.children = children
        self.tables = children.reduce(into: [table]) { $0.formUnion($1.node.tables) }
    }

    /// Everything reachable from `table` (no key paths).
    static func all(_ table: TableID, in state: DatabaseState, depth: Int = maximumDepth) -> WatchTree {
        var children: [(Int, WatchTree)] = []
        if depth > 0, let schema = state.tables[table]?.schema {
            for (column, definition) in schema.columns.enumerated() {
                guard let target = definition.linkTarget.flatMap({ state.tableIDs[$0] }) else { continue }
                children.append((column, all(target, in: state, depth: depth - 1)))
            }
        }
        return WatchTree(table: table, columns: nil, children: children)
    }

    /// The tree of `keyPaths` (property names joined by dots) from `table`.
    /// - Throws: `RealmError.invalidKeyPath` naming the first component that is not a stored property, or
    ///   that is followed by more components without being a link.
    static func keyPaths(
        _ keyPaths: [[String]], from table: TableID, className: String, in state: DatabaseState
    ) throws(RealmError) -> WatchTree {
        guard let schema = state.tables[table]?.schema else {
            return WatchTree(table: table, columns: ColumnSet(), children: [])
        }
        var columns = ColumnSet()
        var rest: [Int: [[String]]] = [:]
        var order: [Int] = []
        for path in keyPaths {
            guard let first = path.first else { continue }
            guard let column = schema.columnIndex(named: first) else {
                throw RealmError(
                    .invalidKeyPath,
                    "'\(first)' in the key path '\(path.joined(separator: "."))' is not a stored property of "
                        + "\(className) (inverse relationships cannot be observed through a key path).")
            }
            columns.insert(column)
            guard path.count > 1 else { continue }
            guard schema.columns[column].linkTarget != nil else {
                throw RealmError(
                    .invalidKeyPath,
                    "The key path '\(path.joined(separator: "."))' continues after '\(first)', which is not a link "
                        + "to other objects.")
            }
            if rest[column] == nil { order.append(column) }
            rest[column, default: []].append(Array(path.dropFirst()))
        }
        var children: [(Int, WatchTree)] = []
        for column in order {
            let targetName = schema.columns[column].linkTarget ?? ""
            guard let target = state.tableIDs[targetName] else { continue }
            children.append(
                (column, try Self.keyPaths(rest[column] ?? [], from: target, className: targetName, in: state)))
        }
        return WatchTree(table: table, columns: columns, children: children)
    }

    /// The objects of this tree's table that `changes` modified, as watched: a watched column of theirs
    /// changed, or a watched object they link to (through a watched link) did. Links are followed back
    /// through `store`'s backlink index, so the cost is proportional to the objects changed.
    func modifiedObjects(_ changes: ChangeSet, in store: some ReadableStore) -> Set<ObjectKey> {
        var result = Set<ObjectKey>()
        guard changes.tables.keys.contains(where: tables.contains) else { return result }
        if let own = changes.tables[table] {
            for (key, changed) in own.modified where columns.map(changed.intersects) ?? true {
                result.insert(key)
            }
        }
        for (column, child) in children {
            let below = child.modifiedObjects(changes, in: store)
            for key in below {
                for link in store.backlinks(to: child.table, key) where link.source == table && link.column == column {
                    result.insert(link.key)
                }
            }
        }
        return result
    }

    /// Whether `changes` modified object `key` of this tree's table (see ``modifiedObjects(_:in:)``).
    func modifies(_ key: ObjectKey, _ changes: ChangeSet, in store: some ReadableStore) -> Bool {
        if let changed = changes.tables[table]?.modified[key], columns.map(changed.intersects) ?? true { return true }
        return children.contains { column, child in
            guard let value = try? store.value(table, key, column: column) else { return false }
            return Self.links(in: value).contains { child.modifies($0, changes, in: store) }
        }
    }

    static func links(in value: Value) -> [ObjectKey] {
        switch value {
        case .link(let key): return [key]
        case .list(let items), .set(let items): return items.compactMap { if case .link(let k) = $0 { k } else { nil } }
        case .map(let entries): return entries.compactMap { if case .link(let k) = $0.value { k } else { nil } }
        default: return []
        }
    }
}

/// What a query's matches depend on: when a commit touches none of it, the matches cannot have changed
/// and the query is not run again.
struct QueryDependencies {
    /// Tables whose changes may change the matches.
    var tables: Set<TableID>
    /// When the matches depend only on these columns of the queried objects' own rows (no link is
    /// followed): a commit that only modifies other columns leaves them as they are. Nil: any change.
    var ownColumns: ColumnSet?

    init(_ query: QueryDescription, table: TableID, in state: DatabaseState) {
        var paths: [QueryKeyPath] = []
        var followsLinks = false
        if let predicate = query.predicate { Self.collect(predicate, into: &paths, followsLinks: &followsLinks) }
        for ordering in query.orderings {
            switch ordering {
            case .sort(let keys): paths += keys.map(\.path)
            case .distinct(let keyPaths): paths += keyPaths
            case .limit: break
            }
        }
        var columns = ColumnSet()
        let schema = state.tables[table]?.schema
        for path in paths where !followsLinks {
            guard path.variable == nil, path.components.count == 1, case .property(let name) = path.components[0],
                let column = schema?.columnIndex(named: name)
            else {
                followsLinks = true
                break
            }
            columns.insert(column)
        }
        var tables: Set<TableID> = [table]
        switch query.base {
        case .table: break
        case .collection(let owner, _, _): tables.insert(owner)
        case .backlinks(_, _, let origin, _): tables.insert(origin)
        }
        if followsLinks {
            // Conservative: every table connected to this one by links in either direction.
            var frontier = Array(tables)
            while let next = frontier.popLast() {
                for neighbour in Self.neighbours(of: next, in: state) where tables.insert(neighbour).inserted {
                    frontier.append(neighbour)
                }
            }
        }
        self.tables = tables
        // A collection's membership lives in its owner's row, which may be an object of the same class.
        self.ownColumns = followsLinks || query.base != .table ? nil : columns
    }

    private static func neighbours(of table: TableID, in state: DatabaseState) -> [TableID] {
        guard let name = state.tables[table]?.schema.name else { return [] }
        var result: [TableID] = []
        for candidate in state.orderedTables {
            if candidate.id == table {
                result += candidate.schema.columns.compactMap { $0.linkTarget.flatMap { state.tableIDs[$0] } }
            } else if candidate.schema.columns.contains(where: { $0.linkTarget == name }) {
                result.append(candidate.id)
            }
        }
        return result
    }

    private static func collect(_ predicate: QueryPredicate, into paths: inout [QueryKeyPath], followsLinks: inout Bool)
    {
        switch predicate {
        case .constant: break
        case .not(let inner): collect(inner, into: &paths, followsLinks: &followsLinks)
        case .and(let parts), .or(let parts):
            for part in parts { collect(part, into: &paths, followsLinks: &followsLinks) }
        case .comparison(let comparison):
            collect(comparison.lhs, into: &paths, followsLinks: &followsLinks)
            collect(comparison.rhs, into: &paths, followsLinks: &followsLinks)
        case .between(let value, let lower, let upper, _):
            for expression in [value, lower, upper] { collect(expression, into: &paths, followsLinks: &followsLinks) }
        }
    }

    private static func collect(
        _ expression: QueryExpression, into paths: inout [QueryKeyPath], followsLinks: inout Bool
    ) {
        switch expression {
        case .keyPath(let path): paths.append(path)
        case .value, .object: break
        case .list(let items): for item in items { collect(item, into: &paths, followsLinks: &followsLinks) }
        case .subqueryCount: followsLinks = true
        }
    }

    /// Whether `changes` may change the matches.
    func affected(by changes: ChangeSet, root: TableID) -> Bool {
        if changes.schemaChanged { return true }
        for (table, tableChanges) in changes.tables where tables.contains(table) && !tableChanges.isEmpty {
            guard table == root, let ownColumns else { return true }
            if !tableChanges.inserted.isEmpty || !tableChanges.deleted.isEmpty { return true }
            if tableChanges.modified.containsColumns(where: { $0.intersects(ownColumns) }) { return true }
        }
        return false
    }
}
