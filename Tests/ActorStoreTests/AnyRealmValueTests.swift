import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

final class MXDog: Object {
    @Persisted var name = ""
}

final class MXCat: Object {
    @Persisted var name = ""
}

final class MXBox: Object {
    @Persisted var label = ""
    @Persisted var value: AnyRealmValue
    @Persisted var items: List<AnyRealmValue>
    @Persisted var bag: MutableSet<AnyRealmValue>
    @Persisted var fields: Map<String, AnyRealmValue>
}

@Suite(.timeLimit(.minutes(30))) struct AnyRealmValueTests {
    private func realm(_ url: URL? = nil) async throws -> Realm {
        var configuration = testConfiguration([MXBox.self, MXDog.self, MXCat.self])
        if let url { configuration.fileURL = url }
        return try await Realm(configuration: configuration)
    }

    /// One value of every case but `.object`, extremes included.
    static var scalars: [AnyRealmValue] {
        [
            .none, .int(0), .int(Int.min), .int(Int.max), .bool(true), .bool(false), .float(1.5), .float(-0.0),
            .double(2.25), .double(.infinity), .string(""), .string("héllo 日本 🎉"), .data(Data()),
            .data(Data([0, 255, 7])),
            .date(Date(timeIntervalSince1970: 1_700_000_000.123456)), .objectId(ObjectId("65a1b2c3d4e5f60718293a4b")!),
            .decimal128(Decimal128("123.456")!), .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
        ]
    }

    @Test func everyCaseRoundTripsThroughAPropertyAndEveryCollectionAcrossReopen() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await realm(url)
            try await realm.write { realm in
                let rex = realm.create(MXDog.self, value: ["name": "Rex"])
                for (i, value) in (Self.scalars + [.object(rex)]).enumerated() {
                    let box = realm.create(MXBox.self, value: ["label": "b\(i)"])
                    box.value = value
                    box.items.append(value)
                    box.items.append(.int(i))
                    box.bag.insert(value)
                    box.fields["k"] = value
                }
            }
        }
        let realm = try await realm(url)
        try await realm.read { realm throws in
            let boxes = try realm.objects(MXBox.self).sorted(byKeyPath: "label")
            #expect(boxes.count == Self.scalars.count + 1)
            for box in boxes {
                let i = Int(box.label.dropFirst())!
                let expected: AnyRealmValue
                if i == Self.scalars.count {
                    guard case .object(let linked) = box.value, let dog = linked as? MXDog else {
                        Issue.record("expected a link to a dog, read \(box.value)")
                        continue
                    }
                    #expect(dog.name == "Rex")
                    expected = box.value
                } else {
                    expected = Self.scalars[i]
                    #expect(box.value == expected, "box \(i)")
                }
                #expect(Array(box.items) == [expected, .int(i)], "box \(i)")
                #expect(Array(box.bag) == [expected], "box \(i)")
                #expect(box.fields["k"] == expected, "box \(i)")
            }
        }
    }

    @Test func frozenObjectsReadEveryCaseAndResolveLinksAtTheirVersion() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let rex = realm.create(MXDog.self, value: ["name": "Rex"])
            let box = realm.create(MXBox.self, value: ["label": "a", "value": AnyRealmValue.object(rex)])
            box.items.append(objectsIn: [.int(3), .string("x"), .object(rex), .none])
            box.bag.insert(.double(1.5))
            box.fields["when"] = .date(Date(timeIntervalSince1970: 5))
            box.fields["nothing"] = AnyRealmValue.none  // a null value, kept (nil would remove the key)
        }
        let box = await realm.read { $0.objects(MXBox.self)[0].freeze() }
        let read = await Task.detached { () -> (String?, [FrozenAnyRealmValue], [FrozenAnyRealmValue]) in
            guard case .object(let linked) = box.value else { return (nil, [], []) }
            return (linked.as(MXDog.self)?.name, box.items, box.bag)
        }.value
        #expect(read.0 == "Rex")
        #expect(read.1.count == 4)
        #expect(read.1[0] == .int(3) && read.1[1] == .string("x") && read.1[3] == .none)
        if case .object(let linked) = read.1[2] {
            #expect(linked.className == "MXDog")
            #expect(linked.as(MXCat.self) == nil)
        } else {
            Issue.record("element 2 should be a link, read \(read.1[2])")
        }
        #expect(read.2 == [.double(1.5)])
        #expect(box.fields == ["when": .date(Date(timeIntervalSince1970: 5)), "nothing": FrozenAnyRealmValue.none])
    }

    @Test func aLinkToADeletedObjectReadsAsNone() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let rex = realm.create(MXDog.self, value: ["name": "Rex"])
            let box = realm.create(MXBox.self, value: ["label": "a"])
            box.value = .object(rex)
            box.items.append(.object(rex))
        }
        try await realm.write { realm in realm.delete(realm.objects(MXDog.self)) }
        await realm.read { realm in
            let box = realm.objects(MXBox.self)[0]
            #expect(box.value == .none)
            #expect(Array(box.items) == [.none])
        }
    }

    @Test func copyingAFrozenObjectToAnotherFileCopiesTheObjectsItsMixedValuesLinkTo() async throws {
        let source = try await realm()
        try await source.write { realm in
            // Keys that differ from the destination's: two dogs deleted first.
            for name in ["x", "y"] { realm.create(MXDog.self, value: ["name": name]) }
            realm.delete(realm.objects(MXDog.self))
            let rex = realm.create(MXDog.self, value: ["name": "Rex"])
            let tom = realm.create(MXCat.self, value: ["name": "Tom"])
            let box = realm.create(MXBox.self, value: ["label": "a", "value": AnyRealmValue.object(rex)])
            box.items.append(objectsIn: [.object(tom), .int(1)])
            box.fields["cat"] = .object(tom)
        }
        let frozen = await source.read { $0.objects(MXBox.self)[0].freeze() }
        let destination = try await realm()
        try await destination.write { realm in
            realm.create(MXDog.self, value: ["name": "Other"])  // key 0 here: the source's Rex is key 2
            realm.create(MXBox.self, value: frozen)
        }
        await destination.read { realm in
            let box = realm.objects(MXBox.self)[0]
            #expect(box.value.object(MXDog.self)?.name == "Rex")
            #expect(box.items.first?.object(MXCat.self)?.name == "Tom")
            #expect(box.fields["cat"]?.object(MXCat.self)?.name == "Tom")
            #expect(realm.objects(MXCat.self).count == 1)  // copied once
            #expect(realm.objects(MXDog.self).count == 2)
        }
    }

    @Test func anUnmanagedObjectAssignedToAMixedPropertyIsAdded() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let box = realm.create(MXBox.self, value: ["label": "a"])
            let cat = MXCat()
            cat.name = "Tom"
            box.value = .object(cat)
        }
        await realm.read { realm in
            #expect(realm.objects(MXCat.self).count == 1)
            #expect(realm.objects(MXBox.self)[0].value.object(MXCat.self)?.name == "Tom")
        }
    }

    @Test func aSetKeepsValuesOfDifferentTypesApartAndDropsRepeats() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let box = realm.create(MXBox.self, value: ["label": "a"])
            box.bag.insert(objectsIn: [.int(1), .double(1), .int(1), .string("1"), .none, .none])
        }
        await realm.read { realm in
            let bag = Array(realm.objects(MXBox.self)[0].bag)
            #expect(bag.count == 4)
            #expect(Set(bag) == [.int(1), .double(1), .string("1"), .none])
        }
    }

    // MARK: Queries

    /// Boxes a…h holding values of several types, and a box linking to Rex.
    private func populate(_ realm: Realm) async throws {
        try await realm.write { realm in
            let rex = realm.create(MXDog.self, value: ["name": "Rex"])
            let tom = realm.create(MXCat.self, value: ["name": "Tom"])
            let values: [(String, AnyRealmValue)] = [
                ("a", .int(1)), ("b", .int(5)), ("c", .double(5)), ("d", .float(7.5)), ("e", .string("5")),
                ("f", .bool(true)), ("g", .none), ("h", .object(rex)), ("i", .object(tom)),
                ("j", .date(Date(timeIntervalSince1970: 10))), ("k", .decimal128(Decimal128(6))),
            ]
            for (label, value) in values {
                let box = realm.create(MXBox.self, value: ["label": label, "value": value])
                box.items.append(value)
                box.fields["v"] = value
            }
        }
    }

    private func labels(_ results: Results<MXBox>) -> [String] { results.map(\.label).sorted() }

    @Test func stringPredicatesCompareByTypeAndValue() async throws {
        let realm = try await realm()
        try await populate(realm)
        try await realm.read { realm throws in
            let boxes = realm.objects(MXBox.self)
            #expect(labels(try boxes.filter("value == 5")) == ["b", "c"])  // numbers across types, not "5"
            #expect(labels(try boxes.filter("value == %@", "5")) == ["e"])
            #expect(labels(try boxes.filter("value == %@", AnyRealmValue.double(5))) == ["b", "c"])
            #expect(labels(try boxes.filter("value > 4")) == ["b", "c", "d", "k"])
            #expect(labels(try boxes.filter("value < 2")) == ["a"])  // not the bool, nil, string or links
            #expect(labels(try boxes.filter("value == nil")) == ["g"])
            #expect(labels(try boxes.filter("value != nil")).count == 10)
            #expect(labels(try boxes.filter("value == true")) == ["f"])
            #expect(labels(try boxes.filter("value IN {1, '5', true}")) == ["a", "e", "f"])
            #expect(labels(try boxes.filter("value > %@", Date(timeIntervalSince1970: 0))) == ["j"])
            #expect(labels(try boxes.filter("value BEGINSWITH '5'")) == ["e"])
            #expect(labels(try boxes.filter("value ==[c] %@", AnyRealmValue.string("5"))) == ["e"])
            #expect(labels(try boxes.filter("value CONTAINS[c] 'x'")).isEmpty)
            let rex = realm.objects(MXDog.self)[0]
            let tom = realm.objects(MXCat.self)[0]
            #expect(labels(try boxes.filter("value == %@", rex)) == ["h"])
            #expect(labels(try boxes.filter("value == %@", AnyRealmValue.object(tom))) == ["i"])
            #expect(labels(try boxes.filter("value IN %@", [rex, tom])) == ["h", "i"])
            #expect(labels(try boxes.filter("ANY items == 5")) == ["b", "c"])
            #expect(labels(try boxes.filter("ANY items == %@", rex)) == ["h"])
            #expect(labels(try boxes.filter("%@ IN items", tom)) == ["i"])
            #expect(labels(try boxes.filter("fields['v'] >= 7")) == ["d"])
        }
    }

    @Test func whereBuilderQueriesAgreeWithPredicateStrings() async throws {
        let realm = try await realm()
        try await populate(realm)
        try await realm.read { realm throws in
            let boxes = realm.objects(MXBox.self)
            let rex = realm.objects(MXDog.self)[0]
            #expect(labels(boxes.where { $0.value == .int(5) }) == labels(try boxes.filter("value == 5")))
            #expect(labels(boxes.where { $0.value != .none }) == labels(try boxes.filter("value != nil")))
            #expect(labels(boxes.where { $0.value > .double(4) }) == ["b", "c", "d", "k"])
            #expect(labels(boxes.where { $0.value <= .int(1) }) == ["a"])
            #expect(labels(boxes.where { $0.value.in([.string("5"), .bool(true)]) }) == ["e", "f"])
            #expect(labels(boxes.where { $0.value == .object(rex) }) == ["h"])
            #expect(labels(boxes.where { $0.items == .object(rex) }) == ["h"])
            #expect(labels(boxes.where { $0.items.contains(.string("5")) }) == ["e"])
            #expect(labels(boxes.where { $0.fields["v"] < .int(2) }) == ["a"])
            #expect(labels(boxes.where { $0.fields.contains(.bool(true)) }) == ["f"])
        }
    }

    @Test func sortingByAMixedPropertyGroupsByTypeThenValue() async throws {
        let realm = try await realm()
        try await populate(realm)
        try await realm.read { realm throws in
            let sorted = try realm.objects(MXBox.self).sorted(byKeyPath: "value").map(\.label)
            // nil first, then bool, then numbers by value, then the string, the date, and the links.
            #expect(Array(sorted.prefix(7)) == ["g", "f", "a", "b", "c", "k", "d"])
        }
    }

    // MARK: Notifications

    @Test func changingAMixedPropertyIsReportedAsAChangeOfThatProperty() async throws {
        let realm = try await realm()
        try await populate(realm)
        let changes = await realm.read {
            $0.objects(MXBox.self).where { $0.label == "a" }.first!.changes(keyPaths: [\.value])
        }
        let reader = ChangeReader(changes)
        try await realm.write { $0.objects(MXBox.self).where { $0.label == "a" }.first!.label = "a" }  // not watched
        try await realm.write { $0.objects(MXBox.self).where { $0.label == "a" }.first!.value = .string("now") }
        guard case .change(let box, let properties)? = try await reader.next() else {
            Issue.record("expected a change")
            return
        }
        #expect(properties.map(\.name) == ["value"])
        #expect(box.value == .string("now"))
        #expect(properties.first?.newValue as? String == "now")
    }

    // MARK: Schema and dynamic API

    @Test func theSchemaDescribesAMixedPropertyAsAny() async throws {
        let realm = try await realm()
        let schema = await realm.schema
        let box = try #require(schema["MXBox"])
        #expect(box.properties.first { $0.name == "value" }?.type == .any)
        #expect(box.properties.first { $0.name == "items" }?.isArray == true)
        #expect(box.properties.first { $0.name == "items" }?.type == .any)
    }

    @Test func theDynamicAPIReadsMixedValuesAsPlainValuesAndLinksAsDynamicObjects() async throws {
        let realm = try await realm()
        try await populate(realm)
        try await realm.read { realm throws in
            let dynamic = realm.dynamicObjects("MXBox")
            let b = try #require(try dynamic.filter("label == 'b'").first)
            #expect(b["value"] as? Int == 5)
            let h = try #require(try dynamic.filter("label == 'h'").first)
            let linked = try #require(h["value"] as? DynamicObject)
            #expect(linked.className == "MXDog")
            #expect(linked["name"] as? String == "Rex")
            #expect(try dynamic.filter("value == 5").count == 2)
        }
    }
}
