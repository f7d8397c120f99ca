import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

enum JXMood: String, PersistableEnum {
    case calm, wild
}

final class JXGeo: EmbeddedObject {
    @Persisted var lat = 0.0
    @Persisted var note: String?
}

final class JXAddress: EmbeddedObject {
    @Persisted var city = ""
    @Persisted var geo: JXGeo?
    @Persisted var resident: JXPerson?
}

final class JXPet: Object {
    @Persisted var name = ""
    @Persisted var owner: JXPerson?
}

final class JXPerson: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var flag = false
    @Persisted var small: Int8 = 0
    @Persisted var medium: Int16 = 0
    @Persisted var large: Int32 = 0
    @Persisted var huge: Int64 = 0
    @Persisted var ratio: Float = 0
    @Persisted var score = 0.0
    @Persisted var name = ""
    @Persisted var nickname: String?
    @Persisted var blob = Data()
    @Persisted var born = Date(timeIntervalSince1970: 0)
    @Persisted var died: Date?
    @Persisted var tag = UUID()
    @Persisted var oid = ObjectId()
    @Persisted var price = Decimal128()
    @Persisted var mood = JXMood.calm
    @Persisted var best: JXPerson?
    @Persisted var friends: List<JXPerson>
    @Persisted var pets: MutableSet<JXPet>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Double>
    @Persisted var byName: Map<String, JXPet?>
    @Persisted var maybeInts: List<Int?>
    @Persisted var address: JXAddress?
    @Persisted var addresses: List<JXAddress>
    @Persisted var any: AnyRealmValue
    @Persisted var anys: List<AnyRealmValue>
    @Persisted var anyMap: Map<String, AnyRealmValue>
}

@Suite struct JSONExportImportTests {
    static let types: [ObjectBase.Type] = [JXPerson.self, JXPet.self, JXAddress.self, JXGeo.self]

    private func realm() async throws -> Realm { try await Realm(configuration: testConfiguration(Self.types)) }

    /// Strings that need escaping or are not ASCII.
    static let strings = [
        "", "plain", "quote \" and \\ backslash", "line\nbreak\ttab\u{1}\u{1F}", "日本語 🎉 e\u{301}", "/",
    ]
    /// Dates with whole fractions, before 1970 and 2001, far away, and not finite.
    static let dates: [Date] = [
        Date(timeIntervalSince1970: 0), Date(timeIntervalSinceReferenceDate: 0.1),
        Date(timeIntervalSinceReferenceDate: -1e9 + 0.000123), Date(timeIntervalSince1970: 1_700_000_000.123456789),
        Date(timeIntervalSinceReferenceDate: 123_456_789.987_654_321), .distantFuture, .distantPast,
        Date(timeIntervalSinceReferenceDate: -62_135_596_800.5), Date(timeIntervalSinceReferenceDate: 1e15),
        Date(timeIntervalSinceReferenceDate: .infinity), Date(timeIntervalSinceReferenceDate: .leastNonzeroMagnitude),
    ]
    static let doubles: [Double] = [
        0, -0.0, 1.5, -2.25e-300, .greatestFiniteMagnitude, .nan, .infinity, -.infinity, 0.1,
    ]

    /// A realm with people linking to each other in a cycle, pets, embedded addresses (with links out of them)
    /// and every stored type, extremes included.
    private func populate(_ realm: Realm, count: Int = 24) async throws {
        try await realm.write { realm in
            var people: [JXPerson] = []
            var pets: [JXPet] = []
            for i in 0..<count {
                let person = realm.create(JXPerson.self, value: ["id": i * 7 - 50])
                person.flag = i % 2 == 0
                person.small = Int8(truncatingIfNeeded: i * 37)
                person.medium = i == 0 ? .min : Int16(i * 999)
                person.large = i == 1 ? .max : Int32(i * -100_003)
                person.huge = i == 2 ? .min : (i == 3 ? .max : Int64(i) << 40)
                person.ratio = [Float(0), -0.0, 1.1, .nan, .infinity, .leastNonzeroMagnitude][i % 6]
                person.score = Self.doubles[i % Self.doubles.count]
                person.name = Self.strings[i % Self.strings.count]
                person.nickname = i % 3 == 0 ? nil : Self.strings[(i + 1) % Self.strings.count]
                person.blob = Data((0..<(i * 3)).map { UInt8(truncatingIfNeeded: $0 * 91) })
                person.born = Self.dates[i % Self.dates.count]
                person.died = i % 4 == 0 ? nil : Self.dates[(i + 3) % Self.dates.count]
                person.tag = UUID()
                person.oid = ObjectId()
                person.price =
                    [Decimal128("1.5")!, Decimal128("-0.000001")!, Decimal128("1E+40")!, Decimal128()][i % 4]
                person.mood = i % 2 == 0 ? .calm : .wild
                person.tags.insert(objectsIn: Self.strings.prefix(i % 4))
                person.scores["a\(i)"] = Self.doubles[(i + 2) % Self.doubles.count]
                person.scores["ü"] = 1
                person.maybeInts.append(objectsIn: [i, nil, -i])
                let address = JXAddress()
                address.city = Self.strings[(i + 2) % Self.strings.count]
                if i % 2 == 1 {
                    let geo = JXGeo()
                    geo.lat = Double(i) / 3
                    geo.note = i % 3 == 0 ? nil : "n\(i)"
                    address.geo = geo
                }
                person.address = i % 5 == 4 ? nil : address
                let pet = realm.create(JXPet.self, value: ["name": "pet\(i)"])
                pet.owner = person
                pets.append(pet)
                person.pets.insert(pet)
                person.byName["p\(i)"] = pet
                person.byName["none"] = nil as JXPet?
                people.append(person)
            }
            for (i, person) in people.enumerated() {
                person.best = people[(i + 1) % people.count]  // a cycle through everyone
                person.friends.append(objectsIn: [people[(i * 5) % people.count], person, people[0]])
                let home = JXAddress()
                home.city = "home \(i)"
                home.resident = people[(i + 3) % people.count]  // a link out of an embedded object, forward
                person.addresses.append(home)
                person.addresses.append(JXAddress())
                let anys: [AnyRealmValue] = [
                    .none, .int(i), .bool(i % 2 == 0), .float(1.25), .double(Self.doubles[i % Self.doubles.count]),
                    .string(Self.strings[i % Self.strings.count]), .data(Data([UInt8(i)])),
                    .date(Self.dates[i % Self.dates.count]), .objectId(ObjectId()), .decimal128(Decimal128(i)),
                    .uuid(UUID()), .object(people[(i + 7) % people.count]), .object(pets[i]),
                ]
                person.any = anys[i % anys.count]
                person.anys.append(objectsIn: anys)
                person.anyMap["x"] = anys[(i + 1) % anys.count]
                person.anyMap["link"] = .object(people[(i + 2) % people.count])
            }
        }
    }

    private func export(_ realm: Realm) async throws -> Data { try await realm.freeze().exportJSONData() }

    @Test func exportImportExportIsByteIdenticalAndTheImportedRealmEqualsTheOriginal() async throws {
        let original = try await realm()
        try await populate(original)
        let first = try await export(original)
        let copy = try await realm()
        #expect(try await copy.importJSON(data: first) == 48)  // 24 people, 24 pets
        let second = try await export(copy)
        #expect(first == second)
        if first != second {
            let a = String(decoding: first, as: UTF8.self).split(separator: "\n")
            let b = String(decoding: second, as: UTF8.self).split(separator: "\n")
            for (x, y) in zip(a, b) where x != y {
                Issue.record("first difference:\n\(x)\n\(y)")
                break
            }
        }
        // Object by object: both realms were filled from empty without deletions, so their top-level objects
        // have the same keys; embedded objects are compared through their parents (their keys follow the
        // order they were made in). Every stored value must be the same, floating-point values to the bit.
        let a = await original.freeze().context.snapshot
        let b = await copy.freeze().context.snapshot
        #expect(a.state.tableIDs.keys.sorted() == b.state.tableIDs.keys.sorted())
        var compared = 0
        func compare(_ name: String, _ aKey: ObjectKey, _ bKey: ObjectKey) throws {
            let aID = try #require(a.tableID(named: name))
            let bID = try #require(b.tableID(named: name))
            let schema = try #require(a.tableSchema(aID))
            let aValues = try #require(try a.values(aID, aKey))
            let bValues = try #require(try b.values(bID, bKey), "\(name) \(bKey) is missing from the import")
            #expect(aValues.count == bValues.count)
            compared += 1
            for (column, (x, y)) in zip(schema.columns, zip(aValues, bValues)) {
                guard let target = column.linkTarget, let targetID = a.tableID(named: target),
                    a.tableSchema(targetID)?.isEmbedded == true
                else {
                    #expect(sameStored(x, y), "\(name).\(column.name) \(aKey): \(x) vs \(y)")
                    continue
                }
                switch (x, y) {
                case (.link(let k), .link(let l)): try compare(target, k, l)
                case (.list(let xs), .list(let ys)):
                    #expect(xs.count == ys.count)
                    for case (.link(let k), .link(let l)) in zip(xs, ys) { try compare(target, k, l) }
                default: #expect(x == y, "\(name).\(column.name) \(aKey): \(x) vs \(y)")
                }
            }
        }
        for (name, aID) in a.state.tableIDs where a.tableSchema(aID)?.isEmbedded == false {
            let bID = try #require(b.tableID(named: name))
            #expect(a.state.rowCount(aID) == b.state.rowCount(bID), "\(name)")
            var cursor = a.state.rowCursor(aID)
            while let (key, _) = cursor.next() { try compare(name, key, key) }
        }
        #expect(compared > 48 * 2)  // people, pets and their embedded addresses
    }

    @Test func anExportOfARealmWithDeletionsAndLinksToLaterObjectsReimportsIdentically() async throws {
        let original = try await realm()
        try await populate(original, count: 12)
        try await original.write { realm in
            realm.delete(realm.objects(JXPet.self).where { $0.name == "pet3" || $0.name == "pet7" })
            realm.delete(realm.objects(JXPerson.self).where { $0.id == -50 + 7 * 5 })
        }
        let first = try await export(original)
        let copy = try await realm()
        try await copy.importJSON(data: first)
        #expect(try await export(copy) == first)
        await copy.read { realm in
            let people = realm.objects(JXPerson.self)
            #expect(people.count == 11)
            // Links through ids: each person's best friend and friends point at the same people as before.
            for person in people where person.best != nil {
                #expect(person.friends.contains(person))
            }
        }
    }

    @Test func importIntoARealmWithoutModelClassesCreatesTheClassesFromTheDocument() async throws {
        let original = try await realm()
        try await populate(original, count: 5)
        let document = try await export(original)
        let url = temporaryRealmURL()
        do {
            let bare = try await Realm(configuration: Realm.Configuration(fileURL: url))
            try await bare.importJSON(data: document)
            #expect(try await bare.freeze().exportJSONData() == document)
        }
        let reopened = try await Realm(configuration: Realm.Configuration(fileURL: url, objectTypes: Self.types))
        await reopened.read { realm in
            #expect(realm.objects(JXPerson.self).count == 5)
            #expect(realm.objects(JXPet.self).first?.owner != nil)
        }
    }

    @Test func theFileFormsStreamToAndFromFiles() async throws {
        let original = try await realm()
        try await populate(original, count: 6)
        let url = temporaryRealmURL("export.jsonl")
        var reported: [Int] = []
        let written = try await original.freeze().exportJSON(to: url) { reported.append($0) }
        #expect(written == 12)
        #expect(reported.last == 12)
        #expect(try Data(contentsOf: url) == (try await export(original)))
        let copy = try await realm()
        #expect(try await copy.importJSON(from: url) == 12)
        #expect(try await export(copy) == (try await export(original)))
        #expect(try await original.exportJSON(to: url, classes: ["JXPet"]) == 6)
        let lines = String(decoding: try Data(contentsOf: url), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 7)
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix(#"{"class":"JXPet""#) })
    }

    @Test func valuesHaveTheirDocumentedForms() async throws {
        let realm = try await realm()
        try await realm.write { realm in
            let person = realm.create(JXPerson.self, value: ["id": 1, "name": "a\"b"])
            person.blob = Data([1, 2, 3])
            person.born = Date(timeIntervalSince1970: 1_700_000_000.25)
            person.tag = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
            person.oid = ObjectId("65a1b2c3d4e5f60718293a4b")!
            person.price = Decimal128("12.50")!
            person.score = .nan
            person.any = .int(5)
            person.anys.append(objectsIn: [.string("s"), .object(person)])
        }
        let text = String(decoding: try await export(realm), as: UTF8.self)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(#"{"class":"JXPerson""#) })
        for fragment in [
            #""name":"a\"b""#, #""blob":"AQID""#, #""born":"2023-11-14T22:13:20.25Z""#,
            #""tag":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F""#, #""oid":"65a1b2c3d4e5f60718293a4b""#,
            #""price":"12.5""#, #""score":"NaN""#, #""any":{"int":5}"#,
            #""anys":[{"string":"s"},{"link":{"class":"JXPerson","id":0}}]"#, #""best":null"#,
            #""id":0,"values":{"id":1,"#,
        ] {
            #expect(line.contains(fragment), "\(fragment) in \(line)")
        }
    }

    @Test func aBadDocumentFailsNamingTheLineAndAddsNothing() async throws {
        let original = try await realm()
        try await populate(original, count: 3)
        let good = String(decoding: try await export(original), as: UTF8.self)
        var lines = good.split(separator: "\n").map(String.init)
        let cases: [(String, RealmError.Code, String)] = [
            ("not json", .invalidValue, "line 1"),
            (
                lines[0] + "\n" + lines[1].replacingOccurrences(of: #""id":0"#, with: #""id":1"#), .invalidValue,
                "line 2"
            ),
            (lines[0] + "\n" + lines[1] + "\n{\"class\":\"JXPet\",\"id\":1,\"values\":{}}", .invalidValue, "count up"),
            (
                lines[0].replacingOccurrences(of: #""type":"double""#, with: #""type":"string""#) + "\n",
                .schemaMismatch, "JXGeo.lat"
            ),
            (
                lines[0] + "\n" + lines[1].replacingOccurrences(of: #""flag":"#, with: #""flag":7,"x":"#),
                .invalidValue, "flag"
            ),
        ]
        for (document, code, text) in cases {
            let copy = try await realm()
            let error = await #expect(throws: RealmError.self, "\(document.prefix(80))") {
                try await copy.importJSON(data: Data(document.utf8))
            }
            #expect(error?.code == code, "\(error?.message ?? "")")
            #expect(error?.message.contains(text) == true, "\(error?.message ?? "")")
            await copy.read { #expect($0.objects(JXPerson.self).isEmpty) }
        }
        // Importing twice: the primary keys already exist; the second import adds nothing.
        let copy = try await realm()
        try await copy.importJSON(data: Data(good.utf8))
        let error = await #expect(throws: RealmError.self) { try await copy.importJSON(data: Data(good.utf8)) }
        #expect(error?.code == .primaryKeyExists)
        await copy.read { #expect($0.objects(JXPerson.self).count == 3) }
        lines.removeAll()
    }

    @Test func damagedDocumentsImportOrThrowButNeverStopTheProcess() async throws {
        let original = try await realm()
        try await populate(original, count: 4)
        let good = Array(try await export(original))
        var rng = SystemRandomNumberGenerator()
        let hostile = [
            #"{"link":{"class":"JXPerson","id":9223372036854775807}}"#, #"{"link":{"class":"JXPerson","id":-1}}"#,
            "9223372036854775807", "-9223372036854775809", "1e400", #""@1e400""#, "[[[[[[[[[[", #""\ud800""#,
        ]
        for iteration in 0..<(TestDepth.long ? 2_000 : 120) {
            var bytes = good
            if iteration < hostile.count {
                // A value put where a link, an id or an AnyRealmValue goes.
                let text = String(decoding: bytes, as: UTF8.self)
                    .replacingOccurrences(of: #""any":null"#, with: #""any":"# + hostile[iteration])
                    .replacingOccurrences(of: #""best":1"#, with: #""best":"# + hostile[iteration])
                bytes = Array(text.utf8)
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    bytes[at] = UInt8.random(in: 0...255, using: &rng)
                }
            }
            let copy = try await realm()
            do {
                try await copy.importJSON(data: Data(bytes))
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
    }

    /// Stored values compared as the export promises: floating-point values by bit pattern (NaN included),
    /// decimals by value.
    private func sameStored(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.float(let x), .float(let y)): return x.bitPattern == y.bitPattern
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.date(let x), .date(let y)):
            return x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        case (.decimal128(let x), .decimal128(let y)): return Decimal128(bits: x) == Decimal128(bits: y)
        case (.list(let x), .list(let y)), (.set(let x), .set(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { sameStored($0, $1) }
        case (.map(let x), .map(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && sameStored($0.value, $1.value) }
        default: return a == b
        }
    }
}
