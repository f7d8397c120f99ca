import Foundation
import Testing

@testable import ActorStorePersistence

/// The writer lock of every process (byte 1 of `<store>.lock`) stays with an engine between its writes, so
/// a process alone on its file pays no system call per commit, and goes to another process that waits for
/// it (byte 2, held shared by the waiter) at the engine's next idle moment. See
/// StorageEngine+SharedWriting.swift. A waiter in another process is stood in for by `python3`, which
/// takes the same `fcntl` record lock a waiting engine takes (record locks of one process never conflict,
/// so this process cannot play the waiter itself).
@Suite struct WriterLockTests {
    private func directory() throws -> String {
        let path = NSTemporaryDirectory() + "actorstore-writerlock-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func open(_ path: String, tick: Duration) async throws -> (StorageEngine, TableID) {
        var configuration = StorageEngine.Configuration(path: path, durability: .none)
        configuration.writerLockTick = tick
        let engine = try await StorageEngine.open(configuration)
        let (table, _) = try await engine.write { txn in try txn.createTable(Fixtures.kv) }
        return (engine, table)
    }

    @Test("a process alone keeps the writer lock from one commit to the next")
    func aProcessAloneKeepsTheLock() async throws {
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A tick far longer than the test: the first hold lasts to the end.
        let (engine, table) = try await open(directory + "/alone.store", tick: .seconds(600))
        for i in 0..<500 {
            _ = try await engine.write { txn in try txn.insert(table, [.int(Int64(i)), .string("v")]) }
        }
        // Before, every commit took the lock and let it go (501 holds).
        #expect(engine.writerLockCounts.holds == 1)
        #expect(try engine.snapshot().count(table) == 500)
        await engine.close()
    }

    @Test("an engine that never pauses lets the lock go when another process waits for it")
    func aWaitingProcessGetsTheLock() async throws {
        let python = "/usr/bin/python3"
        try #require(FileManager.default.isExecutableFile(atPath: python), "python3 stands in for a waiter")
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/busy.store"
        // A long tick: the engine commits many times per tick, so it is never idle at one, and only a
        // waiter can make it let go.
        let (engine, table) = try await open(path, tick: .milliseconds(50))
        // The waiter's mark: byte 2 of the lock file, shared, as lockWriter(waiting: true) holds it.
        let waiter = Process()
        waiter.executableURL = URL(fileURLWithPath: python)
        waiter.arguments = [
            "-c",
            """
            import fcntl, os, sys
            fd = os.open(sys.argv[1], os.O_RDWR)
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 2)
            print("WAITING", flush=True)
            sys.stdin.read()
            """,
            PresenceLock.lockPath(forStore: path),
        ]
        let input = Pipe()
        let output = Pipe()
        waiter.standardInput = input
        waiter.standardOutput = output
        try waiter.run()
        defer {
            try? input.fileHandleForWriting.close()
            waiter.waitUntilExit()
        }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        try #require(line.hasPrefix("WAITING"), "the stand-in waiter did not take its lock: \(line)")

        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        var commits = 0
        while engine.writerLockCounts.handOffs == 0 && clock.now < deadline {
            _ = try await engine.write { txn in try txn.insert(table, [.int(Int64(commits)), .string("v")]) }
            commits += 1
        }
        // Before, nothing told the engine of a waiter: it let go only when idle, which it never was here.
        #expect(engine.writerLockCounts.handOffs >= 1)
        // After the hand-off it takes the lock again (the stand-in never takes it) and goes on writing.
        for i in 0..<10 {
            _ = try await engine.write { txn in try txn.insert(table, [.int(Int64(commits + i)), .string("v")]) }
        }
        #expect(try engine.snapshot().count(table) == commits + 10)
        await engine.close()
    }
}
