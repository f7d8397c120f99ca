import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import GRDB

extension Bench {
    // MARK: W5 update all

    /// W5: add 1 to `score` of every object of the big store, in one transaction, neither side syncing at commit
    /// (``Workspace/bulkConfiguration(_:)``). Each engine works
    /// on its own copy of the store, opened once; every run updates all objects again. Checked afterwards:
    /// count and checksum (every engine has run the same number of times at the end of a round).
    ///
    /// ActorStore and GRDB records update object by object (`object.score += 1`;
    /// `record.updateChanges(db) { $0.score += 1 }`); GRDB raw is one set-based `UPDATE item SET score = score + 1`
    /// (also what `ItemRecord.updateAll(db, Column("score") += 1)` runs). The second metric compares object-by-object
    /// work with raw statements row by row, on a copy of its own: GRDB raw reads every (id, score) with a prepared
    /// `SELECT`, then runs one prepared `UPDATE item SET score = ? WHERE id = ?` per row; for ActorStore and GRDB
    /// records it is the same object-by-object run as the first metric.
    func w5() async throws {
        let n = plan.big
        let realmPath = try fixtures.copy(try await fixtures.realm(n, indexed: false), "realm")
        let recordsPath = try fixtures.copy(try await fixtures.pool(n, indexed: false), "sqlite")
        let rawPath = try fixtures.copy(try await fixtures.pool(n, indexed: false), "sqlite")
        let rawRowsPath = try fixtures.copy(try await fixtures.pool(n, indexed: false), "sqlite")
        defer {
            workspace.remove(realmPath)
            workspace.remove(recordsPath)
            workspace.remove(rawPath)
            workspace.remove(rawRowsPath)
        }
        let realm = Holder<Realm>()
        let records = Holder<DatabasePool>()
        let raw = Holder<DatabasePool>()
        let rawRows = Holder<DatabasePool>()
        try await run(
            "W5", "update one property of all \(Report.format(Double(n))) objects, one transaction (no sync at commit)",
            metrics: [
                Metric(key: "seconds", label: "score += 1 on every object", unit: "s"),
                Metric(key: "perRow", label: "object by object (raw: one UPDATE … WHERE id = ? per row)", unit: "s"),
            ],
            engines: [
                .actorStore: {
                    if realm.value == nil {
                        realm.value = try await Realm(configuration: Workspace.bulkConfiguration(realmPath))
                    }
                    let r = realm.value!
                    let (seconds, _) = try await timed {
                        try await r.write { realm in
                            for object in realm.objects(Item.self) { object.score += 1 }
                        }
                    }
                    let (count, digest) = await realmSummary(r, Item.self)
                    return Sample(
                        metrics: ["seconds": seconds, "perRow": seconds], checks: checks(count: count, digest: digest))
                },
                .grdbRecords: {
                    if records.value == nil { records.value = try Workspace.openPool(recordsPath) }
                    let pool = records.value!
                    let (seconds, _) = try await timed {
                        try await pool.write { db in
                            for var record in try ItemRecord.fetchAll(db) {
                                try record.updateChanges(db) { $0.score += 1 }
                            }
                        }
                    }
                    let (count, digest) = try await pool.read { db in try Schema.summary(db) }
                    return Sample(
                        metrics: ["seconds": seconds, "perRow": seconds], checks: checks(count: count, digest: digest))
                },
                .grdbRaw: {
                    if raw.value == nil { raw.value = try Workspace.openPool(rawPath) }
                    let pool = raw.value!
                    let (seconds, _) = try await timed {
                        try await pool.write { db in
                            try Raw.execute(db.cachedStatement(sql: "UPDATE item SET score = score + 1"), db)
                        }
                    }
                    let (count, digest) = try await pool.read { db in try Schema.summary(db) }
                    if rawRows.value == nil { rawRows.value = try Workspace.openPool(rawRowsPath) }
                    let rowsPool = rawRows.value!
                    let (perRow, _) = try await timed {
                        try await rowsPool.write { db in try Raw.incrementScoresRowByRow(db, n) }
                    }
                    let rowsSummary = try await rowsPool.read { db in try Schema.summary(db) }
                    if rowsSummary != (count, digest) {
                        throw Failure(
                            "W5: row-by-row UPDATEs left \(rowsSummary), the set-based UPDATE \((count, digest))")
                    }
                    return Sample(
                        metrics: ["seconds": seconds, "perRow": perRow], checks: checks(count: count, digest: digest))
                },
            ])
        try records.value?.close()
        try raw.value?.close()
        try rawRows.value?.close()
    }

    // MARK: W6 delete half, compact

    /// W6: on a fresh copy of the big store per run, delete the objects with age < 50 (every other run of
    /// 50 ids: half the objects, spread over the whole file) in one transaction, neither side syncing at commit
    /// (``Workspace/bulkConfiguration(_:)``); file size before,
    /// after the delete, and after `realm.compact()` / `VACUUM`. GRDB's size is the database file plus its
    /// WAL; its compaction is `dbPool.vacuum()` then `checkpoint(.truncate)` (without the checkpoint the
    /// vacuumed pages stay in the WAL and the files do not shrink). The second metric deletes the same objects
    /// object by object, on a copy of its own (ActorStore: `for object in results { realm.delete(object) }`).
    func w6() async throws {
        let n = plan.big
        let realmFixture = try await fixtures.realm(n, indexed: false)
        let poolFixture = try await fixtures.pool(n, indexed: false)
        let remaining = (0..<n).filter { Dataset.age($0) >= 50 }
        let expected = checks(count: remaining.count, digest: Dataset.digest(remaining))
        func mb(_ bytes: Int) -> Double { Double(bytes) / 1e6 }

        func grdb(raw: Bool) async throws -> Sample {
            let path = try fixtures.copy(poolFixture, "sqlite")
            defer { workspace.remove(path) }
            let pool = try Workspace.openPool(path)
            func size() -> Int { Workspace.fileSize(path) + Workspace.fileSize(path + "-wal") }
            var sample = Sample()
            sample.metrics["before"] = mb(size())
            let (deleteSeconds, _) = try await timed {
                try await pool.write { db in
                    if raw {
                        try Raw.execute(db.cachedStatement(sql: "DELETE FROM item WHERE age < ?"), db, 50)
                    } else {
                        _ = try ItemRecord.filter(Column("age") < 50).deleteAll(db)
                    }
                }
            }
            sample.metrics["delete"] = deleteSeconds
            sample.metrics["afterDelete"] = mb(size())
            let (compactSeconds, _) = try await timed {
                try await pool.vacuum()
                _ = try await pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            }
            sample.metrics["compact"] = compactSeconds
            sample.metrics["afterCompact"] = mb(size())
            let (count, digest) = try await pool.read { db in try Schema.summary(db) }
            sample.checks = checks(count: count, digest: digest)
            try pool.close()
            sample.metrics["perRow"] = try await grdbRowByRow(raw: raw)
            return sample
        }
        /// Object by object on a copy of its own: records fetch the young ones and delete each; raw reads their
        /// ids and runs one prepared `DELETE … WHERE id = ?` per row.
        func grdbRowByRow(raw: Bool) async throws -> Double {
            let path = try fixtures.copy(poolFixture, "sqlite")
            defer { workspace.remove(path) }
            let pool = try Workspace.openPool(path)
            let (seconds, _) = try await timed {
                try await pool.write { db in
                    if raw {
                        try Raw.deleteYoungRowByRow(db)
                    } else {
                        for record in try ItemRecord.filter(Column("age") < 50).fetchAll(db) { try record.delete(db) }
                    }
                }
            }
            let (count, digest) = try await pool.read { db in try Schema.summary(db) }
            try pool.close()
            if checks(count: count, digest: digest) != expected {
                throw Failure("W6: GRDB row by row left \((count, digest))")
            }
            return seconds
        }
        try await run(
            "W6", "delete half of \(Report.format(Double(n))) objects; file sizes; compaction / VACUUM",
            metrics: [
                Metric(key: "delete", label: "delete half (age < 50), 1 transaction", unit: "s"),
                Metric(key: "perRow", label: "object by object (raw: one DELETE … WHERE id = ? per row)", unit: "s"),
                Metric(key: "compact", label: "compact() / VACUUM + checkpoint", unit: "s"),
                Metric(key: "before", label: "file size before", unit: "MB"),
                Metric(key: "afterDelete", label: "file size after delete", unit: "MB"),
                Metric(key: "afterCompact", label: "file size after compaction", unit: "MB"),
            ],
            engines: [
                .actorStore: { [self] in
                    let path = try fixtures.copy(realmFixture, "realm")
                    defer { workspace.remove(path) }
                    var sample = Sample()
                    do {
                        let realm = try await Realm(configuration: Workspace.bulkConfiguration(path))
                        sample.metrics["before"] = mb(await realm.statistics.fileSize)
                        let (deleteSeconds, _) = try await timed {
                            try await realm.write { realm in
                                realm.delete(realm.objects(Item.self).where { $0.age < 50 })
                            }
                        }
                        sample.metrics["delete"] = deleteSeconds
                        sample.metrics["afterDelete"] = mb(await realm.statistics.fileSize)
                        let (compactSeconds, _) = try await timed { try await realm.compact() }
                        sample.metrics["compact"] = compactSeconds
                        sample.metrics["afterCompact"] = mb(await realm.statistics.fileSize)
                        let onDisk = Workspace.fileSize(path)
                        if abs(onDisk - (await realm.statistics.fileSize)) > 0 {
                            print(
                                "  note: ActorStore statistics.fileSize \(await realm.statistics.fileSize) B, on disk \(onDisk) B"
                            )
                        }
                        let (count, digest) = await realmSummary(realm, Item.self)
                        sample.checks = checks(count: count, digest: digest)
                    }
                    if sample.checks != expected {
                        throw Failure("W6: ActorStore left \(sample.checks), expected \(expected)")
                    }
                    let rowPath = try fixtures.copy(realmFixture, "realm")
                    defer { workspace.remove(rowPath) }
                    do {
                        let realm = try await Realm(configuration: Workspace.bulkConfiguration(rowPath))
                        let (perRow, _) = try await timed {
                            try await realm.write { realm in
                                for object in realm.objects(Item.self).where({ $0.age < 50 }) { realm.delete(object) }
                            }
                        }
                        sample.metrics["perRow"] = perRow
                        let (count, digest) = await realmSummary(realm, Item.self)
                        if checks(count: count, digest: digest) != expected {
                            throw Failure("W6: ActorStore object by object left \((count, digest))")
                        }
                    }
                    return sample
                },
                .grdbRecords: { try await grdb(raw: false) },
                .grdbRaw: { try await grdb(raw: true) },
            ])
    }

    // MARK: W7 open

    /// W7: open an existing store of the big size and read the first object (all four properties). Timed:
    /// `Realm(configuration:)` / `DatabasePool(path:)` plus the read. The previous instances are released
    /// before (ActorStore shares one engine per file in a process: with every `Realm` on the file released,
    /// the engine closes and the next open reads the file again — the time shows it). The file is in the
    /// OS page cache for both engines; the process is not fresh.
    func w7() async throws {
        let n = plan.big
        let realmPath = try await fixtures.realm(n, indexed: false)
        let poolPath = try await fixtures.pool(n, indexed: false)
        let expected = Dataset.digest(0..<1)
        func grdb(raw: Bool) async throws -> Sample {
            let (seconds, digest) = try await timed {
                let pool = try Workspace.openPool(poolPath)
                let digest = try await pool.read { db -> Int in
                    if raw {
                        let statement = try db.cachedStatement(
                            sql: "SELECT id, name, age, score FROM item ORDER BY id LIMIT 1")
                        return try Raw.scan(statement, db).1
                    }
                    return try ItemRecord.fetchOne(db)!.digest
                }
                try pool.close()
                return digest
            }
            return Sample(
                metrics: ["seconds": seconds * 1e3],
                checks: ["digest": "\(digest)", "expected": "\(digest == expected)"])
        }
        try await run(
            "W7", "open a store of \(Report.format(Double(n))) objects and read the first object",
            metrics: [Metric(key: "seconds", label: "open + read first object", unit: "ms")],
            engines: [
                .actorStore: {
                    // Let any engine released by an earlier workload finish closing, untimed.
                    try await Task.sleep(for: .milliseconds(200))
                    let (seconds, digest) = try await timed {
                        let realm = try await Realm(configuration: Workspace.realmConfiguration(realmPath))
                        return await realm.read { realm in realm.objects(Item.self).first!.digest }
                    }
                    return Sample(
                        metrics: ["seconds": seconds * 1e3],
                        checks: ["digest": "\(digest)", "expected": "\(digest == expected)"])
                },
                .grdbRecords: { try await grdb(raw: false) },
                .grdbRaw: { try await grdb(raw: true) },
            ])
    }
}
