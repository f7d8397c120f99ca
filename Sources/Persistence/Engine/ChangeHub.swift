/// Tells observers what commits changed, after each commit is published (durable and visible).
///
/// Observers pull: each holds a ``ChangeSubscription`` that accumulates the changes of the commits it
/// cares about into ``ChangeSubscription/Batch``es, and waits (suspended) until there is one. The hub never
/// makes a committer wait for an observer, and a slow observer costs memory proportional to the objects
/// changed, not to the number of commits: consecutive commits merge into one batch.
///
/// Subscriptions name the tables they watch. Publishing looks them up by the tables a commit changed, so
/// observers of other tables cost nothing per commit: they are neither woken nor visited.
package final class ChangeHub: Sendable {
    private struct State {
        var nextID: UInt64 = 1
        /// Subscriptions that watch every table.
        var everything: [UInt64: ChangeSubscription] = [:]
        /// Subscriptions by watched table.
        var byTable: [TableID: [UInt64: ChangeSubscription]] = [:]
        /// Every subscription (schema changes and closing reach all of them).
        var all: [UInt64: ChangeSubscription] = [:]
        var closed = false
        /// The most recent commits' changes, oldest first, so that an observer can start from a version it
        /// already holds (see ``ChangeHub/subscribe(tables:after:base:)``). Bounded by ``logLimit``.
        var log = CommitLog()
        var logSize = 0
        /// The newest version recorded (unpinned); nil until the first commit after the engine opened.
        var latest: Snapshot?
    }
    private let state = Locked(State())
    /// How much of the log is kept: commits, and changed objects over all of them.
    static let logLimit = (commits: 256, objects: 100_000)

    /// Pins a snapshot handed out unpinned.
    let pin: @Sendable (Snapshot) -> Snapshot

    init(pin: @escaping @Sendable (Snapshot) -> Snapshot) { self.pin = pin }

    /// Registers a subscription starting after `base`, the version the caller has already seen (read
    /// under the hub's lock, so no commit falls between it and the subscription).
    ///
    /// With `after` (a version older than `base` that the observer holds), the commits between the two are
    /// handed to the subscription as its first batch when the log still has them; `caughtUp` says whether
    /// it did (or there was nothing between).
    func subscribe(
        tables: Set<TableID>?, after: Version?, base: () -> Snapshot?
    )
        -> (subscription: ChangeSubscription, snapshot: Snapshot?, caughtUp: Bool)
    {
        state.withLock { state in
            // The hub's newest version, not the engine's: a commit published but not yet recorded here is
            // then newer than the subscription's base, and reaches it.
            let snapshot = state.latest.map(pin) ?? base()
            let subscription = ChangeSubscription(
                id: state.nextID, hub: self, base: snapshot?.version ?? .zero, ended: state.closed)
            state.nextID += 1
            if !state.closed { insert(subscription, tables: tables, into: &state) }
            guard let after, let snapshot, after < snapshot.version else { return (subscription, snapshot, true) }
            guard let first = state.log.first?.version, first <= after.next,
                state.log.last?.version == snapshot.version
            else { return (subscription, snapshot, false) }
            var merged = ChangeSet()
            for entry in state.log.entries where entry.version > after { merged.merge(entry.changes) }
            subscription.prefill(merged, snapshot: snapshot, tables: tables)
            return (subscription, snapshot, true)
        }
    }

    /// Changes the tables a subscription watches (after a schema change, say).
    package func watch(_ subscription: ChangeSubscription, tables: Set<TableID>?) {
        state.withLock { state in
            guard state.all[subscription.id] != nil else { return }
            remove(subscription.id, from: &state)
            insert(subscription, tables: tables, into: &state)
        }
    }

    func unsubscribe(_ id: UInt64) {
        state.withLock { state in remove(id, from: &state) }
    }

    private func insert(_ subscription: ChangeSubscription, tables: Set<TableID>?, into state: inout State) {
        subscription.tables.withLock { $0 = tables }
        state.all[subscription.id] = subscription
        if let tables {
            for table in tables { state.byTable[table, default: [:]][subscription.id] = subscription }
        } else {
            state.everything[subscription.id] = subscription
        }
    }

    private func remove(_ id: UInt64, from state: inout State) {
        guard let subscription = state.all.removeValue(forKey: id) else { return }
        state.everything.removeValue(forKey: id)
        for table in subscription.tables.withLock({ $0 }) ?? [] {
            state.byTable[table]?.removeValue(forKey: id)
            if state.byTable[table]?.isEmpty == true { state.byTable.removeValue(forKey: table) }
        }
    }

    /// How many subscriptions are registered (for tests and statistics).
    package var subscriptionCount: Int { state.withLock { $0.all.count } }

    /// One published commit, as the hub needs it.
    struct Commit {
        let state: DatabaseState
        let changes: ChangeSet
        /// Subscriptions the commit must not notify (`write(withoutNotifying:)`).
        let silenced: Set<UInt64>
        /// The version the commit started from; kept only when `silenced` is not empty.
        let before: DatabaseState?
    }

    /// Hands newly published commits (in version order) to the subscriptions they concern.
    ///
    /// In two steps: ``record(_:region:)`` (cheap, before the committers are resumed, so that a commit has
    /// reached the hub when `commit()` returns) and ``dispatch(_:to:region:)`` (after).
    func publish(_ commits: [Commit], region: MappedRegion) {
        dispatch(commits, to: record(commits, region: region), region: region)
    }

    /// Logs the commits, makes the newest the hub's latest version, and returns the subscriptions to tell.
    func record(_ commits: [Commit], region: MappedRegion) -> [ChangeSubscription] {
        guard let newest = commits.last else { return [] }
        var targets: [UInt64: ChangeSubscription] = [:]
        state.withLock { state in
            state.latest = Snapshot(state: newest.state, region: region, pin: nil)
            for commit in commits {
                state.log.append((commit.state.version, commit.changes))
                state.logSize += Self.size(commit.changes)
                while state.log.count > Self.logLimit.commits
                    || (state.logSize > Self.logLimit.objects && state.log.count > 1)
                {
                    state.logSize -= Self.size(state.log.removeFirst())
                }
            }
            for commit in commits {
                if commit.changes.schemaChanged {
                    targets = state.all
                    return
                }
                for id in commit.silenced { if let s = state.all[id] { targets[id] = s } }
                for table in commit.changes.tables.keys {
                    if let watching = state.byTable[table] { targets.merge(watching) { a, _ in a } }
                }
                if !state.everything.isEmpty { targets.merge(state.everything) { a, _ in a } }
            }
        }
        return Array(targets.values)
    }

    /// Hands the commits to the subscriptions ``record(_:region:)`` returned.
    func dispatch(_ commits: [Commit], to targets: [ChangeSubscription], region: MappedRegion) {
        for subscription in targets { subscription.receive(commits, region: region) }
    }

    /// The most recent commits' changes, oldest first: an array whose front is dropped by moving a start
    /// index, so that dropping the oldest entry after every commit does not shift the whole log (it did:
    /// ~2% of a one-object commit without a sync, with the log full at 256 entries).
    struct CommitLog {
        private var storage: [(version: Version, changes: ChangeSet)] = []
        private var start = 0

        /// The entries, oldest first.
        var entries: ArraySlice<(version: Version, changes: ChangeSet)> { storage[start...] }
        var count: Int { storage.count - start }
        var first: (version: Version, changes: ChangeSet)? { count > 0 ? storage[start] : nil }
        var last: (version: Version, changes: ChangeSet)? { count > 0 ? storage[storage.count - 1] : nil }

        mutating func append(_ entry: (version: Version, changes: ChangeSet)) { storage.append(entry) }

        /// Drops the oldest entry (the log must not be empty) and returns its changes.
        mutating func removeFirst() -> ChangeSet {
            let changes = storage[start].changes
            storage[start].changes = ChangeSet()
            start += 1
            // Compacted when the dropped entries are the larger half: amortised O(1) per entry.
            if start * 2 > storage.count {
                storage.removeFirst(start)
                start = 0
            }
            return changes
        }
    }

    private static func size(_ changes: ChangeSet) -> Int {
        changes.tables.values.reduce(1) { $0 + $1.modified.count + $1.deleted.count / 64 + $1.inserted.count / 64 }
    }

    /// Ends every subscription (the engine is closing).
    func close() {
        let all = state.withLock { state in
            state.closed = true
            defer {
                state.all = [:]
                state.byTable = [:]
                state.everything = [:]
            }
            return Array(state.all.values)
        }
        for subscription in all { subscription.end() }
    }
}

/// One observer's feed of changes: what the commits since its last ``next()`` changed in the tables it
/// watches. Unsubscribes when released or ``cancel()``ed.
package final class ChangeSubscription: Sendable {
    /// Changes merged over consecutive commits.
    package struct Batch: Sendable {
        /// The net changes of the merged commits, to watched tables.
        package var changes: ChangeSet
        /// The version after the last merged commit (not pinned: pin it to keep it).
        package var snapshot: Snapshot
        /// When the batch ends just before a commit that must not notify this subscription: the version
        /// after that commit, which the observer adopts without reporting it. `snapshot` is then the
        /// version just before it.
        package var silentlyThrough: Snapshot?
    }

    private struct State {
        var batches: [Batch] = []
        var waiter: CheckedContinuation<[Batch]?, Never>?
        var ended: Bool
        /// Commits up to this version are already known to the observer.
        var base: Version
    }

    package let id: UInt64
    private weak let hub: ChangeHub?
    private let state: Locked<State>
    /// The watched tables; nil for all (read and written under the hub's lock).
    let tables = Locked<Set<TableID>?>(nil)

    init(id: UInt64, hub: ChangeHub, base: Version, ended: Bool) {
        self.id = id
        self.hub = hub
        self.state = Locked(State(ended: ended, base: base))
    }

    deinit { hub?.unsubscribe(id) }

    /// The batches since the last call, waiting (suspended, not blocking a thread) until there is one.
    /// Returns nil once the subscription ended (cancelled, the engine closed) or the task is cancelled.
    package func next() async -> [Batch]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Batch]?, Never>) in
                let ready = state.withLock { state -> [Batch]?? in
                    if state.ended || Task.isCancelled { return .some(nil) }
                    if !state.batches.isEmpty {
                        defer { state.batches = [] }
                        return .some(state.batches)
                    }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// The batches waiting, without waiting (empty when none).
    package func poll() -> [Batch] {
        state.withLock { state in
            defer { state.batches = [] }
            return state.batches
        }
    }

    /// Whether the subscription ended (cancelled, or its engine closed).
    package var isCancelled: Bool { state.withLock { $0.ended } }

    /// Whether a ``next()`` is suspended waiting for a batch (what a test waits for before it publishes or
    /// closes, so that it exercises the wake-up of a waiting observer rather than an early return).
    package var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    /// Stops the subscription: a waiting ``next()`` returns nil, and so does every later one.
    package func cancel() {
        hub?.unsubscribe(id)
        end()
    }

    func end() {
        let waiter = state.withLock { state in
            state.ended = true
            state.batches = []
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Sets the first batch (called under the hub's lock, before any commit can reach the subscription).
    func prefill(_ changes: ChangeSet, snapshot: Snapshot, tables: Set<TableID>?) {
        var relevant = ChangeSet()
        relevant.schemaChanged = changes.schemaChanged
        for (table, tableChanges) in changes.tables where tables?.contains(table) ?? true {
            relevant.tables[table] = tableChanges
        }
        guard !relevant.isEmpty else { return }
        var unpinned = snapshot
        unpinned.pin = nil
        state.withLock { $0.batches = [Batch(changes: relevant, snapshot: unpinned, silentlyThrough: nil)] }
    }

    func receive(_ commits: [ChangeHub.Commit], region: MappedRegion) {
        let watched = tables.withLock { $0 }
        let wake = state.withLock { state -> (CheckedContinuation<[Batch]?, Never>, [Batch])? in
            guard !state.ended else { return nil }
            var added = false
            for commit in commits where commit.state.version > state.base {
                state.base = commit.state.version
                let after = Snapshot(state: commit.state, region: region, pin: nil)
                if commit.silenced.contains(id) {
                    let before = Snapshot(state: commit.before ?? commit.state, region: region, pin: nil)
                    if let last = state.batches.last, last.silentlyThrough == nil {
                        state.batches[state.batches.count - 1].snapshot = before
                        state.batches[state.batches.count - 1].silentlyThrough = after
                    } else {
                        state.batches.append(Batch(changes: ChangeSet(), snapshot: before, silentlyThrough: after))
                    }
                    added = true
                    continue
                }
                var relevant = ChangeSet()
                relevant.schemaChanged = commit.changes.schemaChanged
                for (table, changes) in commit.changes.tables where watched?.contains(table) ?? true {
                    relevant.tables[table] = changes
                }
                guard !relevant.isEmpty else { continue }
                if let last = state.batches.last, last.silentlyThrough == nil {
                    state.batches[state.batches.count - 1].changes.merge(relevant)
                    state.batches[state.batches.count - 1].snapshot = after
                } else {
                    state.batches.append(Batch(changes: relevant, snapshot: after, silentlyThrough: nil))
                }
                added = true
            }
            guard added, let waiter = state.waiter else { return nil }
            state.waiter = nil
            defer { state.batches = [] }
            return (waiter, state.batches)
        }
        // Resumed outside the lock; the batches travel with the resumption.
        if let (waiter, batches) = wake { waiter.resume(returning: batches) }
    }
}
