import ActorStore
import Foundation
import FuzzSupport

// fuzz-predicate: the input is a predicate string (and optionally its arguments), run against a small
// in-memory realm of three classes (every scalar type, optionals, lists, sets, maps, links, backlinks, an
// embedded object). A thrown RealmError is a correct answer; a crash, a trap or a sanitizer report is a finding.
//
// Input: byte 0 selects what runs; the rest, up to the first NUL, is the predicate string.
//   bits 0-1: the class queried (AllTypes, Dog, Person; 3: AllTypes through a list, `links`)
//   bit 2:    also run the query live, inside the realm's actor (else on a frozen snapshot only)
//   bit 3:    also sort by, and take distinct values of, the predicate string used as a key path
//   bits 4-7: without NUL-separated arguments, one of 16 fixed argument lists
// After the first NUL, each NUL-separated segment is one argument: its first byte picks the type (see
// `argument(_:)`), the rest is its value. At most 6 arguments are passed.

final class Fixture: Sendable {
    let realm: Realm
    let frozen: FrozenRealm
    /// Frozen objects of each class, for arguments such as `owner == %@` and `ANY links IN %@`.
    let dog: Frozen<Dog>?
    let person: Frozen<Person>?
    let allTypes: Frozen<AllTypes>?

    init(realm: Realm, frozen: FrozenRealm) {
        self.realm = realm
        self.frozen = frozen
        dog = frozen.objects(Dog.self).first
        person = frozen.objects(Person.self).first
        allTypes = frozen.objects(AllTypes.self).last
    }
}

let fixture: Fixture = runBlocking {
    do {
        var configuration = Realm.Configuration(inMemoryIdentifier: "fuzz-predicate")
        configuration.objectTypes = fuzzObjectTypes
        let realm = try await Realm(configuration: configuration)
        try await realm.write { realm in populate(realm, seed: 0) }
        return Fixture(realm: realm, frozen: await realm.freeze())
    } catch {
        fatalError("fuzz-predicate: cannot build the fixture realm: \(error)")
    }
}

nonisolated(unsafe) let fixedArguments: [[Any]] = [
    [], [3], ["Rex"], [3, "Rex"], [2.5, Date(timeIntervalSince1970: 3)], ["name", 3], [[1, 2, 3]], [NSNull()],
    [UUID(), ObjectId.generate(), Decimal128(1), Data([1])], ["age", "name", "owner", 1, 2],
    [1...5], [Taste.sour, Optional<Int>.none as Any], [Set(["a", "b"]), Float(1.5)], [Int8(-1), UInt64.max, Int64.min],
    [Decimal(string: "1.5")!, Double.nan, -Double.infinity], [[[1], [2, 3]], ["a": 1]],
]

/// One argument from bytes: `tag` picks the type, `value` gives its contents.
func argument(_ segment: ArraySlice<UInt8>) -> Any {
    guard let tag = segment.first else { return NSNull() }
    let value = segment.dropFirst()
    let text = String(decoding: value, as: UTF8.self)
    let integer = value.prefix(8).enumerated().reduce(Int64(0)) { $0 | Int64($1.element) << (8 * Int64($1.offset)) }
    switch tag % 20 {
    case 0: return Int(integer)
    case 1: return Int(text) ?? Int(integer)
    case 2: return Double(text) ?? Double(bitPattern: UInt64(bitPattern: integer))
    case 3: return text
    case 4: return integer & 1 == 1
    case 5: return Date(timeIntervalSince1970: Double(text) ?? Double(integer))
    case 6: return Data(value)
    case 7: return UUID(uuidString: text) ?? UUID()
    case 8: return (try? ObjectId(string: text)) ?? ObjectId.generate()
    case 9: return Decimal128(text) ?? Decimal128(Int(integer))
    case 10: return Decimal(string: text) ?? Decimal(integer)
    case 11: return NSNull()
    case 12: return text.split(separator: ",").map { Int($0) ?? 0 }
    case 13: return text.split(separator: ",").map(String.init)
    case 14: return Float(text) ?? Float(integer)
    case 15: return fixture.dog as Any
    case 16: return fixture.person as Any
    case 17: return fixture.allTypes as Any
    case 18: return Int(integer % 8)...Int(integer % 8 + 3)
    default: return [fixture.allTypes as Any, Int(integer), text]
    }
}

// `filter(_:_:)` takes its arguments as a variadic list: these spread up to six.
extension FrozenResults {
    func filtered(_ query: String, _ a: [Any]) throws -> FrozenResults<Element> {
        switch a.count {
        case 0: try filter(query)
        case 1: try filter(query, a[0])
        case 2: try filter(query, a[0], a[1])
        case 3: try filter(query, a[0], a[1], a[2])
        case 4: try filter(query, a[0], a[1], a[2], a[3])
        case 5: try filter(query, a[0], a[1], a[2], a[3], a[4])
        default: try filter(query, a[0], a[1], a[2], a[3], a[4], a[5])
        }
    }
}

extension Results {
    func filtered(_ query: String, _ a: [Any]) throws -> Results<Element> {
        switch a.count {
        case 0: try filter(query)
        case 1: try filter(query, a[0])
        case 2: try filter(query, a[0], a[1])
        case 3: try filter(query, a[0], a[1], a[2])
        case 4: try filter(query, a[0], a[1], a[2], a[3])
        case 5: try filter(query, a[0], a[1], a[2], a[3], a[4])
        default: try filter(query, a[0], a[1], a[2], a[3], a[4], a[5])
        }
    }
}

/// Evaluates a frozen query's results: count, first, last, and a second filter on top.
func consume<T>(_ results: FrozenResults<T>?) -> Int {
    guard let results else { return 0 }
    var h = results.count
    h &+= results.first == nil ? 0 : 1
    h &+= results.last == nil ? 0 : 1
    h &+= (try? results.filter("TRUEPREDICATE").count) ?? 0
    return h
}

func runFrozen(_ query: String, _ args: [Any], on selector: UInt8, keyPath: Bool) -> Int {
    let frozen = fixture.frozen
    var h = 0
    switch selector & 3 {
    case 0:
        h &+= consume(try? frozen.objects(AllTypes.self).filtered(query, args))
        if keyPath {
            h &+= consume(try? frozen.objects(AllTypes.self).sorted(byKeyPath: query))
            h &+= consume(try? frozen.objects(AllTypes.self).distinct(by: [query]))
        }
    case 1:
        h &+= consume(try? frozen.objects(Dog.self).filtered(query, args))
        if keyPath {
            h &+= consume(try? frozen.objects(Dog.self).sorted(byKeyPath: query, ascending: false))
            h &+= consume(try? frozen.objects(Dog.self).distinct(by: [query, "age"]))
        }
    case 2:
        h &+= consume(try? frozen.objects(Person.self).filtered(query, args))
        if keyPath { h &+= consume(try? frozen.objects(Person.self).sorted(byKeyPath: query)) }
    default:
        h &+= consume(try? frozen.objects(AllTypes.self).filtered("ANY links.int > -10", []).filtered(query, args))
    }
    return h
}

func runLive(_ query: String, _ args: [Any], on selector: UInt8, keyPath: Bool) -> Int {
    nonisolated(unsafe) let args = args
    return runBlocking {
        await fixture.realm.read { realm in
            var h = 0
            switch selector & 3 {
            case 1:
                if let results = try? realm.objects(Dog.self).filtered(query, args) {
                    h &+= results.count &+ (results.first?.age ?? 0) &+ (results.last?.age ?? 0)
                    h &+= (try? results.filter("age > 1").count) ?? 0
                    h &+= results.freeze().count
                }
                if keyPath { h &+= (try? realm.objects(Dog.self).sorted(byKeyPath: query).first?.age) ?? 0 }
            case 2:
                if let results = try? realm.objects(Person.self).filtered(query, args) {
                    h &+= results.count &+ (results.first?.dogs.count ?? 0)
                }
            default:
                if let results = try? realm.objects(AllTypes.self).filtered(query, args) {
                    h &+= results.count &+ (results.first?.int ?? 0) &+ (results.last?.int ?? 0)
                    h &+= (try? results.sorted(byKeyPath: "double").first?.int) ?? 0
                }
                if keyPath { h &+= (try? realm.objects(AllTypes.self).distinct(by: [query]).count) ?? 0 }
            }
            return h
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPredicate(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let selector = data[0]
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let segments = bytes.split(separator: 0, maxSplits: 6, omittingEmptySubsequences: false)
    let query = String(decoding: segments.first ?? [], as: UTF8.self)
    let args: [Any] =
        segments.count > 1 ? segments.dropFirst().map { argument($0) } : fixedArguments[Int(selector >> 4)]
    let keyPath = selector & 8 != 0
    _ = runFrozen(query, args, on: selector, keyPath: keyPath)
    if selector & 4 != 0 { _ = runLive(query, args, on: selector, keyPath: keyPath) }
    return 0
}
