// Compile check: observed views made and used on the main actor (or any actor), their frozen values sent
// anywhere, writes from the view's actor. Must compile without warnings.
import ActorStore
import Observation

final class Dog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
}

@MainActor @Observable final class DogListModel {
    let puppies: ObservedResults<Dog>
    let signal: ObservedRealm

    init(realm: Realm) throws {
        puppies = try ObservedResults(Dog.self, in: realm) { $0.where { $0.age < 2 }.sorted(by: \.name) }
        signal = try ObservedRealm(realm)
    }

    func rename(_ dog: Frozen<Dog>) async throws {
        try await puppies.write(dog) { $0.name = "Rex" }
        let detail = try ObservedRealmObject(dog, in: puppies.realm, keyPaths: [\.name])
        try await detail.write { $0.age += 1 }
    }

    func export() {
        let results = puppies.results  // FrozenResults: Sendable
        Task.detached { print(results.map(\.name)) }
    }
}

actor Screen {
    var dogs: ObservedResults<Dog>?
    func open(_ realm: Realm) throws { dogs = try ObservedResults(Dog.self, in: realm) }
}
