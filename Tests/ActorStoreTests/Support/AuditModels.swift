import Foundation
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Models of the audit-tagged tests (the audit of the seeds).

final class AuditDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: AuditPerson?
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<AuditPerson>
}

final class AuditPerson: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<AuditDog>
    @Persisted var address: AuditAddress?
    @Persisted var favorites: MutableSet<AuditDog>
    @Persisted var dogsByNickname: Map<String, AuditDog?>
    /// Not `@Persisted`: ignored (the guide's `ignoredProperties()` returning `["tmpID"]`).
    var tmpID = 0
}

/// A to-one target for the guide's `rex.owner?.address.country`.
final class AuditAddress: Object {
    @Persisted var country = ""
}

/// The guide's "Indexed Properties" `Book`, with an index on each type the guide lists as indexable.
final class AuditBook: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var title = ""
    @Persisted(indexed: true) var price = 0
    @Persisted(indexed: true) var inStock = false
    @Persisted(indexed: true) var published = Date(timeIntervalSince1970: 0)
}

final class AuditLibrary: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var books: List<AuditBook>
}

/// "A common pattern is to set the default property value to NSUUID().UUIDString to generate unique string
/// IDs", and "a createdAt property with a default value of NSDate()".
final class AuditTicket: Object {
    @Persisted(primaryKey: true) var id = UUID().uuidString
    @Persisted var createdAt = Date()
    @Persisted var name = ""
}

/// "RealmOptional supports Int, Float, Double, Bool, and all of the sized versions of Int".
final class AuditOptionals: Object {
    @Persisted var int8: Int8?
    @Persisted var int16: Int16?
    @Persisted var int32: Int32?
    @Persisted var int64: Int64?
    @Persisted var float: Float?
    @Persisted var bool: Bool?
}

/// The guide's JSON `City`, with a primary key (needed for `update:`) and a nested to-many relationship.
final class AuditCity: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var city = ""
    @Persisted var area: Float = 0
    @Persisted var founded = Date(timeIntervalSince1970: 0)
    @Persisted var districts: List<AuditDistrict>
}

final class AuditDistrict: Object {
    @Persisted var name = ""
}

/// An Int-backed enum, alone and in each kind of collection.
enum AuditPriority: Int, PersistableEnum {
    case low = 1, normal = 5, high = 10
}

final class AuditTask: Object {
    @Persisted var title = ""
    @Persisted var priority = AuditPriority.normal
    @Persisted var previous: AuditPriority?
    @Persisted var history: List<AuditPriority>
    @Persisted var seen: MutableSet<AuditPriority>
    @Persisted var byOwner: Map<String, AuditPriority>
}

/// "Model Inheritance": "Class methods, instance methods and properties on parent classes are inherited in
/// their child classes."
class AuditAnimal: Object {
    @Persisted var age = 0

    func ageInDogYears() -> Int { age * 7 }
}

final class AuditCat: AuditAnimal {
    @Persisted var name = ""
}

/// Every model class of the audit-tagged tests.
let auditTypes: [ObjectBase.Type] = [
    AuditDog.self, AuditPerson.self, AuditAddress.self, AuditBook.self, AuditLibrary.self, AuditTicket.self,
    AuditOptionals.self, AuditCity.self, AuditDistrict.self, AuditAnimal.self, AuditCat.self, AuditTask.self,
]

func auditConfiguration() -> Realm.Configuration {
    testConfiguration(auditTypes)
}
