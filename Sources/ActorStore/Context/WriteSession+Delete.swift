import ActorStorePersistence
import Foundation

extension WriteSession {
    /// The embedded objects row `key` owns through `columns`.
    func embeddedChildren(
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
    ///
    /// Runs for every object of a delete loop, so, as ``update(_:ordinal:value:)``, it reads what it needs of
    /// the object in place (a copy of its `ManagedState` retains and releases two references) and the
    /// unowned `context` once (each use retains and releases it).
    func delete(_ object: ObjectBase) {
        let context = self.context
        guard context.transaction.failure(of: self) == nil else { return }
        guard let binding = object._managed?.table, let key = object._managed?.key,
            object._managed?.context === context
        else {
            fail(
                RealmError(
                    .invalidObject,
                    object._managed == nil
                        ? "Can only delete an object from the Realm it belongs to: this one is unmanaged."
                        : "Can only delete an object from the Realm it belongs to."))
            return
        }
        // No look-up first: the delete finds the row (or that there is none) itself, or is told where it is
        // (the object's cached location holds while the context's stamp is unchanged: every change bumps it).
        let known = object._managed?.stamp == context.stamp ? object._managed?.location : nil
        guard deleteRow(binding, key, knownLocation: known) != false else {
            fail(
                RealmError(
                    .invalidObject,
                    "This \(binding.info.className) was already deleted; check isInvalidated before deleting."))
            return
        }
    }

    /// Deletes the rows of `binding`'s table that pass `test`, in one pass (see
    /// `WriteTransaction.deleteRows(_:where:)`). Returns false, deleting nothing, when rows link to the table
    /// (then delete by key); true when it deleted, or when the delete failed (the session holds the error).
    func deleteRows(_ binding: TableBinding, where test: (RowView) -> Bool) -> Bool {
        let deleted = run { () throws(StorageError) in try transaction.deleteRows(binding.tableID, where: test) }
        return deleted.map { $0 != nil } ?? true
    }

    /// Deletes the rows `keys` of `binding`'s table (and the embedded objects they own). A key deleted
    /// meanwhile (an embedded object whose parent came first) is skipped. `locations`, when given, is where
    /// each row is now (a query's scan read them at the current version), which spares looking them up.
    func delete(_ keys: [ObjectKey], locations: [RowLocation]? = nil, of binding: TableBinding) {
        guard !binding.embeddedLinkColumns.isEmpty else {
            // Nothing to cascade to: one engine call for every row.
            _ = run { () throws(StorageError) in
                try transaction.delete(binding.tableID, keys: keys, locations: locations)
            }
            return
        }
        for key in keys {
            guard failure == nil else { return }
            deleteRow(binding, key)
        }
    }

    /// Deletes row `key` and the embedded objects it owns; a row that is already gone is skipped.
    /// - Returns: whether the row was deleted: false if it was already gone, nil if the delete failed (the
    ///   session then holds the error).
    @discardableResult
    func deleteRow(_ binding: TableBinding, _ key: ObjectKey, knownLocation: RowLocation? = nil) -> Bool? {
        let children =
            binding.embeddedLinkColumns.isEmpty
            ? [] : embeddedChildren(binding, key, columns: binding.embeddedLinkColumns)
        let deleted = run { () throws(StorageError) in
            try transaction.deleteIfPresent(binding.tableID, key, knownLocation: knownLocation)
        }
        guard deleted == true else { return deleted }
        for child in children { deleteRow(child.binding, child.key) }
        return true
    }

    /// Deletes every object of every class.
    func deleteAll() {
        for table in transaction.state.tableIDs.values.sorted() {
            guard failure == nil else { return }
            _ = run { () throws(StorageError) in try transaction.deleteAll(table) }
        }
    }
}
