import ActorStorePersistence

/// Schema validation at open: the classes of a configuration, their problems, and how they differ from
/// the schema stored in the file.
enum SchemaCheck {
    /// The classes a realm starts with: `objectTypes` (validated), or every class discovered so far.
    static func classes(for configuration: Realm.Configuration) throws(RealmError) -> [ObjectSchemaInfo] {
        let roots = configuration.objectTypes.map { $0.map(ClassRegistry.info(for:)) } ?? ClassRegistry.allDiscovered
        let all = closure(of: roots)
        let problems = problems(all, restrictedTo: configuration.objectTypes)
        if !problems.isEmpty {
            throw RealmError(.schemaMismatch, "The model classes are invalid: " + problems.joined(separator: " "))
        }
        return all.sorted { $0.className < $1.className }
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

    /// How the stored tables of `classes` differ from the classes; empty when they match.
    static func differences(_ classes: [ObjectSchemaInfo], _ store: some ReadableStore) -> [String] {
        var differences: [String] = []
        for info in classes {
            guard let id = store.tableID(named: info.className), let stored = store.tableSchema(id) else { continue }
            let expected = info.tableSchema
            if stored.isEmbedded != expected.isEmbedded {
                differences.append("\(info.className) changed between Object and EmbeddedObject")
            }
            let old = Dictionary(stored.columns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            let new = Dictionary(expected.columns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            for column in expected.columns where old[column.name] == nil {
                differences.append("property '\(info.className).\(column.name)' was added")
            }
            for column in stored.columns where new[column.name] == nil {
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
                    differences.append("the index on '\(info.className).\(column.name)' was added or removed")
                }
            }
        }
        return differences
    }
}
