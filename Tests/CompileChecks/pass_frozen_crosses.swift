// Compile check: frozen values and thread-safe references are `Sendable`: they cross into detached tasks
// and other realm actors. Must compile.
import ActorStore

final class Person: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var dogs: List<Dog>
}

final class Dog: Object {
    @Persisted var name = ""
    @Persisted var owner: Person?
}

func frozenValuesCross(realm: Realm, other: Realm) async throws -> [String] {
    let frozen: FrozenRealm = await realm.freeze()
    let names = await Task.detached { frozen.objects(Dog.self).map { $0.name } }.value

    let rex: Frozen<Dog>? = await realm.read { realm in realm.objects(Dog.self).first?.freeze() }
    let owner = await Task.detached { rex?.owner?.name }.value

    let results: FrozenResults<Person> = await realm.read { realm in realm.objects(Person.self).freeze() }
    let dogCounts = await Task.detached { results.map { $0.dogs.count } }.value

    let reference = await realm.read { realm in ThreadSafeReference(to: realm.objects(Dog.self).first!) }
    try await other.write { realm in realm.resolve(reference)?.name = "Rex II" }

    return names + [owner ?? "no owner"] + dogCounts.map { String($0) }
}
