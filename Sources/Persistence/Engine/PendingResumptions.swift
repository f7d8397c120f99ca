import Synchronization

/// How many tasks the engine has resumed that have not run again yet: committers whose sync returned,
/// writers handed the write lock. Each is a job queued for a thread of the cooperative pool.
///
/// Readers look at it (``StorageEngine/hasPendingResumptions``) to give their thread up when a writer waits
/// for one. An uncontended `await` on an actor does not suspend (the runtime runs the actor's code on the
/// calling thread and comes back without giving the thread up), so a loop of reads holds its thread for as
/// long as it runs, and with as many such loops as the pool has threads, a resumed writer never runs.
package final class PendingResumptions: Sendable {
    private let count = Atomic<Int>(0)

    package init() {}

    /// Called just before resuming a suspended writer's continuation (or before a writer yields).
    func resuming() { count.add(1, ordering: .relaxed) }

    /// Called by the writer once it runs again.
    func resumed() { count.subtract(1, ordering: .relaxed) }

    /// Whether some resumed task is still waiting for a thread (a hint: it may change at once).
    package var isEmpty: Bool { count.load(ordering: .relaxed) <= 0 }
}
