import Synchronization

/// The identity of one write transaction, used to decide which nodes of a ``PersistentBTree`` it may
/// change in place.
///
/// A write transaction takes one token with ``next()`` and passes it to every mutation it makes. Nodes
/// created or copied by those mutations record the token as their owner; later mutations under the same
/// token change those nodes in place instead of copying them again (Clojure's "transients"). When the
/// transaction ends — commit or rollback — the token is dropped and never used again, which freezes every
/// node it owned: any later mutation, under any other token, copies them.
///
/// Tokens come from one process-wide atomic counter that starts at 1, so no two calls of ``next()`` ever
/// return the same token and 0 is never issued (0 can therefore mean "owned by nobody").
///
/// - Complexity: ``next()`` is one relaxed atomic increment.
package struct MutationToken: Hashable, Sendable, CustomStringConvertible {
    /// The token's number: unique within the process, never 0.
    package let rawValue: UInt64

    /// Wraps an already issued number. Private so that every token comes from ``next()``.
    private init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Issues a token that no earlier call returned and no later call will return.
    ///
    /// - Complexity: O(1), one relaxed atomic add. Relaxed ordering is enough: the counter only has to
    ///   hand out distinct numbers; it does not publish any other memory.
    package static func next() -> MutationToken {
        let issued = mutationTokenCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        // 2^64 tokens would take centuries at a billion transactions per second; trap rather than reuse.
        precondition(issued != 0, "MutationToken counter wrapped around; tokens must never be reused")
        return MutationToken(rawValue: issued)
    }

    /// "token #n", for test failure messages.
    package var description: String { "token #\(rawValue)" }
}

/// The source of ``MutationToken`` numbers. Starts at 1 so that 0 is never issued.
private let mutationTokenCounter = Atomic<UInt64>(1)
