import ActorStorePersistence
import Foundation

/// What happened to an observed collection: its first state, then each change, as Realm's
/// `RealmCollectionChange`.
///
/// ```swift
/// for await change in dogs.changes {
///     switch change {
///     case .initial(let dogs):
///         reload(dogs)
///     case .update(let dogs, let deletions, let insertions, let modifications):
///         apply(dogs, deletions, insertions, modifications)   // in this order
///     case .error(let error):
///         print(error)
///     }
/// }
/// ```
///
/// The contract of an update: delete the rows at `deletions` (indices into the previously delivered
/// collection, in descending order), then insert rows at `insertions` (indices into the new collection,
/// ascending): the result is the new collection. `modifications` are the indices, in the new collection,
/// of objects that were in both and changed (they are neither deleted nor inserted). All three are sorted
/// ascending. An object that moved is deleted and inserted.
public enum RealmCollectionChange<Collection: Sendable>: Sendable {
    /// The collection as observation began.
    case initial(Collection)
    /// The collection after one or more commits (coalesced when the observer was busy), and how it got
    /// there from the previously delivered one.
    case update(Collection, deletions: [Int], insertions: [Int], modifications: [Int])
    /// Observation failed (the realm was closed, a key path no longer matches the model); nothing follows.
    case error(RealmError)
}

/// One delivery of a collection observation with every index set, including modifications as indices
/// into the previous collection (as Realm's core reports them). See ``CollectionChanges/detailed``.
public struct CollectionChangeSet<Collection: Sendable>: Sendable {
    /// The collection delivered.
    public var collection: Collection
    /// Whether this is the first delivery (then every index list is empty).
    public var isInitial: Bool
    /// Indices in the previous collection of the objects removed (or moved), ascending.
    public var deletions: [Int]
    /// Indices in the new collection of the objects added (or moved), ascending.
    public var insertions: [Int]
    /// Indices in the new collection of the objects that changed, ascending.
    public var modifications: [Int]
    /// The same objects' indices in the previous collection, ascending.
    public var modificationsInOld: [Int]

    /// The Realm-shaped form.
    public var change: RealmCollectionChange<Collection> {
        isInitial
            ? .initial(collection)
            : .update(collection, deletions: deletions, insertions: insertions, modifications: modifications)
    }
}

/// What happened to an observed object, as Realm's `ObjectChange`.
public enum ObjectChange<T: Sendable>: Sendable {
    /// Properties changed: the object as it is now, and each changed property with its old and new value.
    case change(T, [PropertyChange])
    /// The object was deleted; nothing follows.
    case deleted
    /// Observation failed; nothing follows.
    case error(RealmError)
}

/// One changed property of an observed object.
///
/// Values are plain Swift values: `String`, `Bool`, `Double`, `Float`, `Date`, `Data`, `UUID`, `ObjectId`,
/// `Decimal128`, integers of every width as `Int`, persistable enums as their raw value, nil. A to-one link
/// reads as a ``Frozen`` object (or nil), a collection of objects as an array of ``Frozen`` objects, at the
/// old and the new version. A collection of values reads as an array of its elements, a map as a
/// dictionary. A link or collection whose linked objects changed (not the link itself) is reported with
/// both values at their versions.
public struct PropertyChange: Sendable, CustomStringConvertible {
    /// The property's name.
    public let name: String
    /// The value before the change.
    public let oldValue: (any Sendable)?
    /// The value after the change.
    public let newValue: (any Sendable)?

    public var description: String {
        "\(name): \(oldValue.map { "\($0)" } ?? "nil") → \(newValue.map { "\($0)" } ?? "nil")"
    }
}

/// A commit to a realm's file, as ``Realm/changes`` delivers it.
public struct RealmChange: Sendable {
    /// The version the commit created (with coalescing, the newest one).
    public let version: UInt64
    /// The realm's data at that version.
    public let realm: FrozenRealm
}
