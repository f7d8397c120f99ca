/// A first-in, first-out lock for async code: waiters suspend, no thread ever blocks.
///
/// The engine's single-writer rule: one write transaction at a time per store, in arrival order. It is
/// released as soon as a commit's bytes are appended, *before* the commit's fsync, so the next writer
/// appends behind it and one fsync makes both durable (group commit).
package final class AsyncWriteLock: Sendable {
    private struct State {
        var isLocked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }
    private let state = Locked(State())
    /// Counts the waiters `unlock()` resumed that have not run yet (see ``PendingResumptions``).
    private let resumptions: PendingResumptions?

    package init(resumptions: PendingResumptions? = nil) {
        self.resumptions = resumptions
    }

    /// Waits until the lock is free, then holds it.
    package nonisolated(nonsending) func lock() async {
        let acquired = state.withLock { state in
            if state.isLocked { return false }
            state.isLocked = true
            return true
        }
        if acquired { return }
        var queued = false
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if !state.isLocked {
                    state.isLocked = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            queued = !now
            if now { continuation.resume() }
        }
        // A queued waiter is resumed by `unlock()` only, which counted it.
        if queued { resumptions?.resumed() }
    }

    /// Takes the lock if it is free; returns whether it did.
    package func tryLock() -> Bool {
        state.withLock { state in
            if state.isLocked { return false }
            state.isLocked = true
            return true
        }
    }

    /// Whether a writer holds the lock now (a hint: it may change at once).
    package var isLocked: Bool { state.withLock { $0.isLocked } }

    /// How many tasks are waiting (for tests and diagnostics).
    package var waiterCount: Int { state.withLock { $0.waiters.count - $0.head } }

    /// Hands the lock to the longest waiter, or frees it.
    package func unlock() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            precondition(state.isLocked, "AsyncWriteLock.unlock() called while not locked")
            guard state.head < state.waiters.count else {
                state.isLocked = false
                state.waiters.removeAll(keepingCapacity: true)
                state.head = 0
                return nil
            }
            let waiter = state.waiters[state.head]
            state.head += 1
            if state.head > 64 && state.head * 2 > state.waiters.count {
                state.waiters.removeFirst(state.head)
                state.head = 0
            }
            return waiter
        }
        guard let next else { return }
        resumptions?.resuming()
        next.resume()
    }
}
