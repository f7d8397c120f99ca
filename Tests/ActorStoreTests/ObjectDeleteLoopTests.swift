import Foundation
import Testing

@testable import ActorStore

// Object-by-object deletes: an object deleted twice is an error that names the fix, and a loop of deletes
// leaves exactly the objects it did not delete.

@Suite(.timeLimit(.minutes(30))) struct ObjectDeleteLoopTests {
    @Test func deletingAnObjectTwiceIsAnError() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        try await realm.write { realm in realm.create(SeedDog.self, value: ["name": "Rex"]) }
        let error = await #expect(throws: RealmError.self) {
            try await realm.write { realm in
                let dog = realm.objects(SeedDog.self).first!
                realm.delete(dog)
                realm.delete(dog)
            }
        }
        #expect(error?.code == .invalidObject)
        #expect(error?.message.contains("already deleted") == true, "\(String(describing: error))")
        // The failed transaction was rolled back: Rex is still there.
        #expect(await realm.read { $0.objects(SeedDog.self).count } == 1)
    }

    @Test func aLoopOfDeletesLeavesTheRest() async throws {
        let realm = try await Realm(configuration: seedConfiguration())
        let left = try await realm.write { realm -> [Int] in
            for i in 0..<500 { realm.create(SeedDog.self, value: ["name": "d\(i)", "age": i]) }
            for dog in Array(realm.objects(SeedDog.self)) where dog.age % 3 != 1 { realm.delete(dog) }
            return realm.objects(SeedDog.self).map(\.age)
        }
        #expect(left == Array(stride(from: 1, to: 500, by: 3)))
    }
}
