import ActorStorePersistence
import Foundation

extension Realm {
    /// Runs `block` on the live form of a frozen object, in a write transaction, and commits it: how code
    /// outside the realm's actor (a view showing ``Frozen`` values) changes an object it shows.
    ///
    /// ```swift
    /// let rex: Frozen<Dog> = puppies.results[0]
    /// try await realm.write(rex) { $0.age += 1 }
    /// ```
    ///
    /// The object is looked up at the newest version, inside the transaction, so the block sees (and
    /// changes) its current values, not the frozen ones.
    /// - Returns: the block's value.
    /// - Throws: `RealmError.invalidObject` when the object was deleted or belongs to another realm's
    ///   file; the block's error; the commit's (see ``write(_:)->_``).
    @discardableResult
    public func write<T: Object, Result: Sendable>(
        _ object: Frozen<T>, _ block: @Sendable (T) throws -> Result
    ) async throws -> Result {
        try await write { (realm) throws -> Result in
            guard let live = object.thaw(in: realm) else {
                throw RealmError(
                    .invalidObject,
                    object.context.fileKey == realm.fileKey
                        ? "The \(object.binding.info.className) to change was deleted: nothing was written."
                        : "The \(object.binding.info.className) to change belongs to another realm's file: "
                            + "write to it through a Realm open on that file.")
            }
            return try block(live)
        }
    }

    /// Runs `block` on the live form of a frozen object, in a write transaction, and commits it (the form
    /// for blocks without a result, such as `realm.write(rex) { $0.name = "Rex" }`).
    /// - Throws: `RealmError.invalidObject` when the object was deleted or belongs to another realm's
    ///   file; the block's error; the commit's.
    public func write<T: Object>(_ object: Frozen<T>, _ block: @Sendable (T) throws -> Void) async throws {
        let _: Int = try await write(object) { (live: T) throws -> Int in
            try block(live)
            return 0
        }
    }
}
