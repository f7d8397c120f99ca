import ActorStorePersistence

/// The bookkeeping of a loop that hands out one object after another (`for object in results`,
/// `results.update { }`): whether the row locations it read up front still hold, and, in a write
/// transaction, telling the engine which row the loop is at.
///
/// An update of the row a loop is at may wait in the engine and reach its trees a chunk of rows at a time
/// (`WriteTransaction.deferrableRow`): `object.score += 1` on every object then costs one pass over the
/// trees per chunk instead of one walk per object. Nothing reads a tree behind the record: every read of
/// the transaction's state applies the waiting updates first.
///
/// Locations read up front hold while the only rows that moved are rows this loop has passed (their
/// deferred updates). Any other change (another object written, an insert, a delete, another loop's
/// deferred update) makes the loop look each later row up, as it must. A class: copies of an iterator
/// share it, and a copy going back over rows another copy passed looks them up.
final class ObjectLoop {
    private let transaction: WriteTransaction?
    private let loop: UInt64
    // `@exclusivity(unchecked)` on the state: a loop is confined to its realm's actor and never accessed
    // re-entrantly while a field is being changed (the dynamic checks were a measurable share of each step).
    @exclusivity(unchecked) private var epoch: UInt64
    private let stamp: UInt64
    @exclusivity(unchecked) private var holds = true
    /// The furthest position handed out.
    @exclusivity(unchecked) private var furthest = -1

    init(_ context: RealmContext) {
        transaction = context.session?.transaction
        loop = transaction?.newLoop() ?? 0
        epoch = transaction?.locationEpoch ?? 0
        stamp = context.stamp
    }

    /// Moves the loop to the object at `position` (row `key` of `table`), and returns whether the
    /// locations read when the loop began (or at the last ``reread()``) still hold for it.
    func enter(_ position: Int, _ table: TableID, _ key: ObjectKey, in context: RealmContext) -> Bool {
        guard let transaction, context.session?.transaction === transaction else {
            return transaction == nil && context.stamp == stamp
        }
        let (current, passed) = transaction.enterLoopRow(table, key, loop: loop)
        if holds {
            epoch &+= passed
            holds = current == epoch
        }
        epoch = current
        defer { furthest = max(furthest, position) }
        return holds && position > furthest
    }

    /// The loop read the locations of the rows ahead again, just now: they hold from here.
    func reread() {
        guard let transaction else { return }
        // The updates of the row the loop was at are in the locations just read.
        epoch = transaction.leaveLoopRow(loop: loop)
        holds = true
    }

    /// Ends the loop: updates of its last row no longer wait.
    func end() {
        transaction?.leaveLoopRow(loop: loop)
    }
}
