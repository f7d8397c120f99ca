import Dispatch
import Foundation

/// The dedicated thread that runs a store's fsyncs, so they never occupy the cooperative thread pool.
///
/// Waking a parked thread costs tens of microseconds — a large share of a ~150 µs fdatasync. So after a
/// round that synced a lone commit (a serial writer, who will be back in a moment) the thread keeps
/// polling for new work for ``GroupCommit/syncThreadPoll`` before it parks. After a round that covered a
/// group, it parks at once: the wake-up is shared by the group, and the CPU is better spent by the
/// writers. Parked, it costs nothing.
final class SyncThread: Sendable {
    private struct State {
        var requested = false
        var parked = false
        var stopped = false
    }
    private let state = Locked(State())
    private let semaphore = DispatchSemaphore(value: 0)

    /// Starts the thread. `round` runs the work and returns whether it was a lone commit (then the thread
    /// polls for the next one before parking); it is called after each `wake()`.
    init(name: String, round: @escaping @Sendable () -> Bool) {
        let thread = Thread { [self] in
            run(round)
        }
        thread.name = name
        thread.start()
    }

    private func run(_ round: @Sendable () -> Bool) {
        do {
            let clock = ContinuousClock()
            var poll = false
            while true {
                var awake = false
                let deadline = clock.now.advanced(by: GroupCommit.syncThreadPoll)
                while poll && clock.now < deadline {
                    let (requested, stopped) = state.withLock { s in
                        defer { s.requested = false }
                        return (s.requested, s.stopped)
                    }
                    if stopped { return }
                    if requested {
                        awake = true
                        break
                    }
                }
                if !awake {
                    let park = state.withLock { s -> Bool in
                        if s.requested || s.stopped { return false }
                        s.parked = true
                        return true
                    }
                    if park { semaphore.wait() }
                    let stopped = state.withLock { s in
                        s.requested = false
                        return s.stopped
                    }
                    if stopped { return }
                }
                poll = round()
            }
        }
    }

    /// Asks for a round; wakes the thread if it is parked.
    func wake() {
        let signal = state.withLock { s -> Bool in
            s.requested = true
            if s.parked {
                s.parked = false
                return true
            }
            return false
        }
        if signal { semaphore.signal() }
    }

    /// Ends the thread after its current round.
    func stop() {
        let signal = state.withLock { s -> Bool in
            s.stopped = true
            if s.parked {
                s.parked = false
                return true
            }
            return false
        }
        if signal { semaphore.signal() }
    }
}
