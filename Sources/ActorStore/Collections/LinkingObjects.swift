import ActorStorePersistence

/// The objects that link to an object through one property: an inverse relationship, computed from the
/// realm's backlink index and never stored.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted var name = ""
///     @Persisted(originProperty: "dogs") var owners: LinkingObjects<Person>
/// }
/// ```
///
/// An object linked twice by one list appears twice. Unmanaged objects have no linking objects.
///
/// - Important: Linking objects belong to their object's ``Realm`` actor: use them only inside it (they are
///   not `Sendable`); freeze the object (``Frozen``) to read them elsewhere.
public final class LinkingObjects<Element: ObjectBase>: RandomAccessCollection, CustomStringConvertible {
    /// The linking property of `Element` this collection follows.
    public let originProperty: String
    let owner: ObjectBase?

    init(originProperty: String) {
        self.originProperty = originProperty
        self.owner = nil
    }

    init(owner: ObjectBase, originProperty: String) {
        self.originProperty = originProperty
        self.owner = owner
    }

    private var keys: [ObjectKey] {
        guard let owner, let managed = owner._managed else { return [] }
        let context = managed.context
        guard let origin = context.binding(for: Element.self),
            let ordinal = origin.info.property(named: originProperty)?.ordinal
        else { return [] }
        let column = origin.columns[ordinal]
        var keys: [ObjectKey] = []
        for link in context.withStore({ $0.backlinks(to: managed.table.tableID, managed.key) })
        where link.source == origin.tableID && link.column == column {
            keys += repeatElement(link.key, count: link.count)
        }
        return keys
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { keys.count }

    /// The linking object at `position` (ordered by object key).
    public subscript(position: Int) -> Element {
        let keys = keys
        precondition(keys.indices.contains(position), "Index \(position) is out of bounds (count \(keys.count)).")
        guard let context = owner?._managed?.context, let object = context.object(Element.self, key: keys[position])
        else { preconditionFailure("The linking object at \(position) no longer exists.") }
        return object
    }

    /// Iterates the linking objects as they are when iteration begins.
    public func makeIterator() -> IndexingIterator<[Element]> {
        guard let context = owner?._managed?.context else { return [Element]().makeIterator() }
        return keys.compactMap { context.object(Element.self, key: $0) }.makeIterator()
    }

    /// The linking objects, frozen at the owner's realm's current version.
    public func freeze() -> [Frozen<Element>] {
        guard let context = owner?._managed?.context else { return [] }
        let frozen = FrozenContext(context)
        return keys.compactMap { frozen.frozen(Element.self, $0) }
    }

    public var description: String { "LinkingObjects<\(Element.self)>(\(count) objects)" }
}

/// Lets schema discovery read the origin property of a probe's `LinkingObjects`.
protocol LinkingObjectsDescribing {
    var originProperty: String { get }
}

extension LinkingObjects: LinkingObjectsDescribing {}

extension LinkingObjects: _Persistable {
    public static var _rlmKind: _PropertyKind {
        _PropertyKind(scalar: .link, linkTarget: Element.self, isLinkingObjects: true, swiftType: LinkingObjects.self)
    }
    public static var _rlmDefault: LinkingObjects<Element> { LinkingObjects(originProperty: "") }
    public static func _rlmDecode(_ stored: _StoredValue, _ decoder: _Decoder) -> LinkingObjects<Element>? { nil }
    public func _rlmEncode(_ encoder: _Encoder) -> _StoredValue { _StoredValue(.null) }
    public static func _rlmFromAny(_ value: Any) -> LinkingObjects<Element>? { nil }
    public static func _rlmGet(_ object: ObjectBase, _ ordinal: Int) -> LinkingObjects<Element> {
        let origin = object._managed?.table.info.properties[ordinal].originProperty ?? ""
        return LinkingObjects(owner: object, originProperty: origin)
    }
    public static func _rlmSet(_ object: ObjectBase, _ ordinal: Int, _ value: LinkingObjects<Element>) {
        preconditionFailure("LinkingObjects properties are computed from links and cannot be set.")
    }
}
