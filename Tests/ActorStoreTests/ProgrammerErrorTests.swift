import ActorStorePersistence
import Foundation
import Synchronization
import Testing

@testable import ActorStore

// Programmer errors stop the program, as in Realm, with a message naming the API (exit tests).

private func seedBeginTwice(_ realm: isolated Realm) async throws {
    try await realm.beginWrite()
    try await realm.beginWrite()
}

@Suite struct ProgrammerErrorTests {
    @Test(.tags(.seed)) func writingOutsideAWriteTransactionStops() async {
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([Book.self]))
            try await realm.write { $0.create(Book.self, value: ["id": 1]) }
            await realm.read { realm in realm.objects(Book.self).first!.title = "outside" }
        }
        expectStopMessage(stop, "outside of a write transaction")
    }

    @Test(.tags(.seed)) func readingADeletedObjectStops() async {
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([Book.self]))
            try await realm.write { realm in
                let book = realm.create(Book.self, value: ["id": 1])
                realm.delete(book)
                _ = book.title
            }
        }
        expectStopMessage(stop, "has been deleted or invalidated")
    }

    @Test(.tags(.seed)) func beginningAWriteTwiceStops() async {
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([Book.self]))
            try await seedBeginTwice(realm)
        }
        expectStopMessage(stop, "already in a write transaction")
    }

    @Test(.tags(.seed)) func resolvingAReferenceTwiceStops() async {
        let stop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let config = testConfiguration([Book.self])
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(Book.self, value: ["id": 1]) }
            let ref = await realm.read { ThreadSafeReference(to: $0.objects(Book.self).first!) }
            let other = try await Realm(configuration: config)
            await other.read { realm in
                _ = realm.resolve(ref)
                _ = realm.resolve(ref)
            }
        }
        expectStopMessage(stop, "already resolved")
    }

    // Each out-of-bounds index stops with the list's own message (not an arithmetic overflow in
    // `index + 1`, nor the standard library's message).
    @Test(.tags(.regression)) func settingIntMaxStopsWithTheBoundsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a"])
            list[Int.max] = "b"
        }
        expectStopMessage(result, "List index 9223372036854775807 is out of bounds (count 1).")
    }

    @Test(.tags(.regression)) func removingIntMaxStopsWithTheBoundsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a"])
            list.remove(at: Int.max)
        }
        expectStopMessage(result, "List index 9223372036854775807 is out of bounds (count 1).")
    }

    @Test(.tags(.regression)) func insertingPastTheEndStopsWithTheBoundsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a"])
            list.insert("b", at: Int.max)
        }
        expectStopMessage(result, "List insertion index 9223372036854775807 is out of bounds (count 1).")
    }

    @Test(.tags(.regression)) func movingAndSwappingOutOfBoundsStopWithTheBoundsMessage() async {
        let move = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a", "b"])
            list.move(from: 0, to: Int.max)
        }
        expectStopMessage(move, "List move destination index 9223372036854775807 is out of bounds (count 2).")
        let swap = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List(["a", "b"])
            list.swapAt(-1, 0)
        }
        expectStopMessage(swap, "List index -1 is out of bounds (count 2).")
    }

    /// The same checks hold for a managed list, before anything is written.
    @Test(.tags(.regression)) func managedListSetterStopsWithTheBoundsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try await Realm(configuration: testConfiguration([TrapKennel.self, TrapDog.self]))
            try await realm.write { realm in
                let kennel = realm.create(TrapKennel.self, value: ["name": "K"])
                kennel.dogs.append(realm.create(TrapDog.self, value: ["name": "A"]))
                kennel.dogs[Int.max] = realm.create(TrapDog.self, value: ["name": "B"])
            }
        }
        expectStopMessage(result, "List index 9223372036854775807 is out of bounds (count 1).")
    }
}
