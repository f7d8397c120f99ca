import ActorStorePersistence
import Foundation

/// The immutable state behind frozen values: one pinned version and the class-to-table mapping.
final class FrozenContext: Sendable {
    let snapshot: Snapshot
    let bindings: SchemaBindings
    let fileKey: String
    /// The engine, while it is open (to start observing changes from a frozen value). Weak: frozen values
    /// must not keep a file open after its last realm is released.
    weak let engine: StorageEngine?

    init(_ context: RealmContext) {
        self.snapshot = context.snapshot
        self.bindings = context.bindings
        self.fileKey = context.fileKey
        self.engine = context.engine
    }

    init(snapshot: Snapshot, bindings: SchemaBindings, fileKey: String, engine: StorageEngine?) {
        self.snapshot = snapshot
        self.bindings = bindings
        self.fileKey = fileKey
        self.engine = engine
    }

    func binding(for type: ObjectBase.Type) -> TableBinding? {
        // `state.tables.contains` reads the table's slot in place; `tableSchema(_:)` copied the table out of
        // the state (retaining and releasing its trees), a measurable share of every frozen lookup.
        if let binding = bindings.binding(for: type), snapshot.state.tables.contains(binding.tableID) {
            return binding
        }
        let info = ClassRegistry.info(for: type)
        guard let id = snapshot.tableID(named: info.className), let schema = snapshot.tableSchema(id) else {
            return nil
        }
        // A class the realm never bound: it must match the file, or every changed column would read as its
        // default. One that does not is left unbound (no objects), and the reason goes to standard error.
        let differences = SchemaCheck.structuralDifferences([info], snapshot)
        if !differences.isEmpty {
            SchemaCheck.reportUnboundClass(
                SchemaCheck.driftMessage(differences, storedVersion: snapshot.schemaVersion))
            return nil
        }
        return TableBinding(info: info, tableID: id, stored: schema)
    }

    func frozen<T: ObjectBase>(_ type: T.Type, _ key: ObjectKey) -> Frozen<T>? {
        guard let binding = binding(for: type),
            let location = snapshot.state.rowLocation(binding.tableID, key)
        else { return nil }
        return Frozen(context: self, binding: binding, key: key, location: location)
    }

    /// The object of the class of `binding` whose primary-key index entry is `primaryKey`, or nil: one
    /// walk of the primary-key index, whose entry holds the row's location.
    func frozen<T: ObjectBase>(_ type: T.Type, _ binding: TableBinding, primaryKey: IndexKey) -> Frozen<T>? {
        guard let entry = snapshot.state.tables.object(binding.tableID, primaryKey: primaryKey) else { return nil }
        return Frozen(context: self, binding: binding, key: entry.object, location: entry.location)
    }

    func value(at location: RowLocation, column: Int, type: ColumnType) -> Value {
        // Frozen reads cannot throw; a row that fails to decode (the file was changed behind the engine's
        // back) reads as null. Through the region: a call on `snapshot` may copy it (its state's roots).
        (try? Snapshot.withRowBytes(in: snapshot.region, at: location) { (row) throws(StorageError) in
            try row.value(at: column, type: type)
        }) ?? .null
    }
}

/// A realm's data at one version: immutable, `Sendable`, usable from any task without `await`.
///
/// ```swift
/// let frozen = await realm.freeze()
/// Task.detached {
///     for dog in frozen.objects(Dog.self) { print(dog.name) }
/// }
/// ```
///
/// It pins its version: the file keeps that version's data until the last frozen value made from it is
/// released. Keep frozen values for as long as you need them, not forever (see
/// ``Realm/Configuration/maximumNumberOfActiveVersions``).
public struct FrozenRealm: Sendable {
    let context: FrozenContext

    init(_ context: FrozenContext) { self.context = context }

    /// The version frozen.
    public var version: UInt64 { context.snapshot.version.rawValue }

    /// Always true.
    public var isFrozen: Bool { true }

    /// All objects of a class at this version.
    public func objects<T: Object>(_ type: T.Type) -> FrozenResults<T> {
        FrozenResults(context: context, query: QueryDescription())
    }

    /// The object of a class with a primary key value at this version, or nil.
    public func object<T: Object>(ofType type: T.Type, forPrimaryKey key: Any?) -> Frozen<T>? {
        guard let binding = context.binding(for: type), let primaryKey = binding.info.primaryKey,
            let converted = primaryKey.accessor.fromAny(key ?? NSNull()),
            let indexKey = IndexKey(primaryKey.accessor.encode(converted, _Encoder(session: nil)))
        else { return nil }
        return context.frozen(type, binding, primaryKey: indexKey)
    }

    /// The object of a class with a primary key value at this version, or nil: the same as
    /// ``object(ofType:forPrimaryKey:)-(_,Any?)``, chosen by the compiler when the key's type is known. When
    /// it is the primary key's type, the key is encoded directly instead of being boxed in `Any` and
    /// converted by a dynamic cast; a key of another type converts exactly as the `Any?` form converts it.
    public func object<T: Object, Key: _PersistableScalar>(
        ofType type: T.Type, forPrimaryKey key: Key
    ) -> Frozen<T>? {
        guard let binding = context.binding(for: type), let primaryKey = binding.info.primaryKey else { return nil }
        guard primaryKey.kind.swiftType == Key.self else {
            let stored = key._rlmToStored.raw
            // A nil optional is what the `Any?` form receives as nil, not an `Any` holding `Optional.none`.
            if case .null = stored { return object(ofType: type, forPrimaryKey: nil) }
            return object(ofType: type, forPrimaryKey: key as Any)
        }
        guard let indexKey = IndexKey(key._rlmToStored.raw) else { return nil }
        return context.frozen(type, binding, primaryKey: indexKey)
    }

    /// Whether the version holds no objects.
    public var isEmpty: Bool {
        context.snapshot.state.tableIDs.values.allSatisfy { context.snapshot.count($0) == 0 }
    }
}

/// An immutable, `Sendable` view of one object at one version.
///
/// Read its `@Persisted` properties by name, as on the live object: `frozenDog.name`. Links read as
/// `Frozen` objects, lists and sets as arrays, maps as dictionaries, all of the same version. Computed
/// (non-`@Persisted`) properties of the class are not available.
///
/// ```swift
/// let rex: Frozen<Dog> = await realm.read { $0.objects(Dog.self).first!.freeze() }
/// Task.detached { print(rex.name, rex.owner?.name ?? "no owner") }
/// ```
@dynamicMemberLookup
public struct Frozen<T: ObjectBase>: Sendable, Hashable, CustomStringConvertible {
    let context: FrozenContext
    let binding: TableBinding
    let key: ObjectKey
    let location: RowLocation

    /// The version the object is frozen at.
    public var version: UInt64 { context.snapshot.version.rawValue }

    /// Always true.
    public var isFrozen: Bool { true }

    private func stored(_ keyPath: AnyKeyPath) -> (property: PropertyInfo, value: Value) {
        guard let ordinal = binding.info.ordinal(of: keyPath) else {
            preconditionFailure(
                "\(keyPath) does not read a @Persisted property of \(binding.info.className); frozen objects expose "
                    + "@Persisted properties only.")
        }
        let property = binding.info.properties[ordinal]
        let column = binding.columns[ordinal]
        guard column >= 0 else { return (property, .null) }
        return (property, context.value(at: location, column: column, type: binding.types[column]))
    }

    /// The stored value of the `@Persisted` property `keyPath` reads (for subscripts in other files).
    func frozenStoredValue(_ keyPath: AnyKeyPath) -> Value { stored(keyPath).value }

    /// A value property.
    public subscript<V: _PersistableScalar>(dynamicMember keyPath: KeyPath<T, V>) -> V {
        V._rlmFromStored(_StoredValue(stored(keyPath).value)) ?? V._rlmScalarDefault
    }

    /// A to-one link, frozen at the same version.
    public subscript<U: ObjectBase>(dynamicMember keyPath: KeyPath<T, U?>) -> Frozen<U>? {
        guard case .link(let target) = stored(keyPath).value else { return nil }
        return context.frozen(U.self, target)
    }

    /// A list of values.
    public subscript<E: _PersistableScalar>(dynamicMember keyPath: KeyPath<T, List<E>>) -> [E] {
        guard case .list(let values) = stored(keyPath).value else { return [] }
        return values.compactMap { E._rlmFromStored(_StoredValue($0)) }
    }

    /// A list of objects, frozen at the same version.
    public subscript<E: ObjectBase>(dynamicMember keyPath: KeyPath<T, List<E>>) -> [Frozen<E>] {
        guard case .list(let values) = stored(keyPath).value else { return [] }
        return values.compactMap { value in
            guard case .link(let target) = value else { return nil }
            return context.frozen(E.self, target)
        }
    }

    /// A set of values.
    public subscript<E: _PersistableScalar>(dynamicMember keyPath: KeyPath<T, MutableSet<E>>) -> Set<E> {
        guard case .set(let values) = stored(keyPath).value else { return [] }
        return Set(values.compactMap { E._rlmFromStored(_StoredValue($0)) })
    }

    /// A set of objects, frozen at the same version.
    public subscript<E: ObjectBase>(dynamicMember keyPath: KeyPath<T, MutableSet<E>>) -> [Frozen<E>] {
        guard case .set(let values) = stored(keyPath).value else { return [] }
        return values.compactMap { value in
            guard case .link(let target) = value else { return nil }
            return context.frozen(E.self, target)
        }
    }

    /// A map of values.
    public subscript<V: _PersistableScalar>(dynamicMember keyPath: KeyPath<T, Map<String, V>>) -> [String: V] {
        guard case .map(let entries) = stored(keyPath).value else { return [:] }
        var result: [String: V] = [:]
        for entry in entries { result[entry.key] = V._rlmFromStored(_StoredValue(entry.value)) }
        return result
    }

    /// A map of optional objects, frozen at the same version.
    public subscript<U: ObjectBase>(dynamicMember keyPath: KeyPath<T, Map<String, U?>>) -> [String: Frozen<U>?] {
        guard case .map(let entries) = stored(keyPath).value else { return [:] }
        var result: [String: Frozen<U>?] = [:]
        for entry in entries {
            if case .link(let target) = entry.value {
                result[entry.key] = .some(context.frozen(U.self, target))
            } else {
                result[entry.key] = .some(nil)
            }
        }
        return result
    }

    /// The objects linking to this one, frozen at the same version.
    public subscript<E: ObjectBase>(dynamicMember keyPath: KeyPath<T, LinkingObjects<E>>) -> [Frozen<E>] {
        let property = stored(keyPath).property
        guard let origin = context.binding(for: E.self),
            let ordinal = origin.info.property(named: property.originProperty ?? "")?.ordinal
        else { return [] }
        let column = origin.columns[ordinal]
        var result: [Frozen<E>] = []
        for link in context.snapshot.backlinks(to: binding.tableID, key)
        where link.source == origin.tableID && link.column == column {
            if let frozen = context.frozen(E.self, link.key) {
                result += repeatElement(frozen, count: link.count)
            }
        }
        return result
    }

    /// The live object at `realm`'s current version, or nil if it was deleted (or `realm` is another file).
    public func thaw(in realm: isolated Realm) -> T? {
        guard realm.context.fileKey == context.fileKey else { return nil }
        return realm.context.object(T.self, key: key)
    }

    public static func == (lhs: Frozen<T>, rhs: Frozen<T>) -> Bool {
        lhs.key == rhs.key && lhs.binding.tableID == rhs.binding.tableID && lhs.version == rhs.version
            && lhs.context.fileKey == rhs.context.fileKey
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(version)
    }

    public var description: String {
        let fields = binding.info.declarationOrder.compactMap { property -> String? in
            let column = binding.columns[property.ordinal]
            guard column >= 0 else { return nil }
            return "\(property.name): \(context.value(at: location, column: column, type: binding.types[column]))"
        }
        return "Frozen<\(binding.info.className)>@v\(version) { " + fields.joined(separator: ", ") + " }"
    }
}

/// Adds `freeze()` to model classes, returning `Frozen<Self>`.
public protocol _ObjectFreezing {}
extension ObjectBase: _ObjectFreezing {}

extension _ObjectFreezing where Self: ObjectBase {
    /// An immutable, `Sendable` view of the object at its realm's current committed version.
    ///
    /// Freezing an unmanaged object, or one created in the open write transaction, is a programmer error.
    public func freeze() -> Frozen<Self> {
        guard let managed = _managed else {
            preconditionFailure("Unmanaged objects cannot be frozen: add the object to a realm first.")
        }
        let context = FrozenContext(managed.context)
        guard let frozen = context.frozen(Self.self, managed.key) else {
            preconditionFailure(
                "Cannot freeze a \(managed.table.info.className) that is not in the realm's committed version: it "
                    + "was created in the open write transaction, or deleted. Freeze after the write commits.")
        }
        return frozen
    }
}

/// A frozen object given as the value of `create(_:value:)`: how an object is copied into a realm on
/// another file (a live object cannot leave its actor; its frozen form can). Its values are read as stored,
/// and the objects it links to are reached at the same version.
protocol FrozenObjectSource {
    /// The class of the object.
    var sourceInfo: ObjectSchemaInfo { get }
    /// Which object of which version this is.
    var sourceIdentity: FrozenObjectIdentity { get }
    /// The stored value of `property` (a property of `sourceInfo`), or nil if the file has no column for it.
    func storedValue(_ property: PropertyInfo) -> Value?
    /// The object `key` of class `type` at the same version, or nil if there is none.
    func linked(_ key: ObjectKey, _ type: ObjectBase.Type) -> (any FrozenObjectSource)?
    /// The model class of the table named `name` at that version (what an `AnyRealmValue` link names).
    func linkedClass(named name: String) -> ObjectBase.Type?
}

/// One object of one frozen version (see ``FrozenObjectSource``).
struct FrozenObjectIdentity: Hashable {
    let context: ObjectIdentifier
    let table: TableID
    let key: ObjectKey
}

extension Frozen: FrozenObjectSource {
    var sourceInfo: ObjectSchemaInfo { binding.info }

    var sourceIdentity: FrozenObjectIdentity {
        FrozenObjectIdentity(context: ObjectIdentifier(context), table: binding.tableID, key: key)
    }

    func storedValue(_ property: PropertyInfo) -> Value? {
        guard binding.columns.indices.contains(property.ordinal) else { return nil }
        let column = binding.columns[property.ordinal]
        guard column >= 0 else { return nil }
        return context.value(at: location, column: column, type: binding.types[column])
    }

    func linked(_ key: ObjectKey, _ type: ObjectBase.Type) -> (any FrozenObjectSource)? {
        func frozen<U: ObjectBase>(_ type: U.Type) -> (any FrozenObjectSource)? { context.frozen(type, key) }
        return frozen(type)
    }

    func linkedClass(named name: String) -> ObjectBase.Type? { context.bindings.byName[name]?.info.type }
}
