import ActorStore
import Foundation

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

/// Nanoseconds of the wall clock (`CLOCK_REALTIME`): comparable between processes on one machine.
func wallClockNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// `observe <file> <n>`: opens the file read-only and iterates the change stream of its `Commit` objects
/// (no read of its own: the engine follows the file for its observers), printing `SAW <count> <time>` for
/// each delivery, until it has seen n; then `OBSERVED`.
func runObserve(path: String, target: Int) async throws {
    let realm = try await Realm(configuration: sharedConfiguration(path, readOnly: true))
    let changes = await realm.read { $0.objects(Commit.self).changes }
    for await change in changes {
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
