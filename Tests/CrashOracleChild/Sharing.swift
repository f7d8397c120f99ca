import ActorStore
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The modes of the several-processes tests (Tests/CrashOracleTests/SharedFileTests.swift). Each prints what
// it saw, one line per event, so the parent decides.

/// The configuration every sharing mode uses (read-only or not).
func sharedConfiguration(_ path: String, readOnly: Bool = false) -> Realm.Configuration {
    var configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: path))
    configuration.objectTypes = [Commit.self, Entry.self, WriterStream.self]
    configuration.readOnly = readOnly
    return configuration
}

/// `commits <file> <n> [reopen-every]`: commits `Commit` objects n times (continuing the ids), printing
/// `ACK <id>` after each; with `reopen-every`, releases the realm, waits until it is closed (reserved space
/// given back where no other process has the file open) and opens it again every that many commits.
func runCommits(path: String, count: Int, reopenEvery: Int?) async throws {
    var realm: Realm? = try await Realm(configuration: sharedConfiguration(path))
    var next = await realm!.read { $0.objects(Commit.self).map(\.id).max() ?? 0 } + 1
    emit("START \(next - 1)")
    for done in 1...max(count, 1) where count > 0 {
        let id = next
        try await realm!.write { realm in realm.create(Commit.self, value: ["id": id, "seq": id]) }
        emit("ACK \(id) \(wallClockNanoseconds())")
        next += 1
        if let every = reopenEvery, done.isMultiple(of: every) {
            realm = nil
            await Realm.waitUntilClosed(configuration: sharedConfiguration(path))
            realm = try await Realm(configuration: sharedConfiguration(path))
        }
    }
    _ = realm
    emit("DONE")
}

/// `follow <file> <n>`: opens the file read-only and reads (each `read` advances to the newest commit of
/// any process) until it sees n `Commit` objects, printing `SEEN <count> <max id>` whenever the count
/// changes; checks that ids are exactly 1...count each time (no partial or out-of-order commit visible).
func runFollow(path: String, target: Int) async throws -> Int32 {
    let realm = try await Realm(configuration: sharedConfiguration(path, readOnly: true))
    var last = -1
    var rounds = 0
    while true {
        let (count, maxID, sum) = await realm.read { realm -> (Int, Int, Int) in
            let ids = realm.objects(Commit.self).map(\.id)
            return (ids.count, ids.max() ?? 0, ids.reduce(0, +))
        }
        if count != last {
            emit("SEEN \(count) \(maxID)")
            last = count
            guard maxID == count, sum == count * (count + 1) / 2 else {
                emit("BAD ids are not 1...\(count): max \(maxID), sum \(sum)")
                return 1
            }
        }
        if count >= target { break }
        rounds += 1
        // Alternate the two ways of advancing: `refresh()` and a plain `read` entry.
        if rounds.isMultiple(of: 2) { _ = await realm.refresh() }
        usleep(500)
    }
    emit("FOLLOWED")
    return 0
}

/// `hold <file> ro|rw`: opens the file and keeps it open until stdin ends; then releases it, waits until
/// it is closed and prints `CLOSED`.
func runHold(path: String, readOnly: Bool) async throws {
    var realm: Realm? = try await Realm(configuration: sharedConfiguration(path, readOnly: readOnly))
    let count = await realm!.read { $0.objects(Commit.self).count }
    emit("HOLDING \(count)")
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(0, &byte, 1) > 0 {}
            continuation.resume()
        }
    }
    realm = nil
    await Realm.waitUntilClosed(configuration: sharedConfiguration(path, readOnly: readOnly))
    emit("CLOSED")
}

/// `manage <file> delete|compact|copyover <source>`: tries one file-management operation and prints
/// `MANAGE <op> done <detail>` or `MANAGE <op> refused <code>`.
func runManage(path: String, operation: String, source: String?) async -> Int32 {
    do {
        switch operation {
        case "delete":
            let existed = try Realm.deleteFiles(for: sharedConfiguration(path))
            emit("MANAGE delete done \(existed)")
        case "compact":
            var realm: Realm? = try await Realm(configuration: sharedConfiguration(path))
            try await realm!.compact()
            realm = nil
            emit("MANAGE compact done")
        case "copyover":
            let realm = try await Realm(configuration: sharedConfiguration(source ?? path))
            try await realm.writeCopy(toFile: URL(fileURLWithPath: path))
            emit("MANAGE copyover done")
        default:
            emit("ERROR unknown operation \(operation)")
            return 64
        }
        return 0
    } catch let error as RealmError {
        emit("MANAGE \(operation) refused \(error.code) \(error.message)")
        return 0
    } catch {
        emit("ERROR \(describe(error))")
        return 3
    }
}

/// When `observe` last heard of a change (wall-clock nanoseconds), for its watchdog.
let observeWatchdog = Atomic<UInt64>(0)

/// Nanoseconds of the wall clock (`CLOCK_REALTIME`): comparable between processes on one machine.
func wallClockNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// `observe <file> <n> [rw]`: opens the file read-only (writable with `rw`) and iterates the change stream
/// of its `Commit` objects (no read of its own: the engine follows the file for its observers), printing
/// `SAW <count> <time>` for each delivery, until it has seen n; then `OBSERVED`.
func runObserve(path: String, target: Int, readOnly: Bool) async throws {
    let realm = try await Realm(configuration: sharedConfiguration(path, readOnly: readOnly))
    let changes = await realm.read { $0.objects(Commit.self).changes }
    // A stream that stops delivering fails the test instead of hanging it: `STALLED` after 20 s without one.
    observeWatchdog.store(wallClockNanoseconds(), ordering: .relaxed)
    Thread.detachNewThread {
        while true {
            sleep(1)
            if wallClockNanoseconds() &- observeWatchdog.load(ordering: .relaxed) > 20_000_000_000 {
                emit("STALLED no delivery for 20 s")
                exit(4)
            }
        }
    }
    for await change in changes {
        observeWatchdog.store(wallClockNanoseconds(), ordering: .relaxed)
        let count: Int
        switch change {
        case .initial(let commits): count = commits.count
        case .update(let commits, _, _, _): count = commits.count
        case .error(let error): throw error
        }
        emit("SAW \(count) \(wallClockNanoseconds())")
        if count >= target { break }
    }
    emit("OBSERVED")
}

/// `race <file> <writer> <n>`: one of several writer processes on one file. Commits n transactions, each of
/// two `Commit` objects (ids `writer * 1,000,000 + i` and that + 500,000, both with seq = the number of
/// transactions the file held when the transaction began, plus one), printing `ACK <id> <seq>` after each
/// durable commit; after each, reads and checks that it sees at least its own commit (`BAD …` and exit 1
/// if not). Then prints `DONE`, waits until stdin ends (all writers are done), refreshes and prints `FINAL
/// <summary>` (see ``raceSummary(_:)``). With n = 0 it is a checker: prints `ROW <id> <seq>` for each
/// transaction, then the summary.
func runRace(path: String, writer: Int, count: Int) async throws -> Int32 {
    let realm = try await Realm(configuration: sharedConfiguration(path))
    emit("START")
    var lastSeen = 0
    for i in stride(from: 1, through: count, by: 1) {
        let seq = try await commitRaceTransaction(realm, writer: writer, number: i)
        let seen = await realm.read { $0.objects(Commit.self).count / 2 }
        if seen < seq || seen < lastSeen {
            emit("BAD read \(seen) transactions after committing seq \(seq) (saw \(lastSeen) before)")
            return 1
        }
        lastSeen = seen
    }
    emit("DONE")
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(0, &byte, 1) > 0 {}
            continuation.resume()
        }
    }
    _ = await realm.refresh()
    if count == 0 {
        let rows = await realm.read { realm in
            realm.objects(Commit.self).filter { $0.id % 1_000_000 < 500_000 }.map { ($0.id, $0.seq) }
        }
        for (id, seq) in rows { emit("ROW \(id) \(seq)") }
    }
    let summary = await realm.read { raceSummary($0) }
    emit("FINAL \(summary)")
    return 0
}

/// Commits `race`'s transaction `number` of `writer` (two objects, the seq of the file's next transaction)
/// and prints `ACK <id> <seq>` once it is durable. Returns the seq.
func commitRaceTransaction(_ realm: Realm, writer: Int, number: Int) async throws -> Int {
    let id = writer * 1_000_000 + number
    let seq = try await realm.write { realm -> Int in
        let seq = realm.objects(Commit.self).count / 2 + 1
        realm.create(Commit.self, value: ["id": id, "seq": seq, "stream": writer])
        realm.create(Commit.self, value: ["id": id + 500_000, "seq": seq, "stream": writer])
        return seq
    }
    emit("ACK \(id) \(seq)")
    return seq
}

/// `hog <file> <writer>`: commits `race` transactions back to back, without durability (so they come far
/// faster than the writer lock's tick, and its lock never goes idle), until its stdin closes; then prints
/// `DONE`. Beside it, another writer process must still get its turn (the holder lets the lock go when a
/// process waits for it).
func runHog(path: String, writer: Int) async throws -> Int32 {
    var configuration = sharedConfiguration(path)
    configuration.durability = .none
    let realm = try await Realm(configuration: configuration)
    emit("START")
    let stop = StopFlag()
    Thread.detachNewThread {
        var byte: UInt8 = 0
        while read(0, &byte, 1) > 0 {}
        stop.value.store(true, ordering: .releasing)
    }
    var number = 0
    while !stop.value.load(ordering: .acquiring) && number < 499_999 {
        number += 1
        _ = try await commitRaceTransaction(realm, writer: writer, number: number)
    }
    emit("DONE")
    return 0
}

/// Set once by the thread that watches stdin.
final class StopFlag: Sendable {
    let value = Atomic(false)
}

/// `<transactions> <checksum> <problems>` of a race file: the checksum mixes every (id, seq) in id order;
/// problems lists what breaks the rules (a transaction's twin missing, seqs not exactly 1...transactions,
/// or `ok`).
func raceSummary(_ realm: isolated Realm) -> String {
    let commits = realm.objects(Commit.self).map { ($0.id, $0.seq) }.sorted { $0.0 < $1.0 }
    var problems: [String] = []
    let ids = Set(commits.map(\.0))
    var seqs: [Int] = []
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for (id, seq) in commits {
        hash = (hash ^ UInt64(id)) &* 0x100_0000_01b3
        hash = (hash ^ UInt64(seq)) &* 0x100_0000_01b3
        let low = id % 1_000_000
        if low < 500_000 {
            seqs.append(seq)
            if !ids.contains(id + 500_000) { problems.append("twin of \(id) missing") }
        } else if !ids.contains(id - 500_000) {
            problems.append("twin of \(id) missing")
        }
    }
    if seqs.sorted() != Array(stride(from: 1, through: seqs.count, by: 1)) {
        problems.append("seqs are not 1...\(seqs.count)")
    }
    return "\(seqs.count) \(hash) \(problems.isEmpty ? "ok" : problems.prefix(3).joined(separator: ","))"
}

/// `stream <file> <n>`: commits n transactions, each of one `Commit` (ids 1...n) and 10 `Entry` objects
/// (their `txn`), and prints `COMMITTED <n> <last non-zero byte> <file size>`. Then it begins one large
/// write transaction: 100,000 entries of txn -1 with 200-byte payloads, a record of about 25 MiB, whose
/// finished part is streamed to the file every 4 MiB behind a header of zeros (see `RecordStream`). Once
/// the file has grown 12 MiB past its size after the commits (or after 30 s) it prints `STREAMED <file
/// size>` and waits inside the write block, never committing, until its stdin ends (the parent kills it
/// before that; the exit after it, should the parent die, is a crash as well).
func runStream(path: String, commits: Int) async throws {
    let realm = try await Realm(configuration: sharedConfiguration(path))
    for id in stride(from: 1, through: commits, by: 1) {
        try await realm.write { realm in
            realm.create(Commit.self, value: ["id": id, "seq": id, "count": 10])
            for index in 0..<10 { realm.add(streamEntry(txn: id, index: index, count: 10, pad: 20)) }
        }
    }
    let committedSize = try fileSize(path)
    emit("COMMITTED \(commits) \(try lastNonZeroByte(path)) \(committedSize)")
    try await realm.write { realm in
        realm.create(Commit.self, value: ["id": -1, "seq": -1, "count": 100_000])
        for index in 0..<100_000 { realm.add(streamEntry(txn: -1, index: index, count: 100_000, pad: 200)) }
        let deadline = wallClockNanoseconds() + 30_000_000_000
        while (try? fileSize(path)) ?? 0 < committedSize + (12 << 20) && wallClockNanoseconds() < deadline {
            usleep(10_000)
        }
        emit("STREAMED \((try? fileSize(path)) ?? 0)")
        var byte: UInt8 = 0
        while read(0, &byte, 1) > 0 {}
        exit(5)
    }
}

/// An `Entry` of `stream`'s transactions.
func streamEntry(txn: Int, index: Int, count: Int, pad: Int) -> Entry {
    let entry = Entry()
    entry.txn = txn
    entry.index = index
    entry.count = count
    entry.check = Model.check(txn, index)
    entry.payload = Model.payload(txn, index, pad: pad)
    return entry
}

/// `resume <file> <n>`: opens the file writable and prints `OPEN`; once its stdin ends (at once without a
/// pipe), reads and prints `FOUND <commit ids, comma-separated> <entries> <entries of txn -1>`, then commits
/// n transactions of one `Commit` each (ids after the largest), printing `ACK <id>` after each, then `FOUND
/// …` again and `DONE`.
func runResume(path: String, count: Int) async throws {
    let realm = try await Realm(configuration: sharedConfiguration(path))
    emit("OPEN")
    var byte: UInt8 = 0
    while read(0, &byte, 1) > 0 {}
    emit(await realm.read { foundLine($0) })
    var next = await realm.read { $0.objects(Commit.self).map(\.id).max() ?? 0 } + 1
    for _ in stride(from: 0, to: count, by: 1) {
        let id = next
        try await realm.write { realm in realm.create(Commit.self, value: ["id": id, "seq": id]) }
        emit("ACK \(id)")
        next += 1
    }
    emit(await realm.read { foundLine($0) })
    emit("DONE")
}

/// `resume`'s `FOUND <commit ids, comma-separated> <entries> <entries of txn -1>`.
func foundLine(_ realm: isolated Realm) -> String {
    let ids = realm.objects(Commit.self).map(\.id).sorted().map(String.init).joined(separator: ",")
    let entries = realm.objects(Entry.self)
    return "FOUND \(ids) \(entries.count) \(entries.filter { $0.txn == -1 }.count)"
}

/// The size of the file at `path`.
func fileSize(_ path: String) throws -> UInt64 {
    (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value ?? 0
}

/// The offset of the last byte of the file at `path` that is not zero, or -1 if there is none.
func lastNonZeroByte(_ path: String) throws -> Int {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return data.withUnsafeBytes { bytes in
        var end = bytes.count
        while end >= 8 && bytes.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) == 0 { end -= 8 }
        while end > 0 && bytes[end - 1] == 0 { end -= 1 }
        return end - 1
    }
}
