import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import GRDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Bench {
    // MARK: W10 snapshots

    /// W10: the cost of taking a read snapshot: `await realm.freeze()` (ActorStore) vs
    /// `try dbPool.makeSnapshot()` (GRDB: a new read-only SQLite connection holding a read transaction), each
    /// released right away, `snapshots` times, at 1k objects and at the big size. Per snapshot, µs. Checked:
    /// a count through the last snapshot. (No separate raw variant: GRDB has one way to make a snapshot.)
    func w10() async throws {
        for n in [plan.snapshotSmall, plan.big] {
            let realmPath = try await fixtures.realm(n, indexed: false)
            let poolPath = try await fixtures.pool(n, indexed: false)
            let iterations = plan.snapshots
            try await run(
                "W10", "snapshot cost at \(Report.format(Double(n))) objects (\(iterations) snapshots)",
                metrics: [
                    Metric(
                        key: "us", label: "freeze() / makeSnapshot() at \(Report.format(Double(n)))", unit: "µs",
                        engines: [.actorStore, .grdbRecords])
                ],
                engines: [
                    .actorStore: {
                        let realm = try await Realm(configuration: Workspace.realmConfiguration(realmPath))
                        _ = await realm.freeze()
                        let (seconds, _) = await timed {
                            for _ in 0..<iterations { blackHole(await realm.freeze()) }
                        }
                        let count = await realm.freeze().objects(Item.self).count
                        return Sample(
                            metrics: ["us": seconds / Double(iterations) * 1e6], checks: ["count": "\(count)"])
                    },
                    .grdbRecords: {
                        let pool = try Workspace.openPool(poolPath)
                        blackHole(try pool.makeSnapshot())
                        let (seconds, _) = try await timed {
                            for _ in 0..<iterations { blackHole(try pool.makeSnapshot()) }
                        }
                        let count = try await pool.makeSnapshot().read { db in try ItemRecord.fetchCount(db) }
                        try pool.close()
                        return Sample(
                            metrics: ["us": seconds / Double(iterations) * 1e6], checks: ["count": "\(count)"])
                    },
                ])
        }
    }

    // MARK: W11 sorting

    /// W11: a store of `sortCount` objects with random names (8–16 ASCII letters and digits) and random
    /// ages. Sort all by name and read every object (four properties); sort by age and read the first 100.
    /// Checked: the checksum and an order-sensitive hash of the ids in sorted order.
    func w11() async throws {
        let n = plan.sortCount
        var rng = SplitMix64(seed: 11)
        let names = (0..<n).map { _ in Dataset.randomString(&rng) }
        let ages = (0..<n).map { _ in Int(rng.next() % 1_000_000_000_000) }
        // Build the stores once (untimed).
        let realmPath = workspace.newPath("w11", "realm")
        let poolPath = workspace.newPath("w11", "sqlite")
        defer {
            workspace.remove(realmPath)
            workspace.remove(poolPath)
        }
        do {
            let realm = try await Realm(configuration: Workspace.realmConfiguration(realmPath))
            try await realm.write { realm in
                for i in 0..<n {
                    let object = Item()
                    object.id = i
                    object.name = names[i]
                    object.age = ages[i]
                    object.score = Dataset.score(i)
                    realm.add(object)
                }
            }
        }
        do {
            let pool = try Workspace.openPool(poolPath)
            try await pool.write { db in
                try Schema.create(db, indexed: false)
                let statement = try db.cachedStatement(sql: Raw.insertSQL)
                for i in 0..<n {
                    try Raw.insert(statement, db, id: i, name: names[i], age: ages[i], score: Dataset.score(i))
                }
            }
            try pool.close()
        }
        @Sendable func orderHash(_ hash: inout UInt64, _ id: Int) {
            hash = (hash ^ UInt64(id)) &* 0x100_0000_01B3
        }
        func checks(_ a: (Int, Int, UInt64), _ b: (Int, Int, UInt64)) -> [String: String] {
            [
                "nameCount": "\(a.0)", "nameDigest": "\(a.1)", "nameOrder": "\(a.2)",
                "ageCount": "\(b.0)", "ageDigest": "\(b.1)", "ageOrder": "\(b.2)",
            ]
        }
        let realm = Holder<Realm>()
        let records = Holder<DatabasePool>()
        let raw = Holder<DatabasePool>()
        func asRun(_ realm: Realm) async throws -> Sample {
            let (t1, a) = try await timed {
                try await realm.read { realm -> (Int, Int, UInt64) in
                    var count = 0, digest = 0, hash: UInt64 = 0xCBF2_9CE4_8422_2325
                    for object in try realm.objects(Item.self).sorted(byKeyPath: "name") {
                        count += 1
                        digest &+= object.digest
                        orderHash(&hash, object.id)
                    }
                    return (count, digest, hash)
                }
            }
            let (t2, b) = try await timed {
                try await realm.read { realm -> (Int, Int, UInt64) in
                    var count = 0, digest = 0, hash: UInt64 = 0xCBF2_9CE4_8422_2325
                    for object in try realm.objects(Item.self).sorted(byKeyPath: "age").limit(100) {
                        count += 1
                        digest &+= object.digest
                        orderHash(&hash, object.id)
                    }
                    return (count, digest, hash)
                }
            }
            return Sample(metrics: ["byName": t1 * 1e3, "top100": t2 * 1e3], checks: checks(a, b))
        }
        func recordRun(_ pool: DatabasePool) async throws -> Sample {
            @Sendable func summary(_ records: [ItemRecord]) -> (Int, Int, UInt64) {
                var hash: UInt64 = 0xCBF2_9CE4_8422_2325
                for record in records { orderHash(&hash, record.id) }
                return (records.count, records.reduce(0) { $0 &+ $1.digest }, hash)
            }
            let (t1, a) = try await timed {
                try await pool.read { db in summary(try ItemRecord.order(Column("name")).fetchAll(db)) }
            }
            let (t2, b) = try await timed {
                try await pool.read { db in summary(try ItemRecord.order(Column("age")).limit(100).fetchAll(db)) }
            }
            return Sample(metrics: ["byName": t1 * 1e3, "top100": t2 * 1e3], checks: checks(a, b))
        }
        func rawRun(_ pool: DatabasePool) async throws -> Sample {
            @Sendable func scan(_ db: Database, _ sql: String) throws -> (Int, Int, UInt64) {
                let s = try db.cachedStatement(sql: sql).sqliteStatement
                var count = 0, digest = 0, hash: UInt64 = 0xCBF2_9CE4_8422_2325
                sqlite3Reset(s)
                while try sqlite3StepRow(s, db) {
                    count += 1
                    digest &+= Raw.rowDigest(s)
                    orderHash(&hash, sqlite3ColumnInt(s, 0))
                }
                return (count, digest, hash)
            }
            let (t1, a) = try await timed {
                try await pool.read { db in try scan(db, "SELECT id, name, age, score FROM item ORDER BY name") }
            }
            let (t2, b) = try await timed {
                try await pool.read { db in try scan(db, "SELECT id, name, age, score FROM item ORDER BY age LIMIT 100")
                }
            }
            return Sample(metrics: ["byName": t1 * 1e3, "top100": t2 * 1e3], checks: checks(a, b))
        }
        let count = Report.format(Double(n))
        try await run(
            "W11", "sorting \(count) objects",
            metrics: [
                Metric(key: "byName", label: "sort \(count) random strings, read all", unit: "ms"),
                Metric(key: "top100", label: "sort \(count) ints, read the first 100", unit: "ms"),
            ],
            engines: [
                .actorStore: {
                    if realm.value == nil {
                        realm.value = try await Realm(configuration: Workspace.realmConfiguration(realmPath))
                    }
                    return try await asRun(realm.value!)
                },
                .grdbRecords: {
                    if records.value == nil { records.value = try Workspace.openPool(poolPath) }
                    return try await recordRun(records.value!)
                },
                .grdbRaw: {
                    if raw.value == nil { raw.value = try Workspace.openPool(poolPath) }
                    return try await rawRun(raw.value!)
                },
            ])
        try records.value?.close()
        try raw.value?.close()
    }

    // MARK: Physical limits

    /// The disk's own limits in the same run, plain POSIX calls in the workspace directory: append 100 bytes
    /// + fdatasync (p50 of `fsyncSamples`), and a sequential write of `sequentialBytes` (1 MiB writes) + fsync.
    func rawIO() async throws {
        print("\n## RAW: physical limits of this disk (plain POSIX, no database)")
        let path = workspace.newPath("raw", "bin")
        defer { unlink(path) }
        var fsyncP50: [Double] = []
        var throughput: [Double] = []
        for _ in 0..<plan.runs {
            fsyncP50.append(try appendSyncP50(samples: plan.fsyncSamples) * 1e6)
            // Sequential write + fsync.
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Failure("open(\(path)) failed") }
            let chunk = [UInt8](repeating: 0xA5, count: 1 << 20)
            let start = monotonicNanos()
            for _ in 0..<(plan.sequentialBytes >> 20) {
                let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, chunk.count) }
                guard written == chunk.count else { throw Failure("sequential write failed") }
            }
            guard fsync(fd) == 0 else { throw Failure("fsync failed") }
            throughput.append(Double(plan.sequentialBytes) / 1e6 / secondsSince(start))
            close(fd)
            unlink(path)
        }
        let size =
            plan.sequentialBytes >= 1 << 30 ? "\(plan.sequentialBytes >> 30) GiB" : "\(plan.sequentialBytes >> 20) MiB"
        // The disk is neither engine: its values are shown in every column (ratios n/a).
        for (key, label, unit, higher, values) in [
            ("fdatasync", "append 100 B + fdatasync, p50", "µs", false, fsyncP50),
            ("sequential", "sequential write \(size) + fsync", "MB/s", true, throughput),
        ] {
            report.add(
                RowResult(
                    workload: "RAW",
                    metric: Metric(key: key, label: label, unit: unit, higherIsBetter: higher, engines: [.actorStore]),
                    runs: [.actorStore: values], notes: [.grdbRecords: "(disk)", .grdbRaw: "(disk)"]))
        }
    }

    /// Appends 100 bytes + fdatasync to a fresh file in the workspace, `samples` times after 20 untimed:
    /// the p50 latency in seconds.
    func appendSyncP50(samples: Int) throws -> Double {
        let path = workspace.newPath("fsync", "bin")
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure("open(\(path)) failed") }
        defer { close(fd) }
        let record = [UInt8](repeating: 0x5A, count: 100)
        var latencies: [Double] = []
        var offset: off_t = 0
        for i in 0..<(20 + samples) {
            let start = monotonicNanos()
            let written = record.withUnsafeBytes { pwrite(fd, $0.baseAddress, 100, offset) }
            guard written == 100, fdatasync(fd) == 0 else { throw Failure("append + fdatasync failed") }
            if i >= 20 { latencies.append(secondsSince(start)) }
            offset += 100
        }
        return percentile(latencies, 0.5)
    }

    /// Prints and records how each engine is configured.
    func describeSettings() async throws {
        let path = workspace.newPath("settings", "sqlite")
        defer { workspace.remove(path) }
        let pool = try Workspace.openPool(path)
        let (journal, synchronous, version) = try await pool.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA journal_mode")!, try Int.fetchOne(db, sql: "PRAGMA synchronous")!,
                try String.fetchOne(db, sql: "SELECT sqlite_version()")!
            )
        }
        let writerSynchronous = try await pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous")! }
        try pool.close()
        let names = [0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"]
        report.settings = [
            "grdb":
                "GRDB 7.10.0, DatabasePool (journal_mode=\(journal)), synchronous=\(names[writerSynchronous] ?? "\(writerSynchronous)") (GRDB's default, untouched; readers \(names[synchronous] ?? "?")), SQLite \(version)",
            "actorStore":
                "ActorStore durability .full (fdatasync per commit, group commit), library defaults (automatic compaction on)",
            "mode": plan.quick ? "quick" : "full", "runs": "\(plan.runs)",
            "swift": "\(swiftVersion)",
        ]
        for (key, value) in report.settings.sorted(by: { $0.key < $1.key }) { print("\(key): \(value)") }
        print("")
    }
}

#if swift(>=6.3)
    let swiftVersion = "6.3+"
#else
    let swiftVersion = "< 6.3"
#endif
