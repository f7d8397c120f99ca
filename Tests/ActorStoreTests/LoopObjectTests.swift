import ActorStore
import ActorStoreTestSupport
import Foundation
import Testing

// A loop over results (`for object in results`, `results.update { }`) reuses the object it handed out last
// for the next row when nothing can tell: nothing else refers to it, strongly, weakly or unowned, and the
// class stores nothing but @Persisted properties. These tests pin both halves: the reuse happens, and every
// way a program could tell is excluded.

final class LOItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var score = 0
    @Persisted var tags: List<String>
}

/// A class with a stored property of its own: each row needs a fresh object.
final class LONote: Object {
    @Persisted(primaryKey: true) var id = 0
    var scratch = 0
}

/// Refers to an object without keeping it alive.
final class LOUnownedHolder {
    unowned let object: LOItem
    init(_ object: LOItem) { self.object = object }
}

@Suite struct LoopObjectTests {
    private func makeRealm(_ n: Int = 10) async throws -> Realm {
        let realm = try await Realm(configuration: testConfiguration([LOItem.self, LONote.self]))
        try await realm.write { realm in
            for i in 0..<n {
                realm.create(LOItem.self, value: ["id": i, "score": i, "tags": ["t\(i)"]])
                realm.create(LONote.self, value: ["id": i])
            }
        }
        return realm
    }

    @Test func aLoopReusesTheObjectItsBodyDoesNotKeep() async throws {
        let realm = try await makeRealm()
        let (identities, ids, tags) = await realm.read { realm in
            var identities: Set<ObjectIdentifier> = []
            var ids: [Int] = []
            var tags: [String] = []
            for item in realm.objects(LOItem.self) {
                identities.insert(ObjectIdentifier(item))
                ids.append(item.id)
                tags += item.tags.map { $0 }  // a collection read: its cache must follow the row
            }
            return (identities.count, ids, tags)
        }
        #expect(identities == 1)
        #expect(ids == Array(0..<10))
        #expect(tags == (0..<10).map { "t\($0)" })
    }

    @Test func objectsTheBodyKeepsStayTheirRows() async throws {
        let realm = try await makeRealm()
        let kept = try await realm.write { realm -> [Int] in
            var kept: [LOItem] = []
            for item in realm.objects(LOItem.self).where({ $0.id >= 3 }) {
                item.score += 100
                if item.id % 2 == 0 { kept.append(item) }
            }
            #expect(Set(kept.map { ObjectIdentifier($0) }).count == kept.count)
            return kept.map { $0.id * 1000 + $0.score }
        }
        #expect(kept == [4104, 6106, 8108])
        let scores = await realm.read { $0.objects(LOItem.self).map(\.score) }
        #expect(scores == [0, 1, 2, 103, 104, 105, 106, 107, 108, 109])
    }

    @Test func anObjectReferredToWeaklyIsNotReused() async throws {
        let realm = try await makeRealm()
        let (seenThroughWeak, distinct) = await realm.read { realm in
            weak var first: LOItem?
            var seenThroughWeak: [Int] = []
            var identities: [ObjectIdentifier] = []
            for item in realm.objects(LOItem.self) {
                if item.id == 0 { first = item }
                identities.append(ObjectIdentifier(item))
                // The weak reference sees the first object or nothing, never a later row.
                if let first { seenThroughWeak.append(first.id) }
            }
            return (seenThroughWeak, identities[0] != identities[1])
        }
        #expect(seenThroughWeak.allSatisfy { $0 == 0 })
        #expect(distinct)
    }

    @Test func anObjectReferredToUnownedIsNotReused() async throws {
        let realm = try await makeRealm()
        let distinct = await realm.read { realm in
            var holders: [LOUnownedHolder] = []
            var identities: [ObjectIdentifier] = []
            for item in realm.objects(LOItem.self) {
                if item.id == 0 { holders.append(LOUnownedHolder(item)) }
                identities.append(ObjectIdentifier(item))
            }
            // Reused, the first object would now be the last row's, read silently through `holders`.
            return (identities[0] != identities[1], holders.count)
        }
        #expect(distinct.0)
        #expect(distinct.1 == 1)
    }

    @Test func aClassWithStoredStateOfItsOwnGetsAFreshObjectPerRow() async throws {
        let realm = try await makeRealm()
        let scratches = await realm.read { realm in
            var scratches: [Int] = []
            for note in realm.objects(LONote.self) {
                scratches.append(note.scratch)
                note.scratch = 7  // must not reach the next row's object
            }
            return scratches
        }
        #expect(scratches == Array(repeating: 0, count: 10))
    }

    @Test func closureUpdateDoesNotReuseAnObjectReferredToWeakly() async throws {
        let realm = try await makeRealm()
        let seen = try await realm.write { realm -> [Int] in
            weak var first: LOItem?
            var seen: [Int] = []
            realm.objects(LOItem.self).update { item in
                if item.id == 0 { first = item }
                item.score = 1
                if let first { seen.append(first.id) }
            }
            return seen
        }
        #expect(!seen.isEmpty && seen.allSatisfy { $0 == 0 })
        let scores = await realm.read { $0.objects(LOItem.self).map(\.score) }
        #expect(scores == Array(repeating: 1, count: 10))
    }

    @Test func deletingEveryObjectOfALoopDeletesEachRow() async throws {
        let realm = try await makeRealm(5_000)  // more rows than the engine's deletes wait for
        try await realm.write { realm in
            for item in realm.objects(LOItem.self) where item.id % 3 != 0 { realm.delete(item) }
        }
        let ids = await realm.read { $0.objects(LOItem.self).map(\.id) }
        #expect(ids == Array(stride(from: 0, to: 5_000, by: 3)))
    }
}
