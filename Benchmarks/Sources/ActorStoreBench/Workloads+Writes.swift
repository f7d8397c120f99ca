import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import GRDB

extension Bench {
    // MARK: W1 bulk insert

    /// W1: insert n objects into a new, empty store in one transaction, neither side syncing at commit (see
    /// ``Workspace/bulkConfiguration(_:)``). Timed: the `write` call only (the file is created and the table
    /// defined before). Checked: count and checksum read back afterwards.
    func w1() async throws {
        for n in plan.bulk {
            let nText = Report.format(Double(n)).replacingOccurrences(of: ".", with: "")
            try await run(
                "W1", "bulk insert of \(nText) objects, one transaction (no sync at commit, either side)",
                metrics: [Metric(key: "seconds", label: "insert \(nText) objects, 1 transaction", unit: "s")],
                engines: [
                    .actorStore: { [self] in
                        let path = workspace.newPath("w1", "realm")
                        defer { workspace.remove(path) }
                        let realm = try await Realm(configuration: Workspace.bulkConfiguration(path))
                        let (seconds, _) = try await timed { try await insertObjects(realm, 0..<n, indexed: false) }
                        let (count, digest) = await realmSummary(realm, Item.self)
                        return Sample(metrics: ["seconds": seconds], checks: checks(count: count, digest: digest))
                    },
                    .grdbRecords: { [self] in
                        try await grdbInsert(n, raw: false)
                    },
                    .grdbRaw: { [self] in
                        try await grdbInsert(n, raw: true)
                    },
                ])
        }
    }

    private func grdbInsert(_ n: Int, raw: Bool) async throws -> Sample {
        let path = workspace.newPath("w1", "sqlite")
        defer { workspace.remove(path) }
        let pool = try Workspace.openPool(path)
        try await pool.write { db in try Schema.create(db, indexed: false) }
        let (seconds, _) = try await timed {
            if raw {
                try await pool.write { db in
                    let statement = try db.cachedStatement(sql: Raw.insertSQL)
                    for i in 0..<n { try Raw.insert(statement, db, i) }
                }
            } else {
                try await pool.write { db in
                    for i in 0..<n { try ItemRecord(i).insert(db) }
                }
            }
        }
        let (count, digest) = try await pool.read { db in try Schema.summary(db) }
        try pool.close()
        return Sample(metrics: ["seconds": seconds], checks: checks(count: count, digest: digest))
    }

    // MARK: W2 single-object durable transactions

    /// W2: `commits` single-object durable transactions into an empty store: serially from one task, and
    /// from 16 concurrent tasks (each does commits/16). Timed: all the commits. Checked: count and checksum.
    func w2() async throws {
        let n = plan.commits
        let writers = plan.writers
        try await run(
            "W2", "\(n) single-object durable transactions: serial, and \(writers) concurrent writer tasks",
            metrics: [
                Metric(key: "serialRate", label: "serial: commits/s", unit: "/s", higherIsBetter: true),
                Metric(key: "serialP50", label: "serial: commit latency p50", unit: "µs"),
                Metric(
                    key: "control", label: "control: raw append + fdatasync p50, just before ActorStore's serial run",
                    unit: "µs", engines: [.actorStore]),
                Metric(key: "concurrentRate", label: "\(writers) writers: commits/s", unit: "/s", higherIsBetter: true),
            ],
            engines: [
                .actorStore: { [self] in
                    var sample = Sample()
                    // The disk's state right now: the serial rate follows it closely on this shared machine.
                    sample.metrics["control"] = try appendSyncP50(samples: 200) * 1e6
                    // Serial: one realm, one task.
                    do {
                        let path = workspace.newPath("w2", "realm")
                        defer { workspace.remove(path) }
                        let realm = try await Realm(configuration: Workspace.realmConfiguration(path))
                        (sample.metrics["serialRate"], sample.metrics["serialP50"]) = try await serialCommits(realm, n)
                        let (count, digest) = await realmSummary(realm, Item.self)
                        sample.checks["serialCount"] = "\(count)"
                        sample.checks["serialDigest"] = "\(digest)"
                    }
                    // Concurrent: each writer task has its own Realm actor on the file (as each thread has its
                    // own Realm instance in Realm Swift); they share one engine and its group commit.
                    do {
                        let path = workspace.newPath("w2c", "realm")
                        defer { workspace.remove(path) }
                        let configuration = Workspace.realmConfiguration(path)
                        var realms: [Realm] = []
                        for _ in 0..<writers { realms.append(try await Realm(configuration: configuration)) }
                        let start = monotonicNanos()
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            for w in 0..<writers {
                                let realm = realms[w]
                                group.addTask {
                                    for i in stride(from: w, to: n, by: writers) {
                                        try await realm.write { realm in
                                            let object = Item()
                                            object.fill(i)
                                            realm.add(object)
                                        }
                                    }
                                }
                            }
                            try await group.waitForAll()
                        }
                        sample.metrics["concurrentRate"] = Double(n) / secondsSince(start)
                        let (count, digest) = await realmSummary(realms[0], Item.self)
                        sample.checks["concurrentCount"] = "\(count)"
                        sample.checks["concurrentDigest"] = "\(digest)"
                    }
                    return sample
                },
                .grdbRecords: { [self] in try await grdbCommits(n, writers: writers, raw: false) },
                .grdbRaw: { [self] in try await grdbCommits(n, writers: writers, raw: true) },
            ])
    }

    private func grdbCommits(_ n: Int, writers: Int, raw: Bool) async throws -> Sample {
        @Sendable func insert(_ pool: DatabasePool, _ i: Int) async throws {
            if raw {
                try await pool.write { db in try Raw.insert(try db.cachedStatement(sql: Raw.insertSQL), db, i) }
            } else {
                try await pool.write { db in try ItemRecord(i).insert(db) }
            }
        }
        var sample = Sample()
        do {
            let path = workspace.newPath("w2", "sqlite")
            defer { workspace.remove(path) }
            let pool = try Workspace.openPool(path)
            try await pool.write { db in try Schema.create(db, indexed: false) }
            (sample.metrics["serialRate"], sample.metrics["serialP50"]) = try await serialCommits(pool, n, raw: raw)
            let (count, digest) = try await pool.read { db in try Schema.summary(db) }
            sample.checks["serialCount"] = "\(count)"
            sample.checks["serialDigest"] = "\(digest)"
            try pool.close()
        }
        do {
            // One DatabasePool shared by the writer tasks: GRDB's one writer connection serialises them.
            let path = workspace.newPath("w2c", "sqlite")
            defer { workspace.remove(path) }
            let pool = try Workspace.openPool(path)
            try await pool.write { db in try Schema.create(db, indexed: false) }
            let start = monotonicNanos()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<writers {
                    group.addTask {
                        for i in stride(from: w, to: n, by: writers) { try await insert(pool, i) }
                    }
                }
                try await group.waitForAll()
            }
            sample.metrics["concurrentRate"] = Double(n) / secondsSince(start)
            let (count, digest) = try await pool.read { db in try Schema.summary(db) }
            sample.checks["concurrentCount"] = "\(count)"
            sample.checks["concurrentDigest"] = "\(digest)"
            try pool.close()
        }
        return sample
    }
}

extension Bench {
    // MARK: W14 single-object non-durable transactions

    /// W14: `fastCommits` serial single-object transactions into an empty store without a sync per commit:
    /// ActorStore at durability `.none`, GRDB at its default `synchronous=NORMAL` (WAL: no fsync at commit,
    /// only at checkpoints). What it measures is the per-commit overhead of each engine (the transaction,
    /// the record, the hand-offs between tasks), not the disk. Timed: all the commits. Checked: count and
    /// checksum.
    func w14() async throws {
        let n = plan.fastCommits
        try await run(
            "W14", "\(n) serial single-object non-durable transactions (ActorStore .none, GRDB synchronous=NORMAL)",
            metrics: [
                Metric(key: "rate", label: "serial non-durable commits/s", unit: "/s", higherIsBetter: true),
                Metric(key: "p50", label: "commit latency p50", unit: "µs"),
            ],
            engines: [
                .actorStore: { [self] in
                    let path = workspace.newPath("w14", "realm")
                    defer { workspace.remove(path) }
                    var configuration = Workspace.realmConfiguration(path)
                    configuration.durability = .none
                    let realm = try await Realm(configuration: configuration)
                    let (rate, p50) = try await serialCommits(realm, n)
                    let (count, digest) = await realmSummary(realm, Item.self)
                    return Sample(metrics: ["rate": rate, "p50": p50], checks: checks(count: count, digest: digest))
                },
                .grdbRecords: { [self] in try await grdbFastCommits(n, raw: false) },
                .grdbRaw: { [self] in try await grdbFastCommits(n, raw: true) },
            ])
    }

    private func grdbFastCommits(_ n: Int, raw: Bool) async throws -> Sample {
        let path = workspace.newPath("w14", "sqlite")
        defer { workspace.remove(path) }
        let pool = try Workspace.openPool(path)
        let mode = try await pool.write { db in
            try Schema.create(db, indexed: false)
            return try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
        }
        guard mode == 1 else { throw Failure("W14: GRDB's writer runs with synchronous=\(mode), not NORMAL (1)") }
        let (rate, p50) = try await serialCommits(pool, n, raw: raw)
        let (count, digest) = try await pool.read { db in try Schema.summary(db) }
        try pool.close()
        return Sample(metrics: ["rate": rate, "p50": p50], checks: checks(count: count, digest: digest))
    }
}
