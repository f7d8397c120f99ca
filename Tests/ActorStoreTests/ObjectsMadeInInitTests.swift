import ActorStore
import Testing

final class InitMadeTag: Object {
    @Persisted var label = "initial"
    @Persisted var n = 0
}

/// A model whose init body makes another (unmanaged) object and keeps it in a plain property.
final class TagMakerInInit: Object {
    @Persisted var name = ""
    var helper: InitMadeTag?
    required init() {
        super.init()
        helper = InitMadeTag()
    }
}

/// A model whose first stored property's initialiser makes another object, before any of its own
/// `@Persisted` values.
final class TagMakerInInitialiser: Object {
    var helper = InitMadeTag()
    @Persisted var name = ""
}

/// Objects a model's initialisers make while ActorStore makes an object of that model as a managed one (reading
/// it from the realm): the construction stack keeps no values for the managed object, and must not lose theirs.
@Suite struct ObjectsMadeInInitTests {
    @Test func anObjectMadeInTheInitBodyOfAManagedObjectKeepsItsValuesAndCanBeAdded() async throws {
        let realm = try await Realm(configuration: testConfiguration([TagMakerInInit.self, InitMadeTag.self]))
        try await realm.add(TagMakerInInit())
        let (label, count) = try await realm.write { realm -> (String, Int) in
            let maker = try #require(realm.objects(TagMakerInInit.self).first)  // made as a managed object
            let tag = try #require(maker.helper)
            let initial = tag.label
            tag.label = "set"
            realm.add(tag)
            return (initial + "/" + tag.label, realm.objects(InitMadeTag.self).count)
        }
        #expect(label == "initial/set")
        #expect(count == 1)
        let stored = await realm.read { $0.objects(InitMadeTag.self).map(\.label) }
        #expect(stored == ["set"])
    }

    @Test func anObjectMadeByAPropertyInitialiserOfAManagedObjectIsRefusedWithAnError() async throws {
        let realm = try await Realm(configuration: testConfiguration([TagMakerInInitialiser.self, InitMadeTag.self]))
        try await realm.add(TagMakerInInitialiser())
        await #expect(throws: RealmError.self) {
            try await realm.write { realm in
                let maker = try #require(realm.objects(TagMakerInInitialiser.self).first)
                realm.add(maker.helper)
            }
        }
        // The realm stays usable, and the object read back is whole.
        let names = await realm.read { $0.objects(TagMakerInInitialiser.self).map(\.name) }
        #expect(names == [""])
        #expect(await realm.read { $0.objects(InitMadeTag.self).count } == 0)
    }
}
