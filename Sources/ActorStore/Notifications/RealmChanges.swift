import ActorStorePersistence
import Foundation

/// Every commit to a realm's file, by any `Realm` on it, as an `AsyncSequence` usable from any task: see
/// ``Realm/changes``.
public struct RealmChanges: AsyncSequence, Sendable, ChangeStream {
    public typealias Element = RealmChange
    public typealias Failure = Never

    weak var engine: StorageEngine?
    let fileKey: String
    /// The newest version when the sequence was made: commits after it are delivered.
    let after: Version

    /// Iterates the changes: see ``ChangeIterator``.
    public typealias Iterator = ChangeIterator<Element>

    public func makeAsyncIterator() -> Iterator { Iterator(self) }

    func subscribe() throws(RealmError) -> RealmFeed { try RealmFeed(self) }

    /// A file that cannot be observed (every `Realm` on it closed) ends the sequence without an element.
    static func element(_ delivery: Result<RealmChange, RealmError>) -> Element? { try? delivery.get() }
}

/// The deliveries of a file observation: each commit that changed something, as a frozen realm.
final class RealmFeed: ChangeFeed {
    private let file: ObservedFile
    let subscription: ChangeSubscription
    private var context: FrozenContext
    private var ready: [RealmChange] = []

    init(_ source: RealmChanges) throws(RealmError) {
        let file = try ObservedFile(engine: source.engine, fileKey: source.fileKey, root: nil)
        let (subscription, snapshot, _): (ChangeSubscription, Snapshot, Bool)
        do throws(StorageError) {
            (subscription, snapshot, _) = try file.engine.subscribe(tables: nil, after: source.after)
        } catch {
            throw RealmError(error)
        }
        self.file = file
        self.subscription = subscription
        self.context = file.context(snapshot, reusing: nil)
    }

    deinit { subscription.cancel() }

    func next() async throws(RealmError) -> (delivery: RealmChange, isLast: Bool)? {
        while ready.isEmpty {
            guard let batches = await subscription.next() else { return nil }
            for batch in batches {
                if !batch.changes.isEmpty {
                    let context = file.context(batch.snapshot, reusing: batch.changes.schemaChanged ? nil : context)
                    ready.append(RealmChange(version: context.snapshot.version.rawValue, realm: FrozenRealm(context)))
                    self.context = context
                }
                if let silent = batch.silentlyThrough { context = file.context(silent, reusing: nil) }
            }
        }
        return (ready.removeFirst(), false)
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
