import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A migration killed with SIGKILL at a random moment of the open that runs it: the file is then either
/// wholly at the old schema version with every old value, or wholly migrated — never in between. Real
/// processes (`actorstore-crash-child migrate`), the durability of a real file system.
@Suite("Migration crash (kill -9 of a migrating process)", .serialized)
struct MigrationCrashTests {
    @Test func aKilledMigrationLeavesTheOldFileOrTheMigratedOne() async throws {
        let executable = try #require(
            ChildProcess.executable, "\(ChildProcess.executableName) not found next to the test bundle")
        let seed =
            ProcessInfo.processInfo.environment["ACTORSTORE_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        let cycles = ProcessInfo.processInfo.environment["ACTORSTORE_LONG"] == "1" ? 100 : 12
        let count = 5000
        let outcome = await onOwnThread { () -> (old: Int, migrated: Int, failures: [String]) in
            var random = SplitMix64(seed: seed)
            var old = 0
            var migrated = 0
            var failures: [String] = []
            let directory = NSTemporaryDirectory() + "actorstore-migration-crash-\(getpid())-\(UUID())"
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            for cycle in 0..<cycles {
                let file = directory + "/people-\(cycle).realm"
                do {
                    let prepare = try ChildProcess(executable, ["migrate-prepare", file, "\(count)"])
                    let prepared = prepare.finish()
                    guard prepared.contains("PREPARED") else {
                        failures.append("cycle \(cycle): prepare printed \(prepared)")
                        continue
                    }
                    let child = try ChildProcess(executable, ["migrate", file])
                    child.wait { $0.contains("OPENING") }
                    // From right after the open starts to well past the migration's commit.
                    usleep(UInt32.random(in: 0...400_000, using: &random))
                    let lines = child.killNow()
                    let finished = lines.contains("MIGRATED")
                    let check = try ChildProcess(executable, ["migrate-check", file, "\(count)"]).finish()
                    if check.contains("CHECK v1") && !finished {
                        old += 1
                    } else if check.contains("CHECK v2") {
                        migrated += 1
                    } else {
                        failures.append(
                            "cycle \(cycle): the migrating child printed \(lines); the check printed \(check)")
                    }
                } catch {
                    failures.append("cycle \(cycle): could not run the child: \(error)")
                }
            }
            return (old, migrated, failures)
        }
        print(
            "[MigrationCrash] seed \(seed): \(cycles) kills, \(outcome.old) left the old file, \(outcome.migrated) "
                + "the migrated one")
        for failure in outcome.failures { Issue.record("\(failure) (seed \(seed))") }
        #expect(outcome.old + outcome.migrated == cycles)
    }
}
