import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Collections: List, MutableSet and Map operations, and code generic over every kind of collection.

/// Generic code over any collection of dogs (the guide's `operateOn<C: RealmCollection>(collection:)`).
private func auditDescribe<C: RandomAccessCollection>(_ collection: C) -> String where C.Element == AuditDog {
    "\(collection.count): " + collection.map(\.name).joined(separator: ",")
}

@Suite(.timeLimit(.minutes(30))) struct CollectionTests {
    @Test(.tags(.seed)) func invalidMapKeysAreRefused() async {
        // Map keys may not be empty, contain "." or start with "$" (as in Realm). Stopping or throwing from
        // write is fine; storing them is not.
        await #expect(processExitsWith: .failure) {
            let realm = try await Realm(
                configuration: testConfiguration([SeedDog.self, SeedPerson.self, SeedAddress.self]))
            try await realm.write { realm in
                realm.create(SeedPerson.self, value: ["name": "Jim"]).scores["a.b"] = 1
            }
        }
        await #expect(processExitsWith: .failure) {
            let realm = try await Realm(
                configuration: testConfiguration([SeedDog.self, SeedPerson.self, SeedAddress.self]))
            try await realm.write { realm in
                realm.create(SeedPerson.self, value: ["name": "Jim"]).scores["$x"] = 1
            }
        }
        await #expect(processExitsWith: .failure) {
            let realm = try await Realm(
                configuration: testConfiguration([SeedDog.self, SeedPerson.self, SeedAddress.self]))
            try await realm.write { realm in
                realm.create(SeedPerson.self, value: ["name": "Jim"]).scores[""] = 1
            }
        }
    }

    @Test(.tags(.seed)) func listOperations() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let log = try await realm.write { realm -> [String] in
            let person = realm.create(SeedPerson.self, value: ["name": "Jim"])
            for name in ["a", "b", "c", "d"] { person.dogs.append(SeedDog(value: ["name": name])) }
            var log: [String] = []
            let names = { person.dogs.map(\.name).joined() }
            log.append(names())
            person.dogs.insert(realm.create(SeedDog.self, value: ["name": "e"]), at: 1)
            log.append(names())
            person.dogs.move(from: 0, to: 4)
            log.append(names())
            person.dogs.swapAt(0, 1)
            log.append(names())
            person.dogs.remove(at: 2)
            log.append(names())
            person.dogs[0] = person.dogs[3]
            log.append(names())
            person.dogs.removeLast()
            person.dogs.removeFirst()
            log.append(names())
            log.append("\(person.dogs.index(of: person.dogs[0]) ?? -1)")
            person.dogs.removeAll()
            log.append("\(person.dogs.count) \(realm.objects(SeedDog.self).count)")
            person.nicknames.append(contentsOf: ["J", "Jimmy", "J"])
            person.nicknames[1] = "Jim"
            log.append(person.nicknames.joined(separator: ","))
            log.append("\(person.nicknames.index(of: "Jim") ?? -1)")
            return log
        }
        #expect(log == ["abcd", "aebcd", "ebcda", "becda", "beda", "aeda", "ed", "0", "0 5", "J,Jim,J", "1"])
        let stored = await realm.read { realm in realm.objects(SeedPerson.self).first!.nicknames.freeze() }
        #expect(stored == ["J", "Jim", "J"])
    }

    @Test(.tags(.seed)) func mutableSetOperations() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let log = try await realm.write { realm -> [String] in
            let person = realm.create(SeedPerson.self, value: ["name": "Jim", "tags": ["a", "b", "a"]])
            var log: [String] = ["\(person.tags.count)"]
            person.tags.insert("b")
            person.tags.insert("c")
            log.append("\(person.tags.count) \(person.tags.contains("c")) \(person.tags.contains("z"))")
            person.tags.remove("a")
            log.append(person.tags.sorted().joined())
            person.tags.formUnion(["x", "b"])
            log.append(person.tags.sorted().joined())
            person.tags.formIntersection(["b", "x", "q"])
            log.append(person.tags.sorted().joined())
            person.tags.subtract(["x"])
            log.append(person.tags.sorted().joined())
            log.append("\(person.tags.isSubset(of: ["b", "c"])) \(person.tags.intersects(["c"]))")

            // Objects are distinct by identity.
            let kennel = realm.create(SeedKennel.self, value: ["id": 1])
            let rex = realm.create(SeedDog.self, value: ["name": "Rex"])
            let twin = realm.create(SeedDog.self, value: ["name": "Rex"])
            kennel.dogSet.insert(rex)
            kennel.dogSet.insert(rex)
            kennel.dogSet.insert(realm.objects(SeedDog.self).first!)
            kennel.dogSet.insert(twin)
            log.append("\(kennel.dogSet.count)")
            kennel.numbers.insert(objectsIn: [3, 1, 3, 2])
            log.append(kennel.numbers.sorted().map(String.init).joined())
            return log
        }
        #expect(log == ["2", "3 true false", "bc", "bcx", "bx", "b", "true false", "2", "123"])
        let frozen = await realm.freeze()
        let person = try #require(frozen.objects(SeedPerson.self).first)
        #expect(person.tags == ["b"])
        let kennel = try #require(frozen.object(ofType: SeedKennel.self, forPrimaryKey: 1))
        #expect(kennel.numbers == [1, 2, 3])
        #expect(kennel.dogSet.count == 2)
    }

    @Test(.tags(.seed)) func mapOperations() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let log = try await realm.write { realm -> [String] in
            let person = realm.create(SeedPerson.self, value: ["name": "Jim", "scores": ["chess": 1200]])
            var log: [String] = ["\(person.scores["chess"] ?? -1)"]
            person.scores["go"] = 3
            person.scores["chess"] = 1300
            person.scores.updateValue(7, forKey: "arm wrestling")
            log.append(person.scores.keys.joined(separator: ","))
            log.append(person.scores.values.map(String.init).joined(separator: ","))
            person.scores["go"] = nil
            person.scores.removeObject(for: "arm wrestling")
            log.append("\(person.scores.count) \(person.scores["go"] == nil)")
            log.append(person.scores.map { "\($0.key)=\($0.value)" }.joined(separator: ","))

            let kennel = realm.create(SeedKennel.self, value: ["id": 1, "prices": ["a": 1.5]])
            let rex = realm.create(SeedDog.self, value: ["name": "Rex"])
            kennel.dogsByName["rex"] = rex
            kennel.dogsByName["ghost"] = .some(nil)
            kennel.dogsByName["new"] = SeedDog(value: ["name": "New"])
            log.append(kennel.dogsByName.keys.joined(separator: ","))
            log.append("\(kennel.dogsByName["rex"]??.name ?? "nil") \(kennel.dogsByName["new"]??.isManaged == true)")
            log.append("\(kennel.prices["a"] ?? 0)")
            person.scores.removeAll()
            log.append("\(person.scores.isEmpty)")
            return log
        }
        #expect(
            log == [
                "1200", "arm wrestling,chess,go", "7,1300,3", "1 true", "chess=1300", "ghost,new,rex", "Rex true",
                "1.5", "true",
            ])
        let frozen = await realm.freeze()
        let kennel = try #require(frozen.object(ofType: SeedKennel.self, forPrimaryKey: 1))
        #expect(kennel.prices == ["a": 1.5])
        let byName = kennel.dogsByName
        #expect(byName.count == 3)
        #expect(byName["rex"]??.name == "Rex")
        #expect(byName["ghost"] == .some(nil))
    }

    @Test(.tags(.seed)) func listOfOptionalValues() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let values = try await realm.write { realm -> [String?] in
            let kennel = realm.create(SeedKennel.self, value: ["id": 1, "optionalNames": ["a", NSNull(), "c"]])
            kennel.optionalNames.append(nil)
            return Array(kennel.optionalNames)
        }
        #expect(values == ["a", nil, "c", nil])
    }

    @Test(.tags(.audit)) func aListHoldsTheSameObjectWithAPrimaryKeyAtSeveralIndices() async throws {
        // "A List may contain multiple references to the same Realm object, including objects with primary
        // keys ... insert the same object into it three times; the List will then return that object if the
        // element at any of the indices 0, 1, and 2 is accessed."
        let realm = try await Realm(configuration: auditConfiguration())
        let same = try await realm.write { realm -> [Bool] in
            let library = realm.create(AuditLibrary.self, value: ["id": 1])
            let book = realm.create(AuditBook.self, value: ["id": 7, "title": "Cheese"])
            library.books.insert(book, at: 0)
            library.books.insert(book, at: 0)
            library.books.insert(book, at: 0)
            return [
                library.books.count == 3, library.books.allSatisfy { $0.isSameObject(as: book) },
                realm.objects(AuditBook.self).count == 1,
            ]
        }
        #expect(same == [true, true, true])
        let frozenIDs = await realm.read { $0.objects(AuditLibrary.self).first!.books.map(\.id) }
        #expect(frozenIDs == [7, 7, 7])
    }

    @Test(.tags(.audit)) func genericCodeWorksOnEveryKindOfCollection() async throws {
        // The guide's `operateOn<C: RealmCollection>(collection:)`: ActorStore has no RealmCollection protocol;
        // Results, List and LinkingObjects are RandomAccessCollections, which generic code can take instead.
        let realm = try await Realm(configuration: auditConfiguration())
        let described = try await realm.write { realm -> [String] in
            let jim = realm.create(
                AuditPerson.self, value: ["name": "Jim", "dogs": [["name": "Rex"], ["name": "Fido"]]])
            let rex = jim.dogs[0]
            return [auditDescribe(realm.objects(AuditDog.self)), auditDescribe(jim.dogs), "\(rex.owners.count)"]
        }
        #expect(described == ["2: Rex,Fido", "2: Rex,Fido", "1"])
    }

    @Test(.tags(.regression)) func collectionReadsFollowWritesThroughAnyInstance() async throws {
        let realm = try await Realm(configuration: testConfiguration([RegOwner.self]))
        let seen = try await realm.write { realm -> [String] in
            let owner = realm.create(RegOwner.self, value: ["name": "o", "items": ["a", "b"]])
            let list = owner.items
            var seen = [list[0], "\(list.count)"]
            let other = realm.objects(RegOwner.self).first!  // another instance of the same object
            other.items[0] = "z"
            other.items.append("c")
            seen += [list[0], "\(list.count)", owner.items[2]]
            return seen
        }
        #expect(seen == ["a", "2", "z", "3", "c"])
        let b = try await Realm(configuration: realm.configuration)
        try await b.write { $0.objects(RegOwner.self).first!.items.removeAll() }
        #expect(await realm.read { $0.objects(RegOwner.self).first!.items.count } == 0)
    }
}
