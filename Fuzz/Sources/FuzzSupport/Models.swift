import ActorStore
import Foundation

// The models of the fuzz stores. Class and property names are those of the outside tester's harness
// (/work/shared/repro/harness/fuzz), so that its crafted files (Corpus/open/crafted-*) open with a matching
// schema and reach replay, writes and compaction instead of stopping at a schema mismatch.

/// An enum property.
public enum Taste: String, PersistableEnum, Sendable { case sweet, sour, bitter }

/// Links, a backlink.
public final class Dog: Object {
    @Persisted public var name = ""
    @Persisted public var age = 0
    @Persisted public var owner: Person?
    @Persisted(originProperty: "dogs") public var owners: LinkingObjects<Person>
}

/// A string primary key, an embedded object and every collection kind.
public final class Person: Object {
    @Persisted(primaryKey: true) public var name = ""
    @Persisted public var birthdate = Date(timeIntervalSince1970: 1)
    @Persisted public var dogs: List<Dog>
    @Persisted public var address: Address?
    @Persisted public var nicknames: List<String>
    @Persisted public var tags: MutableSet<String>
    @Persisted public var scores: Map<String, Int>
    @Persisted public var pets: Map<String, Dog?>
    @Persisted public var friends: MutableSet<Person>
}

/// An embedded object.
public final class Address: EmbeddedObject {
    @Persisted public var street = ""
    @Persisted public var city = ""
}

/// Every scalar type, optionals, indexes, collections of scalars and links to itself.
public final class AllTypes: Object {
    @Persisted(primaryKey: true) public var id = UUID()
    @Persisted public var bool = false
    @Persisted public var int = 0
    @Persisted public var int8: Int8 = 0
    @Persisted public var int16: Int16 = 0
    @Persisted public var int32: Int32 = 0
    @Persisted public var int64: Int64 = 0
    @Persisted public var float: Float = 0
    @Persisted public var double = 0.0
    @Persisted public var string = ""
    @Persisted public var data = Data()
    @Persisted public var date = Date(timeIntervalSince1970: 0)
    @Persisted public var uuid = UUID()
    @Persisted public var objectId = ObjectId.generate()
    @Persisted public var decimal = Decimal128(0)
    @Persisted public var taste = Taste.sweet
    @Persisted public var optionalInt: Int?
    @Persisted public var optionalString: String?
    @Persisted public var optionalDate: Date?
    @Persisted public var optionalTaste: Taste?
    @Persisted public var optionalData: Data?
    @Persisted public var optionalDouble: Double?
    @Persisted(indexed: true) public var indexedName = ""
    @Persisted(indexed: true) public var indexedInt = 0
    @Persisted public var ints: List<Int>
    @Persisted public var strings: List<String?>
    @Persisted public var doubles: MutableSet<Double>
    @Persisted public var dates: List<Date>
    @Persisted public var map: Map<String, String>
    @Persisted public var link: AllTypes?
    @Persisted public var links: List<AllTypes>
    @Persisted public var dog: Dog?
}

/// Every model class, for `Realm.Configuration.objectTypes`.
public let fuzzObjectTypes: [ObjectBase.Type] = [Dog.self, Person.self, Address.self, AllTypes.self]

/// Reads every property of every object of every class, live; returns a hash so nothing is optimised away.
public func readEverything(_ realm: isolated Realm) -> Int {
    var h = 0
    for d in realm.objects(Dog.self) {
        h &+= d.name.utf8.count &+ d.age
        h &+= d.owner?.name.count ?? 0
        h &+= d.owners.count
    }
    for p in realm.objects(Person.self) {
        h &+= p.name.count &+ Int(truncatingIfNeeded: p.birthdate.timeIntervalSince1970.bitPattern)
        for d in p.dogs { h &+= d.age }
        h &+= p.address?.city.count ?? 0
        h &+= p.address?.street.count ?? 0
        for n in p.nicknames { h &+= n.count }
        for t in p.tags { h &+= t.count }
        for (k, v) in p.scores.map({ ($0.key, $0.value) }) { h &+= k.count &+ v }
        for (k, v) in p.pets.map({ ($0.key, $0.value) }) { h &+= k.count &+ (v?.age ?? 0) }
        for f in p.friends { h &+= f.name.count }
    }
    for a in realm.objects(AllTypes.self) {
        h &+= a.bool ? 1 : 0
        h &+= a.int &+ Int(a.int8) &+ Int(a.int16) &+ Int(a.int32) &+ Int(truncatingIfNeeded: a.int64)
        h &+= Int(a.float.isFinite ? 1 : 0) &+ Int(a.double.isNaN ? 1 : 2)
        h &+= a.string.count &+ a.data.count &+ Int(a.date.timeIntervalSince1970.isFinite ? 1 : 0)
        h &+= a.uuid.hashValue &+ a.objectId.hashValue &+ a.decimal.hashValue &+ a.taste.rawValue.count
        h &+= (a.optionalInt ?? 0) &+ (a.optionalString?.count ?? 0) &+ (a.optionalDate == nil ? 0 : 1)
        h &+= (a.optionalTaste?.rawValue.count ?? 0) &+ (a.optionalData?.count ?? 0)
        h &+= a.optionalDouble == nil ? 0 : 1
        h &+= a.indexedName.count &+ a.indexedInt
        for i in a.ints { h &+= i }
        for s in a.strings { h &+= s?.count ?? 0 }
        for d in a.doubles { h &+= d.isNaN ? 1 : 0 }
        for d in a.dates { h &+= d.timeIntervalSince1970.isFinite ? 1 : 0 }
        for (k, v) in a.map.map({ ($0.key, $0.value) }) { h &+= k.count &+ v.count }
        h &+= a.link?.int ?? 0
        for l in a.links { h &+= l.int }
        h &+= a.dog?.age ?? 0
    }
    return h
}

/// Reads a frozen snapshot: objects, links and collection sizes of every class.
public func readFrozen(_ frozen: FrozenRealm) -> Int {
    var h = 0
    for d in frozen.objects(Dog.self) { h &+= d.name.count &+ d.age &+ (d.owner?.name.count ?? 0) }
    for p in frozen.objects(Person.self) {
        h &+= p.dogs.count &+ p.nicknames.count &+ p.tags.count &+ p.scores.count &+ p.pets.count
        h &+= p.friends.count &+ (p.address?.city.count ?? 0)
    }
    for a in frozen.objects(AllTypes.self) {
        h &+= a.int &+ a.string.count &+ a.ints.count &+ a.links.count &+ a.map.count &+ (a.link?.int ?? 0)
    }
    return h
}

/// Populates a realm with a bit of everything; `seed` varies the names (and so the primary keys).
public func populate(_ realm: isolated Realm, seed: Int) {
    var people: [Person] = []
    for i in 0..<5 {
        let p = realm.create(
            Person.self,
            value: ["name": "person\(seed)-\(i)", "birthdate": Date(timeIntervalSince1970: Double(i * 1000))])
        p.nicknames.append(objectsIn: ["n\(i)", "nick"])
        p.tags.insert("tag\(i % 2)")
        p.scores["math"] = i * 10
        p.scores["art"] = 100 - i
        let address = Address()
        address.street = "Main \(i)"
        address.city = i % 2 == 0 ? "Oslo" : "Lima"
        p.address = address
        people.append(p)
    }
    for i in 0..<12 {
        let d = realm.create(Dog.self, value: ["name": ["Rex", "Fido", "Bolt", "rex", "Éclair"][i % 5], "age": i % 7])
        d.owner = people[i % people.count]
        people[i % people.count].dogs.append(d)
        people[(i + 1) % people.count].pets["d\(i)"] = d
    }
    people[0].friends.insert(people[1])
    people[1].friends.insert(people[0])
    var previous: AllTypes?
    for i in 0..<8 {
        let a = AllTypes()
        a.bool = i % 2 == 0
        a.int = i - 3
        a.int8 = Int8(i)
        a.int16 = Int16(i * 100)
        a.int32 = Int32(i * 10000)
        a.int64 = Int64(i) << 40
        a.float = Float(i) / 3
        a.double = i == 3 ? .nan : Double(i) * 1.5
        a.string = ["", "abc", "ÀBC", "a\u{0}b", "long " + String(repeating: "z", count: 40), "emoji 🐶", "x", "Y"][i]
        a.data = Data([UInt8](repeating: UInt8(i), count: i))
        a.date = Date(timeIntervalSince1970: Double(i) * 86400)
        a.decimal = Decimal128(i)
        a.taste = [.sweet, .sour, .bitter][i % 3]
        a.optionalInt = i % 3 == 0 ? nil : i
        a.optionalString = i % 2 == 0 ? nil : "opt\(i)"
        a.optionalDate = i % 2 == 0 ? Date(timeIntervalSince1970: 5) : nil
        a.optionalTaste = i % 2 == 0 ? .bitter : nil
        a.optionalData = i % 4 == 0 ? Data([1, 2]) : nil
        a.optionalDouble = i % 3 == 0 ? 2.5 : nil
        a.indexedName = "name\(i % 3)"
        a.indexedInt = i % 4
        a.ints.append(objectsIn: Array(0..<i))
        a.strings.append(objectsIn: [nil, "s\(i)"])
        a.doubles.insert(Double(i))
        a.dates.append(Date(timeIntervalSince1970: Double(i)))
        a.map["k\(i)"] = "v\(i)"
        realm.add(a)
        a.link = previous
        if let previous { a.links.append(previous) }
        a.dog = realm.objects(Dog.self).first
        previous = a
    }
}
