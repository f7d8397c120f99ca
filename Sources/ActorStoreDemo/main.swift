// The first thing to run: `swift run actorstore-demo`.
//
// A realm is a Swift actor. Live objects are used inside it — in `write` and `read` closures — and the
// compiler keeps them there; what crosses to other tasks and actors is a frozen snapshot or a
// ThreadSafeReference. The demo works on a file in a fresh temporary directory and deletes it at the end.
import ActorStore
import Foundation

// 1. Models: classes whose `@Persisted` properties are stored.
final class Dog: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
    @Persisted var owner: Person?
}

final class Person: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var dogs: List<Dog>
}

func runDemo(in directory: URL) async throws {
    var configuration = Realm.Configuration(fileURL: directory.appendingPathComponent("dogs.realm"))
    configuration.objectTypes = [Dog.self, Person.self]
    let realm = try await Realm(configuration: configuration)
    print("opened \(configuration.fileURL!.lastPathComponent) in \(directory.path)")

    // 2. Write: the closure runs inside the realm actor, where live objects can be used freely. When `write`
    //    returns, the transaction is on disk.
    try await realm.write { realm in
        let alice = realm.create(Person.self, value: ["name": "Alice"])
        let rex = realm.create(Dog.self, value: ["name": "Rex", "age": 1])
        rex.owner = alice
        alice.dogs.append(rex)
    }
    print("write { }            Alice adopted Rex")

    // 3. Add an object made in plain Swift. `add` takes it (`sending`): using `fido` afterwards would not
    //    compile, because it now belongs to the realm.
    let fido = Dog()
    fido.name = "Fido"
    fido.age = 4
    try await realm.add(fido)
    let dogCount = await realm.read { realm in realm.objects(Dog.self).count }
    print("add(_:)              added Fido; the realm has \(dogCount) dogs")

    // 4. Freeze: an immutable, Sendable snapshot (O(1)) that any task can read without `await`.
    let frozen = await realm.freeze()
    let seen = await Task.detached {
        frozen.objects(Dog.self).map { dog in "\(dog.name) (\(dog.owner?.name ?? "no owner"))" }
    }.value
    print("freeze()             a detached task read the frozen dogs: \(seen.joined(separator: ", "))")

    // 5. Move Fido to a second Realm actor on the same file with a ThreadSafeReference, and change him there.
    let reference = await realm.read { realm in
        ThreadSafeReference(to: realm.object(ofType: Dog.self, forPrimaryKey: "Fido")!)
    }
    let other = try await Realm(configuration: configuration)
    try await other.write { realm in
        guard let fido = realm.resolve(reference),
            let alice = realm.object(ofType: Person.self, forPrimaryKey: "Alice")
        else { return }
        fido.owner = alice
        alice.dogs.append(fido)
    }
    print("ThreadSafeReference  a second Realm resolved Fido, and Alice adopted him there")

    // 6. The first realm sees the change on its next read; the frozen snapshot keeps its version.
    let aliceDogs = await realm.read { realm in
        realm.object(ofType: Person.self, forPrimaryKey: "Alice")!.dogs.map(\.name)
    }
    let frozenDogs = frozen.object(ofType: Person.self, forPrimaryKey: "Alice")!.dogs.map { $0.name }
    print("read { }             the first realm sees Alice's dogs: \(aliceDogs); the snapshot still: \(frozenDogs)")

    // 7. Errors are thrown as RealmError, and a failed transaction commits nothing.
    do {
        try await realm.write { realm in
            realm.create(Dog.self, value: ["name": "Bolt"])
            realm.create(Dog.self, value: ["name": "Rex"])  // Rex exists: a duplicate primary key
        }
        print("RealmError           unexpectedly, the duplicate Rex was accepted")
    } catch let error as RealmError where error.code == .primaryKeyExists {
        let count = await realm.read { realm in realm.objects(Dog.self).count }
        print("RealmError           \(error.code): nothing committed, still \(count) dogs")
    }
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("actorstore-demo-\(UUID().uuidString)")
var failure: (any Error)?
do {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try await runDemo(in: directory)
} catch {
    failure = error
}
// `actorstore-demo PATH` keeps a copy of the demo's realm at PATH, to look into with the inspector:
// `swift run --package-path Tools actorstore info PATH`.
if failure == nil, CommandLine.arguments.count > 1 {
    let kept = URL(fileURLWithPath: CommandLine.arguments[1])
    do {
        try? FileManager.default.removeItem(at: kept)
        try FileManager.default.copyItem(at: directory.appendingPathComponent("dogs.realm"), to: kept)
        print("kept the realm at \(kept.path)")
    } catch {
        failure = error
    }
}
try? FileManager.default.removeItem(at: directory)
if let failure {
    print("the demo failed: \(failure)")
    exit(1)
}
