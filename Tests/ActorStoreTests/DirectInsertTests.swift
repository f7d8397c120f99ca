import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// `realm.add(_:)` writes an object of a table without links straight from its property values into the row
// (no value array, no per-value check). These tests hold it to what the value path (`add(_:update:)`, which
// looks the primary key up and encodes a row of values) stores for the same objects, and to its errors. The
// bytes of such rows are compared with those of encoded values in `RowEncodingTests.directRowMatchesValues`.

enum DITLevel: Int8, PersistableEnum {
    case low = -128, mid = 0, high = 127
}

/// Every single-value type of ActorStore's own, optionals, an integer primary key and no index: its inserts
/// wait.
final class DITRow: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var note: String?
    @Persisted var flag = false
    @Persisted var small: Int8 = 0
    @Persisted var medium: Int16 = 0
    @Persisted var wide: Int32 = 0
    @Persisted var count: Int?
    @Persisted var ratio: Float = 0
    @Persisted var score = 0.0
    @Persisted var maybeScore: Double?
    @Persisted var when = Date(timeIntervalSince1970: 0)
    @Persisted var blob = Data()
    @Persisted var maybeBlob: Data?
    @Persisted var uuid = UUID()
    @Persisted var objectId = ObjectId.generate()
    @Persisted var decimal = Decimal128(0)

    /// Every property, as text that differs whenever a value differs.
    var signature: String {
        let fields: [String] = [
            "\(id)", name.debugDescription, note.debugDescription, "\(flag)", "\(small)", "\(medium)", "\(wide)",
            "\(count.map(String.init) ?? "nil")", "\(ratio.bitPattern)", "\(score.bitPattern)",
            "\(maybeScore.map { "\($0.bitPattern)" } ?? "nil")", "\(when.timeIntervalSinceReferenceDate.bitPattern)",
            blob.base64EncodedString(), maybeBlob?.base64EncodedString() ?? "nil", uuid.uuidString,
            objectId.stringValue, "\(decimal)",
        ]
        return fields.joined(separator: "|")
    }

    /// The same random objects on every call, `range` of them: ids 0, 3, 6... for the first 500 (in key order:
    /// their inserts wait and reach the trees at their right edge), then -1, -2... below them.
    static func samples(_ range: Range<Int>) -> [DITRow] {
        var random = SplitMix64(seed: 0xD1_7EC7)
        let all = (0..<range.upperBound).map { i in DITRow.random(i < 500 ? i * 3 : 499 - i, &random) }
        return Array(all[range])
    }

    /// Random values, edge values among them.
    static func random(_ id: Int, _ random: inout SplitMix64) -> DITRow {
        let row = DITRow()
        row.id = id
        let strings = ["", "a", "é", "日本語のテキスト", "🎉🎉", String(repeating: "x", count: 300), "name-\(id)"]
        row.name = strings[Int(random.next() % UInt64(strings.count))]
        row.note = random.next() % 3 == 0 ? nil : strings[Int(random.next() % UInt64(strings.count))]
        row.flag = random.next() % 2 == 0
        row.small = Int8(truncatingIfNeeded: random.next())
        row.medium = [Int16.min, Int16.max, 0, Int16(truncatingIfNeeded: random.next())][Int(random.next() % 4)]
        row.wide = Int32(truncatingIfNeeded: random.next())
        row.count =
            random.next() % 2 == 0
            ? nil
            : [Int.min, Int.max, Int(truncatingIfNeeded: random.next())][
                Int(random.next() % 3)]
        row.ratio = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()) & 0x7F7F_FFFF)
        row.score =
            [-0.0, .infinity, .leastNonzeroMagnitude, Double(Int64(truncatingIfNeeded: random.next())) / 7][
                Int(random.next() % 4)]
        row.maybeScore = random.next() % 2 == 0 ? nil : Double(random.next() % 1000) / 3
        row.when = Date(timeIntervalSinceReferenceDate: Double(Int32(truncatingIfNeeded: random.next())))
        row.blob = Data((0..<Int(random.next() % 70)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        row.maybeBlob = random.next() % 2 == 0 ? nil : Data(repeating: 7, count: Int(random.next() % 3))
        row.uuid = UUID(uuid: withUnsafeBytes(of: (random.next(), random.next())) { $0.load(as: uuid_t.self) })
        row.objectId = ObjectId(
            String(format: "%016llx%08x", random.next(), UInt32(truncatingIfNeeded: random.next())))!
        row.decimal = Decimal128(Int(truncatingIfNeeded: random.next() % 100_000))
        return row
    }
}

/// The same class before and after a migration that adds properties: V2 declares them first, and `b` before
/// `a`, while the file keeps its columns in V1's order and adds the new ones at the end.
enum DITOrderV1 {
    final class DITSwap: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var a = ""
        @Persisted var b = ""
        @Persisted var n = 0
    }
}

enum DITOrderV2 {
    final class DITSwap: Object {
        @Persisted var added = ""
        @Persisted(primaryKey: true) var id = 0
        @Persisted var b = ""
        @Persisted var m = 0
        @Persisted var a = ""
        @Persisted var n = 0
    }
}

/// Models whose tables cannot be written straight from their values: a list, a mixed value.
final class DITWithList: Object {
    @Persisted var name = ""
    @Persisted var tags: List<String>
}

final class DITMixed: Object {
    @Persisted var name = ""
    @Persisted var value: AnyRealmValue
}

/// An enum's `rawValue` getter is the app's code: its table goes the usual way.
final class DITWithEnum: Object {
    @Persisted var name = ""
    @Persisted var level = DITLevel.mid
}

/// A UUID primary key and an index: each direct insert reaches the trees at once.
final class DITIndexed: Object {
    @Persisted(primaryKey: true) var id = UUID()
    @Persisted var int = 0
    @Persisted var int8: Int8 = 0
    @Persisted var string = ""
    @Persisted var optionalString: String?
    @Persisted(indexed: true) var indexedName = ""
}

@Suite struct DirectInsertTests {
    @Test func aPlanIsMadeForTablesOfSingleValuesOnly() {
        func plan(_ type: ObjectBase.Type) -> DirectInsertPlan? {
            let info = ClassRegistry.info(for: type)
            return TableBinding(info: info, tableID: TableID(1), stored: info.tableSchema).direct
        }
        let row = plan(DITRow.self)
        #expect(row?.ordinals == Array(0..<17), "a fresh table's columns are the properties in order")
        // Measured: name, note, count, maybeScore, blob, maybeBlob.
        #expect(row?.measured == [1, 2, 7, 10, 12, 13])
        #expect(plan(DITIndexed.self) != nil)
        #expect(plan(DITWithEnum.self) == nil, "an enum")
        #expect(plan(AllTypes.self) == nil, "enums")
        #expect(plan(DITWithList.self) == nil, "a list")
        #expect(plan(Dog.self) == nil, "a link")
        #expect(plan(DITMixed.self) == nil, "a mixed value")
    }

    @Test func objectsAddedAfterAMigrationGoToTheirColumns() async throws {
        let url = temporaryRealmURL()
        do {
            let realm = try await Realm(
                configuration: migrationConfiguration(url, [DITOrderV1.DITSwap.self], version: 1))
            try await realm.write { realm in
                let old = DITOrderV1.DITSwap()
                (old.id, old.a, old.b, old.n) = (1, "a1", "b1", 10)
                realm.add(old)
            }
        }
        let realm = try await Realm(configuration: migrationConfiguration(url, [DITOrderV2.DITSwap.self], version: 2))
        try await realm.write { realm in
            for i in 2...5 {
                let new = DITOrderV2.DITSwap()
                (new.id, new.a, new.b, new.n, new.m, new.added) = (i, "a\(i)", "b\(i)", 10 * i, -i, "x\(i)")
                realm.add(new)
            }
        }
        let stored = await realm.read { realm in
            realm.objects(DITOrderV2.DITSwap.self).sorted(by: \.id).map {
                "\($0.id) \($0.a) \($0.b) \($0.n) \($0.m) \($0.added)"
            }
        }
        #expect(
            stored == ["1 a1 b1 10 0 ", "2 a2 b2 20 -2 x2", "3 a3 b3 30 -3 x3", "4 a4 b4 40 -4 x4", "5 a5 b5 50 -5 x5"])
    }

    @Test func objectsAddedPlainlyAreStoredAsThoseAddedTheValueWay() async throws {
        let expected = DITRow.samples(0..<600).sorted { $0.id < $1.id }.map(\.signature)
        for update in [Realm.UpdatePolicy.error, .modified] {
            let realm = try await Realm(configuration: testConfiguration([DITRow.self]))
            for batch in [0..<500, 500..<600] {
                // `.error` writes each row from its object's values; `.modified` looks the key up, then
                // encodes a row of values.
                try await realm.write { realm in
                    for row in DITRow.samples(batch) { realm.add(row, update: update) }
                }
            }
            let stored = await realm.read { $0.objects(DITRow.self).sorted(by: \.id).map(\.signature) }
            #expect(stored == expected, "update: \(update)")
        }
    }

    @Test func aTableWithAnIndexGetsEachDirectInsertInItsTrees() async throws {
        let realm = try await Realm(configuration: testConfiguration([DITIndexed.self]))
        @Sendable func describe(_ object: DITIndexed) -> String {
            "\(object.int)/\(object.int8)/\(object.string)/\(object.optionalString ?? "nil")/\(object.indexedName)"
        }
        let (ids, expected) = try await realm.write { realm in
            let all = (0..<100).map { i in
                let object = DITIndexed()
                object.int = i
                object.int8 = Int8(truncatingIfNeeded: i * 37)
                object.string = "s\(i)"
                object.indexedName = "n\(i % 7)"
                object.optionalString = i % 2 == 0 ? nil : "o\(i)"
                return object
            }
            let expected = all.map(describe)
            for object in all { realm.add(object) }
            return (all.map(\.id), expected)
        }
        let (stored, n3) = await realm.read { realm in
            (
                ids.map { id in realm.object(ofType: DITIndexed.self, forPrimaryKey: id).map(describe) ?? "missing" },
                realm.objects(DITIndexed.self).where { $0.indexedName == "n3" }.map(\.int).sorted()
            )
        }
        #expect(stored == expected)
        #expect(n3 == Array(stride(from: 3, to: 100, by: 7)))
    }

    @Test func aDuplicatePrimaryKeyIsRefusedNamingTheKey() async throws {
        let realm = try await Realm(configuration: testConfiguration([DITRow.self]))
        try await realm.write { realm in
            let row = DITRow()
            row.id = 41
            realm.add(row)
        }
        let error = await #expect(throws: RealmError.self) {
            try await realm.write { realm in
                let row = DITRow()
                row.id = 41
                realm.add(row)
            }
        }
        #expect(error?.code == .primaryKeyExists)
        #expect(error?.message.contains("primary key 41") == true, "\(String(describing: error))")
        #expect(await realm.read { $0.objects(DITRow.self).count } == 1)
    }

    @Test func anOversizedStringIsRefusedAndTheRealmStaysUsable() async throws {
        let realm = try await Realm(configuration: testConfiguration([DITRow.self]))
        await expectRealmError(.limitExceeded) {
            try await realm.write { realm in
                let ok = DITRow()
                ok.id = 1
                realm.add(ok)
                let huge = DITRow()
                huge.id = 2
                huge.note = String(repeating: "y", count: 16 * 1024 * 1024 + 1)
                realm.add(huge)
            }
        }
        #expect(await realm.read { $0.objects(DITRow.self).count } == 0, "nothing of the failed write is kept")
        try await realm.write { realm in
            let row = DITRow()
            row.id = 3
            row.note = "fine"
            realm.add(row)
        }
        #expect(await realm.read { $0.objects(DITRow.self).map(\.note) } == ["fine"])
    }
}
