import ActorStorePersistence
import Foundation

/// Every commit to a realm's file, by any `Realm` on it, as an `AsyncSequence` usable from any task: see
/// ``Realm/changes``.
public struct RealmChanges: AsyncSequence, Sendable {
    public typealias Element = RealmChange
    public typealias Failure = Never

    weak var engine: StorageEngine?
    let fileKey: String
    /// The newest version when the sequence was made: commits after it are delivered.
    let after: Version

    public func makeAsyncIterator() -> Iterator { Iterator(core: RealmIteratorCore(self)) }

    /// Iterates the commits.
    public struct Iterator: AsyncIteratorProtocol {
        let core: RealmIteratorCore

        /// The next commit (with coalescing, the newest of those since the last one); nil once observation
        /// ended.
        public mutating func next() async -> RealmChange? { await core.next() }
    }
}

/// The state of one iteration of ``RealmChanges``.
final class RealmIteratorCore {
    private let source: RealmChanges
    private var file: ObservedFile?
    private var subscription: ChangeSubscription?
    private var context: FrozenContext?
    private var ready: [RealmChange] = []
    private var started = false

    init(_ source: RealmChanges) { self.source = source }

    deinit { subscription?.cancel() }

    @discardableResult
    func start() -> ChangeSubscription? {
        if let subscription { return subscription }
        guard !started else { return nil }
        started = true
        guard let file = try? ObservedFile(engine: source.engine, fileKey: source.fileKey, root: nil),
            let (subscription, snapshot, _) = try? file.engine.subscribe(tables: nil, after: source.after)
        else { return nil }
        self.file = file
        self.subscription = subscription
        self.context = file.context(snapshot, reusing: nil)
        return subscription
    }

    func next() async -> RealmChange? {
        start()
        guard let file, let subscription else { return nil }
        while ready.isEmpty {
            guard let batches = await subscription.next() else {
                self.subscription = nil
                return nil
            }
            for batch in batches {
                if !batch.changes.isEmpty {
                    let context = file.context(batch.snapshot, reusing: batch.changes.schemaChanged ? nil : context)
                    ready.append(RealmChange(version: context.snapshot.version.rawValue, realm: FrozenRealm(context)))
                    self.context = context
                }
                if let silent = batch.silentlyThrough { context = file.context(silent, reusing: nil) }
            }
        }
        return ready.removeFirst()
    }
}

extension Realm {
    /// Every commit to the realm's file, by any `Realm` on it, from any task: the new version and a
    /// ``FrozenRealm`` of it. Delivered once the commit is durable; a consumer slower than the commits gets
    /// the newest version (coalesced), never a backlog. Commits after the sequence was made are delivered
    /// (those before its first `next()` as one, if the engine still remembers them).
    ///
    /// ```swift
    /// for await change in realm.changes {
    ///     print("version \(change.version): \(change.realm.objects(Dog.self).count) dogs")
    /// }
    /// ```
    public nonisolated var changes: RealmChanges {
        RealmChanges(engine: engine, fileKey: fileKey, after: engine.latestVersion)
    }
}

extension Realm {
    /// How many change observers are registered on the file (for tests and diagnostics).
    public nonisolated var _changeSubscriptionCount: Int { engine.hub.subscriptionCount }
}
