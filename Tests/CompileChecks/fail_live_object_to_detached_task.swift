// Compile check: a live object belongs to its realm actor; a `Task.detached` closure runs elsewhere, so it
// cannot capture one. Must NOT compile.
import ActorStore

final class Dog: Object {
    @Persisted var name = ""
}

func captureInsideWrite(realm: Realm) async throws {
    try await realm.write { realm in
        let rex = realm.create(Dog.self, value: ["name": "Rex"])
        // expected-error-contains: passing closure as a 'sending' parameter risks causing data races
        Task.detached { print(rex.name) }
    }
}

func captureInIsolatedFunction(realm: isolated Realm) {
    let first = realm.objects(Dog.self).first!
    // expected-error-contains: passing closure as a 'sending' parameter risks causing data races
    Task.detached { print(first.name) }
}
