import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

// Models of the regression-tagged tests.

final class RegDog: Object {
    @Persisted var name = ""
}

final class RegAddress: EmbeddedObject {
    @Persisted var street = ""
}

final class RegContact: Object {
    @Persisted var name = ""
    @Persisted var address: RegAddress?
    @Persisted var addresses: List<RegAddress>
}

final class RegTag: Object {
    @Persisted var label = ""
}

final class RegBook: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var title = ""
    @Persisted var note: RegTag?
}

final class RegOwner: Object {
    @Persisted var name = ""
    @Persisted var items: List<String>
}

final class RegInitSetter: Object {
    @Persisted var count = 0
    required init() {
        super.init()
        count = 5
    }
}

enum RegMigV1 { final class RegMigPet: Object { @Persisted var name = "" } }

enum RegMigV2 {
    final class RegMigPet: Object {
        @Persisted var name = ""
        @Persisted var age = 0
    }
}

enum RegIdxV1 { final class RegIdxPet: Object { @Persisted var name = "" } }

enum RegIdxV2 { final class RegIdxPet: Object { @Persisted(indexed: true) var name = "" } }

enum RegTasteFull: String, PersistableEnum { case sweet, bitter }

enum RegTasteShort: String, PersistableEnum { case sweet }

enum RegEnumV1 { final class RegEnumPet: Object { @Persisted var tastes: List<RegTasteFull> } }

enum RegEnumV2 { final class RegEnumPet: Object { @Persisted var tastes: List<RegTasteShort> } }

func regressionConfiguration(
    _ url: URL = temporaryRealmURL(), version: UInt64 = 0, types: [ObjectBase.Type]? = nil
)
    -> Realm.Configuration
{
    var configuration = Realm.Configuration(fileURL: url, schemaVersion: version, objectTypes: types)
    configuration.durability = .none
    return configuration
}

final class TrapKennel: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<TrapDog>
    @Persisted var pack: MutableSet<TrapDog>
}

final class TrapDog: Object {
    @Persisted var name = ""
}

final class TrapCounter: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var n = 0
    @Persisted var plain = 0
}
