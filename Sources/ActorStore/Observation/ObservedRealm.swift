import ActorStorePersistence
import Foundation
import Observation

/// A realm's newest version as an `@Observable` value: a "something changed" signal for screens that
/// show summaries across classes (counts, totals, a badge).
///
/// ```swift
/// let store = try ObservedRealm(realm)
/// Text("\(store.snapshot.objects(Dog.self).count) dogs")   // re-renders after every commit
/// ```
///
/// ``snapshot`` is the realm frozen at the newest version; it changes after every commit to the file, by
/// any `Realm` on it (commits made while the actor is busy: once). Prefer ``ObservedResults`` or
/// ``ObservedRealmObject`` for what depends on a query or an object: they change only when it does.
///
/// - Important: The view is isolated to the actor that makes it (usually the main actor), like
///   ``ObservedResults``; its ``snapshot`` is `Sendable`.
@Observable
public final class ObservedRealm: ObservedView {
    typealias Source = RealmSource

    /// The realm's data at the newest version the view has seen.
    public private(set) var snapshot: FrozenRealm

    /// Why observation stopped early (the realm's files were closed); nil while it runs.
    public internal(set) var error: RealmError?

    /// The realm observed, for writes.
    public let realm: Realm

    @ObservationIgnored private var task: Task<Void, Never>?

    /// The version of ``snapshot``.
    public var version: UInt64 { snapshot.version }

    /// Observes every commit to a realm's file.
    /// - Parameters:
    ///   - realm: The realm.
    ///   - isolation: The actor the view belongs to: leave the default, the caller's.
    /// - Throws: `RealmError.closed` when the realm's files are closed.
    public init(_ realm: Realm, isolation: isolated any Actor = #isolation) throws(RealmError) {
        let file = try ObservedFile(engine: realm.engine, fileKey: realm.fileKey, root: nil)
        let subscription: ChangeSubscription
        let snapshot: Snapshot
        do throws(StorageError) {
            (subscription, snapshot, _) = try file.engine.subscribe(tables: nil)
        } catch {
            throw RealmError(error)
        }
        let context = file.context(snapshot, reusing: nil)
        self.realm = realm
        self.snapshot = FrozenRealm(context)
        task = ObservedDriver.start(
            self, RealmSource(file: file, subscription: subscription, context: context), isolation: isolation)
    }

    deinit { task?.cancel() }

    /// Stops observing: the view keeps its last snapshot and changes no more. Releasing the view does the
    /// same.
    public func cancel() {
        task?.cancel()
        task = nil
    }

    /// Shows the newest version.
    func apply(_ update: FrozenRealm) -> Bool {
        snapshot = update
        return true
    }
}

/// The updates of an ``ObservedRealm``: the newest version after each batch of commits.
final class RealmSource: ObservedSource {
    typealias Update = FrozenRealm

    private let file: ObservedFile
    let subscription: ChangeSubscription
    private var context: FrozenContext
    var pending: [ChangeSubscription.Batch] = []

    init(file: ObservedFile, subscription: ChangeSubscription, context: FrozenContext) {
        self.file = file
        self.subscription = subscription
        self.context = context
    }

    deinit { subscription.cancel() }

    func next() async throws(RealmError) -> Update? {
        while let batches = await subscription.next() {
            if let update = update(for: batches) { return update }
        }
        return nil
    }

    /// The newest version among `batches` that changed something; nil when none did.
    func update(for batches: [ChangeSubscription.Batch]) -> Update? {
        var update: Update?
        for batch in batches {
            if !batch.changes.isEmpty {
                context = file.context(batch.snapshot, reusing: batch.changes.schemaChanged ? nil : context)
                update = FrozenRealm(context)
            }
            if let silent = batch.silentlyThrough { context = file.context(silent, reusing: nil) }
        }
        return update
    }

    static func merge(_ first: Update, _ second: Update) -> Update { second }
}
