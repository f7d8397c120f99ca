import ActorStorePersistence
import Foundation

/// Where an observed view (``ObservedResults``, ``ObservedRealmObject``, ``ObservedRealm``) gets its
/// updates: a change subscription and the work that turns its batches into one update.
///
/// A source belongs to the one task that drives its view (see ``ObservedDriver``): that task calls it,
/// one call at a time, and nothing else holds it. Waiting and computing (`next()`, `drain()`) run off the
/// view's actor; taking what arrived meanwhile (`takePending()`) is a lock and an array, on it.
protocol ObservedSource: AnyObject {
    /// What the view applies: one value, however many commits it covers.
    associatedtype Update: Sendable

    /// The subscription the updates come from.
    var subscription: ChangeSubscription { get }

    /// The batches ``takePending()`` took, for ``drain()``.
    var pending: [ChangeSubscription.Batch] { get set }

    /// Waits for the next relevant batch of commits and computes its update. Nil once observation ended
    /// (cancelled, the file closed, the object deleted and reported).
    func next() async throws(RealmError) -> Update?

    /// The one update for `batches` (taken from the subscription with `poll()`), without waiting; nil
    /// when they changed nothing observed.
    func update(for batches: [ChangeSubscription.Batch]) throws(RealmError) -> Update?

    /// One update covering `first` then `second`.
    static func merge(_ first: Update, _ second: Update) -> Update

    /// Whether `update` changes nothing the view shows: merged updates can cancel out (an object inserted
    /// then deleted in one burst), and such an update is not applied (the view would report an empty change).
    static func changesNothing(_ update: Update) -> Bool
}

extension ObservedSource {
    /// Takes the batches that arrived since the last call, without waiting or computing anything.
    /// - Returns: whether there were any (then ``drain()`` computes their update).
    func takePending() -> Bool {
        pending = subscription.poll()
        return !pending.isEmpty
    }

    /// The update for the batches ``takePending()`` took; nil when they changed nothing observed.
    func drain() async throws(RealmError) -> Update? {
        let batches = pending
        pending = []
        return try update(for: batches)
    }

    /// `updates` merged into one, in order; nil when there are none, or when they cancel out.
    static func merged(_ updates: some Sequence<Update>) -> Update? {
        let merged = updates.reduce(nil) { merged, update in merged.map { merge($0, update) } ?? update }
        return merged.flatMap { changesNothing($0) ? nil : $0 }
    }

    /// An update of a single delivery always changes something (default).
    static func changesNothing(_ update: Update) -> Bool { false }
}

/// An observed view (``ObservedResults``, ``ObservedRealmObject``, ``ObservedRealm``): what it does with
/// its source's updates. ``ObservedDriver/start(_:_:isolation:)`` runs it.
protocol ObservedView: AnyObject {
    associatedtype Source: ObservedSource
    /// Why observation stopped early; nil while it runs.
    var error: RealmError? { get set }
    /// Applies an update; returns whether observation goes on.
    func apply(_ update: Source.Update) -> Bool
}

extension ObservedView {
    /// Applies an update, records the error that ended observation, or notes its end (nil).
    /// - Returns: whether observation goes on.
    func receive(_ outcome: Result<Source.Update, RealmError>?) -> Bool {
        switch outcome {
        case .success(let update)?: return apply(update)
        case .failure(let failure)?:
            error = failure
            return false
        case nil: return false
        }
    }
}

/// Runs an observed view's updates: isolated to the view's actor, it waits (off the actor) for a
/// source's next update, then, once on the actor, takes whatever arrived while it waited for the actor,
/// merges it in, and hands the view one update.
///
/// This is where bursts coalesce. Commits made while the actor is busy are all taken in one step when it
/// becomes free, so the view changes once for all of them: an observer (`withObservationTracking`, a
/// SwiftUI view) is told once, and the change set it reads spans the whole burst.
enum ObservedDriver {
    /// Drives `source` until observation ends, the task is cancelled, or `deliver` returns false (the
    /// view was released).
    /// - Parameter deliver: applies an update (`.success`), an error that ended observation
    ///   (`.failure`), or the end of observation (nil); returns whether to go on.
    static func run<Source: ObservedSource>(
        _ source: sending Source, isolation: isolated any Actor,
        deliver: (Result<Source.Update, RealmError>?) -> Bool
    ) async {
        while !Task.isCancelled {
            let update: Source.Update
            do throws(RealmError) {
                guard let first = try await source.next() else {
                    _ = deliver(nil)
                    return
                }
                var merged = first
                // Back on the actor: what arrived while this update was computed or waited for the actor
                // joins it (computed off the actor again). Once: commits arriving faster than the catch-up
                // must not keep the view from ever changing; later ones make the next update.
                if source.takePending(), let more = try await source.drain() {
                    merged = Source.merge(first, more)
                }
                update = merged
            } catch {
                _ = deliver(.failure(error))
                return
            }
            // What arrived meanwhile undid the first update (an object inserted, then deleted): nothing to show.
            if Source.changesNothing(update) { continue }
            guard !Task.isCancelled, deliver(.success(update)) else { return }
        }
    }

    /// Starts driving `view` from `source` on a task isolated to `isolation` (the view's actor), until
    /// observation ends, the task is cancelled, or the view is released.
    /// - Returns: the task (cancel it to stop).
    static func start<View: ObservedView>(
        _ view: View, _ source: sending View.Source, isolation: isolated any Actor
    ) -> Task<Void, Never> {
        let handoff = Handoff(source)
        return Task { [weak view] in
            guard let source = handoff.take() else { return }
            await run(source, isolation: isolation) { [weak view] outcome in view?.receive(outcome) ?? false }
        }
    }
}

/// Hands a non-`Sendable` value (an observation's source) from the initializer that made it to the task
/// that will own it.
final class Handoff<Value>: @unchecked Sendable {
    // Safety (@unchecked Sendable): the creator stores the value at init and keeps no other reference to
    // it; `take()`, called once, by the one task the handoff is given to, moves it out under the lock. No
    // two threads ever reach the value itself: one hands it over, the other receives it.
    private let value: Locked<Value?>

    init(_ value: sending Value) { self.value = Locked(value) }

    /// The value (once; nil afterwards).
    func take() -> Value? {
        value.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
