import ActorStore
import Foundation
import Synchronization
import Testing

// Models of the seed-tagged tests: the Realm Swift guide's examples (sections Models, Relationships,
// Collections, Writes, Realms and Threading).

final class SeedDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: SeedPerson?
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<SeedPerson>
}

final class SeedPerson: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<SeedDog>
    @Persisted var birthdate = Date(timeIntervalSince1970: 1)
    @Persisted var address: SeedAddress?
    @Persisted var pastAddresses: List<SeedAddress>
    @Persisted var nicknames: List<String>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted(originProperty: "owner") var ownedDogs: LinkingObjects<SeedDog>
    /// Not `@Persisted`: ignored by the realm (the guide's `ignoredProperties()`).
    var tmpID = 0
    /// Read-only: ignored as well.
    var displayName: String { "\(name) (\(age))" }
}

final class SeedAddress: EmbeddedObject {
    @Persisted var street = ""
    @Persisted var city = ""
}

/// The guide's "Optional Properties" `Person`: an optional string and an optional number (RealmOptional).
final class SeedOptionalPerson: Object {
    @Persisted var name: String?
    @Persisted var age: Int?
    @Persisted var isMember: Bool?
    @Persisted var height: Double?
    @Persisted var weight: Float?
    @Persisted var photo: Data?
    @Persisted var joined: Date?
    @Persisted var taste: Taste?
}

/// The guide's "Model Inheritance" composition example.
final class SeedAnimal: Object {
    @Persisted var age = 0
}

final class SeedDuck: Object {
    @Persisted var animal: SeedAnimal?
    @Persisted var name = ""
}

/// Holds the collection kinds of the "Collections" section.
final class SeedKennel: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var dogSet: MutableSet<SeedDog>
    @Persisted var numbers: MutableSet<Int>
    @Persisted var dogsByName: Map<String, SeedDog?>
    @Persisted var prices: Map<String, Double>
    @Persisted var optionalNames: List<String?>
}

/// Links to objects with a primary key, for nested updates.
final class SeedLibrary: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var featured: Book?
    @Persisted var books: List<Book>
}

/// The guide's "Threading" example `Person(name:)`.
final class SeedNamedPerson: Object {
    @Persisted var name = ""
    @Persisted var birthdate = Date(timeIntervalSince1970: 0)

    convenience init(name: String) {
        self.init()
        self.name = name
    }
}

/// Every model class of the seed-tagged tests.
let seedTypes: [ObjectBase.Type] = [
    SeedDog.self, SeedPerson.self, SeedAddress.self, SeedOptionalPerson.self, SeedAnimal.self, SeedDuck.self,
    SeedKennel.self, SeedNamedPerson.self, SeedLibrary.self, Book.self, AllTypes.self,
]

func seedConfiguration(durability: Realm.Durability = .none) -> Realm.Configuration {
    testConfiguration(seedTypes, durability: durability)
}
