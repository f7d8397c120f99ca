import ActorStorePersistence

/// The key type of a ``Map``: `String`.
public protocol _MapKey: Hashable, Sendable {}
extension String: _MapKey {}

/// A dictionary with `String` keys, of values or optional objects.
///
/// ```swift
/// final class Person: Object {
///     @Persisted var scores: Map<String, Int>
///     @Persisted var petsByName: Map<String, Dog?>
/// }
/// try await realm.write { _ in person.scores["chess"] = 1200 }
/// ```
///
/// A managed map reads and writes its owner's row in the realm's current version; changing one needs a
/// write transaction. Setting a key to `nil` removes it. Keys may not be empty or contain `.` or start
/// with `$` (as in Realm).
///
/// - Important: A managed map belongs to its owner's ``Realm`` actor: use it only inside that actor (it is
///   not `Sendable`, so the compiler keeps it there), and change it only in a write transaction, or the
///   program stops with a message naming the call.
public final class Map<Key: _MapKey, Value: _Persistable>: Sequence, CustomStringConvertible {
    private var storage: [String: Value] = [:]
    let owner: ObjectBase?
    let ordinal: Int

    /// An empty unmanaged map.
    public init() {
        owner = nil
        ordinal = -1
    }

    init(owner: ObjectBase, ordinal: Int) {
        self.owner = owner
        self.ordinal = ordinal
    }

    /// Whether the map belongs to a managed object.
    public var isManaged: Bool { owner != nil }

    private var stored: [ActorStorePersistence.Value.MapEntry] {
        guard let owner else { return [] }
        if case .map(let entries) = owner._managedValue(ordinal) { return entries }
        return []
    }

    private var dictionary: [String: Value] {
        guard let owner else { return storage }
        let decoder = _Decoder(context: owner._managed?.context)
        var result: [String: Value] = [:]
        for entry in stored {
            if let value = Value._rlmDecode(_StoredValue(entry.value), decoder) { result[entry.key] = value }
        }
        return result
    }

    /// The number of entries.
    public var count: Int { owner == nil ? storage.count : stored.count }
    /// Whether the map has no entries.
    public var isEmpty: Bool { count == 0 }

    /// The keys, sorted.
    public var keys: [String] { owner == nil ? storage.keys.sorted() : stored.map(\.key) }

    /// The values, in key order.
    public var values: [Value] {
        let dictionary = dictionary
        return keys.compactMap { dictionary[$0] }
    }

    /// The entries in key order.
    public func makeIterator() -> IndexingIterator<[(key: String, value: Value)]> {
        let dictionary = dictionary
        return keys.compactMap { key in dictionary[key].map { (key: key, value: $0) } }.makeIterator()
    }

    /// The value for `key`, or nil; setting nil removes the key.
    public subscript(key: Key) -> Value? {
        get {
            let key = key as? String ?? ""
            guard let owner else { return storage[key] }
            // Entries are stored sorted by key: find one and decode only it.
            let entries = stored
            var low = 0
            var high = entries.count
            while low < high {
                let mid = (low + high) / 2
                if entries[mid].key < key { low = mid + 1 } else { high = mid }
            }
            guard low < entries.count, entries[low].key == key else { return nil }
            return Value._rlmDecode(_StoredValue(entries[low].value), _Decoder(context: owner._managed?.context))
        }
        set {
            let key = key as? String ?? ""
            mutate { entries in entries[key] = newValue }
        }
    }

    /// Sets the value for a key.
    public func updateValue(_ value: Value, forKey key: Key) { self[key] = value }

    /// Removes a key.
    public func removeObject(for key: Key) { self[key] = nil }

    /// Removes every entry.
    public func removeAll() { mutate { $0.removeAll() } }

    private func mutate(_ change: (inout [String: Value]) -> Void) {
        guard let owner else {
            change(&storage)
            return
        }
        var current = dictionary
        change(&current)
        owner._managedSet(ordinal) { session in Self.encode(current, session) }
    }

    /// Realm's rule for map keys: not empty, no `.`, not starting with `$`.
    static func isValidKey(_ key: String) -> Bool { !key.isEmpty && !key.contains(".") && !key.hasPrefix("$") }

    static func encode(_ dictionary: [String: Value], _ session: WriteSession?) -> ActorStorePersistence.Value {
        var entries: [ActorStorePersistence.Value.MapEntry] = []
        for (key, value) in dictionary.sorted(by: { $0.key < $1.key }) {
            guard isValidKey(key) else {
                session?.fail(
                    RealmError(
                        .invalidValue,
                        "'\(key)' is not a valid Map key: keys must not be empty, contain '.', or start with '$'."))
                continue
            }
            entries.append(.init(key, value._rlmEncode(_Encoder(session: session)).raw))
        }
        return .map(entries)
    }

    public var description: String { "Map<String, \(Value.self)>(\(count) entries)" }
}

extension Map where Value: _PersistableScalar {
    /// The entries, as an immutable dictionary.
    public func freeze() -> [String: Value] { dictionary }
}

extension Map: _Persistable {
    public static var _rlmKind: _PropertyKind {
        var kind = Value._rlmKind
        if kind.collection != .single || kind.isLinkingObjects {
            kind.problem = "a Map's values must be single values or optional objects, not collections."
        }
        kind.collection = .map
        kind.isLinkingObjects = false
        kind.swiftType = Map<Key, Value>.self
        return kind
    }
    public static var _rlmDefault: Map<Key, Value> { Map() }
    public static func _rlmDecode(_ stored: _StoredValue, _ decoder: _Decoder) -> Map<Key, Value>? {
        guard case .map(let entries) = stored.raw else { return nil }
        let map = Map()
        for entry in entries {
            if let value = Value._rlmDecode(_StoredValue(entry.value), decoder) { map.storage[entry.key] = value }
        }
        return map
    }
    public func _rlmEncode(_ encoder: _Encoder) -> _StoredValue {
        _StoredValue(Self.encode(dictionary, encoder.session))
    }
    public static func _rlmFromAny(_ value: Any) -> Map<Key, Value>? {
        if let map = value as? Map<Key, Value> {
            guard map.owner != nil else { return map }
            let copy = Map()
            copy.storage = map.dictionary
            return copy
        }
        guard let dictionary = value as? [String: Any] else { return nil }
        let map = Map()
        for (key, item) in dictionary {
            guard isValidKey(key), let converted = Value._rlmFromAny(item) else { return nil }
            map.storage[key] = converted
        }
        return map
    }
    public static func _rlmGet(_ object: ObjectBase, _ ordinal: Int) -> Map<Key, Value> {
        Map(owner: object, ordinal: ordinal)
    }
    public static func _rlmSet(_ object: ObjectBase, _ ordinal: Int, _ value: Map<Key, Value>) {
        let dictionary = value.dictionary
        object._managedSet(ordinal) { session in encode(dictionary, session) }
    }
}
