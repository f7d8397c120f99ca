import ActorStorePersistence

/// The objects of one class in a realm: lazy and live.
///
/// Nothing is read until you ask: `count` is O(1), index access O(log n). A `Results` always reflects the
/// realm's current version, including the open write transaction's own changes. A `for … in` loop
/// iterates the objects as they were when the loop began, even if the loop deletes some.
///
/// Not `Sendable`: it stays inside its ``Realm`` actor. Use ``freeze()`` to get a ``FrozenResults`` for
/// other tasks, or a ``ThreadSafeReference``.
public struct Results<Element: Object>: RandomAccessCollection {
    let context: RealmContext

    init(context: RealmContext) {
        self.context = context
    }

    private var binding: TableBinding? { context.binding(for: Element.self) }

    public var startIndex: Int { 0 }
    public var endIndex: Int {
        guard let binding else { return 0 }
        return context.state.rowCount(binding.tableID)
    }

    /// The object at `position` (in insertion order). O(log n).
    public subscript(position: Int) -> Element {
        guard let binding, let row = context.state.row(binding.tableID, at: position),
            let object = context.makeObject(binding, row.key, location: row.location) as? Element
        else { preconditionFailure("Index \(position) is out of bounds (count \(count)).") }
        return object
    }

    /// Iterates the objects of the version current when iteration begins.
    public func makeIterator() -> Iterator {
        guard let binding else { return Iterator(context: context, binding: nil, rows: nil, stamp: 0) }
        return Iterator(
            context: context, binding: binding, rows: context.state.rowCursor(binding.tableID), stamp: context.stamp)
    }

    /// Iterates a stable snapshot of the matches.
    public struct Iterator: IteratorProtocol {
        let context: RealmContext
        let binding: TableBinding?
        var rows: RowCursor?
        let stamp: UInt64

        /// The next object, or nil at the end.
        public mutating func next() -> Element? {
            guard let binding, let row = rows?.next() else { return nil }
            // Locations are valid only while nothing was written since iteration began.
            let object = context.makeObject(binding, row.key, location: context.stamp == stamp ? row.location : nil)
            return object as? Element
        }
    }

    /// The number of objects. O(1).
    public var count: Int { endIndex }

    /// Whether there are no objects. O(1).
    public var isEmpty: Bool { count == 0 }

    /// The first object, or nil.
    public var first: Element? { isEmpty ? nil : self[0] }

    /// The last object, or nil.
    public var last: Element? { isEmpty ? nil : self[count - 1] }

    /// The position of a managed object in the results, or nil. O(log n).
    public func index(of object: Element) -> Int? {
        guard let managed = object._managed, managed.context === context else { return nil }
        return context.state.rowOffset(binding?.tableID ?? managed.table.tableID, managed.key)
    }

    /// An immutable, `Sendable` copy of the results at the realm's current version (outside a write
    /// transaction). O(1).
    public func freeze() -> FrozenResults<Element> {
        FrozenRealm(FrozenContext(context)).objects(Element.self)
    }

    /// Whether the results are frozen: never, for `Results` (see ``FrozenResults``).
    public var isFrozen: Bool { false }
}
