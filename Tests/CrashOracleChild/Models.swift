import ActorStore

// What the crash child stores. Everything the verifier needs is in the file itself, so `verify` takes no
// workload: a transaction's `Commit` says how many `Entry` objects it wrote, each `Entry` repeats that count
// and its transaction, and a `WriterStream` says how far its writer got and how far behind it purges.

/// One committed transaction of one writer stream: id = stream * 1,000,000,000 + seq.
final class Commit: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var stream = 0
    @Persisted var seq = 0
    /// How many `Entry` objects the transaction wrote.
    @Persisted var count = 0
    /// Its entries were deleted by a later transaction of the same stream (`WriterStream.purgeLag`).
    @Persisted var purged = false
}

/// One object of a transaction. No primary key: a duplicate (a record replayed twice) stays visible.
final class Entry: Object {
    @Persisted(indexed: true) var txn = 0
    @Persisted var index = 0
    @Persisted var count = 0
    @Persisted var check = 0
    @Persisted var payload = ""
}

/// A writer stream's progress, updated in each of its transactions.
final class WriterStream: Object {
    @Persisted(primaryKey: true) var id = 0
    /// The last committed seq: transactions 1...last exist.
    @Persisted var last = 0
    /// Transactions with seq <= last - purgeLag have had their entries deleted (0: nothing is purged).
    @Persisted var purgeLag = 0
}

enum Model {
    static let streamFactor = 1_000_000_000

    static func txn(stream: Int, seq: Int) -> Int { stream * streamFactor + seq }

    static func check(_ txn: Int, _ index: Int) -> Int { (txn &* 1_000_003 &+ index &* 7919) & 0xffff_ffff }

    static func payload(_ txn: Int, _ index: Int, pad: Int) -> String {
        let letter = Character(Unicode.Scalar(UInt8(97 + (txn &+ index) % 26)))
        return "\(txn)/\(index):" + String(repeating: letter, count: pad)
    }
}
