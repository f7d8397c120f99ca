// Compile check: an observed view (ObservedResults, ObservedRealmObject, ObservedRealm) belongs to the actor
// that makes it; a `Task.detached` closure runs elsewhere, so it cannot capture one (its frozen `results`
// can go). Must NOT compile. (Making a view in code isolated to no actor does not compile either: its
// `isolation: isolated any Actor = #isolation` parameter gets no actor.)
import ActorStore

final class Dog: Object {
    @Persisted var name = ""
}

@MainActor func sendToADetachedTask(realm: Realm) throws {
    let dogs = try ObservedResults(Dog.self, in: realm)
    // expected-error-contains: passing closure as a 'sending' parameter risks causing data races
    Task.detached { print(dogs.results.count) }
}
