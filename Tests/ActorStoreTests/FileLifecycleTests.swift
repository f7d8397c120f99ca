import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

/// Closing a file and opening it again in one process: `Realm.waitUntilClosed(configuration:)` and the
/// immediate reopen (issue 20, item 4). The other process's side is in Tests/CrashOracleTests/SharedFileTests.
@Suite struct FileLifecycleTests {
    private func configuration(_ url: URL) -> Realm.Configuration {
        Realm.Configuration(fileURL: url)
    }

    @Test func waitUntilClosedReturnsOnceTheFileIsReallyClosed() async throws {
        let url = temporaryRealmURL("closing.realm")
        let config = configuration(url)
        let path = PosixFileSystem().resolvedPath(url.path)
        var realm: Realm? = try await Realm(configuration: config)
        try await realm!.write { $0.create(Dog.self, value: ["name": "Rex"]) }
        // Open: the lock file is held, and the file has its reserved space (about 1 MiB of zeros).
        #expect(PresenceLock.isHeld(forStore: path))
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0 > 512 << 10)
        realm = nil
        await Realm.waitUntilClosed(configuration: config)
        #expect(!PresenceLock.isHeld(forStore: path))
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? .max < 64 << 10)
        #expect(try Realm.deleteFiles(for: config))
        // Not open at all: returns at once.
        await Realm.waitUntilClosed(configuration: config)
    }

    @Test func deleteFilesIsRefusedWhileARealmOfThisProcessHasTheFile() async throws {
        let config = configuration(temporaryRealmURL("open.realm"))
        let realm = try await Realm(configuration: config)
        #expect(throws: RealmError.self) { try Realm.deleteFiles(for: config) }
        #expect(Realm.fileExists(for: config))
        _ = realm
    }

    /// An immediate reopen after the last `Realm` of a file was released, while other threads start
    /// processes: a process being started holds copies of this process's descriptors (and their `flock`s)
    /// until its exec, so a reopen could meet its own just-released lock (`alreadyOpen`, 6 in 240 under
    /// load). 200 reopens by default, 10,000 with ACTORSTORE_LONG=1.
    @Test func anImmediateReopenNeverMeetsItsOwnLock() async throws {
        let reopens = TestDepth.count("ACTORSTORE_REOPENS", long: 10_000, sampled: 200)
        let config = configuration(temporaryRealmURL("reopen.realm"))
        let stop = Locked(false)
        let spawned = Locked(0)
        // Two threads starting short-lived processes back to back for the whole loop.
        for _ in 0..<2 {
            Thread.detachNewThread {
                while !stop.withLock({ $0 }) {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: "/bin/true")
                    guard (try? process.run()) != nil else { return }
                    process.waitUntilExit()
                    spawned.withLock { $0 += 1 }
                }
            }
        }
        defer { stop.withLock { $0 = true } }
        for round in 0..<reopens {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(Dog.self, value: ["name": "Dog \(round)", "age": round]) }
        }
        let realm = try await Realm(configuration: config)
        #expect(await realm.read { $0.objects(Dog.self).count } == reopens)
        #expect(spawned.withLock { $0 } > 0)
    }

    /// Once the close of a released engine has finished, the registry no longer lists it as closing: an
    /// open that waited for that close goes ahead instead of looking again. Before, a separate task
    /// removed the record after the close, and opens looped (without suspending) until it ran.
    @Test func aFinishedCloseIsNoLongerListedAsClosing() async throws {
        let config = configuration(temporaryRealmURL("listed.realm"))
        for _ in 0..<20 {
            var realm: Realm? = try await Realm(configuration: config)
            try await realm!.write { $0.create(Dog.self, value: ["name": "Rex"]) }
            let key = realm!.fileKey
            realm = nil
            for close in EngineRegistry.closeTasks(key) { await close.value }
            #expect(!EngineRegistry.isClosing(key))
        }
    }

    /// More tasks than the cooperative pool has threads, each reopening its own file right after releasing
    /// it. Before the fix above, each reopen looped on the cooperative pool until a separate clean-up task
    /// ran; with every pool thread in such a loop that task never ran, and the whole process stopped (CI's
    /// `swift test` hung this way on a 2-core machine, every test waiting).
    @Test func reopensOnEveryPoolThreadAtOnceAllFinish() async throws {
        let loops = ProcessInfo.processInfo.activeProcessorCount + 2
        let rounds = TestDepth.count("ACTORSTORE_REOPENS", long: 2_000, sampled: 100)
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for loop in 0..<loops {
                let config = configuration(temporaryRealmURL("pool-\(loop).realm"))
                group.addTask {
                    for round in 0..<rounds {
                        let realm = try await Realm(configuration: config)
                        try await realm.write { $0.create(Dog.self, value: ["name": "Dog \(round)"]) }
                    }
                    return try await Realm(configuration: config).read { $0.objects(Dog.self).count }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == loops * rounds)
    }
}
