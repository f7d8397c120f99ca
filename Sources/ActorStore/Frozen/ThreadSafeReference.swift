import ActorStorePersistence

/// Carries a live object, `Results` or `List` from one ``Realm`` actor to another on the same file.
///
/// ```swift
/// let ref = await realm.read { ThreadSafeReference(to: $0.object(ofType: Dog.self, forPrimaryKey: id)!) }
/// try await otherRealm.write { realm in realm.resolve(ref)?.age = 3 }
/// ```
///
/// The reference is `Sendable`. Resolving it in a realm returns the object at that realm's version —
/// advancing the realm first if the reference was made at a newer version — or nil if the object was
/// deleted meanwhile. A reference can be resolved once; resolving it twice is a programmer error. Until
/// it is resolved or released it pins the version it was made at.
///
/// - Important: Resolve a reference once, in a ``Realm`` on the same file; a second resolve stops the
///   program. Release unresolved references: each pins its version, which compaction cannot reclaim.
public final class ThreadSafeReference<Confined>: Sendable {
    enum Target: Sendable {
        case object(className: String, key: ObjectKey)
        /// The query travels with the reference (filters, sorts, distinct, limit, a list or backlink base);
        /// its table and column numbers are the file's, the same in every realm on that file.
        case results(className: String, query: QueryDescription)
        case list(owner: ObjectSchemaInfo, key: ObjectKey, property: String)
    }

    let target: Target
    let fileKey: String
    let version: Version
    /// Pins the source version until resolved or released.
    private let pin: Locked<Snapshot?>
    private let resolved = Locked(false)

    private init(target: Target, context: RealmContext) {
        self.target = target
        self.fileKey = context.fileKey
        self.version = context.snapshot.version
        self.pin = Locked(context.snapshot)
    }

    /// A reference to a managed object.
    ///
    /// The object must exist in its realm's committed version (not only in the open write transaction).
    public convenience init(to object: Confined) where Confined: ObjectBase {
        guard let managed = object._managed else {
            preconditionFailure("Cannot make a ThreadSafeReference to an unmanaged object: add it to a realm first.")
        }
        precondition(
            managed.context.snapshot.contains(managed.table.tableID, managed.key),
            "Cannot make a ThreadSafeReference to a \(managed.table.info.className) that is not committed yet: make it "
                + "after the write transaction commits.")
        self.init(target: .object(className: managed.table.info.className, key: managed.key), context: managed.context)
    }

    /// A reference to a `Results`: it resolves to the same query (filters, sorts, `distinct`, `limit`) in the
    /// other realm, evaluated at that realm's version.
    public convenience init<T: Object>(to results: Results<T>) where Confined == Results<T> {
        self.init(
            target: .results(className: ClassRegistry.info(for: T.self).className, query: results.query),
            context: results.context)
    }

    /// A reference to a managed object's list.
    public convenience init<E>(to list: List<E>) where Confined == List<E> {
        guard let (owner, property) = list.ownerAndProperty, let managed = owner._managed else {
            preconditionFailure("Cannot make a ThreadSafeReference to an unmanaged List.")
        }
        self.init(
            target: .list(owner: managed.table.info, key: managed.key, property: property),
            context: managed.context)
    }

    /// Marks the reference resolved; a second resolution is a programmer error.
    func claim(in context: RealmContext) {
        let first = resolved.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        precondition(first, "This ThreadSafeReference was already resolved: a reference can be resolved only once.")
        precondition(
            context.fileKey == fileKey,
            "A ThreadSafeReference can only be resolved in a realm on the same file it was made from.")
        if context.version < version { context.refresh() }
        pin.withLock { $0 = nil }
    }
}

extension Realm {
    /// The object a reference points to, at this realm's version (advancing first if the reference is
    /// newer), or nil if it was deleted.
    public func resolve<T: ObjectBase>(_ reference: ThreadSafeReference<T>) -> T? {
        reference.claim(in: context)
        guard case .object(_, let key) = reference.target else { return nil }
        return context.object(T.self, key: key)
    }

    /// The results a reference points to (the same query), live in this realm.
    public func resolve<T: Object>(_ reference: ThreadSafeReference<Results<T>>) -> Results<T> {
        reference.claim(in: context)
        guard case .results(_, let query) = reference.target else { return objects(T.self) }
        return Results(context: context, query: query)
    }

    /// The list a reference points to, live in this realm, or nil if its owner was deleted.
    public func resolve<E>(_ reference: ThreadSafeReference<List<E>>) -> List<E>? {
        reference.claim(in: context)
        guard case .list(let info, let key, let property) = reference.target,
            let owner = context.object(info.type, key: key),
            let list = owner[property] as? List<E>
        else { return nil }
        return list
    }
}
