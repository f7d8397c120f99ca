import ActorStorePersistence
import Foundation

/// The state behind one ``Realm`` actor that its live objects read through: the version it sees, the
/// open write transaction, and how its classes map to the file's tables.
///
/// Not `Sendable`, on purpose: the actor owns it, and live objects, results and collections (which are
/// not `Sendable` either) refer to it. Region-based isolation keeps all of them inside the actor, so every
/// access happens on the actor's executor and needs no lock.
final class RealmContext {
    // `@exclusivity(unchecked)` on the hot mutable state below: the context is confined to its actor, and no
    // access to these overlaps another (none is held inout across a call), so the dynamic checks, paid on
    // every property read of every live object, can never fire.
    let engine: StorageEngine
    /// The registry key of the file (its standardized path, or the in-memory identifier).
    let fileKey: String
    let configuration: Realm.Configuration
    /// Nil: any class may be used (tables are created on first write). Otherwise the allowed classes.
    let restrictedTypes: Set<ObjectIdentifier>?
    /// Classes this realm knows (validated), in the order they became known.
    private(set) var classes: [ObjectSchemaInfo]
    @exclusivity(unchecked) private(set) var bindings: SchemaBindings
    /// Why a class that joined after open cannot be written (its model is invalid or does not match the
    /// stored table), by class. Read by every property set.
    @exclusivity(unchecked) private(set) var joinProblems: [ObjectIdentifier: String] = [:]
    /// The number of tables in the store when `bindings` was made.
    private var boundTableCount = 0
    /// The schema (``DatabaseState/schemaGeneration``) and the number of `classes` `bindings` were last
    /// found to describe: while both stay the same, `rebind()` has nothing to check (see there).
    private var boundSchema: (generation: UInt64, classes: Int) = (0, -1)
    @exclusivity(unchecked) private(set) var snapshot: Snapshot
    /// The write transaction: idle, writing or failed, and the writers waiting for it. It changes only
    /// through its transitions (see `TransactionState`); `session` reads it.
    @exclusivity(unchecked) var transaction = TransactionState()
    /// Bumped whenever rows may have moved (a new version, any write): cached row locations are then stale.
    @exclusivity(unchecked) private(set) var stamp: UInt64 = 1
    /// The engine's cache epoch when the snapshot was taken (see `StorageEngine.newestVersionAndCacheEpoch`).
    private var cacheEpoch: UInt64 = 0
    weak var realm: Realm?

    /// Takes the engine's newest snapshot. The snapshot lives only in the context afterwards, so moving
    /// it forward does not count twice against `maximumNumberOfActiveVersions`.
    private init(
        engine: StorageEngine, fileKey: String, configuration: Realm.Configuration, classes: [ObjectSchemaInfo]
    ) throws(StorageError) {
        let snapshot = try engine.snapshot()
        let classes = configuration.objectTypes == nil ? SchemaCheck.storedClasses(snapshot) : classes
        self.engine = engine
        self.fileKey = fileKey
        self.configuration = configuration
        self.restrictedTypes = configuration.objectTypes.map { Set($0.map { ObjectIdentifier($0) }) }
        self.classes = classes
        self.bindings = SchemaBindings(classes: classes, store: snapshot)
        self.boundTableCount = snapshot.state.tableIDs.count
        self.boundSchema = (snapshot.state.schemaGeneration, classes.count)
        self.snapshot = snapshot
        self.cacheEpoch = engine.cacheEpoch
    }

    deinit {
        session?.transaction.rollback()
        EngineRegistry.release(fileKey, engine: engine)
    }

    var fileID: String { fileKey }

    // MARK: Opening

    /// - Throws: a ``RealmError``, or what the migration block threw.
    static func open(_ configuration: Realm.Configuration) async throws -> RealmContext {
        let classes = try SchemaCheck.classes(for: configuration)
        var deleted = false
        while true {
            let (key, engineConfiguration) = try configuration.engineConfiguration()
            let engine = try await EngineRegistry.acquire(
                key, readOnly: configuration.readOnly, durable: configuration.durability == .full,
                fileSystem: configuration.fileSystem, encryptionKey: engineConfiguration.encryptionKey
            ) {
                () async throws(StorageError) in
                try await StorageEngine.open(engineConfiguration)
            }
            let context: RealmContext
            do {
                context = try RealmContext(engine: engine, fileKey: key, configuration: configuration, classes: classes)
            } catch {
                EngineRegistry.release(key, engine: engine)
                throw RealmError(error)
            }
            do {
                try await context.prepareSchema()
                return context
            } catch let error as RealmError
                where error.code == .schemaMismatch && configuration.deleteRealmIfMigrationNeeded
                && !deleted && !configuration.readOnly
            {
                let url = configuration.fileURL
                _ = consume context
                deleted = true
                guard let url, !EngineRegistry.isOpen(key) else { throw error }
                // The engine closes asynchronously: its lock file must be free before the file is removed.
                await EngineRegistry.waitUntilClosed(key)
                try Realm.removeFilesIfNotOpen(at: url, fileSystem: configuration.fileSystem)
            }
        }
    }

    /// Checks the stored schema against the classes and creates missing tables.
    private func prepareSchema() async throws {
        let storedVersion = snapshot.schemaVersion
        let hasTables = !snapshot.state.tableIDs.isEmpty
        if hasTables, storedVersion > configuration.schemaVersion {
            throw RealmError(
                .schemaMismatch,
                "The file has schema version \(storedVersion), newer than the configuration's "
                    + "\(configuration.schemaVersion). Open it with schemaVersion \(storedVersion) or later.")
        }
        let differences = SchemaCheck.differences(classes, snapshot)
        let versionBump = hasTables && storedVersion < configuration.schemaVersion
        // Index changes need no migration: they are applied whatever the version.
        let structural = differences.filter { !$0.hasPrefix(SchemaCheck.indexChangePrefix) }
        if !structural.isEmpty {
            guard versionBump, !configuration.readOnly else {
                throw RealmError(
                    .schemaMismatch,
                    "The model classes do not match the schema stored in the file (schema version "
                        + "\(storedVersion)): " + structural.joined(separator: "; ")
                        + (configuration.readOnly
                            ? ". A read-only realm cannot be migrated; open it writable once."
                            : ". Increase Configuration.schemaVersion above \(storedVersion) to migrate automatically "
                                + "(added properties get default values, removed ones are dropped), or set "
                                + "deleteRealmIfMigrationNeeded to start over."))
            }
        }
        let missing = classes.filter { snapshot.tableID(named: $0.className) == nil }
        // Record a higher schema version only when every stored table was checked against a class (without
        // objectTypes, tables of classes not yet used are not): else a later open could no longer migrate them.
        let covered = snapshot.state.tableIDs.keys.allSatisfy { name in classes.contains { $0.className == name } }
        if versionBump, !configuration.readOnly, !structural.isEmpty || configuration.migrationBlock != nil {
            // A block runs once: the version it migrated to is recorded even if some tables were not checked.
            try await migrate(
                from: storedVersion,
                to: covered || configuration.migrationBlock != nil ? configuration.schemaVersion : storedVersion)
            return
        }
        let newVersion = versionBump && covered ? configuration.schemaVersion : storedVersion
        guard !configuration.readOnly,
            !missing.isEmpty || !differences.isEmpty || newVersion != storedVersion || !hasTables
        else { return }
        do throws(StorageError) {
            let txn = try await engine.beginWrite()
            let existing: [TableSchema]
            do throws(RealmError) {
                existing =
                    differences.isEmpty
                    ? txn.state.schema : try SchemaCheck.migrated(classes, txn, version: configuration.schemaVersion)
            } catch {
                txn.rollback()
                throw StorageError(.schemaMismatch, error.message)
            }
            let new = missing.filter { txn.tableID(named: $0.className) == nil }.map(\.tableSchema)
            try txn.setSchema(
                existing + new, version: hasTables ? max(newVersion, txn.schemaVersion) : configuration.schemaVersion)
            try await txn.commit()
            snapshot = try engine.snapshot(replacing: &snapshot)
        } catch {
            throw RealmError(error)
        }
        rebind()
    }

    /// Runs the migration block and the schema change as one write transaction; commits nothing if either
    /// fails (the block's own error is thrown unchanged).
    private func migrate(from storedVersion: UInt64, to newVersion: UInt64) async throws {
        var byName: [String: ObjectSchemaInfo] = [:]
        for info in classes { byName[info.className] = info }
        let typeChanges = MigrationPlan(
            current: snapshot.state.schema, classes: byName, renames: [], dropped: [], version: newVersion,
            oldTables: [:]
        ).typeChanges
        if !typeChanges.isEmpty && configuration.migrationBlock == nil {
            throw RealmError(
                .schemaMismatch,
                "The model classes do not match the schema stored in the file (schema version \(storedVersion)): "
                    + typeChanges.joined(separator: "; ")
                    + ". ActorStore cannot convert stored values by itself: add a Configuration.migrationBlock that "
                    + "sets the new values (migration.enumerateObjects), rename the property, or set "
                    + "deleteRealmIfMigrationNeeded to start over.")
        }
        let transaction: WriteTransaction
        do {
            transaction = try await engine.beginWrite()
        } catch {
            throw RealmError(error)
        }
        if transaction.schemaVersion != storedVersion {
            // Another realm of this process migrated the file while this one waited to write: start over from
            // the file as it is now (the block must not run on data it already migrated).
            transaction.rollback()
            do {
                snapshot = try engine.snapshot(replacing: &snapshot)
            } catch {
                throw RealmError(error)
            }
            rebind()
            try await prepareSchema()
            return
        }
        let migration = Migration(
            transaction: transaction, classes: classes, newVersion: newVersion,
            findsClasses: configuration.objectTypes == nil)
        do {
            try configuration.migrationBlock?(migration, storedVersion)
            try migration.finish()
        } catch {
            transaction.rollback()
            throw error
        }
        do {
            try await transaction.commit()
            snapshot = try engine.snapshot(replacing: &snapshot)
        } catch {
            throw RealmError(error)
        }
        rebind()
    }

    // MARK: Versions

    /// The store the realm currently reads: the open write transaction, or the snapshot.
    @inline(__always) func withStore<R>(_ body: (any ReadableStore) -> R) -> R {
        if let session { return body(session.transaction) }
        return body(snapshot)
    }

    /// The roots of the version the realm reads (the open transaction's, or the snapshot's).
    var state: DatabaseState {
        if let session { return session.transaction.state }
        return snapshot.state
    }

    /// The version the realm sees (a write transaction sees the version it is building).
    var version: Version { session?.transaction.version ?? snapshot.version }

    /// Advances to the newest version. Does nothing inside a write transaction.
    /// - Returns: whether the version changed.
    @discardableResult
    func refresh() -> Bool {
        guard session == nil else { return false }
        let (newest, epoch) = engine.newestVersionAndCacheEpoch()
        if newest > snapshot.version { return advance() }
        // The same version, with the index nodes it loaded dropped (the node cache's limit, a checkpoint):
        // taking it lets this realm's loaded nodes go.
        if epoch != cacheEpoch { advance() }
        return false
    }

    /// Moves to the newest version (inside or outside a transaction). Returns false when it could not
    /// (the version limit; the realm then stays where it is).
    @discardableResult
    func advance(ignoringLimit: Bool = false) -> Bool {
        let newer = try? engine.snapshot(replacing: &snapshot, ignoringLimit: ignoringLimit)
        guard let newer, newer.version >= snapshot.version else { return false }
        adopt(newer)
        return true
    }

    /// The number of versions pinned by others (this realm's own version counts only if a frozen value or
    /// reference shares it).
    func versionsPinnedByOthers() -> Int { engine.pinnedVersions(besides: &snapshot) }

    func adopt(_ newer: Snapshot) {
        snapshot = newer
        cacheEpoch = engine.cacheEpoch
        invalidateLocations()
        if newer.state.tableIDs.count != boundTableCount { rebind() }
    }

    func invalidateLocations() { stamp &+= 1 }

    /// Makes `bindings` describe the classes in the version the realm reads now.
    ///
    /// Called at every transaction's start and end, so it must cost nothing when nothing changed: bindings
    /// depend only on the schema and on `classes` (which only grows), and every schema change gives the
    /// version a schema generation never used before (``DatabaseState/schemaGeneration``), so the same
    /// generation and class count as at the last check mean the same bindings. Comparing every class's
    /// table and stored schema instead was ~17% of a one-object commit (durability `.none`).
    func rebind() {
        let generation = session?.transaction.state.schemaGeneration ?? snapshot.state.schemaGeneration
        if boundSchema == (generation, classes.count) { return }
        withStore { store in
            if !bindings.describe(classes, in: store) { bindings = SchemaBindings(classes: classes, store: store) }
            boundTableCount = store.state.tableIDs.count
        }
        boundSchema = (generation, classes.count)
    }

    // MARK: Classes

    /// The schema of `type` for this realm, registering it if the realm allows any class.
    func info(for type: ObjectBase.Type) -> ObjectSchemaInfo {
        if let binding = bindings.binding(for: type) { return binding.info }
        let info = ClassRegistry.info(for: type)
        if let restrictedTypes {
            precondition(
                restrictedTypes.contains(ObjectIdentifier(type)),
                "Object type '\(info.className)' is not managed by this Realm: add it to Configuration.objectTypes.")
        }
        if !classes.contains(where: { $0 === info }) {
            let added = SchemaCheck.closure(of: [info]).filter { new in !classes.contains { $0 === new } }
            // A class joining after open was not checked then: check it now, and refuse writes if it does
            // not fit (reads map columns by name and read missing ones as defaults).
            let differences = withStore { SchemaCheck.structuralDifferences(added, $0) }
            if !differences.isEmpty {
                // The model does not match the file: binding it would read every changed or missing column
                // as its default (an Int read back as ""). The class stays unbound: a write throws (its
                // commit is refused), reads find no objects and the reason goes to standard error. Not a
                // trap: the file, not only the program, decides this.
                let message = SchemaCheck.driftMessage(differences, storedVersion: withStore { $0.schemaVersion })
                for new in added { joinProblems[ObjectIdentifier(new.type)] = message }
                if let session {
                    session.fail(RealmError(.schemaMismatch, message))
                } else {
                    SchemaCheck.reportUnboundClass(message)
                }
                return info
            }
            let problems = SchemaCheck.problems(added, restrictedTo: configuration.objectTypes)
            if !problems.isEmpty {
                for new in added { joinProblems[ObjectIdentifier(new.type)] = problems.joined(separator: "; ") }
            }
            classes += added
            rebind()
        }
        return info
    }

    /// Problems with `info` (or the classes it links to) that make it unusable; empty when fine.
    func problems(of info: ObjectSchemaInfo) -> [String] {
        SchemaCheck.problems(SchemaCheck.closure(of: [info]), restrictedTo: configuration.objectTypes)
    }

    func binding(for type: ObjectBase.Type) -> TableBinding? {
        if let binding = bindings.binding(for: type) { return binding }
        _ = info(for: type)
        return bindings.binding(for: type)
    }

    // MARK: Objects

    /// A new managed instance of the class of `binding` for row `key`.
    func makeObject(_ binding: TableBinding, _ key: ObjectKey, location: RowLocation? = nil) -> ObjectBase {
        let object = ConstructionStack.withCurrent { stack in
            let previous = (stack.managedConstruction, stack.managedBase)
            // Only when no unmanaged construction is half-way (its pushed values must stay aligned).
            stack.managedConstruction = stack.values.count == stack.height
            stack.managedBase = stack.height
            defer { (stack.managedConstruction, stack.managedBase) = previous }
            return binding.info.type.init()
        }
        object._managed = ManagedState(
            context: self, table: binding, key: key, location: location ?? RowLocation(offset: 0, length: 0),
            stamp: location == nil ? 0 : stamp)
        return object
    }

    /// A managed instance for row `key` of `binding`, for a loop that hands out one object per row
    /// (`for object in results`, `results.update { }`): `spare`, the object the loop handed out last, pointed
    /// at the row when nothing can tell, else a new object, which becomes the spare if its class can be reused.
    ///
    /// Making an object (its class's `init()`, the property wrappers' initialisers, `deinit`) was about a
    /// fifth of an object-by-object update or delete loop. Reuse is invisible to the program because it
    /// happens only when
    /// - nothing but `spare` refers to the object, strongly, weakly or unowned (``isReferencedOnlyOnce(_:)``):
    ///   no one holds it to compare or read it later;
    /// - the class stores nothing but `@Persisted` properties
    ///   (`ObjectSchemaInfo.managedInstancesHoldOnlyTheirRow`): no value of the previous row's object carries
    ///   over;
    /// `spare` must be nil or what an earlier call for the same `binding` left there (a loop's own).
    /// The one difference left is that a class overriding `init()` or `deinit` sees fewer calls (Realm
    /// promises nothing of when it makes accessor objects either).
    func loopObject(
        _ spare: inout ObjectBase?, _ binding: TableBinding, _ key: ObjectKey, location: RowLocation?
    ) -> ObjectBase {
        if binding.info.managedInstancesHoldOnlyTheirRow, Self.isReferencedOnlyOnce(&spare), let object = spare {
            assert(object._managed?.table === binding && object._managed?.context === self, "another loop's object")
            object._managed?.key = key
            object._managed?.location = location ?? RowLocation(offset: 0, length: 0)
            object._managed?.stamp = location == nil ? 0 : stamp
            object._collectionCache = nil
            return object
        }
        let object = makeObject(binding, key, location: location)
        // A class with state of its own is never reused: keeping its object would only delay freeing it.
        if binding.info.managedInstancesHoldOnlyTheirRow { spare = object }
        return object
    }

    /// Whether `object` is referred to by `object` alone: one strong reference, no weak or unowned one.
    ///
    /// `isKnownUniquelyReferenced` counts strong references only; a `weak var` or an `unowned let` to a
    /// loop's object must keep seeing that object (or nil once it is gone), not the next row. The Swift
    /// runtime keeps an object's counts in the word after its type pointer (`InlineRefCounts`, 64-bit
    /// layout): bit 0 a deallocation flag, bits 1–31 the unowned count (1 for the object's own), bit 32
    /// "deiniting", bits 33–62 the extra strong count, bit 63 set once the counts moved to a side table
    /// (which every weak reference makes). An object with one strong reference, no unowned one and no side
    /// table therefore holds 2 or 3 there. Any other value (a weak reference, an unowned one, a runtime
    /// laying the word out differently) means no reuse: the check can only make loops slower, never wrong.
    /// Only 64-bit platforms, which are the package's, reuse at all.
    static func isReferencedOnlyOnce(_ object: inout ObjectBase?) -> Bool {
        #if _pointerBitWidth(_64)
            guard isKnownUniquelyReferenced(&object) else { return false }
            // The object's address, read from the variable's bits: binding the object to a constant would add
            // a strong reference (unoptimised builds keep it) and change the word read. The load reads the
            // object's header, not a Swift property; no other thread can change the word, as no other
            // reference exists.
            guard let address = withUnsafeBytes(of: &object, { $0.load(as: UnsafeRawPointer?.self) }) else {
                return false
            }
            return address.load(fromByteOffset: MemoryLayout<UInt>.size, as: UInt.self) | 1 == 3
        #else
            return false
        #endif
    }

    /// The object `key` of class `type`, or nil if it does not exist in the current version.
    func object<T: ObjectBase>(_ type: T.Type, key: ObjectKey) -> T? {
        guard let binding = binding(for: type),
            let location = location(binding.tableID, key)
        else { return nil }
        return makeObject(binding, key, location: location) as? T
    }

    /// The object of the class of `binding` whose primary-key index entry is `primaryKey`, or nil if there
    /// is none in the current version.
    func object(_ binding: TableBinding, primaryKey: IndexKey) -> ObjectBase? {
        // One walk: the primary-key index holds the row's location too.
        guard let entry = primaryKeyEntry(binding.tableID, primaryKey: primaryKey) else { return nil }
        return makeObject(binding, entry.object, location: entry.location)
    }

    // `location` and `objectKey` read the version's trees in place. Going through `state` would copy the
    // whole `DatabaseState` out of the snapshot or transaction (retaining and releasing each of its roots),
    // a measurable share of every primary-key lookup and of every first property read after a change.

    /// Where row `key` of `table` is in the current version, or nil if there is no such row.
    func location(_ table: TableID, _ key: ObjectKey) -> RowLocation? {
        if let session { return session.transaction.state.tables.rowLocation(table, key) }
        return snapshot.state.tables.rowLocation(table, key)
    }

    /// The object of `table` whose primary-key index entry is `primaryKey` in the current version, and
    /// where its row is, or nil.
    func primaryKeyEntry(_ table: TableID, primaryKey: IndexKey) -> PrimaryKeyEntry? {
        if let session { return session.transaction.state.tables.object(table, primaryKey: primaryKey) }
        return snapshot.state.tables.object(table, primaryKey: primaryKey)
    }

    /// The number of rows of `table` in the current version. O(1), in place (see `location`).
    func rowCount(_ table: TableID) -> Int {
        if let session { return session.transaction.state.tables.rowCount(table) }
        return snapshot.state.tables.rowCount(table)
    }

    /// The row at rank `offset` of `table` (key order) in the current version, or nil. O(log n), in place.
    func row(_ table: TableID, at offset: Int) -> (key: ObjectKey, location: RowLocation)? {
        if let session { return session.transaction.state.tables.row(table, at: offset) }
        return snapshot.state.tables.row(table, at: offset)
    }

    /// The rank of row `key` of `table` in the current version, or nil. O(log n), in place.
    func rowOffset(_ table: TableID, _ key: ObjectKey) -> Int? {
        if let session { return session.transaction.state.tables.rowOffset(table, key) }
        return snapshot.state.tables.rowOffset(table, key)
    }

    /// Whether a managed object still exists in the current version.
    func exists(_ object: ObjectBase) -> Bool {
        guard let managed = object._managed else { return false }
        if managed.context !== self { return managed.context.exists(object) }
        if managed.stamp == stamp { return true }
        return location(managed.table.tableID, managed.key) != nil
    }

    /// The stored value of property `ordinal` of a managed object of this context. Reading an object that
    /// no longer exists stops the program, as in Realm: check ``ObjectBase/isInvalidated`` when it may have
    /// been deleted.
    ///
    /// Collection columns are kept (one at a time, in the object) until the realm's version or data
    /// changes: every `count` and index of a `List`, `MutableSet` or `Map` reads the whole column, and a
    /// loop over indices would otherwise decode it once per element.
    ///
    /// One function for the whole read, taking the object's state once: this is the hot path of every
    /// property read, and each copy of the state retains and releases its references.
    func value(of object: ObjectBase, ordinal: Int) -> Value {
        // The state's fields are read in place rather than by copying the state (which retains and
        // releases its two references).
        guard let table = object._managed?.table else { return .null }
        let column = table.columns[ordinal]
        guard column >= 0 else { return .null }
        if object._managed?.stamp != stamp { relocate(object) }
        guard let location = object._managed?.location else { return .null }
        let type = table.types[column]
        // A pattern, not `== .single`: the enum's `==` is a generic (RawRepresentable) one, called
        // unspecialised from this module.
        if case .single = type.collection { return read(location, column, type) }
        if let cache = object._collectionCache, cache.column == column, cache.stamp == stamp { return cache.value }
        var value = read(location, column, type)
        if engine.mayHaveDanglingLinks, case .link = type.scalar,
            let target = table.info.properties[ordinal].kind.linkTarget
        {
            value = withoutMissingLinks(value, target: target)
        }
        object._collectionCache = (column, stamp, value)
        return value
    }

    /// A list or set of links without the links to objects that do not exist in the current version.
    ///
    /// Deleting an object removes the links to it, so these are only found in a file whose log deletes a
    /// row without unlinking it first (a damaged or crafted file that still passes its checksums); the
    /// engine finds out at open (`mayHaveDanglingLinks`), and only then is this called. Reading
    /// through this, every `count`, index, iteration and write of a `List` or `MutableSet` sees the same
    /// elements, as `Results` over the collection and frozen copies (which skip missing objects) do; the
    /// next write of the collection stores it without them.
    private func withoutMissingLinks(_ value: Value, target: ObjectBase.Type) -> Value {
        let items: [Value]
        switch value {
        case .list(let values), .set(let values): items = values
        default: return value
        }
        guard let table = binding(for: target)?.tableID else { return value }
        func exists(_ item: Value) -> Bool {
            guard case .link(let key) = item else { return true }
            return location(table, key) != nil
        }
        guard let first = items.firstIndex(where: { !exists($0) }) else { return value }
        var kept = Array(items[..<first])
        for item in items[(first + 1)...] where exists(item) { kept.append(item) }
        if case .set = value { return .set(kept) }
        return .list(kept)
    }

    /// Brings a managed object's cached row location up to date with the current version; stops the
    /// program if the object no longer exists, as in Realm.
    @inline(never)
    private func relocate(_ object: ObjectBase) {
        guard var managed = object._managed else { return }
        guard let location = location(managed.table.tableID, managed.key) else {
            preconditionFailure(
                "Object has been deleted or invalidated: this \(managed.table.info.className) was deleted (or "
                    + "its write transaction was cancelled). Check isInvalidated before reading it.")
        }
        managed.location = location
        managed.stamp = stamp
        object._managed = managed
    }

    /// One column of the row at `location` in the current version.
    @inline(__always)
    private func read(_ location: RowLocation, _ column: Int, _ type: ColumnType) -> Value {
        if let session { return Self.read(session.transaction, location, column, type) }
        // The region, not the snapshot: passing `snapshot` copied all of it (retaining its state's roots).
        return Self.read(snapshot.region, location, column, type)
    }

    // The two `read`s below are the hot path of every property read. A row was checksummed when the file
    // was opened or written, so a decoding failure here means either that the mapped file was changed
    // behind the engine's back, or that the file holds row bytes that are malformed yet checksum-valid
    // (written by a broken or hostile writer). Property getters do not throw (as in Realm), so such a
    // value reads as null, which each property turns into its default (`0`, `""`, an empty collection,
    // nil). Surfacing it would need a throwing getter or a trap; a validating pass at open (decoding every
    // row) would catch it up front but costs a full read of the file.

    /// One column of the row at `location` in the open transaction.
    @inline(__always)
    private static func read(
        _ transaction: WriteTransaction, _ location: RowLocation, _ column: Int, _ type: ColumnType
    ) -> Value {
        (try? transaction.withRowBytes(at: location) { (row) throws(StorageError) in
            try row.value(at: column, type: type)
        }) ?? .null
    }

    /// One column of the row at `location` in a snapshot's region.
    @inline(__always)
    private static func read(
        _ region: MappedRegion, _ location: RowLocation, _ column: Int, _ type: ColumnType
    ) -> Value {
        (try? Snapshot.withRowBytes(in: region, at: location) { (row) throws(StorageError) in
            try row.value(at: column, type: type)
        }) ?? .null
    }

    // MARK: Writes

    /// The open write session; stops the program (a programmer error, as in Realm) when there is none.
    /// `action` is built only for the message of a failure (property setters call this for every set).
    func requireWriteSession(for action: @autoclosure () -> String) -> WriteSession {
        guard let session else {
            preconditionFailure(
                "Cannot \(action()) outside of a write transaction: wrap the change in `try await realm.write { … }`.")
        }
        precondition(
            session.belongsToCurrentTask,
            "Cannot \(action()) outside of a write transaction: the transaction open on this realm belongs to "
                + "another task. Wrap the change in `try await realm.write { … }`.")
        return session
    }

    /// Latches `error` as the open transaction's failure (see `TransactionState`).
    func recordFailure(_ error: RealmError) {
        if let session { transaction.fail(error, in: session) }
    }
}
