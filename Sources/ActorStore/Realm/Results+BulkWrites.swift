import ActorStorePersistence
import Foundation

// Set-based writes: change every object a query matches in one call, without making a live object per match.

extension Results {
    /// Sets one property of every matching object to `value`, in one pass over the matches (Realm's
    /// `setValue(_:forKey:)` on results).
    ///
    /// Unlike a loop over the results (`for dog in dogs { dog.age = 3 }`), no live object is made for the
    /// matches: the value is converted and checked once, then written to each matching row, and observers
    /// see every matching object modified in that property (objects whose value does not change are not
    /// reported). The matches are the query's as the call starts: an object that stops matching because of
    /// the new value is still updated.
    ///
    /// ```swift
    /// try await realm.write { realm in
    ///     realm.objects(Dog.self).where { $0.age < 2 }.setValue(true, forKey: "isPuppy")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - value: the new value, of the property's type (`nil` for an optional property or a link; an object,
    ///     a dictionary or an array for a link or a collection of objects, as in `create(_:value:)`). An
    ///     embedded object is copied for each matching object, since each has one parent.
    ///   - key: the property's name.
    /// - Important: Call it inside a write transaction (a programmer error otherwise, as in Realm). An unknown
    ///   property, the primary key, a `LinkingObjects` property or a value of the wrong type makes the
    ///   transaction fail: the `write` throws `RealmError` with code `.invalidValue`, and nothing of it is
    ///   committed.
    /// - Complexity: O(m) row writes for m matches, after evaluating the query once (an index walk when an
    ///   index fits).
    public func setValue(_ value: Any?, forKey key: String) {
        let session = context.requireWriteSession(for: "set a property of query results")
        guard let binding = context.binding(for: Element.self) else { return }  // no table yet: no objects
        let (keys, locations) = matches
        session.setValue(value, forKey: key, keys: keys, locations: locations, of: binding)
    }

    /// Calls `body` once for each matching object, to change it in place: a computed update of every match
    /// (`score += $0.bonus`). To compute one property from its own value, ``update(_:_:)`` is faster: it
    /// makes no object.
    ///
    /// The objects passed are made as they are needed and reused while `body` does not keep them: one object
    /// serves every match unless `body` stores it somewhere (then the next match gets a new one, so a kept
    /// object stays valid). The matches are the query's as the call starts, so an update that makes an
    /// object stop matching, or start matching, does not change which objects are visited; an object
    /// deleted by `body` before its turn is skipped. Observers receive each changed object as modified, in
    /// the properties `body` set.
    ///
    /// ```swift
    /// try await realm.write { realm in
    ///     realm.objects(Player.self).where { $0.team == "red" }.update { $0.score += 1 }
    /// }
    /// ```
    ///
    /// - Parameter body: changes one object. It may read and set any property of it, and of other objects.
    /// - Throws: what `body` throws; the objects visited before keep their changes in the open transaction
    ///   (throw out of the `write` block to roll them back).
    /// - Important: Call it inside a write transaction (a programmer error otherwise, as in Realm).
    /// - Complexity: O(m) calls of `body` for m matches, after evaluating the query once.
    public func update<E: Error>(_ body: (Element) throws(E) -> Void) throws(E) {
        let session = context.requireWriteSession(for: "update query results")
        guard let binding = context.binding(for: Element.self) else { return }
        let table = binding.tableID
        let (keys, scanned) = matches
        // The changes of the object `body` is at may wait in the engine and reach its trees a chunk of rows
        // at a time (see `ObjectLoop`).
        let loop = ObjectLoop(context)
        defer { loop.end() }
        // Not an `Element?`: in this generic function every use of that type looks its metadata up.
        var spare: ObjectBase?
        var locations: [RowLocation?] = []
        for position in keys.indices {
            guard session.failure == nil else { return }
            let key = keys[position]
            if scanned == nil, position % Self.updateChunk == 0 {
                // Where the next chunk's rows are, in one pass over the rows tree when the keys ascend.
                locations = session.transaction.rowLocations(
                    table, keys[position..<Swift.min(position + Self.updateChunk, keys.count)])
                loop.reread()
            }
            let known = scanned.map { Optional($0[position]) } ?? locations[position % Self.updateChunk]
            let holds = loop.enter(position, table, key, in: context)
            guard let location = holds ? known : context.location(table, key) else { continue }  // deleted meanwhile
            // The object `body` had is reused if nothing else refers to it (see `RealmContext.loopObject`).
            guard let object = context.loopObject(&spare, binding, key, location: location) as? Element else { return }
            try body(object)
        }
    }

    /// How many rows' locations `update(_:)` reads at a time.
    private static var updateChunk: Int { 4096 }
}

extension Results {
    /// Computes a new value of one property for every matching object from its current value, in one pass
    /// over the matches: a set-based computed update, with no object made and nothing decoded but the
    /// property (`UPDATE … SET score = score + 1` in SQL).
    ///
    /// ```swift
    /// try await realm.write { realm in
    ///     realm.objects(Player.self).where { $0.team == "red" }.update(\.score) { $0 += 1 }
    /// }
    /// ```
    ///
    /// `transform` receives each match's current value and changes it in place; objects whose value does
    /// not change are not written, and observers see the others modified in that property. The matches are
    /// the query's as the call starts; they are visited in the order objects were added, not the query's
    /// sort order. Use ``update(_:)`` to change several properties of each object, or to read other
    /// properties while computing the new value.
    ///
    /// - Parameters:
    ///   - keyPath: a stored property of the class: a value or an optional value (not a link, a
    ///     collection, or the primary key).
    ///   - transform: changes one value. It may read and write the realm (the changes made before are
    ///     visible to it), but it is faster when it does not.
    /// - Throws: what `transform` throws; the objects updated before keep their new values in the open
    ///   transaction (throw out of the `write` block to roll them back). A key path that is not such a
    ///   property makes the transaction fail: the `write` throws `RealmError` with code `.invalidValue`, and
    ///   nothing of it is committed.
    /// - Important: Call it inside a write transaction (a programmer error otherwise, as in Realm).
    /// - Complexity: O(m) calls of `transform` and row writes for m matches, after evaluating the query once.
    public func update<V: _Persistable, E: Error>(
        _ keyPath: ReferenceWritableKeyPath<Element, V>, _ transform: (inout V) throws(E) -> Void
    ) throws(E) {
        let session = context.requireWriteSession(for: "update a property of query results")
        guard let binding = context.binding(for: Element.self),
            let column = session.computedUpdateColumn(binding, ordinal: binding.info.ordinal(of: keyPath), keyPath)
        else { return }
        // A query that scanned the rows knows where each match is (at the current version).
        let (keys, locations) = matches
        let decoder = _Decoder(context: context)
        let encoder = _Encoder(session: session)
        var thrown: E?
        _ = session.run { () throws(StorageError) in
            try session.transaction.update(binding.tableID, keys: keys, column: column, locations: locations) {
                stored in
                var value = V._rlmDecodeOrDefault(_StoredValue(stored), decoder)
                do throws(E) {
                    try transform(&value)
                } catch {
                    thrown = error
                    return nil
                }
                return value._rlmEncode(encoder).raw
            }
        }
        if let thrown { throw thrown }
    }
}
