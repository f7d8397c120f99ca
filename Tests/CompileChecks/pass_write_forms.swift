// Compile check: the three forms of `write` — a single expression whose value is discarded, a block of
// statements, a block returning a `Sendable` value — and `read` returning a `Sendable` value. Must compile.
import ActorStore

final class Dog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
}

func writeForms(realm: Realm) async throws -> Int {
    try await realm.write { $0.create(Dog.self, value: ["name": "Rex"]) }

    try await realm.write { realm in
        for age in 0..<3 {
            realm.create(Dog.self, value: ["name": "Puppy \(age)", "age": age])
        }
    }

    let count: Int = try await realm.write { realm in
        let fido = realm.create(Dog.self, value: ["name": "Fido"])
        fido.age += 1
        return realm.objects(Dog.self).count
    }

    let fido = Dog()
    fido.name = "Fido"
    try await realm.add(fido)

    let names: [String] = await realm.read { realm in realm.objects(Dog.self).map(\.name) }
    return count + names.count
}
