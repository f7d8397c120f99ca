import ActorStorePersistence
import Foundation

extension WriteSession {
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

    /// Sets one property of a managed object to `value`, already encoded (see `set`; a stored value's setter
    /// comes here directly, as its value needs no session to encode).
    ///
    /// Runs for every property set of a loop over objects, so it reads what it needs of the object in
    /// place (copying its `ManagedState` retains and releases two references) and the unowned `context`
    /// once (each use retains and releases it).
    func update(_ object: ObjectBase, ordinal: Int, value: Value) {
        let context = self.context
        guard context.transaction.failure(of: self) == nil, let binding = object._managed?.table,
            let key = object._managed?.key
        else { return }
        guard object._managed?.context === context else {
            fail(RealmError(.invalidObject, "This \(binding.info.className) belongs to another Realm actor."))
            return
        }
        if !context.joinProblems.isEmpty, let problem = context.joinProblems[ObjectIdentifier(binding.info.type)] {
            fail(RealmError(.schemaMismatch, "\(binding.info.className) cannot be written: \(problem)."))
            return
        }
        // The one-column array of the last update, refilled: no array made per property set.
        var columns: [(column: Int, value: Value)] = []
        swap(&columns, &updateColumns)
        defer {
            columns[0].value = .null
            swap(&columns, &updateColumns)
        }
        if columns.count == 1 {
            columns[0] = (binding.columns[ordinal], value)
        } else {
            columns = [(binding.columns[ordinal], value)]
        }
        // The object's cached location is the row's while the context's stamp is unchanged (every change
        // bumps it): passing it saves the engine a lookup.
        let stamp = context.stamp
        let knownLocation = object._managed?.stamp == stamp ? object._managed?.location : nil
        let written = updateRow(binding, key, columns, knownLocation: knownLocation)
        // The object keeps its row's new location: its next read or write needs no lookup (and, while a
        // loop over objects is at it, does not make the engine apply the updates it defers).
        if let written {
            object._managed?.location = written
            object._managed?.stamp = context.stamp
        }
    }

    /// Updates columns of a row; embedded objects no longer referenced by it are deleted. With
    /// `reportingUnchanged` (`update: .all`), columns given their current value are reported modified too.
    /// Returns where the row is now, when the engine says and nothing else was written after it (nil
    /// otherwise: look it up).
    @discardableResult
    func updateRow(
        _ binding: TableBinding, _ key: ObjectKey, _ columns: [(column: Int, value: Value)],
        reportingUnchanged: Bool = false, knownLocation: RowLocation? = nil
    ) -> RowLocation? {
        let owned = binding.embeddedLinkColumns.filter { c in columns.contains { $0.column == c } }
        let before = owned.isEmpty ? [] : embeddedChildren(binding, key, columns: owned)
        guard
            let written = run({ () throws(StorageError) in
                try transaction.update(
                    binding.tableID, key, columns, reportingUnchanged: reportingUnchanged, knownLocation: knownLocation)
            })
        else { return nil }
        guard !before.isEmpty else { return written }
        let after = Set(embeddedChildren(binding, key, columns: owned).map(\.key))
        for child in before where !after.contains(child.key) { deleteRow(child.binding, child.key) }
        return nil
    }

    // MARK: Set-based writes

    /// The column `Results.update(_:_:)` computes new values of: the property at `ordinal` of `binding`'s
    /// class, a stored value or optional value that is not the primary key. Otherwise nil, and the
    /// transaction fails with a message naming `keyPath`.
    func computedUpdateColumn(_ binding: TableBinding, ordinal: Int?, _ keyPath: AnyKeyPath) -> Int? {
        guard failure == nil else { return nil }
        let info = binding.info
        if let problem = context.joinProblems[ObjectIdentifier(info.type)] {
            fail(RealmError(.schemaMismatch, "\(info.className) cannot be written: \(problem)."))
            return nil
        }
        guard let ordinal, info.properties.indices.contains(ordinal), binding.columns[ordinal] >= 0,
            case let property = info.properties[ordinal],
            property.kind.collection == .single, property.kind.linkTarget == nil, !property.options.primaryKey
        else {
            fail(
                RealmError(
                    .invalidValue,
                    "update(_:_:) computes new values of one stored value property of \(info.className), not its "
                        + "primary key, a link or a collection; \(keyPath) is not one. Use update { } on the "
                        + "objects instead."))
            return nil
        }
        return binding.columns[ordinal]
    }

    /// Sets the property `name` of the rows `keys` of `binding`'s table to `value` (Realm's
    /// `Results.setValue(_:forKey:)`): converted and validated once, then written row by row, with no object
    /// made. Embedded objects are copied for each row (each has one parent). A bad name or value is
    /// recorded as the transaction's failure (`.invalidValue`), and nothing is written. `locations`, when
    /// given, is where each row is now (a query's scan read them at the current version).
    func setValue(
        _ value: Any?, forKey name: String, keys: [ObjectKey], locations: [RowLocation]? = nil,
        of binding: TableBinding
    ) {
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
        if !perRow {
            let stamp = context.stamp
            guard let shared = convert() else { return }
            // Converting a link adds the object it names if it is new, which may move rows: then they are
            // looked up.
            let locations = context.stamp == stamp ? locations : nil
            // One engine call: the value is validated once, and each row gets only this column re-encoded.
            run { () throws(StorageError) in
                try transaction.update(binding.tableID, keys: keys, column: column, to: shared, locations: locations)
            }
            return
        }
        for key in keys {
            guard failure == nil else { return }
            // A row an earlier one's cascade deleted (an embedded object of this query) is skipped.
            guard transaction.state.tables.rowLocation(binding.tableID, key) != nil else { continue }
            let saved = target
            target = (binding.tableID, key, column)
            let value = convert()
            target = saved
            guard let value else { return }
            updateRow(binding, key, [(column, value)])
        }
    }
}
