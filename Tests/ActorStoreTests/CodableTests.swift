import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

final class CDVet: Object {
    @Persisted(primaryKey: true) var id = ""
    @Persisted var name = ""
}

final class CDCollar: EmbeddedObject {
    @Persisted var color = ""
}

final class CDDog: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var born = Date(timeIntervalSince1970: 0)
    @Persisted var chip = Data()
    @Persisted var oid = ObjectId("65a1b2c3d4e5f60718293a4b")!
    @Persisted var price = Decimal128(0)
    @Persisted var weight: Float = 0
    @Persisted var nickname: String?
    @Persisted var vet: CDVet?
    @Persisted var friend: CDDog?
    @Persisted var collar: CDCollar?
    @Persisted var tags: List<String>
    @Persisted var scores: Map<String, Int>
    @Persisted var extra: AnyRealmValue
}

@Suite struct CodableTests {
    private func realm() async throws -> Realm {
        try await Realm(configuration: testConfiguration([CDDog.self, CDVet.self, CDCollar.self]))
    }

    private func populate(_ realm: Realm) async throws {
        try await realm.write { realm in
            let vet = realm.create(CDVet.self, value: ["id": "v1", "name": "Dr. Who"])
            let rex = realm.create(CDDog.self, value: ["id": 1, "name": "Rex"])
            let fido = realm.create(CDDog.self, value: ["id": 2, "name": "Fido"])
            rex.vet = vet
            rex.friend = fido
            fido.friend = rex  // a cycle
            rex.collar = CDCollar(value: ["color": "red"])
            rex.tags.append(objectsIn: ["a", "b"])
            rex.scores["x"] = 3
            rex.born = Date(timeIntervalSince1970: 86_400)
            rex.chip = Data([1, 2])
            rex.price = Decimal128("9.99")!
            rex.weight = 1.5
            rex.extra = .string("hi")
        }
    }

    private func json(_ value: some Encodable, links: LinkEncoding? = nil) throws -> [String: Any] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        if let links { encoder.userInfo[.actorStoreLinks] = links }
        let data = try encoder.encode(value)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func aFrozenObjectEncodesItsPropertiesAndLinksAsPrimaryKeysByDefault() async throws {
        let realm = try await realm()
        try await populate(realm)
        let rex = try #require(await realm.freeze().object(ofType: CDDog.self, forPrimaryKey: 1))
        let object = try json(rex)
        #expect(object["name"] as? String == "Rex")
        #expect(object["born"] as? String == "1970-01-02T00:00:00Z")  // the encoder's date strategy
        #expect(object["chip"] as? String == "AQI=")
        #expect(object["oid"] as? String == "65a1b2c3d4e5f60718293a4b")
        #expect(object["price"] as? String == "9.99")
        #expect(object["nickname"] is NSNull)
        #expect(object["vet"] as? String == "v1")
        #expect(object["friend"] as? Int == 2)
        #expect((object["collar"] as? [String: Any])?["color"] as? String == "red")  // embedded: nested
        #expect(object["tags"] as? [String] == ["a", "b"])
        #expect(object["scores"] as? [String: Int] == ["x": 3])
        #expect(object["extra"] as? String == "hi")
    }

    @Test func nestedLinksStopAtTheDepthEvenThroughACycle() async throws {
        let realm = try await realm()
        try await populate(realm)
        let rex = try #require(await realm.freeze().object(ofType: CDDog.self, forPrimaryKey: 1))
        let object = try json(rex, links: .nested(depth: 2))
        let fido = try #require(object["friend"] as? [String: Any])
        #expect(fido["name"] as? String == "Fido")
        let rexAgain = try #require(fido["friend"] as? [String: Any])
        #expect(rexAgain["name"] as? String == "Rex")
        #expect(rexAgain["friend"] as? Int == 2)  // depth used up: a primary key
        #expect((object["vet"] as? [String: Any])?["name"] as? String == "Dr. Who")
    }

    @Test func frozenResultsEncodeAsAnArray() async throws {
        let realm = try await realm()
        try await populate(realm)
        let results = try await realm.freeze().objects(CDDog.self).sorted(byKeyPath: "id")
        let data = try JSONEncoder().encode(results)
        let array = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        #expect(array.map { $0["name"] as? String } == ["Rex", "Fido"])
    }

    @Test func decodedObjectsCreateObjectsWithNestedAndPrimaryKeyLinks() async throws {
        let realm = try await realm()
        try await realm.write { realm in realm.create(CDVet.self, value: ["id": "v9", "name": "Vet"]) }
        let document = """
            [{"id": 5, "name": "Max", "born": "2020-01-01T00:00:00Z", "chip": "AQI=", "price": "1.25",
              "weight": 2.5, "oid": "65a1b2c3d4e5f60718293a4c", "vet": "v9", "collar": {"color": "blue"},
              "friend": {"id": 6, "name": "Bella", "tags": ["x"]}, "tags": ["a"], "scores": {"k": 7},
              "extra": 42, "nickname": null}]
            """
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let dogs = try decoder.decode([DecodedObject<CDDog>].self, from: Data(document.utf8))
        try await realm.write { realm in
            for dog in dogs { try realm.create(CDDog.self, from: dog) }
        }
        try await realm.read { realm throws in
            let found = realm.object(ofType: CDDog.self, forPrimaryKey: 5)
            let max = try #require(found)
            #expect(max.name == "Max")
            #expect(max.born == Date(timeIntervalSince1970: 1_577_836_800))
            #expect(max.chip == Data([1, 2]))
            #expect(max.price == Decimal128("1.25")!)
            #expect(max.weight == 2.5)
            #expect(max.oid == ObjectId("65a1b2c3d4e5f60718293a4c")!)
            #expect(max.vet?.name == "Vet")
            #expect(max.collar?.color == "blue")
            #expect(max.friend?.name == "Bella")
            #expect(Array(max.friend?.tags ?? List()) == ["x"])
            #expect(Array(max.tags) == ["a"])
            #expect(max.scores["k"] == 7)
            #expect(max.extra == .int(42))
            #expect(max.nickname == nil)
        }
    }

    @Test func aLinkToAMissingPrimaryKeyFailsNamingIt() async throws {
        let realm = try await realm()
        let dogs = try JSONDecoder().decode(
            [DecodedObject<CDDog>].self, from: Data(#"[{"id": 1, "vet": "nobody"}]"#.utf8))
        let error = await #expect(throws: RealmError.self) {
            try await realm.write { realm in
                for dog in dogs { try realm.create(CDDog.self, from: dog) }
            }
        }
        #expect(error?.code == .invalidObject)
        #expect(error?.message.contains("nobody") == true)
        await realm.read { #expect($0.objects(CDDog.self).isEmpty) }
    }

    @Test func encodingThenDecodingGivesTheSameObjects() async throws {
        let realm = try await realm()
        try await populate(realm)
        let encoder = JSONEncoder()
        encoder.userInfo[.actorStoreLinks] = LinkEncoding.primaryKeys
        encoder.outputFormatting = .sortedKeys
        let frozen = await realm.freeze()
        let data = try encoder.encode(frozen.objects(CDVet.self))
        let dogsData = try encoder.encode(frozen.objects(CDDog.self).sorted(byKeyPath: "id", ascending: false))
        let copy = try await self.realm()
        let vets = try JSONDecoder().decode([DecodedObject<CDVet>].self, from: data)
        let dogs = try JSONDecoder().decode([DecodedObject<CDDog>].self, from: dogsData)
        try await copy.write { realm in
            for vet in vets { try realm.create(CDVet.self, from: vet) }
            // Fido links to Rex, which comes second: create both, then link (update by primary key).
            for dog in dogs {
                var unlinked = dog
                unlinked = DecodedObject(values: dog.values.filter { $0.key != "friend" })
                try realm.create(CDDog.self, from: unlinked)
            }
            for dog in dogs { try realm.create(CDDog.self, from: dog, update: .modified) }
        }
        let again = try encoder.encode(
            await copy.freeze().objects(CDDog.self).sorted(byKeyPath: "id", ascending: false))
        #expect(again == dogsData)
    }
}
