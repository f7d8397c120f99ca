import ActorStorePersistence
import Foundation

/// Schema validation at open: the classes of a configuration, their problems, and how they differ from
/// the schema stored in the file.
enum SchemaCheck {
    /// The classes a realm starts with: `objectTypes` and the classes they link to, validated. Without
    /// `objectTypes`, none: see ``storedClasses(_:)``; others join when first used.
    static func classes(for configuration: Realm.Configuration) throws(RealmError) -> [ObjectSchemaInfo] {
        guard let types = configuration.objectTypes else { return [] }
        let all = closure(of: types.map(ClassRegistry.info(for:)))
        let problems = problems(all, restrictedTo: configuration.objectTypes)
        if !problems.isEmpty {
            throw RealmError(.schemaMismatch, "The model classes are invalid: " + problems.joined(separator: " "))
        }
        return all.sorted { $0.className < $1.className }
    }

    /// Without `objectTypes`: the classes already known to the process whose names match tables in the
    /// file, so that opening checks them against the stored schema (and migrates them). A name shared by
    /// two classes, or a class with problems, is left to join when used (where a write reports it).
    static func storedClasses(_ store: some ReadableStore) -> [ObjectSchemaInfo] {
        let discovered = ClassRegistry.allDiscovered
        var byName: [String: [ObjectSchemaInfo]] = [:]
        for info in discovered { byName[info.className, default: []].append(info) }
        let candidates = discovered.filter { info in
            byName[info.className]?.count == 1 && store.tableID(named: info.className) != nil
        }
        return closure(of: candidates).filter { info in
            byName[info.className]?.count == 1 && problems(closure(of: [info]), restrictedTo: nil).isEmpty
        }.sorted { $0.className < $1.className }
    }

    /// `roots` and every class they link to (links, lists, sets, maps, linking objects), transitively.
    static func closure(of roots: [ObjectSchemaInfo]) -> [ObjectSchemaInfo] {
        var seen = Set<ObjectIdentifier>()
        var result: [ObjectSchemaInfo] = []
        var pending = roots
        while let info = pending.popLast() {
            guard seen.insert(ObjectIdentifier(info.type)).inserted else { continue }
            result.append(info)
            for property in info.properties {
                if let target = property.kind.linkTarget { pending.append(ClassRegistry.info(for: target)) }
            }
        }
        return result
    }

    /// Every problem of `classes`: their own, links to classes outside `objectTypes`, bad origin properties.
    static func problems(_ classes: [ObjectSchemaInfo], restrictedTo objectTypes: [ObjectBase.Type]?) -> [String] {
        var problems: [String] = []
        var names: [String: ObjectSchemaInfo] = [:]
        for info in classes {
            problems += info.problems
            if let other = names[info.className], other !== info {
                problems.append("Two model classes are named \(info.className); class names must be unique.")
            }
            names[info.className] = info
        }
        let allowed = objectTypes.map { Set($0.map { ObjectIdentifier($0) }) }
        for info in classes {
            if let allowed, !allowed.contains(ObjectIdentifier(info.type)) {
                continue  // reported below, at the link that reaches it
            }
            for property in info.properties {
                guard let target = property.kind.linkTarget else { continue }
                let targetInfo = ClassRegistry.info(for: target)
                let label = "'\(info.className).\(property.name)'"
                if let allowed, !allowed.contains(ObjectIdentifier(target)) {
                    problems.append("\(label) links to \(targetInfo.className), which is not in objectTypes; add it.")
                }
                if property.kind.isLinkingObjects {
                    let origin = property.originProperty ?? ""
                    guard let originProperty = targetInfo.property(named: origin) else {
                        problems.append(
                            "\(label): the origin property '\(origin)' does not exist on \(targetInfo.className).")
                        continue
                    }
                    guard let back = originProperty.kind.linkTarget, back == info.type,
                        !originProperty.kind.isLinkingObjects
                    else {
                        problems.append(
                            "\(label): '\(targetInfo.className).\(origin)' does not link to \(info.className).")
                        continue
                    }
                } else if targetInfo.isEmbedded, property.kind.collection == .set || property.kind.collection == .map {
                    problems.append("\(label): embedded objects can be held by links and lists only.")
                }
            }
        }
        return problems
    }

    /// The name prefix of a column whose property was removed by a migration: rows keep its bytes (columns
    /// are positional), the object layer ignores it.
    static let retiredPrefix = "__removed_"

    /// How ``differences(_:_:)`` starts an index-only difference (applied without a migration).
    static let indexChangePrefix = "the index on "

    static func isRetired(_ name: String) -> Bool { name.hasPrefix(retiredPrefix) }

    /// The stored schema migrated to `classes`: added properties become new columns at the end (existing
    /// rows read them as their type's default), removed properties are retired, index and primary-key
    /// flags follow the classes. Tables without a class here are kept unchanged.
    /// - Throws: `schemaMismatch` for a change that cannot be migrated automatically (a property's type).
    static func migrated(
        _ classes: [ObjectSchemaInfo], _ store: some ReadableStore, version: UInt64
    ) throws(RealmError) -> [TableSchema] {
        var byName: [String: ObjectSchemaInfo] = [:]
        for info in classes { byName[info.className] = info }
        var result: [TableSchema] = []
        for stored in store.state.schema {
            guard let info = byName.removeValue(forKey: stored.name) else {
                result.append(stored)
                continue
            }
            let expected = info.tableSchema
            guard stored.isEmbedded == expected.isEmbedded else {
                throw RealmError(
                    .schemaMismatch,
                    "\(info.className) changed between Object and EmbeddedObject; ActorStore cannot migrate that "
                        + "automatically (set deleteRealmIfMigrationNeeded to start over).")
            }
            let wanted = Dictionary(expected.columns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            var columns: [ColumnSchema] = []
            for (index, column) in stored.columns.enumerated() {
                if let target = wanted[column.name] {
                    guard target.type == column.type, target.linkTarget == column.linkTarget else {
                        throw RealmError(
                            .schemaMismatch,
                            "'\(info.className).\(column.name)' changed type from \(column.type) to \(target.type); "
                                + "ActorStore cannot convert stored values automatically (rename the property, or set "
                                + "deleteRealmIfMigrationNeeded to start over).")
                    }
                    columns.append(target)
                } else if isRetired(column.name) {
                    columns.append(column)
                } else {
                    var retired = column
                    retired.name = "\(retiredPrefix)\(index)_v\(version)"
                    retired.isIndexed = false
                    retired.isPrimaryKey = false
                    columns.append(retired)
                }
            }
            let present = Set(stored.columns.map(\.name))
            columns += expected.columns.filter { !present.contains($0.name) }
            result.append(TableSchema(stored.name, columns: columns, isEmbedded: stored.isEmbedded))
        }
        return result
    }

    /// ``differences(_:_:)`` without index changes (which are applied without a migration).
    static func structuralDifferences(_ classes: [ObjectSchemaInfo], _ store: some ReadableStore) -> [String] {
        differences(classes, store).filter { !$0.hasPrefix(indexChangePrefix) }
    }

    /// What a model class that does not match the file says: the differences and what to do.
    static func driftMessage(_ differences: [String], storedVersion: UInt64) -> String {
        "The model classes do not match the schema stored in the file (schema version \(storedVersion)): "
            + differences.joined(separator: "; ")
            + ". Increase Configuration.schemaVersion above \(storedVersion), add a Configuration.migrationBlock for "
            + "changes ActorStore cannot make by itself (a type change, a rename), and list the model classes in "
            + "Configuration.objectTypes so that opening the realm checks and migrates them."
    }

    /// Classes whose drift was already reported on standard error, by message (once per process).
    private static let reported = Locked<Set<String>>([])

    /// A class that joined after open does not match the file and is left unbound: reads of it find no
    /// objects and writes throw ``RealmError/Code/schemaMismatch``. Property getters and `objects(_:)` cannot
    /// throw (as in Realm), and stopping the program would let a file crash an app, so the reason is written
    /// to standard error, once per process and message.
    static func reportUnboundClass(_ message: String) {
        let first = reported.withLock { $0.insert(message).inserted }
        guard first else { return }
        FileHandle.standardError.write(
            Data(
                ("ActorStore: reads of this class find no objects and writes of it throw schemaMismatch. " + message
                    + "\n").utf8))
    }

    /// How the stored tables of `classes` differ from the classes; empty when they match.
    static func differences(_ classes: [ObjectSchemaInfo], _ store: some ReadableStore) -> [String] {
        classes.flatMap { info in
            guard let id = store.tableID(named: info.className), let stored = store.tableSchema(id) else {
                return [String]()
            }
            return differences(info, stored: stored)
        }
    }

    /// Whether `info` can read `stored` as it is: no differences but index changes.
    static func canBind(_ info: ObjectSchemaInfo, to stored: TableSchema) -> Bool {
        differences(info, stored: stored).allSatisfy { $0.hasPrefix(indexChangePrefix) }
    }

    /// How the stored table `stored` differs from `info`'s class; empty when they match.
    static func differences(_ info: ObjectSchemaInfo, stored: TableSchema) -> [String] {
        var differences: [String] = []
        let expected = info.tableSchema
        if stored.isEmbedded != expected.isEmbedded {
            differences.append("\(info.className) changed between Object and EmbeddedObject")
        }
        let old = Dictionary(stored.columns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let new = Dictionary(expected.columns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for column in expected.columns where old[column.name] == nil {
            differences.append("property '\(info.className).\(column.name)' was added")
        }
        for column in stored.columns where new[column.name] == nil && !isRetired(column.name) {
            differences.append("property '\(info.className).\(column.name)' was removed")
        }
        for column in expected.columns {
            guard let before = old[column.name], before != column else { continue }
            if before.type != column.type || before.linkTarget != column.linkTarget {
                differences.append(
                    "property '\(info.className).\(column.name)' changed type from \(before.type) to \(column.type)"
                )
            } else if before.isPrimaryKey != column.isPrimaryKey {
                differences.append("the primary key of \(info.className) changed")
            } else {
                differences.append("\(indexChangePrefix)'\(info.className).\(column.name)' was added or removed")
            }
        }
        return differences
    }
}
