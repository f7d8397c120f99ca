import ActorStorePersistence
import Foundation

/// The common base of ``Object`` and ``EmbeddedObject``. Subclass those, not this.
///
/// An instance is either *unmanaged* (a plain Swift object: its `@Persisted` values live in the instance)
/// or *managed* (it refers to one row of a realm and every property access reads or writes that realm's
/// current version). Managed objects are not `Sendable`: they stay inside the ``Realm`` actor that produced
/// them, and the compiler enforces it. Use ``Frozen`` values or a ``ThreadSafeReference`` to cross.
///
/// - Important: Read and write a managed object only inside its ``Realm`` actor, and change it only in a
///   write transaction: a change outside one stops the program with a message naming the class.
open class ObjectBase: CustomStringConvertible {
    /// Unmanaged property values, indexed by property ordinal. Empty once managed.
    // `@exclusivity(unchecked)` here and on `_managed`: an object is confined to one actor (or, unmanaged, to
    // one isolation region), and no accessor holds an inout access to these across a call that could reach
    // them again; the dynamic checks were a measurable share of every property access.
    @exclusivity(unchecked) final var _slots: ContiguousArray<any _Persistable>
    /// The construction-stack position of this object's first property; see `ConstructionStack`.
    @usableFromInline final let _slotBase: Int
    /// Where the object lives when managed.
    @exclusivity(unchecked) final var _managed: ManagedState?
    /// The last collection column read, valid while the realm's stamp is unchanged (see
    /// `RealmContext.value(of:ordinal:)`).
    @exclusivity(unchecked) final var _collectionCache: (column: Int, stamp: UInt64, value: Value)?
    /// Set on probe instances: records which properties a key path reads (see `KeyPathProbe`).
    final var _probe: KeyPathProbe?

    /// Creates an unmanaged object with its properties' initial values.
    public required init() {
        (_slotBase, _slots) = ConstructionStack.withCurrent { stack in Self.takeSlots(from: stack) }
    }

    /// Takes the values this class's `@Persisted` wrappers just pushed off `stack`: where they started, and
    /// (unless the object is constructed to be managed) the values.
    @inline(__always)
    private static func takeSlots(from stack: ConstructionStack) -> (Int, ContiguousArray<any _Persistable>) {
        let id = ObjectIdentifier(Self.self)
        let count: Int
        if stack.discovering == id {
            stack.discovering = nil
            count = stack.height
        } else if stack.lastClass == id {
            count = stack.lastSlotCount
        } else {
            count = ClassRegistry.info(for: Self.self).slotCount
            stack.lastClass = id
            stack.lastSlotCount = count
        }
        precondition(
            count <= stack.height,
            "\(Self.self)'s @Persisted values were initialised on another thread: Object subclasses need a "
                + "synchronous designated init (an `async` init may resume elsewhere). Use a convenience init.")
        let base = stack.height - count
        defer { stack.height -= count }
        if stack.managedConstruction {
            // No values were kept for it. Objects made after it (in the managed object's init body) keep theirs.
            if base == stack.managedBase { stack.managedConstruction = false }
            return (base, [])
        }
        return (base, stack.values.takeLast(count))
    }

    /// Creates an unmanaged object from a dictionary of property values (`["name": "Rex", "age": 3]`), an
    /// array of values in property declaration order (`["Rex", 3]`), or another object. Nested dictionaries
    /// and arrays create linked objects. Values that do not fit their property are ignored (the property
    /// keeps its initial value); use ``Realm/create(_:value:update:)`` to have them reported.
    public required convenience init(value: Any) {
        self.init()
        let info = ClassRegistry.info(for: Self.self)
        _ = info.forEachGivenValue(in: value) { property, given in
            guard let converted = property.accessor.fromAny(given) else { return false }
            _slots[property.ordinal] = converted
            return true
        }
    }

    /// The object's properties and their current values.
    open var description: String {
        let info = ClassRegistry.info(for: type(of: self))
        if isInvalidated { return "\(info.className) (invalidated)" }
        let fields = info.declarationOrder.map { property -> String in
            guard !property.kind.isLinkingObjects else { return "\(property.name): <linking objects>" }
            let value = self[property.name].map { String(describing: $0) } ?? "nil"
            return "\(property.name): \(value)"
        }
        return "\(info.className) { " + fields.joined(separator: ", ") + " }"
    }

    /// Whether the object is managed by a realm.
    public final var isManaged: Bool { _managed != nil }

    /// Whether the object was deleted from its realm (or its realm's write transaction that created it was
    /// cancelled). Reading a property of an invalidated object stops the program; check this first when an
    /// object may have been deleted.
    ///
    /// It follows the realm's current version: an object deleted in a write transaction that is then
    /// cancelled is valid again (Realm Swift keeps that instance invalidated and makes you query the object
    /// again; here the same instance works).
    public final var isInvalidated: Bool {
        guard let managed = _managed else { return false }
        return !managed.context.exists(self)
    }

    /// Reads (`object["name"]`) or writes a persisted property by name; nil for an unknown name. Writing a
    /// managed object requires a write transaction, as a typed property write does.
    public final subscript(key: String) -> Any? {
        get {
            let info = ClassRegistry.info(for: type(of: self))
            guard let property = info.property(named: key) else { return nil }
            if _managed != nil { return property.accessor.get(self, property.ordinal) }
            return _slots[property.ordinal]
        }
        set {
            let info = ClassRegistry.info(for: type(of: self))
            guard let property = info.property(named: key), !property.kind.isLinkingObjects else { return }
            let given: Any = newValue ?? NSNull()
            guard let converted = property.accessor.fromAny(given) else {
                if let managed = _managed {
                    managed.context.recordFailure(
                        RealmError(
                            .invalidValue,
                            "\(String(describing: given)) is not a valid value for \(info.className).\(key)"))
                }
                return
            }
            if _managed != nil {
                _managedSet(property.ordinal) { session in
                    property.accessor.encode(converted, _Encoder(session: session))
                }
            } else {
                _slots[property.ordinal] = converted
            }
        }
    }

    /// Whether `other` is the same stored object (same realm file, table and key); for unmanaged objects,
    /// whether it is the same instance.
    public final func isSameObject(as other: ObjectBase?) -> Bool {
        guard let other else { return false }
        guard let a = _managed, let b = other._managed else { return self === other }
        return a.table.tableID == b.table.tableID && a.key == b.key && a.context.fileID == b.context.fileID
    }

    // MARK: Property access (called by the property wrapper)

    /// Reads the property `ordinal`: from the slots while unmanaged, from the realm once managed.
    @usableFromInline final func _persistedGet<V: _Persistable>(_ ordinal: Int) -> V {
        if _managed != nil { return V._rlmGet(self, ordinal) }
        return _unmanagedGet(ordinal)
    }

    /// ``_persistedGet(_:)`` of an unmanaged object. Out of line: this function is called unspecialised
    /// (from the model's module), and its casts need the metadata of `Optional<V>`, which a generic
    /// function fetches from the runtime's cache on entry — a quarter of every managed property read
    /// when it was inlined into ``_persistedGet(_:)``.
    @inline(never)
    final func _unmanagedGet<V: _Persistable>(_ ordinal: Int) -> V {
        if let probe = _probe, let next = probe.record(self, ordinal, V._rlmKind) {
            // A to-one link hands back the next probe; a list or set of objects, a collection holding it.
            return next as? V ?? V._rlmFromAny([next]) ?? V._rlmDefault
        }
        // No slots while a managed object is being constructed (its init() may read its properties).
        guard ordinal < _slots.count else { return V._rlmDefault }
        return _slots[ordinal] as? V ?? V._rlmDefault
    }

    /// Writes the property `ordinal`.
    @usableFromInline final func _persistedSet<V: _Persistable>(_ ordinal: Int, _ value: V) {
        if _managed != nil { return V._rlmSet(self, ordinal, value) }
        // An init() setting properties of an object being constructed as managed: the realm's row wins.
        guard ordinal < _slots.count else { return }
        _slots[ordinal] = value
    }

    /// The stored value of the property `ordinal` in the realm's current version (see
    /// ``RealmContext/value(of:ordinal:)``).
    final func _managedValue(_ ordinal: Int) -> Value {
        guard let context = _managed?.context else { return .null }
        return context.value(of: self, ordinal: ordinal)
    }

    /// Writes the property `ordinal`, a stored value (not a link or a collection), as `value`.
    final func _managedSetValue(_ ordinal: Int, _ value: Value) {
        guard let context = _managed?.context else { return }
        let session = context.requireWriteSession(for: "set a property of a \(_managed?.table.info.className ?? "")")
        session.update(self, ordinal: ordinal, value: value)
    }

    /// Writes the property `ordinal`; `makeValue` encodes the new value (it may add linked objects).
    final func _managedSet(_ ordinal: Int, _ makeValue: (WriteSession) -> Value) {
        guard let managed = _managed else { return }
        let session = managed.context.requireWriteSession(for: "set a property of a \(managed.table.info.className)")
        session.set(self, ordinal: ordinal, makeValue)
    }
}

@available(*, unavailable, message: "Live objects stay inside their Realm actor; use freeze() or ThreadSafeReference")
extension ObjectBase: Sendable {}

extension ObjectBase: Hashable {
    /// Managed objects are equal when they are the same stored object; unmanaged ones when identical.
    public static func == (lhs: ObjectBase, rhs: ObjectBase) -> Bool { lhs.isSameObject(as: rhs) }

    public func hash(into hasher: inout Hasher) {
        if let managed = _managed {
            hasher.combine(managed.table.tableID)
            hasher.combine(managed.key)
        } else {
            hasher.combine(ObjectIdentifier(self))
        }
    }
}

/// A stored object with its own identity: subclass it and declare properties with ``Persisted``.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted var name = ""
///     @Persisted var age = 0
/// }
/// ```
///
/// Subclasses need an `init()` (the implicit one is fine); add `convenience` initialisers for
/// convenience. ActorStore creates instances with `init()` when it reads objects, so keep it cheap and
/// free of side effects.
open class Object: ObjectBase {}

/// An object owned by exactly one parent object: it has no primary key, cannot be added on its own, and
/// is deleted with its parent (or when the parent's property is set to another object).
///
/// ```swift
/// final class Address: EmbeddedObject {
///     @Persisted var street = ""
///     @Persisted var city = ""
/// }
/// final class Contact: Object {
///     @Persisted var name = ""
///     @Persisted var address: Address?
/// }
/// ```
open class EmbeddedObject: ObjectBase {}

/// The row a managed object refers to, and a cached location of its bytes.
struct ManagedState {
    let context: RealmContext
    let table: TableBinding
    /// Changed only when a loop points an object nothing else refers to at its next row
    /// (`RealmContext.loopObject`).
    var key: ObjectKey
    /// Valid while `stamp == context.stamp` (the context bumps its stamp whenever rows may have moved).
    var location: RowLocation
    var stamp: UInt64
}

// MARK: Links: Object subclasses as optional properties and as collection elements

extension ObjectBase: _OptionalPersistable, _RealmCollectionValue {
    public static var _rlmOptionalKind: _PropertyKind {
        _PropertyKind(scalar: .link, isOptional: true, linkTarget: Self.self, swiftType: Optional<ObjectBase>.self)
    }
    public static func _rlmDecodeWrapped(_ stored: _StoredValue, _ decoder: _Decoder) -> Self? {
        guard case .link(let key) = stored.raw, let context = decoder.context else { return nil }
        return context.object(Self.self, key: key)
    }
    public func _rlmEncodeWrapped(_ encoder: _Encoder) -> _StoredValue {
        guard let session = encoder.session, let key = session.key(for: self) else { return _StoredValue(.null) }
        return _StoredValue(.link(key))
    }
    public static func _rlmWrappedFromAny(_ value: Any) -> Self? {
        if let object = value as? Self { return object }
        if value is [String: Any] || value is [Any] { return Self(value: value) }
        return nil
    }

    public static var _rlmElementKind: _PropertyKind {
        _PropertyKind(scalar: .link, linkTarget: Self.self, swiftType: Self.self)
    }
    public static func _rlmDecodeElement(_ stored: _StoredValue, _ decoder: _Decoder) -> Self? {
        _rlmDecodeWrapped(stored, decoder)
    }
    public func _rlmEncodeElement(_ encoder: _Encoder) -> _StoredValue { _rlmEncodeWrapped(encoder) }
    public static func _rlmElementFromAny(_ value: Any) -> Self? { _rlmWrappedFromAny(value) }
    public static var _rlmElementFallback: Self? { nil }
}
