import ActorStore
import Foundation
import Synchronization
import Testing

// Expectations more than one test file uses.

/// Expects `body` to throw a `RealmError` with `code`.
func expectRealmError(
    _ code: RealmError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    let error = await #expect(throws: RealmError.self, comment, sourceLocation: sourceLocation) { try await body() }
    #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
}

/// Expects an exit test's standard error to contain `message` (the stop was the expected one).
func expectStopMessage(
    _ result: ExitTest.Result?, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(output.contains(message), "standard error: \(output.suffix(400))", sourceLocation: sourceLocation)
}

/// The change set an observer of a class's objects sorted by primary key receives for a write that took the
/// objects from `before` to `after` (primary key → values): the indices of the deleted objects in `before`,
/// and of the inserted and modified ones in `after`. `modified` says whether an object's observed values
/// changed.
struct ExpectedChanges: Equatable {
    var deletions: [Int]
    var insertions: [Int]
    var modifications: [Int]
    /// The primary keys in `after`, in order.
    var collection: [Int]

    init<Row>(from before: [Int: Row], to after: [Int: Row], modified: (Row, Row) -> Bool) {
        let beforeKeys = before.keys.sorted()
        collection = after.keys.sorted()
        deletions = beforeKeys.enumerated().filter { after[$0.element] == nil }.map(\.offset)
        insertions = collection.enumerated().filter { before[$0.element] == nil }.map(\.offset)
        modifications = collection.enumerated().filter { _, id in
            guard let old = before[id], let new = after[id] else { return false }
            return modified(old, new)
        }.map(\.offset)
    }

    /// Whether the write changed nothing the observer sees (then it is not notified).
    var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty && modifications.isEmpty }

    /// Expects `change` (the next change set, nil if the observer ended) to be this one.
    func expect(
        _ change: (deletions: [Int], insertions: [Int], modifications: [Int], collection: [Int])?,
        _ context: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let change else {
            Issue.record("\(context): the observer ended", sourceLocation: sourceLocation)
            return
        }
        #expect(change.deletions == deletions, "\(context): deletions", sourceLocation: sourceLocation)
        #expect(change.insertions == insertions, "\(context): insertions", sourceLocation: sourceLocation)
        #expect(change.modifications == modifications, "\(context): modifications", sourceLocation: sourceLocation)
        #expect(change.collection == collection, "\(context): collection", sourceLocation: sourceLocation)
    }
}
