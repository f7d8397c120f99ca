import ActorStorePersistence
import Foundation

extension WriteSession {
    // MARK: Creating

    /// Creates (or, with a primary key and an update policy, updates) an object from a dictionary, an array
    /// in declaration order, or an object of the same class. Returns nil on failure (recorded).
    func create(_ type: ObjectBase.Type, value: Any, update: Realm.UpdatePolicy) -> ObjectBase? {
        guard let (binding, key) = createRow(type, value: value, update: update, nested: false) else { return nil }
        return context.makeObject(binding, key)
    }

    /// Creates or updates the row `value` describes; nested dictionaries and arrays of link properties are
    /// created (or, with a primary key, updated) the same way, with the same policy.
    private func createRow(
        _ type: ObjectBase.Type, value: Any, update: Realm.UpdatePolicy, nested: Bool
    ) -> (TableBinding, ObjectKey)? {
        guard failure == nil else { return nil }
        let info = context.info(for: type)
        if info.isEmbedded && !nested {
            fail(
                RealmError(
                    .invalidObject,
                    "Embedded objects cannot be created on their own: assign a \(info.className) to a property of "
                        + "its parent instead."))
            return nil
        }
        guard let binding = binding(for: info) else { return nil }
        if update != .error, !nested, !requirePrimaryKey(info) { return nil }
        return nestedOperation(policy: update) { createRow(info, binding, value: value, update: update) }
    }

    private func createRow(
        _ info: ObjectSchemaInfo, _ binding: TableBinding, value: Any, update: Realm.UpdatePolicy
    ) -> (TableBinding, ObjectKey)? {
        var given = [Value?](repeating: nil, count: binding.columnCount)
        var wrongType: [String] = []
        // The frozen-object cast only after the usual forms: a failed protocol conformance check costs a
        // conformance-cache lookup, a measurable share of creating an object from a dictionary.
        let accepted = info.forEachGivenValue(in: value) { property, any in
            let column = binding.columns[property.ordinal]
            switch nestedLinks(property, any, update: update) {
            case .value(let value):
                given[column] = value
                return true
            case .invalid:
                break
            case .notNested:
                if let converted = property.accessor.fromAny(any) {
                    given[column] = property.accessor.encode(converted, _Encoder(session: self))
                    return true
                }
            }
            if failure == nil {
                wrongType.append(
                    "'\(property.name)' expects \(property.kind.swiftType), got \(Swift.type(of: any)) \(any)")
            }
            return false
        }
        guard let rejected = accepted else {
            if let source = value as? any FrozenObjectSource { return copyRow(info, binding, source, update: update) }
            fail(
                RealmError(
                    .invalidValue,
                    "create(\(info.className).self, value:) failed: a \(Swift.type(of: value)) is not a dictionary, an "
                        + "array, a \(info.className) or a frozen \(info.className)."))
            return nil
        }
        if !rejected.isEmpty {
            let unknown = rejected.filter { name in !wrongType.contains { $0.hasPrefix("'\(name)'") } }
            let details = wrongType + unknown.map { "'\($0)' is not a property of \(info.className)" }
            fail(
                RealmError(
                    .invalidValue, "create(\(info.className).self, value:) failed: " + details.joined(separator: "; ")))
            return nil
        }
        return finishRow(info, binding, given, update: update)
    }

    /// Inserts or updates the row with the `given` column values; the other columns take their defaults.
    private func finishRow(
        _ info: ObjectSchemaInfo, _ binding: TableBinding, _ given: [Value?], update: Realm.UpdatePolicy
    ) -> (TableBinding, ObjectKey)? {
        var row = binding.defaultRow
        var fresh: ObjectBase?
        for property in info.storedProperties {
            let column = binding.columns[property.ordinal]
            if let value = given[column] {
                row[column] = value
            } else if let stable = property.stableDefault {
                row[column] = stable
            } else {
                let instance = fresh ?? info.type.init()
                fresh = instance
                row[column] = property.accessor.encode(instance._slots[property.ordinal], _Encoder(session: self))
            }
        }
        guard failure == nil,
            let key = upsert(
                binding, row, given: update == .error ? nil : Set(given.indices.filter { given[$0] != nil }))
        else { return nil }
        return (binding, key)
    }

    /// Creates (or updates) the copy of the frozen object `source`, or returns the copy this operation
    /// already made of it.
    private func copyRow(
        _ info: ObjectSchemaInfo, _ binding: TableBinding, _ source: any FrozenObjectSource,
        update: Realm.UpdatePolicy
    ) -> (TableBinding, ObjectKey)? {
        if let done = copies[source.sourceIdentity] { return (binding, done) }
        guard let (given, deferred) = givenValues(info, binding, copying: source, update: update),
            let (binding, key) = finishRow(info, binding, given, update: update)
        else { return nil }
        copies[source.sourceIdentity] = key
        for (column, value, linked) in deferred {
            copyFixups.append(CopyFixup(binding: binding, key: key, column: column, value: value, linked: linked))
        }
        return (binding, key)
    }

    /// The column values of a copy of the frozen object `source` (of the class `info`): its stored values,
    /// and for its links, lists, sets and maps of objects, links to copies of those objects, made the same
    /// way with the same policy. A link column that reaches an object still being copied (a cycle: the
    /// object links back to one that links to it) is `deferred`: written once the copy exists. Nil on
    /// failure (recorded), such as a frozen object of another class.
    private func givenValues(
        _ info: ObjectSchemaInfo, _ binding: TableBinding, copying source: any FrozenObjectSource,
        update: Realm.UpdatePolicy
    ) -> (given: [Value?], deferred: [(column: Int, value: Value, linked: (Value) -> FrozenObjectIdentity?)])? {
        guard source.sourceInfo.type == info.type else {
            fail(
                RealmError(
                    .invalidValue,
                    "create(\(info.className).self, value:) was given a frozen \(source.sourceInfo.className): a "
                        + "frozen object is copied as its own class."))
            return nil
        }
        copying.insert(source.sourceIdentity)
        defer { copying.remove(source.sourceIdentity) }
        var given = [Value?](repeating: nil, count: binding.columnCount)
        var deferred: [(column: Int, value: Value, linked: (Value) -> FrozenObjectIdentity?)] = []
        for property in info.storedProperties {
            let column = binding.columns[property.ordinal]
            guard column >= 0, let value = source.storedValue(property) else { continue }
            guard let target = property.kind.linkTarget else {
                given[column] =
                    property.kind.scalar == .mixed ? copiedMixed(value, from: source, update: update) : value
                continue
            }
            // The source object a link reaches; a link to an object the source's version does not have
            // reads as nil, as it would there.
            func linked(_ link: Value) -> (any FrozenObjectSource)? {
                guard case .link(let key) = link else { return nil }
                return source.linked(key, target)
            }
            var cyclic = false
            func copy(_ link: Value) -> Value {
                guard let object = linked(link) else { return .null }
                if let done = copies[object.sourceIdentity] { return .link(done) }
                if copying.contains(object.sourceIdentity) {
                    cyclic = true  // the column is written again once that copy exists
                    return .null
                }
                // A failure is recorded (checked below).
                return createRow(target, value: object, update: update, nested: true).map { .link($0.1) } ?? .null
            }
            given[column] = value.mappingLinks(copy)
            guard failure == nil else { return nil }
            if cyclic { deferred.append((column, value, { linked($0)?.sourceIdentity })) }
        }
        return (given, deferred)
    }

    /// An `AnyRealmValue` column of a frozen object being copied: a link becomes a link to the copy of its
    /// object, made now with the same policy (a link back to an object still being copied, a cycle, becomes
    /// null); other values stay as they are.
    private func copiedMixed(_ value: Value, from source: any FrozenObjectSource, update: Realm.UpdatePolicy) -> Value {
        func copy(_ item: Value) -> Value {
            guard case .typedLink(let table, let key) = item else { return item }
            guard let type = source.linkedClass(named: table), let object = source.linked(key, type) else {
                return .null
            }
            if let done = copies[object.sourceIdentity] { return .typedLink(table: table, key: done) }
            if copying.contains(object.sourceIdentity) { return .null }
            return createRow(type, value: object, update: update, nested: true).map {
                .typedLink(table: table, key: $0.1)
            } ?? .null
        }
        switch value {
        case .list(let items): return .list(items.map(copy))
        case .set(let items): return .set(items.map(copy))
        case .map(let entries): return .map(entries.map { .init($0.key, copy($0.value)) })
        default: return copy(value)
        }
    }

    /// A link column of a frozen object's copy that reached an object still being copied (a cycle).
    struct CopyFixup {
        let binding: TableBinding
        let key: ObjectKey
        let column: Int
        /// The source's stored value of the column.
        let value: Value
        /// The source object a link of `value` reaches.
        let linked: (Value) -> FrozenObjectIdentity?
    }

    /// Writes the link columns of frozen objects' copies that reached objects of a cycle, now that every
    /// copy exists: each source link becomes a link to its copy.
    func applyCopyFixups() {
        let fixups = copyFixups
        copyFixups = []
        for fixup in fixups {
            guard failure == nil else { return }
            let value = fixup.value.mappingLinks { link in
                guard let identity = fixup.linked(link), let copy = copies[identity] else { return .null }
                return .link(copy)
            }
            updateRow(fixup.binding, fixup.key, [(fixup.column, value)])
        }
    }

    enum NestedValue {
        /// The stored value of the property (links to the created or updated objects).
        case value(Value)
        /// A nested value that does not describe an object (or whose creation failed and was recorded).
        case invalid
        /// Not nested dictionaries or arrays: convert it as a plain property value.
        case notNested
    }

    /// For a link, list, set or map of objects given as dictionaries or arrays (Realm's nested-object
    /// form), creates each object through `createRow`, so that bad values inside are reported and primary
    /// keys update existing objects with only the values given.
    func nestedLinks(_ property: PropertyInfo, _ given: Any, update: Realm.UpdatePolicy) -> NestedValue {
        guard let target = property.kind.linkTarget, !property.kind.isLinkingObjects else { return .notNested }
        func link(_ item: Any) -> Value? {
            if item is NSNull { return .null }
            if let object = item as? ObjectBase {
                guard Swift.type(of: object) == target else { return nil }
                if object is EmbeddedObject, object.isManaged {
                    // Copying an object copies the embedded objects it owns (they have one parent each).
                    return createRow(target, value: object, update: .error, nested: true).map { .link($0.1) }
                }
                guard let key = key(for: object) else { return nil }
                return .link(key)
            }
            // Nested values, or a frozen object (copied once per operation, see `copyRow`); the protocol cast
            // last, as it is the slow one.
            guard item is [String: Any] || item is [Any] || item is any FrozenObjectSource else { return nil }
            return createRow(target, value: item, update: update, nested: true).map { .link($0.1) }
        }
        switch property.kind.collection {
        case .single:
            // An object (the common case) first: a class cast is cheap, the frozen protocol cast is not.
            if let object = given as? ObjectBase {
                guard object is EmbeddedObject, object.isManaged else { return .notNested }
            } else if !(given is [String: Any] || given is [Any] || given is any FrozenObjectSource) {
                return .notNested
            }
            return link(given).map(NestedValue.value) ?? .invalid
        case .list, .set:
            guard let items = given as? [Any] ?? (given as? AnyElements)?.anyElements else { return .notNested }
            var links: [Value] = []
            for item in items {
                guard let value = link(item), value != .null else { return .invalid }
                if property.kind.collection == .list || !links.contains(value) { links.append(value) }
            }
            return .value(property.kind.collection == .list ? .list(links) : .set(links))
        case .map:
            guard let entries = given as? [String: Any] ?? (given as? AnyElements)?.anyEntries else {
                return .notNested
            }
            var result: [Value.MapEntry] = []
            for (key, item) in entries.sorted(by: { $0.key < $1.key }) {
                guard Map<String, Int>.isValidKey(key), let value = link(item) else { return .invalid }
                result.append(Value.MapEntry(key, value))
            }
            return .value(.map(result))
        }
    }
}

extension Value {
    /// This link column value with each link replaced by `transform(link)`: a `.null` result drops a list's
    /// or set's element, and leaves a to-one link or a map entry nil.
    fileprivate func mappingLinks(_ transform: (Value) -> Value) -> Value {
        switch self {
        case .link: transform(self)
        case .list(let items): .list(items.map(transform).filter { $0 != .null })
        case .set(let items): .set(items.map(transform).filter { $0 != .null })
        case .map(let entries): .map(entries.map { .init($0.key, transform($0.value)) })
        default: self
        }
    }
}
