// Compile check: an unmanaged object given to `realm.add(_:)` from outside the actor is *sent* into it
// (`sending`), so the caller can no longer touch it. Must NOT compile.
import ActorStore

final class Dog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
}

func useAfterAdd(realm: Realm) async throws {
    let rex = Dog()
    rex.name = "Rex"
    // The compiler reports the `add` call, with a note pointing at the later use of `rex`.
    // expected-error-contains: sending value of non-Sendable type 'Dog' risks causing data races
    try await realm.add(rex)
    rex.age = 2
}
