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
