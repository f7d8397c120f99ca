import ActorStorePersistence
import Foundation

extension Realm {
    // MARK: Adding, creating, deleting

    /// Adds an unmanaged object — and the unmanaged objects it links to — to the realm inside the open
    /// write transaction. The object becomes managed: later changes to it are persisted.
    ///
    /// With `update: .modified` or `.all`, an object whose primary key exists updates the stored one
    /// instead (and becomes that object). A failure (a duplicate primary key with `.error`) makes the
    /// enclosing `write` throw and commit nothing.
    public func add(_ object: ObjectBase, update: UpdatePolicy = .error) {
        addInTransaction(object, update: update)
    }

    private func addInTransaction(_ object: ObjectBase, update: UpdatePolicy) {
        let session = context.requireWriteSession(for: "add objects")
        guard !(object is EmbeddedObject) || object.isManaged else {
            return session.fail(
                RealmError(
                    .invalidObject,
                    "Embedded objects cannot be added on their own: assign the \(type(of: object)) to a property of "
                        + "its parent."))
        }
        session.add(object, update: update)
    }

    /// Adds an unmanaged object in a write transaction of its own (or the open one). `sending`: the caller
    /// gives the object away — the compiler rejects any later use of it there.
    /// ```swift
    /// let fido = Dog()
    /// fido.name = "Fido"
    /// try await realm.add(fido)
    /// ```
    public func add(_ object: sending ObjectBase, update: UpdatePolicy = .error) async throws {
        if let session = context.session, session.belongsToCurrentTask {
            return addInTransaction(object, update: update)
        }
        try await beginWrite()
        addInTransaction(object, update: update)
        try await commitWrite()
    }

    /// Adds each object of a sequence (see `add(_:update:)`).
    public func add<S: Sequence>(_ objects: S, update: UpdatePolicy = .error) where S.Element: ObjectBase {
        for object in objects { add(object, update: update) }
    }

    /// Creates an object from a dictionary (`["name": "Rex"]`), an array of values in property declaration
    /// order (`["Rex", 3]`), or another object of the class, inside the open write transaction; nested
    /// dictionaries and arrays create linked objects.
    ///
    /// Missing properties take their default values; dictionary keys that name no property are ignored (a
    /// JSON document may carry more than the model keeps). With a primary key and `update: .modified` (or
    /// `.all`), an existing object is updated with only the values given; `nil` (or `NSNull()`) clears an
    /// optional property. A value that does not fit makes the enclosing `write` throw
    /// `RealmError.invalidValue` and commit nothing.
    ///
    /// To copy an object from a realm on another file, pass its frozen form (live objects cannot leave
    /// their actor): the copy takes its values and copies the objects it links to with it (and the objects
    /// those link to, cycles included), each once, with the same update policy; the copies link to each
    /// other as the originals do. Frozen objects may also stand among nested values.
    /// ```swift
    /// let rex = await source.read { $0.objects(Dog.self).first!.freeze() }
    /// try await destination.write { $0.create(Dog.self, value: rex) }
    /// ```
    @discardableResult
    public func create<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: UpdatePolicy = .error) -> T {
        let session = context.requireWriteSession(for: "create objects")
        if let object = session.create(type, value: value, update: update) as? T { return object }
        return T()
    }

    /// Deletes a managed object; links to it become nil and it leaves every list. Embedded objects it owns
    /// are deleted with it.
    public func delete(_ object: ObjectBase) {
        context.requireWriteSession(for: "delete objects").delete(object)
    }

    /// Deletes each object of a sequence (a `List`, `MutableSet`, `LinkingObjects` or an array of objects).
    ///
    /// An object the sequence holds more than once (a `List` may) is deleted once. Every object must exist
    /// when the call starts: one deleted before is an error, as when deleting one object.
    public func delete<S: Sequence>(_ objects: S) where S.Element: ObjectBase {
        let session = context.requireWriteSession(for: "delete objects")
        var seen = Set<SequenceDeletion>()
        for object in Array(objects) {
            if let managed = object._managed, managed.context === context,
                !seen.insert(SequenceDeletion(table: managed.table.tableID, key: managed.key)).inserted
            {
                continue
            }
            session.delete(object)
        }
    }

    /// Deletes every object of a `Results` (as it is when the call starts). No object is made for a match.
    ///
    /// A query that an index answers (an equality, `IN` or range on an indexed property or the primary key)
    /// finds the matches first, then deletes them by key. One that has to read every object of the class
    /// (no index fits, no sort or limit, every condition on the object's own properties) tests and deletes
    /// in one pass over the rows, reading each row once, when the class has no embedded objects and no
    /// object links to it.
    /// - Complexity: O(m) in the m matches after an index walk; O(n) in the n objects of the class for a
    ///   query that reads them all.
    public func delete<T: Object>(_ results: Results<T>) {
        let session = context.requireWriteSession(for: "delete objects")
        guard results.context === context, let binding = context.binding(for: T.self) else {
            // No table yet (nothing to delete), or results of another realm, which isolation should rule
            // out: deleting its first object then reports the error.
            for object in Array(results) { session.delete(object) }
            return
        }
        // A query that scans the rows and tests each on its own: tested and deleted in one pass (when no
        // embedded object is to be deleted with its parent).
        if binding.embeddedLinkColumns.isEmpty,
            let test = context.runQuery(results.query, T.self, { $0.scanTest(results.query, cache: results.plans) }),
            session.deleteRows(binding, where: test)
        {
            return
        }
        // By key: no object is made for a row only to delete it. A query that scanned the rows knows where
        // each match is (at the current version: `matches` is recomputed whenever rows may have moved).
        let (keys, locations) = results.matches
        session.delete(keys, locations: locations, of: binding)
    }

    /// Deletes every object in the realm. The schema stays.
    /// - Complexity: O(n) in the objects of every class.
    public func deleteAll() {
        context.requireWriteSession(for: "delete objects").deleteAll()
    }
}

/// A row that `Realm.delete(_:)` of a sequence has deleted: it skips the row when the sequence holds it again.
private struct SequenceDeletion: Hashable {
    let table: TableID
    let key: ObjectKey
}
