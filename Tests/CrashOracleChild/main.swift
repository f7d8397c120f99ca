import ActorStore
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The child process of the kill -9 crash oracle (Tests/CrashOracleTests). Three modes:
//
//   actorstore-crash-child write <file> <workload> [--watch-stdin]
//       Commits numbered transactions until killed. Prints `START <last per stream>` once open, then
//       `ACK <stream> <seq> <count>` after each durable `write` returns (the transaction is on disk),
//       `COMPACTED <seq>` after an explicit compaction and `SHRUNK <from> <to>` when the file got smaller
//       (automatic compaction). With --watch-stdin it exits when its stdin reaches end of file (the test
//       that started it is gone), so no writer outlives a crashed test run.
//   actorstore-crash-child verify <file>
//       Opens the store read-write (recovery, as an app restart would), checks every invariant and prints
//       `VERIFY <json>` (see `VerifySummary`); exit status 0 when it holds, 1 when not, 2 if it cannot open.
//   actorstore-crash-child migrate-prepare | migrate | migrate-check <file> ...
//       A migration killed part-way (see Migrate.swift).
//   actorstore-crash-child commits | follow | observe | hold | manage | race | hog | stream | resume <file> ...
//       Several processes on one file (see Sharing.swift).
//   actorstore-crash-child tryopen <file>
//       Opens the store read-write while another process writes it (recovering under the writer lock of
//       every process, beside that writer): prints `TRYOPEN opened` (exit 0), `TRYOPEN refused alreadyOpen`
//       (exit 1) or `TRYOPEN error <error>` (exit 2).
//
// Every line is written with one `write` to stdout, unbuffered, so a line printed is a line the parent
// reads even when the child is killed right after.

func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func describe(_ error: any Error) -> String {
    if let error = error as? RealmError { return "\(error.code): \(error.message)" }
    return "\(type(of: error)): \(error)"
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    emit("usage: actorstore-crash-child write <file> <workload> [--watch-stdin] | verify <file> | tryopen <file>")
    exit(64)
}
let path = arguments[2]

switch arguments[1] {
case "write":
    guard arguments.count >= 4, let workload = Workload(rawValue: arguments[3]) else {
        emit("ERROR unknown workload; one of: \(Workload.allCases.map(\.rawValue).joined(separator: " "))")
        exit(64)
    }
    if arguments.contains("--watch-stdin") {
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(0, &byte, 1) > 0 {}
            exit(4)
        }
    }
    do {
        try await runWriter(path: path, workload: workload)
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "verify":
    exit(await runVerify(path: path))
case "migrate-prepare":
    do {
        try await runMigrationPrepare(path: path, count: Int(arguments.last ?? "") ?? 1000)
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "migrate":
    do {
        try await runMigrate(path: path)
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "migrate-check":
    exit(await runMigrationCheck(path: path, count: Int(arguments.last ?? "") ?? 1000))
case "commits":
    do {
        let count = arguments.count > 3 ? Int(arguments[3]) ?? 0 : 0
        try await runCommits(path: path, count: count, reopenEvery: arguments.count > 4 ? Int(arguments[4]) : nil)
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "follow":
    do {
        exit(try await runFollow(path: path, target: arguments.count > 3 ? Int(arguments[3]) ?? 0 : 0))
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "observe":
    do {
        try await runObserve(
            path: path, target: arguments.count > 3 ? Int(arguments[3]) ?? 0 : 0,
            readOnly: !(arguments.count > 4 && arguments[4] == "rw"))
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "hold":
    do {
        try await runHold(path: path, readOnly: arguments.count > 3 && arguments[3] == "ro")
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "manage":
    exit(
        await runManage(
            path: path, operation: arguments.count > 3 ? arguments[3] : "",
            source: arguments.count > 4 ? arguments[4] : nil))
case "race":
    do {
        exit(
            try await runRace(
                path: path, writer: arguments.count > 3 ? Int(arguments[3]) ?? 1 : 1,
                count: arguments.count > 4 ? Int(arguments[4]) ?? 0 : 0))
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "hog":
    do {
        exit(try await runHog(path: path, writer: arguments.count > 3 ? Int(arguments[3]) ?? 9 : 9))
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "stream":
    do {
        try await runStream(path: path, commits: arguments.count > 3 ? Int(arguments[3]) ?? 0 : 0)
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "resume":
    do {
        try await runResume(path: path, count: arguments.count > 3 ? Int(arguments[3]) ?? 0 : 0)
    } catch {
        emit("ERROR \(describe(error))")
        exit(3)
    }
case "tryopen":
    do {
        let realm = try await Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: path)))
        emit("TRYOPEN opened")
        _ = realm
        exit(0)
    } catch let error as RealmError where error.code == .alreadyOpen {
        emit("TRYOPEN refused alreadyOpen")
        exit(1)
    } catch {
        emit("TRYOPEN error \(describe(error))")
        exit(2)
    }
default:
    emit("ERROR unknown mode \(arguments[1])")
    exit(64)
}
