import ActorStore
import ActorStoreBenchmarkKit
import BenchmarkModels
import Foundation
import GRDB

/// Observed values with the monotonic time the observer received them.
typealias Delivery = (value: Int, nanos: UInt64)

extension Bench {
    // MARK: W8 commit -> observer latency

    /// W8: a store of `observedBase` objects; an observer of the count of `age == 42` (no index). Each of
    /// `observations` commits inserts one object with age 42 (a durable one-object transaction). Measured per
    /// commit: from just before the write call starts to the moment the observer task receives the new
    /// count (so: the durable commit, the engine's change detection, re-running the observed query, and the
    /// delivery to a task). Reported: median and p99 of that latency, and the median of the commit alone
    /// (until `write` returns) for context. Commits are serial: the next starts after the observer has seen
    /// the previous one.
    func w8() async throws {
        let base = plan.observedBase
        let count = plan.observations
        let expectedFinal = (0..<base).filter { Dataset.age($0) == 42 }.count + count
        try await run(
            "W8", "commit → observer latency, one-object insert observed by a filtered count, \(count) commits",
            metrics: [
                Metric(key: "p50", label: "commit → observer p50", unit: "µs", engines: [.actorStore, .grdbRecords]),
                Metric(key: "p99", label: "commit → observer p99", unit: "µs", engines: [.actorStore, .grdbRecords]),
                Metric(
                    key: "commitP50", label: "the commit alone, p50", unit: "µs", engines: [.actorStore, .grdbRecords]),
            ],
            engines: [
                .actorStore: { try await self.w8ActorStore(base: base, commits: count, expectedFinal: expectedFinal) },
                .grdbRecords: { try await self.w8GRDB(base: base, commits: count, expectedFinal: expectedFinal) },
            ])
    }

    /// The ActorStore side of W8: `realm.objects(Item.self).where { $0.age == 42 }.changes` (a change stream of
    /// frozen results) iterated in a task; each delivery's count is timestamped by that task on arrival.
    func w8ActorStore(base: Int, commits: Int, expectedFinal: Int) async throws -> Sample {
        let path = workspace.newPath("w8", "realm")
        defer { workspace.remove(path) }
        let realm = try await Realm(configuration: Workspace.realmConfiguration(path))
        try await insertObjects(realm, 0..<base, indexed: false)
        let changes = await realm.read { $0.objects(Item.self).where { $0.age == 42 }.changes }
        let (deliveries, continuation) = AsyncStream<Delivery>.makeStream(bufferingPolicy: .unbounded)
        let observer = Task {
            for await change in changes {
                switch change {
                case .initial(let items), .update(let items, _, _, _):
                    continuation.yield((items.count, monotonicNanos()))
                case .error: break
                }
            }
            continuation.finish()
        }
        var iterator = deliveries.makeAsyncIterator()
        guard var current = await iterator.next()?.value else { throw Failure("W8: the observation ended") }
        var latencies: [Double] = []
        var commitTimes: [Double] = []
        for k in 0..<commits {
            let item = Item()
            item.fill(base + k)
            item.age = 42
            let start = monotonicNanos()
            try await realm.add(item)
            commitTimes.append(secondsSince(start))
            let target = current + 1
            while current < target {
                guard let delivery = await iterator.next() else { throw Failure("W8: the observation ended") }
                current = delivery.value
                if current >= target { latencies.append(Double(delivery.nanos &- start) / 1e9) }
            }
            if current != target { throw Failure("W8: ActorStore observed \(current), expected \(target)") }
        }
        observer.cancel()
        return Sample(
            metrics: [
                "p50": percentile(latencies, 0.5) * 1e6, "p99": percentile(latencies, 0.99) * 1e6,
                "commitP50": percentile(commitTimes, 0.5) * 1e6,
            ],
            checks: ["finalCount": "\(current)", "expectedFinal": "\(current == expectedFinal)"])
    }

    /// The GRDB side of W8: `ValueObservation.tracking { try ItemRecord.filter(age == 42).fetchCount($0) }`
    /// iterated with `.values(in: dbPool)` (its default scheduling, `.task`: values are delivered on the
    /// cooperative pool) in a task; each delivery is timestamped by that task on arrival.
    func w8GRDB(base: Int, commits: Int, expectedFinal: Int) async throws -> Sample {
        let path = workspace.newPath("w8", "sqlite")
        defer { workspace.remove(path) }
        let pool = try Workspace.openPool(path)
        try await pool.write { db in
            try Schema.create(db, indexed: false)
            let statement = try db.cachedStatement(sql: Raw.insertSQL)
            for i in 0..<base { try Raw.insert(statement, db, i) }
        }
        let observation = ValueObservation.tracking { db in
            try ItemRecord.filter(Column("age") == 42).fetchCount(db)
        }
        let (deliveries, continuation) = AsyncStream<Delivery>.makeStream(bufferingPolicy: .unbounded)
        let observer = Task {
            do {
                for try await value in observation.values(in: pool) {
                    continuation.yield((value, monotonicNanos()))
                }
            } catch {}
            continuation.finish()
        }
        var iterator = deliveries.makeAsyncIterator()
        guard var current = await iterator.next()?.value else { throw Failure("W8: the observation ended") }
        var latencies: [Double] = []
        var commitTimes: [Double] = []
        for k in 0..<commits {
            let record = ItemRecord(id: base + k, name: Dataset.name(base + k), age: 42, score: Dataset.score(base + k))
            let start = monotonicNanos()
            try await pool.write { db in try record.insert(db) }
            commitTimes.append(secondsSince(start))
            let target = current + 1
            while current < target {
                guard let delivery = await iterator.next() else { throw Failure("W8: the observation ended") }
                current = delivery.value
                if current >= target { latencies.append(Double(delivery.nanos &- start) / 1e9) }
            }
            if current != target { throw Failure("W8: GRDB observed \(current), expected \(target)") }
        }
        observer.cancel()
        try pool.close()
        return Sample(
            metrics: [
                "p50": percentile(latencies, 0.5) * 1e6, "p99": percentile(latencies, 0.99) * 1e6,
                "commitP50": percentile(commitTimes, 0.5) * 1e6,
            ],
            checks: ["finalCount": "\(current)", "expectedFinal": "\(current == expectedFinal)"])
    }

    // MARK: W9 readers and a writer

    /// W9: two reader tasks doing primary-key lookups (one lookup — all four properties — per read call)
    /// while one writer task commits small durable transactions (one new object each), for `mixedSeconds`.
    /// On a copy of the big store. ActorStore: each task has its own `Realm` actor on the file; GRDB: one
    /// `DatabasePool` (its readers run in parallel with the writer in WAL mode). Checked: no lookup missed,
    /// and the final count is the initial count plus the commits.
    ///
    /// Measured twice: as written (the readers loop on `await read`), and with the readers calling
    /// `await Task.yield()` after each read. The second exists because an uncontended `await realm.read { }`
    /// does not suspend: two such loops hold both threads of the cooperative pool on a 2-core machine and the
    /// writer task never runs.
    ///
    /// ActorStore is measured a third time with readers of frozen snapshots: each lookup takes a new snapshot
    /// (`await realm.freeze()`) and reads the object from it (a `Frozen<Item>`), without a `read` call —
    /// the loop a user writes to hand snapshots around. No GRDB variant (GRDB has no frozen snapshots).
    func w9() async throws {
        let n = plan.big
        let duration = plan.mixedSeconds
        let keysA = randomKeys(100_000, below: n, seed: 91)
        let keysB = randomKeys(100_000, below: n, seed: 92)
        let realmFixture = try await fixtures.realm(n, indexed: false)
        let poolFixture = try await fixtures.pool(n, indexed: false)

        /// Runs the three tasks until the deadline: (reads, misses, writes, seconds).
        func mixed(
            yielding: Bool = false,
            read: @escaping @Sendable (Int, Int) async throws -> Bool,
            write: @escaping @Sendable (Int) async throws -> Void
        ) async throws -> (Int, Int, Int, Double) {
            let start = monotonicNanos()
            let deadline = start + UInt64(duration * 1e9)
            return try await withThrowingTaskGroup(of: (Int, Int, Int).self) { group in
                for (reader, keys) in [keysA, keysB].enumerated() {
                    group.addTask {
                        var reads = 0
                        var misses = 0
                        while monotonicNanos() < deadline {
                            if try await !read(reader, keys[reads % keys.count]) { misses += 1 }
                            reads += 1
                            if yielding { await Task.yield() }
                        }
                        return (reads, misses, 0)
                    }
                }
                group.addTask {
                    var writes = 0
                    while monotonicNanos() < deadline {
                        try await write(n + writes)
                        writes += 1
                    }
                    return (0, 0, writes)
                }
                var total = (0, 0, 0)
                for try await (r, m, w) in group {
                    total.0 += r
                    total.1 += m
                    total.2 += w
                }
                return (total.0, total.1, total.2, secondsSince(start))
            }
        }
        func sample(_ result: (Int, Int, Int, Double), finalCount: Int, suffix: String) -> Sample {
            let (reads, misses, writes, seconds) = result
            return Sample(
                metrics: ["reads" + suffix: Double(reads) / seconds, "writes" + suffix: Double(writes) / seconds],
                checks: ["misses" + suffix: "\(misses)", "countConsistent" + suffix: "\(finalCount == n + writes)"])
        }
        func both(_ body: (Bool) async throws -> Sample) async throws -> Sample {
            let a = try await body(false)
            let b = try await body(true)
            return Sample(
                metrics: a.metrics.merging(b.metrics) { x, _ in x }, checks: a.checks.merging(b.checks) { x, _ in x })
        }
        func grdb(raw: Bool, yielding: Bool) async throws -> Sample {
            let path = try fixtures.copy(poolFixture, "sqlite")
            defer { workspace.remove(path) }
            let pool = try Workspace.openPool(path)
            // Untimed: open the pool's reader connections before the writer starts (see the README: a reader
            // connection opening while the writer begins a transaction can make it fail with SQLITE_BUSY).
            async let r1 = pool.read { db in try ItemRecord.fetchOne(db, key: 0) }
            async let r2 = pool.read { db in try ItemRecord.fetchOne(db, key: 1) }
            _ = try await (r1, r2)
            let result = try await mixed(
                yielding: yielding,
                read: { _, key in
                    try await pool.read { db in
                        if raw {
                            return try Raw.digest(byKey: db.cachedStatement(sql: Raw.selectByKeySQL), db, key) != nil
                        }
                        return try ItemRecord.fetchOne(db, key: key) != nil
                    }
                },
                write: { i in
                    try await pool.write { db in
                        if raw {
                            try Raw.insert(db.cachedStatement(sql: Raw.insertSQL), db, i)
                        } else {
                            try ItemRecord(i).insert(db)
                        }
                    }
                })
            let count = try await pool.read { db in try ItemRecord.fetchCount(db) }
            try pool.close()
            return sample(result, finalCount: count, suffix: yielding ? "Yield" : "")
        }
        /// ActorStore's run: readers look objects up with `read` (`frozen` false) or in a new frozen snapshot per
        /// lookup (`await realm.freeze()`), beside one writer. (count, and the mixed result.)
        func actorStoreRun(yielding: Bool, frozen: Bool) async throws -> ((Int, Int, Int, Double), Int) {
            let path = try fixtures.copy(realmFixture, "realm")
            defer { workspace.remove(path) }
            let configuration = Workspace.realmConfiguration(path)
            let readers = [
                try await Realm(configuration: configuration), try await Realm(configuration: configuration),
            ]
            let writer = try await Realm(configuration: configuration)
            let result = try await mixed(
                yielding: yielding,
                read: { reader, key in
                    if frozen {
                        let snapshot = await readers[reader].freeze()
                        return snapshot.object(ofType: Item.self, forPrimaryKey: key).map {
                            Dataset.digest(id: $0.id, name: $0.name, age: $0.age, score: $0.score)
                        } != nil
                    }
                    return await readers[reader].read { realm in
                        realm.object(ofType: Item.self, forPrimaryKey: key).map { $0.digest } != nil
                    }
                },
                write: { i in
                    try await writer.write { realm in
                        let object = Item()
                        object.fill(i)
                        realm.add(object)
                    }
                })
            let count = await writer.read { realm in realm.objects(Item.self).count }
            return (result, count)
        }
        func actorStore(yielding: Bool) async throws -> Sample {
            let (result, count) = try await actorStoreRun(yielding: yielding, frozen: false)
            return sample(result, finalCount: count, suffix: yielding ? "Yield" : "")
        }
        func actorStoreFrozen() async throws -> Sample {
            let (result, count) = try await actorStoreRun(yielding: false, frozen: true)
            // Checked here: the GRDB engines have no such run to compare checks with.
            let (_, misses, writes, _) = result
            guard misses == 0, count == n + writes else {
                throw Failure("W9: frozen readers missed \(misses) lookups; count \(count), expected \(n + writes)")
            }
            return Sample(metrics: sample(result, finalCount: count, suffix: "Frozen").metrics)
        }
        try await run(
            "W9",
            "2 reader tasks (primary-key lookups) + 1 writer task (1-object durable commits), \(Report.format(duration)) s each mode",
            metrics: [
                Metric(key: "reads", label: "reads/s (both readers)", unit: "/s", higherIsBetter: true),
                Metric(key: "writes", label: "writes/s (durable commits)", unit: "/s", higherIsBetter: true),
                Metric(
                    key: "readsYield", label: "readers yield after each read: reads/s", unit: "/s", higherIsBetter: true
                ),
                Metric(
                    key: "writesYield", label: "readers yield after each read: writes/s", unit: "/s",
                    higherIsBetter: true),
                Metric(
                    key: "readsFrozen", label: "readers of frozen snapshots (freeze() per lookup): reads/s", unit: "/s",
                    higherIsBetter: true, engines: [.actorStore]),
                Metric(
                    key: "writesFrozen", label: "readers of frozen snapshots (freeze() per lookup): writes/s",
                    unit: "/s", higherIsBetter: true, engines: [.actorStore]),
            ],
            engines: [
                .actorStore: {
                    let a = try await both { try await actorStore(yielding: $0) }
                    let c = try await actorStoreFrozen()
                    return Sample(
                        metrics: a.metrics.merging(c.metrics) { x, _ in x },
                        checks: a.checks.merging(c.checks) { x, _ in x })
                },
                .grdbRecords: { try await both { try await grdb(raw: false, yielding: $0) } },
                .grdbRaw: { try await both { try await grdb(raw: true, yielding: $0) } },
            ])
    }
}
