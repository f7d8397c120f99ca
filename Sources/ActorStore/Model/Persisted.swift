import ActorStorePersistence

/// Declares a property of an ``Object`` or ``EmbeddedObject`` as stored in the realm.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted(primaryKey: true) var id = UUID()
///     @Persisted(indexed: true) var name = ""
///     @Persisted var age = 0
///     @Persisted var owner: Person?
///     @Persisted var tags: List<String>
///     @Persisted(originProperty: "pets") var owners: LinkingObjects<Person>
///     var scratch = 0  // not @Persisted: ignored by the realm
/// }
/// ```
///
/// Supported types: `Bool`, `Int`, `Int8`, `Int16`, `Int32`, `Int64`, `Float`, `Double`, `String`, `Data`,
/// `Date`, `UUID`, ``ObjectId``, ``Decimal128``, ``PersistableEnum`` enums, optionals of all of these;
/// optional links to other objects; ``List``, ``MutableSet``, ``Map`` and ``LinkingObjects``. A property
/// without an initial value starts as Realm's default (`0`, `""`, `nil`, empty collections).
///
/// While the object is unmanaged the property behaves like a plain stored property. Once the object is
/// managed (added to a realm, or read from one) every read and write goes to the realm's current version.
@propertyWrapper
public struct Persisted<Value: _Persistable> {
    /// Where this wrapper's initial value sits on the construction stack; see `ConstructionStack`.
    @usableFromInline let position: Int
    let options: PersistedOptions

    /// Unavailable: a `@Persisted` property is read and written through its object (see the type's
    /// documentation), never through the wrapper.
    @available(*, unavailable, message: "@Persisted can only be used on properties of Object or EmbeddedObject")
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        // swift-format-ignore
        set { fatalError("unavailable") }
    }

    private init(value: Value, options: PersistedOptions) {
        self.position = ConstructionStack.withCurrent { $0.push(value) }
        self.options = options
    }

    /// A property with Realm's default initial value for its type.
    public init() { self.init(value: Value._rlmDefault, options: PersistedOptions()) }

    /// A property with an initial value.
    public init(wrappedValue: Value) { self.init(value: wrappedValue, options: PersistedOptions()) }

    /// The primary key: unique, indexed, set once. Allowed for `Int`, `String`, `UUID`, ``ObjectId`` and
    /// their optionals; at most one per class.
    public init(wrappedValue: Value, primaryKey: Bool) {
        self.init(value: wrappedValue, options: PersistedOptions(primaryKey: primaryKey))
    }

    /// The primary key, with Realm's default initial value.
    public init(primaryKey: Bool) {
        self.init(value: Value._rlmDefault, options: PersistedOptions(primaryKey: primaryKey))
    }

    /// An indexed property: equality and `IN` queries use the index. Allowed for `Int`, `Bool`, `String`,
    /// `UUID`, ``ObjectId``, `Date` and their optionals.
    public init(wrappedValue: Value, indexed: Bool) {
        self.init(value: wrappedValue, options: PersistedOptions(indexed: indexed))
    }

    /// An indexed property with Realm's default initial value.
    public init(indexed: Bool) { self.init(value: Value._rlmDefault, options: PersistedOptions(indexed: indexed)) }

    /// An inverse relationship: the objects of type `Origin` whose `originProperty` (a link or a list)
    /// refers to this object.
    public init<Origin>(originProperty: String) where Value == LinkingObjects<Origin> {
        self.init(value: LinkingObjects<Origin>(originProperty: originProperty), options: PersistedOptions())
    }

    /// The property's value on `object`: from the object itself while unmanaged, from the realm's current
    /// version once managed. Swift calls this for every access to a `@Persisted` property.
    @inlinable
    public static subscript<EnclosingSelf: ObjectBase>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Persisted<Value>>
    ) -> Value {
        // Inlinable so that, in the model's module, the storage key path folds into a direct field load.
        get { object._persistedGet(object[keyPath: storageKeyPath].position &- object._slotBase) }
        set { object._persistedSet(object[keyPath: storageKeyPath].position &- object._slotBase, newValue) }
    }
}

struct PersistedOptions: Sendable {
    var primaryKey = false
    var indexed = false
}

/// What schema discovery reads from each wrapper found by `Mirror` on a probe instance.
protocol PersistedDescribing {
    var position: Int { get }
    var options: PersistedOptions { get }
    var kind: _PropertyKind { get }
    var accessor: PropertyAccessor { get }
}

extension Persisted: PersistedDescribing {
    var kind: _PropertyKind { Value._rlmKind }
    var accessor: PropertyAccessor { PropertyAccessor(Value.self) }
}

/// Type-erased operations on one property's Swift type, made once per property at discovery.
struct PropertyAccessor: @unchecked Sendable {
    // @unchecked: the closures capture only a metatype, which is immutable and thread-safe.
    /// Encodes an unmanaged slot's value for storage (adding linked objects through the session).
    let encode: (any _Persistable, _Encoder) -> Value
    /// Converts a value given in a dictionary or array to the property's Swift type, or nil.
    let fromAny: (Any) -> (any _Persistable)?
    /// The default value of the type (a new instance for collections).
    let makeDefault: () -> Any
    /// Decodes a stored value to the Swift type (links as live objects of `context`).
    let decode: (Value, _Decoder) -> Any
    /// Reads the property of a managed object (a live collection for collection properties).
    let get: (ObjectBase, Int) -> Any

    init<V: _Persistable>(_ type: V.Type) {
        // A slot holds a `V` (it was pushed or set as one), so encoding is a witness call: no cast.
        encode = { slot, encoder in slot._rlmEncode(encoder).raw }
        // Requirements (not `_rlmFromAny`, `_rlmDecode ?? _rlmDefault`): implementations specialized for
        // `V`, where these closures, generic over `V`, would look `V?`'s metadata up on every call.
        fromAny = { V._rlmFromAnyBoxed($0) }
        makeDefault = { V._rlmDefault }
        decode = { stored, decoder in V._rlmDecodeOrDefault(_StoredValue(stored), decoder) }
        get = { object, ordinal in V._rlmGet(object, ordinal) }
    }
}
