import ActorStore
import ActorStoreTestSupport
import Foundation
import Testing

// Sorting through an index (`sorted(...).limit(k)`, `first` on a sorted query) and counts of indexed ranges
// must give exactly what sorting and filtering every object in plain Swift gives: the same objects, in the
// same order (nil first ascending and last descending, equal values in insertion order).

final class TKItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var age = 0
    @Persisted(indexed: true) var rank: Int?
    @Persisted var score = 0
}

@Suite struct TopKAndIndexedCountTests {
    struct Row: Sendable {
        let id: Int
        let age: Int
        let rank: Int?
        let score: Int
    }

    /// A realm of `count` items with repeating ages and ranks (some nil), inserted in a shuffled id order.
    static func makeRealm(seed: UInt64, count: Int) async throws -> (Realm, [Row]) {
        var random = SplitMix64(seed: seed)
        let ids = (0..<count).map { $0 * 3 - 40 }.shuffled(using: &random)
        let rows = ids.map { id in
            Row(
                id: id, age: Int.random(in: 0..<15, using: &random),
                rank: Int.random(in: 0..<5, using: &random) == 0 ? nil : Int.random(in: -5..<20, using: &random),
                score: Int.random(in: 0..<100, using: &random))
        }
        let realm = try await Realm(configuration: testConfiguration([TKItem.self]))
        try await realm.write { realm in
            for row in rows {
                realm.create(
                    TKItem.self, value: ["id": row.id, "age": row.age, "rank": row.rank as Any, "score": row.score])
            }
        }
        return (realm, rows)
    }

    /// Plain Swift's stable sort of `rows` by `value`, nil first when ascending.
    static func sorted(_ rows: [Row], ascending: Bool, by value: (Row) -> Int?) -> [Int] {
        rows.enumerated().sorted { a, b in
            let (x, y) = (value(a.element), value(b.element))
            if x != y {
                switch (x, y) {
                case (nil, _): return ascending
                case (_, nil): return !ascending
                case (let x?, let y?): return ascending ? x < y : x > y
                }
            }
            return a.offset < b.offset
        }.map(\.element.id)
    }

    @Test(arguments: [false, true]) func sortedLimitAndFirstMatchPlainSwift(ascending: Bool) async throws {
        let seed = UInt64.random(in: 1...UInt64.max / 2)
        print("top-k seed \(seed)")
        let (realm, rows) = try await Self.makeRealm(seed: seed, count: 400)
        let properties: [(String, @Sendable (Row) -> Int?)] = [
            ("id", { $0.id }), ("age", { $0.age }), ("rank", { $0.rank }), ("score", { $0.score }),
        ]
        for (property, value) in properties {
            let all = Self.sorted(rows, ascending: ascending, by: value)
            for k in [0, 1, 2, 7, 50, 399, 400, 1_000] {
                let got = try await realm.read { realm in
                    try realm.objects(TKItem.self).sorted(byKeyPath: property, ascending: ascending).limit(k).map(\.id)
                }
                #expect(
                    got == Array(all.prefix(k)), "seed \(seed): sorted by \(property) ascending \(ascending) limit \(k)"
                )
            }
            let first = try await realm.read { realm in
                try realm.objects(TKItem.self).sorted(byKeyPath: property, ascending: ascending).first?.id
            }
            #expect(first == all.first, "seed \(seed): first by \(property)")
            // With a filter no index answers: the walk tests each object in order.
            let filtered = Self.sorted(rows.filter { $0.score < 30 }, ascending: ascending, by: value)
            for k in [1, 5, 1_000] {
                let got = try await realm.read { realm in
                    try realm.objects(TKItem.self).filter("score < 30").sorted(
                        byKeyPath: property, ascending: ascending
                    )
                    .limit(k).map(\.id)
                }
                #expect(got == Array(filtered.prefix(k)), "seed \(seed): filtered, by \(property) limit \(k)")
            }
            // Within a write, reading the transaction's own changes (undone before the end of the write).
            let changed = try await realm.write { realm -> [Int] in
                let negative = realm.objects(TKItem.self).where { $0.id < 0 }
                negative.update { $0.score += 1_000 }
                let top = try realm.objects(TKItem.self).sorted(byKeyPath: property, ascending: ascending).limit(3)
                    .map(\.id)
                negative.update { $0.score -= 1_000 }
                return top
            }
            let withBigScores = Self.sorted(rows, ascending: ascending) { row in
                property == "score" ? (row.id < 0 ? row.score + 1_000 : row.score) : value(row)
            }
            #expect(changed == Array(withBigScores.prefix(3)), "seed \(seed): within a write, by \(property)")
        }
    }

    @Test func rangesAndBetweenOnThePrimaryKeyUseTheIndex() async throws {
        let (realm, _) = try await Self.makeRealm(seed: 7, count: 300)
        let plans = try await realm.read { realm in
            try [
                "id BETWEEN {10, 40}", "id >= 10 AND id < 40", "age BETWEEN {3, 4}",
                "age > 3 AND age <= 4 AND score < 50",
                "score BETWEEN {3, 4}",
            ].map { try realm.objects(TKItem.self).filter($0).explain() }
        }
        #expect(plans[0].contains("index on 'id': 10 candidates, all matches"), "\(plans[0])")
        #expect(plans[1].contains("index on 'id': 10 candidates, all matches"), "\(plans[1])")
        #expect(plans[2].contains("index on 'age'") && plans[2].contains("all matches"), "\(plans[2])")
        #expect(plans[3].contains("index on 'age'") && plans[3].contains("each tested"), "\(plans[3])")
        #expect(plans[4].contains("scan"), "\(plans[4])")
    }

    @Test func indexedCountsMatchPlainSwift() async throws {
        let seed = UInt64.random(in: 1...UInt64.max / 2)
        print("indexed count seed \(seed)")
        let (realm, rows) = try await Self.makeRealm(seed: seed, count: 500)
        var random = SplitMix64(seed: seed)
        for _ in 0..<60 {
            let a = Int.random(in: -5..<20, using: &random)
            let b = a + Int.random(in: -2..<10, using: &random)
            let i = Int.random(in: -60..<1_600, using: &random)
            let j = i + Int.random(in: -10..<400, using: &random)
            let cases: [(String, (Row) -> Bool)] = [
                ("age == \(a)", { $0.age == a }),
                ("age BETWEEN {\(a), \(b)}", { $0.age >= a && $0.age <= b }),
                ("age >= \(a) AND age < \(b)", { $0.age >= a && $0.age < b }),
                ("age > \(a) AND age <= \(b) AND age != \(a + 1)", { $0.age > a && $0.age <= b && $0.age != a + 1 }),
                ("rank BETWEEN {\(a), \(b)}", { $0.rank.map { $0 >= a && $0 <= b } ?? false }),
                ("rank < \(a)", { $0.rank.map { $0 < a } ?? false }),
                ("id BETWEEN {\(i), \(j)}", { $0.id >= i && $0.id <= j }),
                ("id > \(i) AND id < \(j)", { $0.id > i && $0.id < j }),
                ("id >= \(i) AND score < 50", { $0.id >= i && $0.score < 50 }),
                ("age BETWEEN {\(Double(a) + 0.5), \(b)}", { Double($0.age) >= Double(a) + 0.5 && $0.age <= b }),
            ]
            for (format, test) in cases {
                let (count, ids) = try await realm.read { realm in
                    let results = try realm.objects(TKItem.self).filter(format)
                    return (results.count, Set(results.map(\.id)))
                }
                let expected = rows.filter(test)
                #expect(count == expected.count, "seed \(seed): count of \(format)")
                #expect(ids == Set(expected.map(\.id)), "seed \(seed): \(format)")
            }
        }
    }
}

/// The same class (by name) before and after its `age` became indexed.
enum IndexAdded {
    enum Before {
        final class IAThing: Object {
            @Persisted(primaryKey: true) var id = 0
            @Persisted var age = 0
        }
    }
    enum After {
        final class IAThing: Object {
            @Persisted(primaryKey: true) var id = 0
            @Persisted(indexed: true) var age = 0
        }
    }
}

@Suite struct IndexAddedAtOpenTests {
    @Test func openingWithAnIndexedPropertyBuildsItsIndexFromTheObjects() async throws {
        let url = temporaryRealmURL()
        var before = Realm.Configuration(fileURL: url)
        before.objectTypes = [IndexAdded.Before.IAThing.self]
        before.durability = .none
        do {
            let realm = try await Realm(configuration: before)
            try await realm.write { realm in
                for i in 0..<500 { realm.create(IndexAdded.Before.IAThing.self, value: ["id": i, "age": i * 7 % 31]) }
            }
            let plan = try await realm.read {
                try $0.objects(IndexAdded.Before.IAThing.self).filter("age == 3").explain()
            }
            #expect(plan.contains("scan"))
        }
        var after = before
        after.objectTypes = [IndexAdded.After.IAThing.self]
        let realm = try await Realm(configuration: after)
        let (plan, ids, count) = try await realm.read { realm in
            let results = try realm.objects(IndexAdded.After.IAThing.self).filter("age == 3")
            return (results.explain(), results.map(\.id), results.count)
        }
        #expect(plan.contains("index on 'age'"), "\(plan)")
        let expected = (0..<500).filter { $0 * 7 % 31 == 3 }
        #expect(ids == expected)
        #expect(count == expected.count)
        // The index follows later writes.
        try await realm.write { realm in
            realm.objects(IndexAdded.After.IAThing.self).where { $0.id < 100 }.setValue(3, forKey: "age")
        }
        let updated = try await realm.read { try $0.objects(IndexAdded.After.IAThing.self).filter("age == 3").count }
        #expect(updated == Set(expected + Array(0..<100)).count)
    }
}
