// Compile check: `write` and `read` return only `Sendable` values, and live objects are not `Sendable`,
// so a live object cannot leave the realm actor through them. Must NOT compile.
import ActorStore

final class Dog: Object {
    @Persisted var name = ""
}

func returnFromWrite(realm: Realm) async throws -> String {
    // expected-error-contains: conformance of 'ObjectBase' to 'Sendable' is unavailable
    let rex: Dog = try await realm.write { realm in realm.create(Dog.self, value: ["name": "Rex"]) }
    return rex.name
}

func returnFromRead(realm: Realm) async -> String {
    // expected-error-contains: conformance of 'ObjectBase' to 'Sendable' is unavailable
    let rex = await realm.read { realm in realm.objects(Dog.self).first! }
    return rex.name
}
