import Foundation

/// The timing constants of group commit, in one place: how long each party of a durable commit polls
/// before it parks, and how long a sync round waits for a writer that is appending.
///
/// Why polling at all: waking a parked thread or task costs tens of microseconds, a large share of a
/// ~150 µs `fdatasync`. Why only with a spare core: on one or two cores a poller takes the CPU from the
/// very writers (and the sync thread) it waits for — measured on 2 cores, serial durable writes ran at
/// 0.3× the raw fdatasync rate with a 300 µs committer poll and 0.7× without.
enum GroupCommit {
    /// Whether the machine has a core to spare for polling (four or more).
    static let hasSpareCores = ProcessInfo.processInfo.activeProcessorCount >= 4

    /// How long a lone committer polls for its sync before it parks (``CommitWaiter``): a sync takes
    /// ~150 µs, and a task that parks pays tens of microseconds more to be woken.
    static let committerPoll: Duration = hasSpareCores ? .microseconds(300) : .zero

    /// How long the sync thread stays awake, polling, after a round that synced a lone commit (a serial
    /// writer, who will be back in a moment) before it parks (``SyncThread``). After a round that covered a
    /// group it parks at once: the wake-up is shared by the group, and the CPU is better spent by writers.
    static let syncThreadPoll: Duration = hasSpareCores ? .microseconds(100) : .zero

    /// How long a sync round waits, yielding, for a writer that holds the write lock (it is building or
    /// appending its record) so that it joins this sync instead of waiting a whole round for the next.
    static let joinWindow: Duration = .microseconds(50)
}
