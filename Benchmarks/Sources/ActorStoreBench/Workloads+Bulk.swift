import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import GRDB
import GRDBSQLite

/// W12's model: the benchmark's `Item` (same class name, so the same table) with `age` indexed, for adding the
/// index to an existing store through a schema-version bump.
enum Reindexed {
    final class Item: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
        @Persisted(indexed: true) var age = 0
        @Persisted var score = 0.0
    }
}

extension Bench {
    // MARK: W12 bulk work: index build, set-based updates and deletes, top-k, indexed range count

    /// W12: on a private copy of the 1M store (no index), in this order: add an index on `age`; update every
    /// object (`score += 1`, a computed update); set every object's score to one value; the top-1 by primary key
    /// (descending) and by an unindexed property; count an indexed range. Then, on a second fresh copy, delete
    /// the first half by a primary-key range. Checked: the top-k ids, the range count and what is left (count,
    /// checksum). Neither side syncs at commit, and ActorStore compacts only when asked: after the three updates,
    /// timed on a row of its own (``Workspace/bulkConfiguration(_:)``).
    func w12() async throws {
        let n = plan.big
        let half = n / 2
        let realmFixture = try await fixtures.realm(n, indexed: false)
        let poolFixture = try await fixtures.pool(n, indexed: false)
        let repeats = 100
        let metrics = [
            Metric(key: "open", label: "control: open the store, no change", unit: "ms"),
            Metric(key: "index", label: "add an index on age (ActorStore: open with the new schema)", unit: "ms"),
            Metric(
                key: "update", label: "update all: score += 1 (results.update / UPDATE … SET score = score + 1)",
                unit: "s"),
            Metric(
                key: "updateKeyPath",
                label: "update all: score += 1 (results.update(\\.score) / the same UPDATE again)",
                unit: "s"),
            Metric(key: "setValue", label: "set all: score = 7 (results.setValue / UPDATE … SET score = 7)", unit: "s"),
            Metric(
                key: "compact", label: "compact() after the three updates (ActorStore only: SQLite updated in place)",
                unit: "s", engines: [.actorStore]),
            Metric(key: "topID", label: "sorted(by id, descending).limit(1), per query", unit: "µs"),
            Metric(key: "topScore", label: "sorted(by score).limit(1) (no index), per query", unit: "ms"),
            Metric(key: "countRange", label: "count age BETWEEN {10, 19} (index), per query", unit: "µs"),
            Metric(key: "delete", label: "delete half: id < \(half) (primary-key range; fresh copy)", unit: "s"),
        ]
        try await run(
            "W12",
            "bulk work on \(Report.format(Double(n))) objects: index build, set-based writes, top-k, range count",
            metrics: metrics,
            engines: [
                .actorStore: { [self] in
                    let path = try fixtures.copy(realmFixture, "realm")
                    defer { workspace.remove(path) }
                    var sample = Sample()
                    do {
                        // Let any engine released by an earlier workload finish closing, untimed.
                        try await Task.sleep(for: .milliseconds(200))
                        let (seconds, count) = try await timed {
                            let realm = try await Realm(configuration: Workspace.bulkConfiguration(path))
                            return await realm.read { $0.objects(Item.self).count }
                        }
                        sample.metrics["open"] = seconds * 1e3
                        if count != n { throw Failure("W12: ActorStore opened \(count) objects") }
                    }
                    // Adding an index needs no schema version change.
                    var configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: path))
                    configuration.objectTypes = [Reindexed.Item.self]
                    configuration.durability = .none  // as `Workspace.bulkConfiguration`
                    configuration.automaticCompaction = false
                    try await Task.sleep(for: .milliseconds(200))  // the control's engine closes, untimed
                    let (indexSeconds, realm) = try await timed { try await Realm(configuration: configuration) }
                    sample.metrics["index"] = indexSeconds * 1e3
                    sample.metrics["update"] = try await timed {
                        try await realm.write { realm in realm.objects(Reindexed.Item.self).update { $0.score += 1 } }
                    }.0
                    sample.metrics["updateKeyPath"] = try await timed {
                        try await realm.write { realm in
                            realm.objects(Reindexed.Item.self).update(\.score) { $0 += 1 }
                        }
                    }.0
                    sample.metrics["setValue"] = try await timed {
                        try await realm.write { realm in
                            realm.objects(Reindexed.Item.self).setValue(7.0, forKey: "score")
                        }
                    }.0
                    // The three updates left two of every three rows in the file dead: what reclaiming them costs
                    // (SQLite updated its pages in place).
                    sample.metrics["compact"] = try await timed { try await realm.compact() }.0
                    let (topSeconds, topID) = try await timed {
                        try await realm.read { realm in
                            var id = 0
                            for _ in 0..<repeats {
                                id =
                                    try realm.objects(Reindexed.Item.self).sorted(byKeyPath: "id", ascending: false)
                                    .limit(1).first?.id ?? -1
                            }
                            return id
                        }
                    }
                    sample.metrics["topID"] = topSeconds / Double(repeats) * 1e6
                    let (scoreSeconds, topScore) = try await timed {
                        try await realm.read { realm in
                            var id = 0
                            for _ in 0..<3 {
                                id =
                                    try realm.objects(Reindexed.Item.self).sorted(byKeyPath: "score").limit(1).first?.id
                                    ?? -1
                            }
                            return id
                        }
                    }
                    sample.metrics["topScore"] = scoreSeconds / 3 * 1e3
                    let (countSeconds, rangeCount) = try await timed {
                        try await realm.read { realm in
                            var count = 0
                            for _ in 0..<repeats {
                                count = try realm.objects(Reindexed.Item.self).filter("age BETWEEN {10, 19}").count
                            }
                            return count
                        }
                    }
                    sample.metrics["countRange"] = countSeconds / Double(repeats) * 1e6
                    let (count, digest) = await realm.read { realm in
                        realm.objects(Reindexed.Item.self).reduce((0, 0)) {
                            ($0.0 + 1, $0.1 &+ Dataset.digest(id: $1.id, name: $1.name, age: $1.age, score: $1.score))
                        }
                    }
                    // The delete, on a fresh copy (so that no compaction started by the updates above runs
                    // beside it).
                    let deletePath = try fixtures.copy(realmFixture, "realm")
                    defer { workspace.remove(deletePath) }
                    let fresh = try await Realm(configuration: Workspace.bulkConfiguration(deletePath))
                    sample.metrics["delete"] = try await timed {
                        try await fresh.write { realm in realm.delete(realm.objects(Item.self).where { $0.id < half }) }
                    }.0
                    let (left, leftDigest) = await realmSummary(fresh, Item.self)
                    sample.checks = [
                        "topID": "\(topID)", "topScore": "\(topScore)", "rangeCount": "\(rangeCount)",
                        "count": "\(count)", "digest": "\(digest)", "deleteLeft": "\(left)",
                        "deleteDigest": "\(leftDigest)",
                    ]
                    return sample
                },
                .grdbRecords: { [self] in try await grdbBulk(poolFixture, n: n, repeats: repeats, raw: false) },
                .grdbRaw: { [self] in try await grdbBulk(poolFixture, n: n, repeats: repeats, raw: true) },
            ])
    }

    private func grdbBulk(_ fixture: String, n: Int, repeats: Int, raw: Bool) async throws -> Sample {
        let half = n / 2
        let path = try fixtures.copy(fixture, "sqlite")
        defer { workspace.remove(path) }
        var sample = Sample()
        let (openSeconds, pool) = try await timed { () async throws -> DatabasePool in
            let pool = try Workspace.openPool(path)
            let count = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item") ?? 0 }
            if count != n { throw Failure("W12: GRDB opened \(count) rows") }
            return pool
        }
        sample.metrics["open"] = openSeconds * 1e3
        sample.metrics["index"] =
            try await timed {
                try await pool.write { db in
                    if raw {
                        try db.execute(sql: "CREATE INDEX item_age ON item(age)")
                    } else {
                        try db.create(index: "item_age", on: "item", columns: ["age"])
                    }
                }
            }.0 * 1e3
        sample.metrics["update"] = try await timed {
            try await pool.write { db in
                if raw {
                    try Raw.execute(db.cachedStatement(sql: "UPDATE item SET score = score + 1"), db)
                } else {
                    _ = try ItemRecord.updateAll(db, Column("score").set(to: Column("score") + 1))
                }
            }
        }.0
        sample.metrics["updateKeyPath"] = try await timed {
            try await pool.write { db in
                if raw {
                    try Raw.execute(db.cachedStatement(sql: "UPDATE item SET score = score + 1"), db)
                } else {
                    _ = try ItemRecord.updateAll(db, Column("score").set(to: Column("score") + 1))
                }
            }
        }.0
        sample.metrics["setValue"] = try await timed {
            try await pool.write { db in
                if raw {
                    try Raw.execute(db.cachedStatement(sql: "UPDATE item SET score = ?"), db, 7)
                } else {
                    _ = try ItemRecord.updateAll(db, Column("score").set(to: 7.0))
                }
            }
        }.0
        @Sendable func first(_ db: Database, _ sql: String, _ request: QueryInterfaceRequest<ItemRecord>) throws -> Int
        {
            if raw {
                let s = try db.cachedStatement(sql: sql).sqliteStatement
                sqlite3Reset(s)
                defer { sqlite3Reset(s) }
                return try sqlite3StepRow(s, db) ? sqlite3ColumnInt(s, 0) : -1
            }
            return try request.fetchOne(db)?.id ?? -1
        }
        let (topSeconds, topID) = try await timed {
            try await pool.read { db in
                var id = 0
                for _ in 0..<repeats {
                    id = try first(
                        db, "SELECT id FROM item ORDER BY id DESC LIMIT 1", ItemRecord.order(Column("id").desc).limit(1)
                    )
                }
                return id
            }
        }
        sample.metrics["topID"] = topSeconds / Double(repeats) * 1e6
        let (scoreSeconds, topScore) = try await timed {
            try await pool.read { db in
                var id = 0
                for _ in 0..<3 {
                    id = try first(
                        db, "SELECT id FROM item ORDER BY score LIMIT 1", ItemRecord.order(Column("score")).limit(1))
                }
                return id
            }
        }
        sample.metrics["topScore"] = scoreSeconds / 3 * 1e3
        let (countSeconds, rangeCount) = try await timed {
            try await pool.read { db in
                var count = 0
                for _ in 0..<repeats {
                    if raw {
                        let s = try db.cachedStatement(sql: "SELECT count(*) FROM item WHERE age BETWEEN 10 AND 19")
                            .sqliteStatement
                        sqlite3Reset(s)
                        count = try sqlite3StepRow(s, db) ? sqlite3ColumnInt(s, 0) : -1
                        sqlite3Reset(s)
                    } else {
                        count = try ItemRecord.filter((10...19).contains(Column("age"))).fetchCount(db)
                    }
                }
                return count
            }
        }
        sample.metrics["countRange"] = countSeconds / Double(repeats) * 1e6
        let (count, digest) = try await pool.read { db in try Schema.summary(db) }
        try pool.close()
        // The delete, on a fresh copy, as for ActorStore.
        let deletePath = try fixtures.copy(fixture, "sqlite")
        defer { workspace.remove(deletePath) }
        let fresh = try Workspace.openPool(deletePath)
        sample.metrics["delete"] = try await timed {
            try await fresh.write { db in
                if raw {
                    try Raw.execute(db.cachedStatement(sql: "DELETE FROM item WHERE id < ?"), db, half)
                } else {
                    _ = try ItemRecord.filter(Column("id") < half).deleteAll(db)
                }
            }
        }.0
        let (left, leftDigest) = try await fresh.read { db in try Schema.summary(db) }
        try fresh.close()
        sample.checks = [
            "topID": "\(topID)", "topScore": "\(topScore)", "rangeCount": "\(rangeCount)",
            "count": "\(count)", "digest": "\(digest)", "deleteLeft": "\(left)", "deleteDigest": "\(leftDigest)",
        ]
        return sample
    }

    // MARK: W13 durable commits at the same durability

    /// W13: `commits` serial single-object durable transactions into an empty store, with GRDB at
    /// `synchronous=FULL` (WAL: an fsync of the WAL at every commit), the durability ActorStore's `.full` gives.
    /// Timed: all the commits. Checked: count and checksum.
    func w13() async throws {
        let n = plan.commits
        let interleaved = InterleavedShares()
        try await run(
            "W13", "\(n) serial single-object durable transactions, GRDB at synchronous=FULL",
            metrics: [
                Metric(
                    key: "rate", label: "serial durable commits/s (GRDB synchronous=FULL)", unit: "/s",
                    higherIsBetter: true),
                Metric(key: "p50", label: "commit latency p50", unit: "µs"),
                Metric(key: "control", label: "control: raw append + fdatasync p50, just before the run", unit: "µs"),
                Metric(
                    key: "interleaved",
                    label:
                        "interleaved: durable commits/s, blocks of \(Self.interleavedBlock) taking turns with GRDB raw",
                    unit: "/s", higherIsBetter: true, engines: [.actorStore, .grdbRaw]),
            ],
            engines: [
                .actorStore: { [self] in
                    var sample = Sample()
                    sample.metrics["control"] = try appendSyncP50(samples: 200) * 1e6
                    let path = workspace.newPath("w13", "realm")
                    defer { workspace.remove(path) }
                    let realm = try await Realm(configuration: Workspace.realmConfiguration(path))
                    (sample.metrics["rate"], sample.metrics["p50"]) = try await serialCommits(realm, n)
                    let (count, digest) = await realmSummary(realm, Item.self)
                    sample.checks = checks(count: count, digest: digest)
                    sample.metrics["interleaved"] = try await interleaved.share(of: .actorStore) {
                        try await interleavedCommits(n)
                    }
                    return sample
                },
                .grdbRecords: { [self] in try await grdbFullCommits(n, raw: false) },
                .grdbRaw: { [self] in
                    var sample = try await grdbFullCommits(n, raw: true)
                    sample.metrics["interleaved"] = try await interleaved.share(of: .grdbRaw) {
                        try await interleavedCommits(n)
                    }
                    return sample
                },
            ])
    }

    /// Commits per block of W13's interleaved row: some 10–30 ms of syncs, short enough that both engines
    /// see the same disk (whose sync latency drifts by 2× over seconds on a shared VM).
    static let interleavedBlock = 50

    /// W13's interleaved row: `n` durable single-object commits on each engine (ActorStore `.full`, GRDB raw
    /// at `synchronous=FULL`), in blocks of ``interleavedBlock`` taking turns, which engine goes first
    /// alternating by block: (ActorStore commits/s, GRDB raw commits/s), each over its own blocks' time.
    /// Checked: both stores hold the same objects afterwards.
    private func interleavedCommits(_ n: Int) async throws -> (actorStore: Double, grdbRaw: Double) {
        let realmPath = workspace.newPath("w13i", "realm")
        let poolPath = workspace.newPath("w13i", "sqlite")
        defer {
            workspace.remove(realmPath)
            workspace.remove(poolPath)
        }
        let realm = try await Realm(configuration: Workspace.realmConfiguration(realmPath))
        let pool = try await openFullPool(poolPath)
        defer { try? pool.close() }
        var realmNanos: UInt64 = 0
        var poolNanos: UInt64 = 0
        let block = Self.interleavedBlock
        for (index, start) in stride(from: 0, to: n, by: block).enumerated() {
            let ids = start..<min(start + block, n)
            for side in index % 2 == 0 ? [0, 1] : [1, 0] {
                let t = monotonicNanos()
                if side == 0 {
                    for i in ids { try await commitOne(realm, i) }
                    realmNanos += monotonicNanos() - t
                } else {
                    for i in ids { try await commitOne(pool, i, raw: true) }
                    poolNanos += monotonicNanos() - t
                }
            }
        }
        let realmSummary = await realmSummary(realm, Item.self)
        let poolSummary = try await pool.read { db in try Schema.summary(db) }
        guard realmSummary == poolSummary, realmSummary.0 == n else {
            throw Failure("W13 interleaved: ActorStore holds \(realmSummary), GRDB \(poolSummary), of \(n) commits")
        }
        return (Double(n) / (Double(realmNanos) / 1e9), Double(n) / (Double(poolNanos) / 1e9))
    }

    /// A GRDB pool at `path` whose writer runs at `synchronous=FULL` (checked), with W13's table.
    private func openFullPool(_ path: String) async throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let pool = try DatabasePool(path: path, configuration: configuration)
        // On the pool's one writer connection, after GRDB's own setup (which sets NORMAL in WAL mode); checked.
        let mode = try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.inTransaction {
                try Schema.create(db, indexed: false)
                return .commit
            }
            return try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
        }
        guard mode == 2 else { throw Failure("W13: GRDB's writer runs with synchronous=\(mode), not FULL (2)") }
        return pool
    }

    private func grdbFullCommits(_ n: Int, raw: Bool) async throws -> Sample {
        var sample = Sample()
        sample.metrics["control"] = try appendSyncP50(samples: 200) * 1e6
        let path = workspace.newPath("w13", "sqlite")
        defer { workspace.remove(path) }
        let pool = try await openFullPool(path)
        (sample.metrics["rate"], sample.metrics["p50"]) = try await serialCommits(pool, n, raw: raw)
        let (count, digest) = try await pool.read { db in try Schema.summary(db) }
        sample.checks = checks(count: count, digest: digest)
        try pool.close()
        return sample
    }
}

/// The two engines' values of one interleaved session (W13), measured once per round by whichever engine
/// of the two runs first and handed to the other.
/// @unchecked: one task drives the benchmark; the engines of a round run one after the other.
final class InterleavedShares: @unchecked Sendable {
    private var waiting: [Engine: Double] = [:]

    /// `engine`'s value: the one waiting for it, or, if none waits, `measure`'s (the other engine's then
    /// waits for it).
    func share(
        of engine: Engine, _ measure: () async throws -> (actorStore: Double, grdbRaw: Double)
    ) async throws -> Double {
        if let value = waiting.removeValue(forKey: engine) { return value }
        let (actorStore, grdbRaw) = try await measure()
        waiting = engine == .actorStore ? [.grdbRaw: grdbRaw] : [.actorStore: actorStore]
        return engine == .actorStore ? actorStore : grdbRaw
    }
}
