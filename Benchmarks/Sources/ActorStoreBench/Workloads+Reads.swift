import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import GRDB

/// An open store kept across the runs of one workload (opened and warmed untimed on first use).
final class Holder<T> {
    var value: T?
}

extension Bench {
    // MARK: W3 random primary-key lookups

    /// W3: `lookups` random primary-key lookups on the big store, reading all four properties of each
    /// object, in one read transaction. The store is opened once per engine and warmed by one untimed pass
    /// of the same loop; each run then times the whole loop, including the hop into the read.
    func w3() async throws {
        let n = plan.big
        let keys = randomKeys(plan.lookups, below: n, seed: 3)
        let expected = Dataset.digest(keys)
        let realmPath = try await fixtures.realm(n, indexed: false)
        let poolPath = try await fixtures.pool(n, indexed: false)
        let realm = Holder<Realm>()
        let records = Holder<DatabasePool>()
        let raw = Holder<DatabasePool>()

        func asLookups(_ realm: Realm) async -> Int {
            await realm.read { realm in
                var digest = 0
                for key in keys { digest &+= realm.object(ofType: Item.self, forPrimaryKey: key)?.digest ?? 0 }
                return digest
            }
        }
        func recordLookups(_ pool: DatabasePool) async throws -> Int {
            try await pool.read { db in
                var digest = 0
                for key in keys { digest &+= try ItemRecord.fetchOne(db, key: key)?.digest ?? 0 }
                return digest
            }
        }
        func rawLookups(_ pool: DatabasePool) async throws -> Int {
            try await pool.read { db in
                let statement = try db.cachedStatement(sql: Raw.selectByKeySQL)
                var digest = 0
                for key in keys { digest &+= try Raw.digest(byKey: statement, db, key) ?? 0 }
                return digest
            }
        }
        let lookups = Report.format(Double(keys.count))
        try await run(
            "W3", "\(lookups) random primary-key lookups on \(Report.format(Double(n))) objects (all four properties)",
            metrics: [
                Metric(key: "seconds", label: "\(lookups) lookups", unit: "s"),
                Metric(key: "rate", label: "lookups/s", unit: "/s", higherIsBetter: true),
            ],
            engines: [
                .actorStore: {
                    if realm.value == nil {
                        realm.value = try await Realm(configuration: Workspace.realmConfiguration(realmPath))
                        _ = await asLookups(realm.value!)
                    }
                    let (seconds, digest) = await timed { await asLookups(realm.value!) }
                    return Sample(
                        metrics: ["seconds": seconds, "rate": Double(keys.count) / seconds],
                        checks: ["digest": "\(digest)", "expected": "\(digest == expected)"])
                },
                .grdbRecords: {
                    if records.value == nil {
                        records.value = try Workspace.openPool(poolPath)
                        _ = try await recordLookups(records.value!)
                    }
                    let (seconds, digest) = try await timed { try await recordLookups(records.value!) }
                    return Sample(
                        metrics: ["seconds": seconds, "rate": Double(keys.count) / seconds],
                        checks: ["digest": "\(digest)", "expected": "\(digest == expected)"])
                },
                .grdbRaw: {
                    if raw.value == nil {
                        raw.value = try Workspace.openPool(poolPath)
                        _ = try await rawLookups(raw.value!)
                    }
                    let (seconds, digest) = try await timed { try await rawLookups(raw.value!) }
                    return Sample(
                        metrics: ["seconds": seconds, "rate": Double(keys.count) / seconds],
                        checks: ["digest": "\(digest)", "expected": "\(digest == expected)"])
                },
            ])
        try records.value?.close()
        try raw.value?.close()
    }

    // MARK: W4 queries

    /// W4: on the big store, `age < 30 AND name BEGINSWITH 'name-1'` (no index: a scan) counted and
    /// fetched, and `age == 42` counted and fetched with an index on age. "Fetch" materialises every match
    /// and reads its four properties. The stores are opened once per engine and warmed by one untimed pass.
    func w4() async throws {
        let n = plan.big
        let plainRealmPath = try await fixtures.realm(n, indexed: false)
        let indexedRealmPath = try await fixtures.realm(n, indexed: true)
        let plainPoolPath = try await fixtures.pool(n, indexed: false)
        let indexedPoolPath = try await fixtures.pool(n, indexed: true)
        let scanIDs = (0..<n).filter { Dataset.age($0) < 30 && Dataset.name($0).hasPrefix("name-1") }
        let indexIDs = (0..<n).filter { Dataset.age($0) == 42 }
        let expected = [
            "scanCount": "\(scanIDs.count)", "scanDigest": "\(Dataset.digest(scanIDs))",
            "indexCount": "\(indexIDs.count)", "indexDigest": "\(Dataset.digest(indexIDs))",
        ]

        let realms = Holder<(Realm, Realm)>()
        let records = Holder<(DatabasePool, DatabasePool)>()
        let raws = Holder<(DatabasePool, DatabasePool)>()

        /// Times the four queries with the given closures; checks against the expected values.
        func measure(
            scanCount: () async throws -> Int, scanFetch: () async throws -> (Int, Int),
            indexCount: () async throws -> Int, indexFetch: () async throws -> (Int, Int)
        ) async throws -> Sample {
            var sample = Sample()
            let (t1, c1) = try await timed(scanCount)
            let (t2, f1) = try await timed(scanFetch)
            let (t3, c2) = try await timed(indexCount)
            let (t4, f2) = try await timed(indexFetch)
            sample.metrics = [
                "scanCount": t1 * 1e3, "scanFetch": t2 * 1e3, "indexCount": t3 * 1e3, "indexFetch": t4 * 1e3,
            ]
            sample.checks = [
                "scanCount": "\(c1)", "scanDigest": "\(f1.1)", "indexCount": "\(c2)", "indexDigest": "\(f2.1)",
            ]
            if sample.checks != expected || f1.0 != c1 || f2.0 != c2 {
                throw Failure("W4: wrong results \(sample.checks) (fetched \(f1.0), \(f2.0)), expected \(expected)")
            }
            return sample
        }

        func asSample(_ plain: Realm, _ indexed: Realm) async throws -> Sample {
            try await measure(
                scanCount: {
                    try await plain.read { realm in
                        try realm.objects(Item.self).filter("age < %@ AND name BEGINSWITH %@", 30, "name-1").count
                    }
                },
                scanFetch: {
                    try await plain.read { realm in
                        var count = 0
                        var digest = 0
                        for object in try realm.objects(Item.self).filter(
                            "age < %@ AND name BEGINSWITH %@", 30, "name-1")
                        {
                            count += 1
                            digest &+= object.digest
                        }
                        return (count, digest)
                    }
                },
                indexCount: {
                    await indexed.read { realm in realm.objects(IndexedItem.self).where { $0.age == 42 }.count }
                },
                indexFetch: {
                    await indexed.read { realm in
                        var count = 0
                        var digest = 0
                        for object in realm.objects(IndexedItem.self).where({ $0.age == 42 }) {
                            count += 1
                            digest &+= object.digest
                        }
                        return (count, digest)
                    }
                })
        }
        // What a GRDB user writes: the query interface with Column; LIKE 'name-1%' is BEGINSWITH here (SQLite's
        // LIKE ignores ASCII case, which these names do not exercise).
        let scanFilter = Column("age") < 30 && Column("name").like("name-1%")
        func recordSample(_ plain: DatabasePool, _ indexed: DatabasePool) async throws -> Sample {
            try await measure(
                scanCount: { try await plain.read { db in try ItemRecord.filter(scanFilter).fetchCount(db) } },
                scanFetch: {
                    try await plain.read { db in
                        let all = try ItemRecord.filter(scanFilter).fetchAll(db)
                        return (all.count, all.reduce(0) { $0 &+ $1.digest })
                    }
                },
                indexCount: {
                    try await indexed.read { db in try ItemRecord.filter(Column("age") == 42).fetchCount(db) }
                },
                indexFetch: {
                    try await indexed.read { db in
                        let all = try ItemRecord.filter(Column("age") == 42).fetchAll(db)
                        return (all.count, all.reduce(0) { $0 &+ $1.digest })
                    }
                })
        }
        let scanWhere = "age < ? AND name LIKE 'name-1%'"
        func rawSample(_ plain: DatabasePool, _ indexed: DatabasePool) async throws -> Sample {
            try await measure(
                scanCount: {
                    try await plain.read { db in
                        try Raw.integer(
                            db.cachedStatement(sql: "SELECT count(*) FROM item WHERE \(scanWhere)"), db, [30])
                    }
                },
                scanFetch: {
                    try await plain.read { db in
                        try Raw.scan(
                            db.cachedStatement(sql: "SELECT id, name, age, score FROM item WHERE \(scanWhere)"), db,
                            [30])
                    }
                },
                indexCount: {
                    try await indexed.read { db in
                        try Raw.integer(db.cachedStatement(sql: "SELECT count(*) FROM item WHERE age = ?"), db, [42])
                    }
                },
                indexFetch: {
                    try await indexed.read { db in
                        try Raw.scan(
                            db.cachedStatement(sql: "SELECT id, name, age, score FROM item WHERE age = ?"), db, [42])
                    }
                })
        }
        let objects = Report.format(Double(n))
        try await run(
            "W4", "queries on \(objects) objects: scan (no index) and indexed equality",
            metrics: [
                Metric(key: "scanCount", label: "count age < 30 AND name BEGINSWITH 'name-1' (scan)", unit: "ms"),
                Metric(
                    key: "scanFetch", label: "fetch the same (\(Report.format(Double(scanIDs.count))) objects)",
                    unit: "ms"),
                Metric(key: "indexCount", label: "count age == 42 (index)", unit: "ms"),
                Metric(
                    key: "indexFetch",
                    label: "fetch age == 42 (index, \(Report.format(Double(indexIDs.count))) objects)", unit: "ms"),
            ],
            engines: [
                .actorStore: {
                    if realms.value == nil {
                        realms.value = (
                            try await Realm(configuration: Workspace.realmConfiguration(plainRealmPath)),
                            try await Realm(configuration: Workspace.realmConfiguration(indexedRealmPath))
                        )
                        _ = try await asSample(realms.value!.0, realms.value!.1)
                    }
                    return try await asSample(realms.value!.0, realms.value!.1)
                },
                .grdbRecords: {
                    if records.value == nil {
                        records.value = (try Workspace.openPool(plainPoolPath), try Workspace.openPool(indexedPoolPath))
                        _ = try await recordSample(records.value!.0, records.value!.1)
                    }
                    return try await recordSample(records.value!.0, records.value!.1)
                },
                .grdbRaw: {
                    if raws.value == nil {
                        raws.value = (try Workspace.openPool(plainPoolPath), try Workspace.openPool(indexedPoolPath))
                        _ = try await rawSample(raws.value!.0, raws.value!.1)
                    }
                    return try await rawSample(raws.value!.0, raws.value!.1)
                },
            ])
        try records.value?.0.close()
        try records.value?.1.close()
        try raws.value?.0.close()
        try raws.value?.1.close()
    }
}
