import ActorStore
import Foundation
import Testing

@Suite struct SmokeTests {
    @Test func createReadFreezeResolve() async throws {
        let config = testConfiguration([Dog.self, Person.self, Address.self])
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(Dog.self, value: ["name": "Rex", "age": 1]) }
        try await realm.write { realm in
            for i in 0..<3 { realm.create(Dog.self, value: ["name": "d\(i)", "age": i]) }
        }
        let count = try await realm.write { realm in realm.objects(Dog.self).count }
        #expect(count == 4)
        let fido = Dog()
        fido.name = "Fido"
        try await realm.add(fido)
        let names = await realm.read { $0.objects(Dog.self).map(\.name) }
        #expect(names == ["Rex", "d0", "d1", "d2", "Fido"])
        let frozen = await realm.freeze()
        let result = await Task.detached { frozen.objects(Dog.self).map { "\($0.name):\($0.age)" } }.value
        #expect(result == ["Rex:1", "d0:0", "d1:1", "d2:2", "Fido:0"])
        try await realm.write { realm in
            let jim = realm.create(Person.self, value: ["name": "Jim"])
            let rex = realm.objects(Dog.self).first!
            rex.owner = jim
            jim.dogs.append(rex)
            jim.address = Address(value: ["street": "Main", "city": "Oslo"])
        }
        let ref = await realm.read { ThreadSafeReference(to: $0.objects(Dog.self).first!) }
        let other = try await Realm(configuration: config)
        let owner = try await other.write { realm -> String in
            let dog = realm.resolve(ref)!
            dog.age = 10
            return dog.owner?.name ?? "none"
        }
        #expect(owner == "Jim")
        let age = await realm.read { $0.objects(Dog.self).first!.age }
        #expect(age == 10)
        let owners = await realm.read { realm in realm.objects(Dog.self).first!.owners.map(\.name) }
        #expect(owners == ["Jim"])
        let city = await realm.read { $0.objects(Person.self).first!.address?.city }
        #expect(city == "Oslo")
    }
}

final class Node: Object {
    @Persisted var name = ""
    @Persisted var next: Node?
    @Persisted var children: List<Node>
}

@Suite struct GraphTests {
    @Test func addingACycleLinksEveryObject() async throws {
        let realm = try await Realm(configuration: testConfiguration([Node.self]))
        let summary = try await realm.write { realm -> [String] in
            let a = Node(value: ["name": "a"])
            let b = Node(value: ["name": "b"])
            let c = Node(value: ["name": "c"])
            a.next = b
            b.next = a
            c.next = c
            a.children.append(contentsOf: [b, c, a])
            realm.add(a)
            return realm.objects(Node.self).map { node in
                "\(node.name)->\(node.next?.name ?? "nil") [\(node.children.map(\.name).joined())]"
            }
        }
        #expect(summary.sorted() == ["a->b [bca]", "b->a []", "c->c []"])
        let after = await realm.read { realm in realm.objects(Node.self).count }
        #expect(after == 3)
    }
}
