// Compile check: write and read closures are `@Sendable`, so they cannot capture non-`Sendable` state of
// the caller, such as an unmanaged object (use `try await realm.add(dog)`, which sends it). Must NOT compile.
import ActorStore

final class Dog: Object {
    @Persisted var name = ""
}

func captureUnmanagedObject(realm: Realm) async throws {
    let rex = Dog()
    rex.name = "Rex"
    try await realm.write { realm in
        // expected-error-contains: capture of 'rex' with non-Sendable type 'Dog' in a '@Sendable' closure
        realm.add(rex)
    }
}
