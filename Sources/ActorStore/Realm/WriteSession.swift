import ActorStorePersistence
import Foundation

/// One write transaction of a ``Realm``: adds, creates, updates and deletes objects on the engine's
/// transaction, and remembers the first failure.
///
/// Realm's mutating calls (`add`, `create`, property setters) do not throw, so a failure inside a
/// transaction (a duplicate primary key, a value that does not fit, a full disk while building the
/// record) is recorded here; later operations of the transaction are skipped, and `write` /
/// `commitWrite` roll the whole transaction back and throw it. Nothing of a failed transaction is ever
/// committed.
final class WriteSession {
    unowned let context: RealmContext
    let transaction: WriteTransaction
    /// The task that began the transaction (to tell a nested `beginWrite` from a concurrent one).
    let owner: Int?
    // `@exclusivity(unchecked)` on this state: a session is confined to its realm's actor and none of these is
    // accessed re-entrantly while being modified (no access is held across a call).
    @exclusivity(unchecked) private(set) var failure: RealmError?

    @exclusivity(unchecked) private var adding = Set<ObjectIdentifier>()
    @exclusivity(unchecked) private var addDepth = 0
    @exclusivity(unchecked) private var encoding:
        [(object: ObjectBase, property: PropertyInfo, slot: any _Persistable)] = []
    @exclusivity(unchecked) private var fixups: [(object: ObjectBase, property: PropertyInfo, slot: any _Persistable)] =
        []
    @exclusivity(unchecked) private var policy = Realm.UpdatePolicy.error
    /// The frozen objects `create(_:value:)` is copying right now (a link back to one of them is a cycle).
    @exclusivity(unchecked) private var copying = Set<FrozenObjectIdentity>()
    /// The copies the outermost `create(_:value:)` made of frozen objects: an object reached twice (a list
    /// holding it twice, two links to it) is copied once.
    @exclusivity(unchecked) private var copies: [FrozenObjectIdentity: ObjectKey] = [:]
    /// Link columns of those copies to write when the outermost operation ends (they reach a cycle).
    @exclusivity(unchecked) private var copyFixups: [CopyFixup] = []
    /// Embedded objects inserted by the add or create under way: a second link to one would give it two parents.
    @exclusivity(unchecked) private var embeddedAdded = Set<ObjectIdentifier>()
    /// The row and column a property set is encoding a value for (see `set`).
    @exclusivity(unchecked) private var target: (table: TableID, key: ObjectKey, column: Int)?
    /// The binding of the class inserted last (bulk inserts are usually of one class).
    @exclusivity(unchecked) private var lastInsert:
        (type: ObjectIdentifier, bindings: SchemaBindings, binding: TableBinding)?

    init(context: RealmContext, transaction: WriteTransaction, owner: Int?) {
        self.context = context
        self.transaction = transaction
        self.owner = owner
    }

    func fail(_ error: RealmError) {
        if failure == nil { failure = error }
    }

    /// Runs one engine operation; a failure is recorded. Row locations are stale afterwards.
    private func run<T>(_ operation: () throws(StorageError) -> T) -> T? {
        defer { context.invalidateLocations() }
        do throws(StorageError) {
            return try operation()
        } catch {
            fail(RealmError(error))
            return nil
        }
    }

    // MARK: Tables

    /// The binding of `info`'s class, creating its table (and those of classes it links to) if needed.
    func binding(for info: ObjectSchemaInfo) -> TableBinding? {
        if let problem = context.joinProblems[ObjectIdentifier(info.type)] {
            fail(RealmError(.schemaMismatch, "\(info.className) cannot be written to this file: \(problem)."))
            return nil
        }
        if let binding = context.bindings.binding(for: info.type) { return binding }
        let problems = context.problems(of: info)
        guard problems.isEmpty else {
            fail(RealmError(.schemaMismatch, "\(info.className) cannot be stored: " + problems.joined(separator: " ")))
            return nil
        }
        let new = SchemaCheck.closure(of: [info]).filter { transaction.tableID(named: $0.className) == nil }
        let differences = SchemaCheck.differences(SchemaCheck.closure(of: [info]), transaction)
        guard differences.isEmpty else {
            fail(
                RealmError(
                    .schemaMismatch,
                    "\(info.className) does not match the stored schema: " + differences.joined(separator: "; ")))
            return nil
        }
        if !new.isEmpty {
            let schema = transaction.state.schema + new.map(\.tableSchema)
            guard run({ () throws(StorageError) in try transaction.setSchema(schema) }) != nil else { return nil }
        }
        context.rebind()
        return context.bindings.binding(for: info.type)
    }

    // MARK: Adding

    /// Adds `object` (and the unmanaged objects it links to); it becomes managed. Returns its key.
    @discardableResult
    func add(_ object: ObjectBase, update: Realm.UpdatePolicy) -> ObjectKey? {
        if update != .error, object._managed == nil, requirePrimaryKey(context.info(for: type(of: object))) == false {
            return nil
        }
        return nestedOperation(policy: update) { insert(object) }
    }

    /// Runs one (possibly nested) add or create: with `policy` for the objects it reaches, and the
    /// deferred cycle links applied when the outermost one ends.
    private func nestedOperation<R>(policy newPolicy: Realm.UpdatePolicy?, _ body: () -> R) -> R {
        let saved = policy
        if let newPolicy { policy = newPolicy }
        addDepth += 1
        defer {
            addDepth -= 1
            policy = saved
            if addDepth == 0 {
                applyFixups()
                applyCopyFixups()
                copies = [:]
            }
        }
        return body()
    }

    /// The key to store for a link to `object`, adding it first if it is unmanaged.
    func key(for object: ObjectBase) -> ObjectKey? {
        if object is EmbeddedObject, let managed = object._managed, managed.context.fileKey == context.fileKey {
            // An embedded object has one parent: it may be linked again only by the property that owns it.
            let owners = transaction.backlinks(to: managed.table.tableID, managed.key)
            let ownedHere =
                !embeddedAdded.contains(ObjectIdentifier(object))
                && owners.allSatisfy { owner in
                    guard let target else { return false }
                    return owner.source == target.table && owner.key == target.key && owner.column == target.column
                }
            guard ownedHere else {
                fail(
                    RealmError(
                        .invalidObject,
                        "This \(managed.table.info.className) is an embedded object already owned by another object: "
                            + "embedded objects have exactly one parent. Assign a new \(managed.table.info.className) "
                            + "instead, or copy it with create(_:value:)."))
                return nil
            }
            return managed.key
        }
        if let managed = object._managed {
            guard managed.context === context || managed.context.fileKey == context.fileKey else {
                fail(
                    RealmError(
                        .invalidObject,
                        "A \(managed.table.info.className) managed by another realm file cannot be linked to: copy it "
                            + "with create(_:value:update:)."))
                return nil
            }
            guard transaction.contains(managed.table.tableID, managed.key) else {
                fail(
                    RealmError(
                        .invalidObject,
                        "This \(managed.table.info.className) was deleted, so it can't be added or linked to: check "
                            + "isInvalidated first, or add a new \(managed.table.info.className)."))
                return nil
            }
            return managed.key
        }
        if adding.contains(ObjectIdentifier(object)), let current = encoding.last {
            fixups.append(current)  // a cycle: link it once the target has its key
            return nil
        }
        return nestedOperation(policy: nil) { insert(object) }
    }

    private func insert(_ object: ObjectBase) -> ObjectKey? {
        guard failure == nil else { return nil }
        if object._managed != nil { return key(for: object) }
        let type = ObjectIdentifier(Swift.type(of: object))
        let binding: TableBinding
        if let last = lastInsert, last.type == type, last.bindings === context.bindings {
            binding = last.binding
        } else {
            let info = context.info(for: Swift.type(of: object))
            guard let found = self.binding(for: info) else { return nil }
            binding = found
            lastInsert = (type, context.bindings, found)
        }
        let info = binding.info
        if !info.hasLinks {
            // No links: no cycles or nested adds to track.
            let slots = object._slots
            var row = binding.defaultRow
            let encoder = _Encoder(session: self)
            for plan in binding.plans { row[plan.column] = plan.encode(slots[plan.ordinal], encoder) }
            guard let key = upsert(binding, row, given: nil) else { return nil }
            object._managed = ManagedState(
                context: context, table: binding, key: key, location: RowLocation(offset: 0, length: 0), stamp: 0)
            object._slots = []
            if info.isEmbedded { embeddedAdded.insert(ObjectIdentifier(object)) }
            return key
        }
        let id = ObjectIdentifier(object)
        adding.insert(id)
        let slots = object._slots
        var row = binding.defaultRow
        for property in info.storedProperties {
            let before = fixups.count
            encoding.append((object, property, slots[property.ordinal]))
            var value = property.accessor.encode(slots[property.ordinal], _Encoder(session: self))
            encoding.removeLast()
            // A link back to an object still being added (a cycle) was deferred: store the property empty for
            // now; `applyFixups` writes it once every object of the graph has its key.
            if fixups[before...].contains(where: { $0.object === object && $0.property.ordinal == property.ordinal }) {
                value = property.stableDefault ?? .null
            }
            row[binding.columns[property.ordinal]] = value
        }
        adding.remove(id)
        guard failure == nil, let key = upsert(binding, row, given: nil) else { return nil }
        object._managed = ManagedState(
            context: context, table: binding, key: key, location: RowLocation(offset: 0, length: 0), stamp: 0)
        object._slots = []
        if info.isEmbedded { embeddedAdded.insert(ObjectIdentifier(object)) }
        return key
    }

    private func applyFixups() {
        defer { if addDepth == 0 { embeddedAdded.removeAll() } }
        while let fixup = fixups.popLast() {
            guard failure == nil else { return }
            let value = fixup.property.accessor.encode(fixup.slot, _Encoder(session: self))
            update(fixup.object, ordinal: fixup.property.ordinal, value: value)
        }
    }

    /// Inserts `row`, or updates the object with the same primary key (per the update policy).
    /// - Parameter given: for a partial update (`create` with a dictionary), the columns to update.
    private func upsert(_ binding: TableBinding, _ row: [Value], given: Set<Int>?) -> ObjectKey? {
        if let primaryKey = binding.info.primaryKey {
            let column = binding.columns[primaryKey.ordinal]
            if let existing = transaction.object(binding.tableID, primaryKey: row[column]) {
                guard policy != .error else {
                    fail(
                        RealmError(
                            .primaryKeyExists,
                            "A \(binding.info.className) with primary key \(row[column]) already exists: pass "
                                + "update: .modified (or .all) to update it, or use another key."))
                    return nil
                }
                let columns = (0..<binding.columnCount).filter { $0 != column && (given?.contains($0) ?? true) }
                updateRow(binding, existing, columns.map { ($0, row[$0]) }, reportingUnchanged: policy == .all)
                return existing
            }
        }
        return run { () throws(StorageError) in try transaction.insert(binding.tableID, row) }
    }

    /// `update: .modified` / `.all` find the existing object by primary key: without one they are an error.
    private func requirePrimaryKey(_ info: ObjectSchemaInfo) -> Bool {
        guard info.primaryKey == nil else { return true }
        fail(
            RealmError(
                .invalidValue,
                "update: .modified and .all need a primary key to find the existing object, and \(info.className) "
                    + "has none: use update: .error (the default), or declare @Persisted(primaryKey: true)."))
        return false
    }

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
    private func applyCopyFixups() {
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

    private enum NestedValue {
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
    private func nestedLinks(_ property: PropertyInfo, _ given: Any, update: Realm.UpdatePolicy) -> NestedValue {
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

    // MARK: Updating and deleting

    /// Sets one property of a managed object.
    /// Sets one property of a managed object to the value `makeValue` encodes. While it encodes, embedded
    /// objects already owned by exactly this property may be linked again (a list being reordered).
    func set(_ object: ObjectBase, ordinal: Int, _ makeValue: (WriteSession) -> Value) {
        guard let managed = object._managed else { return }
        let saved = target
        target = (managed.table.tableID, managed.key, managed.table.columns[ordinal])
        let value = makeValue(self)
        target = saved
        update(object, ordinal: ordinal, value: value)
    }

    func update(_ object: ObjectBase, ordinal: Int, value: Value) {
        guard failure == nil, let managed = object._managed else { return }
        guard managed.context === context else {
            fail(RealmError(.invalidObject, "This \(managed.table.info.className) belongs to another Realm actor."))
            return
        }
        if let problem = context.joinProblems[ObjectIdentifier(managed.table.info.type)] {
            fail(RealmError(.schemaMismatch, "\(managed.table.info.className) cannot be written: \(problem)."))
            return
        }
        updateRow(managed.table, managed.key, [(managed.table.columns[ordinal], value)])
    }

    /// Updates columns of a row; embedded objects no longer referenced by it are deleted. With
    /// `reportingUnchanged` (`update: .all`), columns given their current value are reported modified too.
    private func updateRow(
        _ binding: TableBinding, _ key: ObjectKey, _ columns: [(column: Int, value: Value)],
        reportingUnchanged: Bool = false
    ) {
        let owned = binding.embeddedLinkColumns.filter { c in columns.contains { $0.column == c } }
        let before = owned.isEmpty ? [] : embeddedChildren(binding, key, columns: owned)
        guard
            run({ () throws(StorageError) in
                try transaction.update(binding.tableID, key, columns, reportingUnchanged: reportingUnchanged)
            }) != nil
        else { return }
        guard !before.isEmpty else { return }
        let after = Set(embeddedChildren(binding, key, columns: owned).map(\.key))
        for child in before where !after.contains(child.key) { deleteRow(child.binding, child.key) }
    }

    /// The embedded objects row `key` owns through `columns`.
    private func embeddedChildren(
        _ binding: TableBinding, _ key: ObjectKey, columns: [Int]
    ) -> [(binding: TableBinding, key: ObjectKey)] {
        var children: [(TableBinding, ObjectKey)] = []
        for column in columns {
            guard let ordinal = binding.columns.firstIndex(of: column),
                let target = binding.info.properties[ordinal].kind.linkTarget,
                let targetBinding = context.bindings.binding(for: target),
                let value = try? transaction.value(binding.tableID, key, column: column)
            else { continue }
            switch value {
            case .link(let child): children.append((targetBinding, child))
            case .list(let items), .set(let items):
                for case .link(let child) in items { children.append((targetBinding, child)) }
            case .map(let entries):
                for case .link(let child) in entries.map(\.value) { children.append((targetBinding, child)) }
            default: break
            }
        }
        return children
    }

    /// Deletes a managed object (and the embedded objects it owns).
    func delete(_ object: ObjectBase) {
        guard failure == nil else { return }
        guard let managed = object._managed, managed.context === context else {
            fail(
                RealmError(
                    .invalidObject,
                    object._managed == nil
                        ? "Can only delete an object from the Realm it belongs to: this one is unmanaged."
                        : "Can only delete an object from the Realm it belongs to."))
            return
        }
        guard transaction.contains(managed.table.tableID, managed.key) else {
            fail(
                RealmError(
                    .invalidObject,
                    "This \(managed.table.info.className) was already deleted; check isInvalidated before deleting."))
            return
        }
        deleteRow(managed.table, managed.key)
    }

    /// Deletes the rows `keys` of `binding`'s table (and the embedded objects they own). A key deleted
    /// meanwhile (an embedded object whose parent came first) is skipped.
    func delete(_ keys: [ObjectKey], of binding: TableBinding) {
        for key in keys {
            guard failure == nil else { return }
            deleteRow(binding, key)
        }
    }

    /// Deletes row `key` and the embedded objects it owns; a row that is already gone is skipped.
    private func deleteRow(_ binding: TableBinding, _ key: ObjectKey) {
        let children =
            binding.embeddedLinkColumns.isEmpty
            ? [] : embeddedChildren(binding, key, columns: binding.embeddedLinkColumns)
        let deleted = run { () throws(StorageError) in try transaction.deleteIfPresent(binding.tableID, key) }
        guard deleted == true else { return }
        for child in children { deleteRow(child.binding, child.key) }
    }

    // MARK: Set-based writes

    /// Sets the property `name` of the rows `keys` of `binding`'s table to `value` (Realm's
    /// `Results.setValue(_:forKey:)`): converted and validated once, then written row by row, with no object
    /// made. Embedded objects are copied for each row (each has one parent). A bad name or value is
    /// recorded as the transaction's failure (`.invalidValue`), and nothing is written.
    func setValue(_ value: Any?, forKey name: String, keys: [ObjectKey], of binding: TableBinding) {
        guard failure == nil else { return }
        let info = binding.info
        if let problem = context.joinProblems[ObjectIdentifier(info.type)] {
            fail(RealmError(.schemaMismatch, "\(info.className) cannot be written: \(problem)."))
            return
        }
        guard let property = info.storedProperties.first(where: { $0.name == name }) else {
            let linking = info.properties.contains { $0.name == name }
            fail(
                RealmError(
                    .invalidValue,
                    linking
                        ? "setValue(_:forKey:) can't set '\(name)': LinkingObjects are computed from the links to the "
                            + "object; set the link on the other side instead."
                        : "setValue(_:forKey:) failed: '\(name)' is not a property of \(info.className)."))
            return
        }
        guard !property.options.primaryKey else {
            fail(
                RealmError(
                    .invalidValue,
                    "setValue(_:forKey:) can't change the primary key '\(name)' of \(info.className) objects: delete "
                        + "them and add new ones instead."))
            return
        }
        let column = binding.columns[property.ordinal]
        guard column >= 0 else { return }
        let given: Any = value ?? NSNull()
        // Embedded objects have one parent: each row gets its own copy, made per row.
        let perRow = property.kind.linkTarget.map { context.info(for: $0).isEmbedded } ?? false
        func convert() -> Value? {
            switch nestedLinks(property, given, update: .error) {
            case .value(let value): return value
            case .invalid: break
            case .notNested:
                if let converted = property.accessor.fromAny(given) {
                    return property.accessor.encode(converted, _Encoder(session: self))
                }
            }
            if failure == nil {
                fail(
                    RealmError(
                        .invalidValue,
                        "setValue(_:forKey:) failed: '\(name)' expects \(property.kind.swiftType), got "
                            + "\(Swift.type(of: given)) \(given)."))
            }
            return nil
        }
        let shared = perRow ? nil : convert()
        guard perRow || shared != nil else { return }
        for key in keys {
            guard failure == nil else { return }
            // A row an earlier one's cascade deleted (an embedded object of this query) is skipped.
            guard transaction.state.tables.rowLocation(binding.tableID, key) != nil else { continue }
            if let shared {
                updateRow(binding, key, [(column, shared)])
                continue
            }
            let saved = target
            target = (binding.tableID, key, column)
            let value = convert()
            target = saved
            guard let value else { return }
            updateRow(binding, key, [(column, value)])
        }
    }

    /// Deletes every object of every class.
    func deleteAll() {
        for table in transaction.state.tableIDs.values.sorted() {
            guard failure == nil else { return }
            _ = run { () throws(StorageError) in try transaction.deleteAll(table) }
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
