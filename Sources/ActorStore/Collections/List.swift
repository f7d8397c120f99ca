import ActorStorePersistence
import Foundation

/// An ordered list of values or objects: the to-many property type.
///
/// ```swift
/// final class Person: Object {
///     @Persisted var dogs: List<Dog>
///     @Persisted var nicknames: List<String>
/// }
/// try await realm.write { _ in
///     person.dogs.append(rex)
///     person.nicknames.append(contentsOf: ["Jim", "J"])
/// }
/// ```
///
/// An unmanaged list is a plain array. A managed list reads and writes its owner's row in the realm's
/// current version; changing it needs a write transaction. A list may hold the same object several times.
/// Not `Sendable`; freeze its owner (``Frozen``) or call ``freeze()->[Element]`` to take its contents elsewhere.
///
/// A list of objects has its elements' properties as members (`person.dogs.age` is every dog's `age`), so
/// typed key paths reach through it: `person.changes(keyPaths: [\.dogs.age])`.
///
/// - Important: A managed list belongs to its owner's ``Realm`` actor: use it only inside that actor (it is
///   not `Sendable`, so the compiler keeps it there), and change it only in a write transaction, or the
///   program stops with a message naming the call.
@dynamicMemberLookup
public final class List<Element: _RealmCollectionValue>: RandomAccessCollection, CustomStringConvertible {
    private var storage: [Element] = []
    /// Managed: the object whose property this is, and the property's ordinal.
    let owner: ObjectBase?
    let ordinal: Int

    /// An empty unmanaged list.
    public init() {
        owner = nil
        ordinal = -1
    }

    /// An unmanaged list holding `elements`.
    public convenience init<S: Sequence>(_ elements: S) where S.Element == Element {
        self.init()
        storage = Array(elements)
    }

    init(owner: ObjectBase, ordinal: Int) {
        self.owner = owner
        self.ordinal = ordinal
    }

    /// Whether the list belongs to a managed object.
    public var isManaged: Bool { owner != nil }

    /// The owning object and the property's name, for a managed list.
    var ownerAndProperty: (ObjectBase, String)? {
        guard let owner, let managed = owner._managed else { return nil }
        return (owner, managed.table.info.properties[ordinal].name)
    }

    private var stored: [Value] {
        guard let owner else { return [] }
        if case .list(let values) = owner._managedValue(ordinal) { return values }
        return []
    }

    private func decode(_ value: Value) -> Element {
        guard
            let element = Element._rlmDecodeElement(_StoredValue(value), _Decoder(context: owner?._managed?.context))
                ?? Element._rlmElementFallback
        else {
            // Only a link to an object of a class this realm cannot map gets here: a broken invariant.
            preconditionFailure("A stored List<\(Element.self)> element could not be read: \(value).")
        }
        return element
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { owner == nil ? storage.count : stored.count }

    /// The element at `position`; setting it replaces the element (in a write transaction when managed).
    public subscript(position: Int) -> Element {
        get {
            guard owner != nil else {
                precondition(
                    storage.indices.contains(position),
                    "List index \(position) is out of bounds (count \(storage.count)).")
                return storage[position]
            }
            let values = stored
            precondition(
                values.indices.contains(position), "List index \(position) is out of bounds (count \(values.count)).")
            return decode(values[position])
        }
        set {
            // Checked before `position + 1`, which overflows for `Int.max`.
            checkIndex(position)
            replaceSubrange(position..<position + 1, with: CollectionOfOne(newValue))
        }
    }

    /// Stops the program, with the index and count, when `index` is not an element's position.
    private func checkIndex(_ index: Int, _ what: String = "List index") {
        let count = count
        precondition(index >= 0 && index < count, "\(what) \(index) is out of bounds (count \(count)).")
    }

    /// Iterates the elements as they are when iteration begins.
    public func makeIterator() -> IndexingIterator<[Element]> {
        guard owner != nil else { return storage.makeIterator() }
        return stored.map(decode).makeIterator()
    }

    /// Replaces a range of elements; the primitive every mutation goes through.
    public func replaceSubrange<C: Collection>(_ range: Range<Int>, with elements: C) where C.Element == Element {
        guard let owner else {
            precondition(
                range.lowerBound >= 0 && range.upperBound <= storage.count,
                "List range \(range) is out of bounds (count \(storage.count)).")
            storage.replaceSubrange(range, with: elements)
            return
        }
        owner._managedSet(ordinal) { session in
            var values = stored
            precondition(
                range.lowerBound >= 0 && range.upperBound <= values.count,
                "List range \(range) is out of bounds (count \(values.count)).")
            values.replaceSubrange(range, with: elements.map { $0._rlmEncodeElement(_Encoder(session: session)).raw })
            return .list(values)
        }
    }

    /// Appends an element (an unmanaged object is added to the realm with the list's owner).
    public func append(_ element: Element) { replaceSubrange(count..<count, with: CollectionOfOne(element)) }

    /// Appends the elements of a sequence.
    public func append<S: Sequence>(contentsOf elements: S) where S.Element == Element {
        let new = Array(elements)
        let end = count
        replaceSubrange(end..<end, with: new)
    }

    /// Appends the elements of a sequence: Realm Swift's name for ``append(contentsOf:)``.
    public func append<S: Sequence>(objectsIn elements: S) where S.Element == Element { append(contentsOf: elements) }

    /// Inserts an element at `index`.
    public func insert(_ element: Element, at index: Int) {
        let count = count
        precondition(index >= 0 && index <= count, "List insertion index \(index) is out of bounds (count \(count)).")
        replaceSubrange(index..<index, with: CollectionOfOne(element))
    }

    /// Removes and returns the element at `index`.
    @discardableResult
    public func remove(at index: Int) -> Element {
        checkIndex(index)
        let element = self[index]
        replaceSubrange(index..<index + 1, with: EmptyCollection())
        return element
    }

    /// Removes the last element.
    @discardableResult
    public func removeLast() -> Element { remove(at: count - 1) }

    /// Removes the first element.
    @discardableResult
    public func removeFirst() -> Element { remove(at: 0) }

    /// Removes every element (objects stay in the realm; embedded objects are deleted).
    public func removeAll() { replaceSubrange(0..<count, with: EmptyCollection()) }

    /// Moves the element at `from` to `to` (one change, so embedded objects are never orphaned midway).
    public func move(from: Int, to: Int) {
        checkIndex(from, "List move source index")
        checkIndex(to, "List move destination index")
        var elements = Array(self)
        let element = elements.remove(at: from)
        elements.insert(element, at: to)
        replaceSubrange(0..<count, with: elements)
    }

    /// Swaps two elements (one change).
    public func swapAt(_ i: Int, _ j: Int) {
        checkIndex(i)
        checkIndex(j)
        guard i != j else { return }
        var elements = Array(self)
        elements.swapAt(i, j)
        replaceSubrange(0..<count, with: elements)
    }

    public var description: String { "List<\(Element.self)>(\(count) elements)" }
}

extension List where Element: ObjectBase {
    /// A property of every object in the list, in list order: `person.dogs.age` is `[Int]`. A list's own
    /// members (`count`, `first`, …) win over its elements' properties of the same name.
    ///
    /// This is what makes key paths through a list well-typed: `\Person.dogs.age` names the `age` of a
    /// person's dogs, for `changes(keyPaths:)` and `observe(keyPaths:)`.
    public subscript<V>(dynamicMember keyPath: KeyPath<Element, V>) -> [V] { map { $0[keyPath: keyPath] } }

    /// The position of an object in the list (the first occurrence), or nil.
    /// - Complexity: O(n) in the list's length.
    public func index(of object: Element) -> Int? { firstIndex { $0.isSameObject(as: object) } }

    /// The objects, frozen at the owner's realm's current version. Unmanaged lists cannot be frozen.
    public func freeze() -> [Frozen<Element>] {
        guard let context = owner?._managed?.context else {
            preconditionFailure("An unmanaged List cannot be frozen: add its owner to a realm first.")
        }
        let frozen = FrozenContext(context)
        return stored.compactMap { value in
            guard case .link(let key) = value else { return nil }
            return frozen.frozen(Element.self, key)
        }
    }
}

extension List where Element: _PersistableScalar {
    /// The position of a value in the list (the first occurrence), or nil.
    /// - Complexity: O(n) in the list's length.
    public func index(of value: Element) -> Int? {
        let target = value._rlmToStored.raw
        return firstIndex { $0._rlmToStored.raw == target }
    }

    /// The values, as an immutable array.
    public func freeze() -> [Element] { Array(self) }
}

extension List: _Persistable {
    public static var _rlmKind: _PropertyKind {
        var kind = Element._rlmElementKind
        kind.collection = .list
        kind.swiftType = List<Element>.self
        return kind
    }
    public static var _rlmDefault: List<Element> { List() }
    public static func _rlmDecode(_ stored: _StoredValue, _ decoder: _Decoder) -> List<Element>? {
        guard case .list(let values) = stored.raw else { return nil }
        return List(CollectionCoding.decode(values, decoder) as [Element])
    }
    public func _rlmEncode(_ encoder: _Encoder) -> _StoredValue {
        _StoredValue(.list(CollectionCoding.encode(Array(self), encoder, distinct: false)))
    }
    public static func _rlmFromAny(_ value: Any) -> List<Element>? {
        if let list = value as? List<Element> { return list.owner == nil ? list : List(Array(list)) }
        guard let array = value as? [Any], let elements: [Element] = CollectionCoding.elements(array) else {
            return nil
        }
        return List(elements)
    }
    public static func _rlmGet(_ object: ObjectBase, _ ordinal: Int) -> List<Element> {
        List(owner: object, ordinal: ordinal)
    }
    public static func _rlmSet(_ object: ObjectBase, _ ordinal: Int, _ value: List<Element>) {
        let elements = Array(value)
        object._managedSet(ordinal) { session in
            .list(CollectionCoding.encode(elements, _Encoder(session: session), distinct: false))
        }
    }
}

/// What `List` and `MutableSet` share to convert their elements.
enum CollectionCoding {
    static func decode<E: _RealmCollectionValue>(_ values: [Value], _ decoder: _Decoder) -> [E] {
        values.compactMap { E._rlmDecodeElement(_StoredValue($0), decoder) }
    }

    /// The stored elements; with `distinct`, each stored value once (set semantics).
    static func encode<E: _RealmCollectionValue>(_ elements: [E], _ encoder: _Encoder, distinct: Bool) -> [Value] {
        let values = elements.map { $0._rlmEncodeElement(encoder).raw }
        guard distinct else { return values }
        var seen = Set<Value>()
        return values.filter { seen.insert($0).inserted }
    }

    /// The elements of an array given to `create(_:value:)`, or nil if one does not fit.
    static func elements<E: _RealmCollectionValue>(_ array: [Any]) -> [E]? {
        var elements: [E] = []
        elements.reserveCapacity(array.count)
        for item in array {
            guard let element = E._rlmElementFromAny(item) else { return nil }
            elements.append(element)
        }
        return elements
    }
}

/// A collection's contents as `Any`, so that copying an object (`create(_:value:)` with an object) can
/// copy what its lists, sets and maps hold — embedded objects included.
protocol AnyElements {
    var anyElements: [Any] { get }
    var anyEntries: [String: Any]? { get }
}

extension List: AnyElements {
    var anyElements: [Any] { map { $0 as Any } }
    var anyEntries: [String: Any]? { nil }
}

extension MutableSet: AnyElements {
    var anyElements: [Any] { map { $0 as Any } }
    var anyEntries: [String: Any]? { nil }
}

extension Map: AnyElements {
    var anyElements: [Any] { [] }
    var anyEntries: [String: Any]? {
        var result: [String: Any] = [:]
        for (key, value) in self {
            // A nil optional object reads as NSNull, as a dictionary given to create(_:value:) would hold it.
            let mirror = Mirror(reflecting: value)
            result[key as String] = mirror.displayStyle == .optional && mirror.children.isEmpty ? NSNull() : value
        }
        return result
    }
}
