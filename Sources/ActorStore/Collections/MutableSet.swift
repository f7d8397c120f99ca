import ActorStorePersistence

/// An unordered collection of distinct values or objects.
///
/// ```swift
/// final class Person: Object {
///     @Persisted var tags: MutableSet<String>
/// }
/// try await realm.write { _ in person.tags.insert("admin") }
/// ```
///
/// Managed sets read and write their owner's row in the realm's current version; changing one needs a
/// write transaction. Objects are distinct by identity (the same stored object).
///
/// A set of objects has its elements' properties as members (`person.friends.name` is every friend's
/// `name`), so typed key paths reach through it: `person.changes(keyPaths: [\.friends.name])`.
///
/// - Important: A managed set belongs to its owner's ``Realm`` actor: use it only inside that actor (it is
///   not `Sendable`, so the compiler keeps it there), and change it only in a write transaction, or the
///   program stops with a message naming the call.
@dynamicMemberLookup
public final class MutableSet<Element: _RealmCollectionValue & Hashable>: Sequence, CustomStringConvertible {
    private var storage: [Element] = []
    let owner: ObjectBase?
    let ordinal: Int

    /// An empty unmanaged set.
    public init() {
        owner = nil
        ordinal = -1
    }

    /// An unmanaged set of the distinct elements of a sequence.
    public convenience init<S: Sequence>(_ elements: S) where S.Element == Element {
        self.init()
        insert(objectsIn: elements)
    }

    init(owner: ObjectBase, ordinal: Int) {
        self.owner = owner
        self.ordinal = ordinal
    }

    /// Whether the set belongs to a managed object.
    public var isManaged: Bool { owner != nil }

    private var stored: [Value] {
        guard let owner else { return [] }
        if case .set(let values) = owner._managedValue(ordinal) { return values }
        return []
    }

    private var elements: [Element] {
        guard let owner else { return storage }
        let decoder = _Decoder(context: owner._managed?.context)
        return stored.compactMap { Element._rlmDecodeElement(_StoredValue($0), decoder) }
    }

    /// The number of elements.
    public var count: Int { owner == nil ? storage.count : stored.count }
    /// Whether the set has no elements.
    public var isEmpty: Bool { count == 0 }

    public func makeIterator() -> IndexingIterator<[Element]> { elements.makeIterator() }

    /// Whether the set holds `element`.
    public func contains(_ element: Element) -> Bool {
        guard owner != nil else { return storage.contains(element) }
        return elements.contains(element)
    }

    private func mutate(_ change: (inout [Element]) -> Void) {
        guard let owner else {
            change(&storage)
            return
        }
        var current = elements
        change(&current)
        owner._managedSet(ordinal) { session in
            var seen = Set<Value>()
            var values: [Value] = []
            for element in current {
                let value = element._rlmEncodeElement(_Encoder(session: session)).raw
                if seen.insert(value).inserted { values.append(value) }
            }
            return .set(values)
        }
    }

    /// Inserts an element if it is not already there.
    public func insert(_ element: Element) {
        mutate { elements in if !elements.contains(element) { elements.append(element) } }
    }

    /// Inserts the elements of a sequence that are not already there.
    public func insert<S: Sequence>(objectsIn other: S) where S.Element == Element {
        mutate { elements in
            for element in other where !elements.contains(element) { elements.append(element) }
        }
    }

    /// Removes an element if present.
    public func remove(_ element: Element) { mutate { $0.removeAll { $0 == element } } }

    /// Removes every element.
    public func removeAll() { mutate { $0.removeAll() } }

    /// Adds every element of `other`.
    public func formUnion<S: Sequence>(_ other: S) where S.Element == Element { insert(objectsIn: other) }

    /// Keeps only the elements also in `other`.
    public func formIntersection<S: Sequence>(_ other: S) where S.Element == Element {
        let keep = Set(other)
        mutate { $0.removeAll { !keep.contains($0) } }
    }

    /// Removes the elements that are in `other`.
    public func subtract<S: Sequence>(_ other: S) where S.Element == Element {
        let drop = Set(other)
        mutate { $0.removeAll { drop.contains($0) } }
    }

    /// Whether every element is in `other`.
    public func isSubset<S: Sequence>(of other: S) -> Bool where S.Element == Element {
        Set(elements).isSubset(of: Set(other))
    }

    /// Whether some element is in `other`.
    public func intersects<S: Sequence>(_ other: S) -> Bool where S.Element == Element {
        !Set(elements).isDisjoint(with: Set(other))
    }

    public var description: String { "MutableSet<\(Element.self)>(\(count) elements)" }
}

extension MutableSet where Element: ObjectBase {
    /// A property of every object in the set, in the set's iteration order: `person.friends.name` is
    /// `[String]`. A set's own members (`count`, `isEmpty`, …) win over its elements' properties of the
    /// same name. This is what makes key paths through a set well-typed (`\Person.friends.name`).
    public subscript<V>(dynamicMember keyPath: KeyPath<Element, V>) -> [V] { map { $0[keyPath: keyPath] } }
}

extension MutableSet where Element: _PersistableScalar {
    /// The values, as an immutable array.
    public func freeze() -> [Element] { Array(self) }
}

extension MutableSet: _Persistable {
    public static var _rlmKind: _PropertyKind {
        var kind = Element._rlmElementKind
        kind.collection = .set
        kind.swiftType = MutableSet<Element>.self
        return kind
    }
    public static var _rlmDefault: MutableSet<Element> { MutableSet() }
    public static func _rlmDecode(_ stored: _StoredValue, _ decoder: _Decoder) -> MutableSet<Element>? {
        guard case .set(let values) = stored.raw else { return nil }
        return MutableSet(CollectionCoding.decode(values, decoder) as [Element])
    }
    public func _rlmEncode(_ encoder: _Encoder) -> _StoredValue {
        _StoredValue(.set(CollectionCoding.encode(elements, encoder, distinct: true)))
    }
    public static func _rlmFromAny(_ value: Any) -> MutableSet<Element>? {
        if let set = value as? MutableSet<Element> { return set.owner == nil ? set : MutableSet(Array(set)) }
        guard let array = value as? [Any], let elements: [Element] = CollectionCoding.elements(array) else {
            return nil
        }
        return MutableSet(elements)
    }
    public static func _rlmGet(_ object: ObjectBase, _ ordinal: Int) -> MutableSet<Element> {
        MutableSet(owner: object, ordinal: ordinal)
    }
    public static func _rlmSet(_ object: ObjectBase, _ ordinal: Int, _ value: MutableSet<Element>) {
        let elements = value.elements
        object._managedSet(ordinal) { session in
            .set(CollectionCoding.encode(elements, _Encoder(session: session), distinct: true))
        }
    }
}
