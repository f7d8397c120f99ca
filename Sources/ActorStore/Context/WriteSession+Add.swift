import ActorStorePersistence
import Foundation

extension WriteSession {
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
    func nestedOperation<R>(policy newPolicy: Realm.UpdatePolicy?, _ body: () -> R) -> R {
        let saved = policy
        if let newPolicy { policy = newPolicy }
        addDepth += 1
        defer {
            addDepth -= 1
            policy = saved
            // Most adds (objects without links) leave nothing to fix up: then the cleanup touches nothing.
            if addDepth == 0 && !(fixups.isEmpty && embeddedAdded.isEmpty && copyFixups.isEmpty && copies.isEmpty) {
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

    func insert(_ object: ObjectBase) -> ObjectKey? {
        // Read once: each use of the unowned reference retains and releases the context.
        let context = self.context
        guard context.transaction.failure(of: self) == nil else { return nil }
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
        guard object._slots.count == info.slotCount else {
            // An object made by a property initialiser of another model class while ActorStore made that one
            // as a managed object: its values were never kept (see `ConstructionStack.managedConstruction`).
            fail(
                RealmError(
                    .invalidObject,
                    "This \(info.className) has no values of its own: it was made by a property initialiser of a "
                        + "model class while ActorStore read an object of that class from the realm. Make it outside "
                        + "the initialisers of model classes, or in init() after super.init()."))
            return nil
        }
        if !info.hasLinks {
            // No links: no cycles or nested adds to track.
            if let plan = binding.direct, policy == .error {
                switch object._slots.withUnsafeMutableBufferPointer({ insertDirect(context, binding, plan, $0) }) {
                case .inserted(let key): return becomeManaged(object, context, binding, key)
                case .failed: return nil
                case .declined: break
                }
            }
            let slots = object._slots
            // The row array of the last insert, refilled in place: no array made per object.
            var row: [Value] = []
            swap(&row, &insertRow)
            defer { swap(&row, &insertRow) }
            if row.count != binding.defaultRow.count {
                row = binding.defaultRow
            } else if !binding.plansCoverEveryColumn {
                for (i, value) in binding.defaultRow.enumerated() { row[i] = value }
            }  // else the plans overwrite every value left from the last insert
            let encoder = _Encoder(session: self)
            // Through a buffer pointer: the slots are passed borrowed, not copied out of the array.
            slots.withUnsafeBufferPointer { slots in
                for plan in binding.plans { row[plan.column] = plan.encode(slots[plan.ordinal], encoder) }
            }
            guard let key = upsert(binding, row, given: nil) else { return nil }
            return becomeManaged(object, context, binding, key)
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
        return becomeManaged(object, context, binding, key)
    }

    /// Makes `object`, just inserted as row `key`, managed by `context` (this session's); returns the key.
    private func becomeManaged(
        _ object: ObjectBase, _ context: RealmContext, _ binding: TableBinding, _ key: ObjectKey
    ) -> ObjectKey {
        object._managed = ManagedState(
            context: context, table: binding, key: key, location: RowLocation(offset: 0, length: 0), stamp: 0)
        object._slots = []
        if binding.info.isEmbedded { embeddedAdded.insert(ObjectIdentifier(object)) }
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
    func upsert(_ binding: TableBinding, _ row: [Value], given: Set<Int>?) -> ObjectKey? {
        if let primaryKey = binding.info.primaryKey {
            let column = binding.columns[primaryKey.ordinal]
            if policy == .error {
                // The engine's insert refuses a taken primary key itself, changing nothing: no lookup first.
                defer { context.invalidateLocations() }
                do throws(StorageError) {
                    return try transaction.insert(binding.tableID, row)
                } catch {
                    insertFailed(binding, error) { row[column] }
                    return nil
                }
            }
            if let existing = transaction.object(binding.tableID, primaryKey: row[column]) {
                let columns = (0..<binding.columnCount).filter { $0 != column && (given?.contains($0) ?? true) }
                updateRow(binding, existing, columns.map { ($0, row[$0]) }, reportingUnchanged: policy == .all)
                return existing
            }
        }
        return run { () throws(StorageError) in try transaction.insert(binding.tableID, row) }
    }

    /// Records the failure of an insert into `binding`'s table; `primaryKey` gives the row's primary key.
    func insertFailed(_ binding: TableBinding, _ error: StorageError, primaryKey: () -> Value) {
        guard error.code == .primaryKeyExists else { return fail(RealmError(error)) }
        fail(
            RealmError(
                .primaryKeyExists,
                "A \(binding.info.className) with primary key \(primaryKey()) already exists: pass "
                    + "update: .modified (or .all) to update it, or use another key."))
    }

    /// `update: .modified` / `.all` find the existing object by primary key: without one they are an error.
    func requirePrimaryKey(_ info: ObjectSchemaInfo) -> Bool {
        guard info.primaryKey == nil else { return true }
        fail(
            RealmError(
                .invalidValue,
                "update: .modified and .all need a primary key to find the existing object, and \(info.className) "
                    + "has none: use update: .error (the default), or declare @Persisted(primaryKey: true)."))
        return false
    }
}
