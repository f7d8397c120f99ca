import ActorStore
import Foundation
import Testing

/// The README's "In 30 seconds" example, kept compiling and true. The code is the README's, line for line;
/// only the models are nested here (the test target has its own `Dog` and `Person`), the file is removed
/// at the end, and the comments stating results became `#expect`s.
@Suite("README example (object API)")
struct ReadmeExampleTests {
    final class Dog: Object {
        @Persisted var name = ""
        @Persisted var age = 0
        @Persisted var owner: Person?
    }
    final class Person: Object {
        @Persisted(primaryKey: true) var name = ""
        @Persisted var dogs: List<Dog>
    }

    @Test("the 30-second example runs and does what the README says")
    func thirtySeconds() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dogs-\(UUID()).realm")
        defer { try? FileManager.default.removeItem(at: url) }

        let realm = try await Realm(configuration: .init(fileURL: url))  // an actor; creates the file
        try await realm.write { realm in  // runs inside the actor: live objects are usable here
            let alice = realm.create(Person.self, value: ["name": "Alice"])
            let rex = realm.create(Dog.self, value: ["name": "Rex", "age": 1])
            rex.owner = alice
            alice.dogs.append(rex)
        }  // durable (fsync'd) when `write` returns
        let fido = Dog(value: ["name": "Fido", "age": 4])
        try await realm.add(fido)  // `sending`: using `fido` after this does not compile

        let frozen = await realm.freeze()  // an immutable, Sendable snapshot: O(1)
        let seen = await Task.detached {  // frozen values cross tasks freely
            frozen.objects(Dog.self).map { "\($0.name) (\($0.owner?.name ?? "no owner"))" }
        }.value
        #expect(seen == ["Rex (Alice)", "Fido (no owner)"])

        let fidoRef = await realm.read { ThreadSafeReference(to: $0.objects(Dog.self).last!) }  // Sendable
        let other = try await Realm(configuration: realm.configuration)  // a second actor on the same file
        try await other.write { realm in
            let alice = realm.object(ofType: Person.self, forPrimaryKey: "Alice")!
            let fido = realm.resolve(fidoRef)!  // the same object, live in this actor
            fido.owner = alice
            alice.dogs.append(fido)
        }
        let dogs = await realm.read { $0.object(ofType: Person.self, forPrimaryKey: "Alice")!.dogs.map(\.name) }
        #expect(dogs == ["Rex", "Fido"])  // each read or write starts from the newest version

        // What the README's comments claim besides: the snapshot kept its version, and Fido's owner was set.
        #expect(frozen.object(ofType: Person.self, forPrimaryKey: "Alice")?.dogs.map { $0.name } == ["Rex"])
        let owner = await realm.read { $0.objects(Dog.self).last!.owner?.name }
        #expect(owner == "Alice")
        #expect(FileManager.default.fileExists(atPath: url.path))
    }
}
