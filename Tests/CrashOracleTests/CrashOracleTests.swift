import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The kill -9 crash oracle, with real processes: for each workload, start `actorstore-crash-child write`,
// wait for a random number of acknowledged commits (ACK lines), wait a random delay, SIGKILL it, then run
// `actorstore-crash-child verify` on the file and check that no acknowledged commit was lost, no transaction
// is partial (the child's verifier checks every invariant) and at most the one commit in flight per writer
// landed unacknowledged. In a quarter of the cycles a `tryopen` child opens the file read-write while the
// writer lives (a second writer process; its recovery must not disturb the live writer). A file serves several cycles (each writer continues where the
// last one was killed), then a fresh one starts.
//
// Default: 23 kills per workload, 13 of the 2,000-object one (105 in all). ACTORSTORE_LONG=1: 200 per
// workload (1,000).
// ACTORSTORE_SEED=<seed> replays the kill schedule (the number of ACKs to wait for, the delays, the
// tryopen cycles); where in a commit a delay lands still depends on timing.

/// A workload of the child, with how long to let it run before the kill.
struct OracleWorkload: Sendable, CustomTestStringConvertible {
    var name: String
    var streams: Int
    /// The kill comes after 0...maxAcks ACK lines, then 0...maxDelay microseconds.
    var maxAcks: Int
    var maxDelay: Int
    /// Cycles on one file before a fresh one starts (each verify reads the whole file).
    var cyclesPerFile = 7
    /// Kills in the default run (the 2,000-object transactions cost the most per cycle); 200 each in the
    /// long run.
    var defaultCycles = 23

    var testDescription: String { name }

    static let all = [
        OracleWorkload(name: "serial", streams: 1, maxAcks: 12, maxDelay: 15_000),
        OracleWorkload(name: "big", streams: 1, maxAcks: 2, maxDelay: 100_000, cyclesPerFile: 3, defaultCycles: 13),
        OracleWorkload(name: "concurrent", streams: 4, maxAcks: 16, maxDelay: 15_000),
        OracleWorkload(name: "compact", streams: 2, maxAcks: 8, maxDelay: 40_000),
        OracleWorkload(name: "autocompact", streams: 1, maxAcks: 12, maxDelay: 40_000),
    ]
}

/// What a campaign saw.
struct OracleReport: Sendable {
    var kills = 0
    /// Kills before the writer printed START (during launch, open or recovery).
    var killsBeforeStart = 0
    /// Cycles whose verify found the commit in flight at the kill (acknowledged + 1).
    var inFlightLanded = 0
    var tryOpensOpened = 0
    var compactions = 0
    var shrinks = 0
    var failures: [String] = []
}

@Suite("Crash oracle (kill -9 of real processes)", .serialized)
struct CrashOracleTests {
    static let long = ProcessInfo.processInfo.environment["ACTORSTORE_LONG"] == "1"

    @Test(arguments: OracleWorkload.all)
    func killedWriterLosesNoAcknowledgedCommit(_ workload: OracleWorkload) async throws {
        let executable = try #require(
            ChildProcess.executable,
            """
            \(ChildProcess.executableName) not found next to the test bundle: `swift test` and \
            `swift build --build-tests` build it (they build every product; `--skip-build` does not); \
            ACTORSTORE_CRASH_CHILD=<path> names it explicitly
            """)
        let seed =
            ProcessInfo.processInfo.environment["ACTORSTORE_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        print("[CrashOracle \(workload.name)] seed \(seed) (replay with ACTORSTORE_SEED=\(seed))")
        let cycles = Self.long ? 200 : workload.defaultCycles
        let start = ContinuousClock.now
        let report = await onOwnThread {
            var campaign = Campaign(executable: executable, workload: workload, seed: seed)
            return campaign.run(cycles: cycles)
        }
        print(
            "[CrashOracle \(workload.name)] \(report.kills) kills (\(report.killsBeforeStart) before START), "
                + "\(report.inFlightLanded) in-flight commits landed, \(report.tryOpensOpened) second writers opened "
                + "beside it, \(report.compactions) explicit compactions, \(report.shrinks) file shrinks, "
                + "\(report.failures.count) failures, \(ContinuousClock.now - start)")
        for failure in report.failures {
            Issue.record("\(failure) (seed \(seed))")
        }
        #expect(report.kills == cycles || !report.failures.isEmpty)
    }
}

/// Runs `body` on a thread of its own: the campaign blocks (pipes, waitpid, delays), which must not hold
/// one of the few threads of Swift's cooperative pool.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// One workload's cycles of write, kill, verify.
struct Campaign {
    let executable: URL
    let workload: OracleWorkload
    var random: SplitMix64
    let directory: String
    var report = OracleReport()
    /// Per stream, the last commit the last verify found in the current file.
    var committed: [Int] = []

    init(executable: URL, workload: OracleWorkload, seed: UInt64) {
        self.executable = executable
        self.workload = workload
        random = SplitMix64(seed: seed ^ UInt64(workload.name.utf8.reduce(0) { $0 &* 31 &+ Int($1) }))
        directory = NSTemporaryDirectory() + "actorstore-crash-oracle-\(getpid())-\(workload.name)-\(UUID())"
    }

    mutating func run(cycles: Int) -> OracleReport {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var file = ""
        for cycle in 0..<cycles {
            if cycle % workload.cyclesPerFile == 0 {
                file = directory + "/store-\(cycle).realm"
                committed = Array(repeating: 0, count: workload.streams)
            }
            let failure: String?
            do {
                failure = try runCycle(file)
            } catch {
                failure = "could not run the child: \(error)"
            }
            if let failure {
                report.failures.append("\(workload.name) cycle \(cycle), file \(file): \(failure)")
                // Keep the directory (the file as killed is <file>.killed) and stop: later cycles would build
                // on a broken file.
                print("[CrashOracle \(workload.name)] failure; files kept in \(directory)")
                return report
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
        return report
    }

    /// One cycle; returns what went wrong, or nil.
    private mutating func runCycle(_ file: String) throws -> String? {
        // The kill schedule: one draw in eight kills without waiting for any ACK (launch, open, recovery,
        // compaction on launch); the rest after 1...maxAcks ACKs. Then a delay, varied in scale.
        let acks =
            Int.random(in: 0..<8, using: &random) == 0 ? 0 : Int.random(in: 1...workload.maxAcks, using: &random)
        let scale = [1, 4, 20, 100][Int.random(in: 0..<4, using: &random)]
        let delay = Int.random(in: 0...max(1, workload.maxDelay * scale / 100), using: &random)
        let tryOpen = Int.random(in: 0..<4, using: &random) == 0

        let writer = try ChildProcess(executable, ["write", file, workload.name, "--watch-stdin"], holdStdin: true)
        var refusal: String?
        if tryOpen {
            // The writer holds the file from START on: a second writable process opens it beside the writer
            // (recovering under the writer lock, so the writer's record being appended is not taken for a
            // torn tail), and nothing the writer acknowledged may be lost by it.
            let started = writer.wait { lines in lines.contains { $0.hasPrefix("START") } }
            if started {
                let opener = try ChildProcess(executable, ["tryopen", file])
                let said = opener.finish()
                if said.last == "TRYOPEN opened", opener.process.terminationStatus == 0 {
                    report.tryOpensOpened += 1
                } else if writer.process.isRunning {
                    refusal = "a second writable open while the writer lived failed: \(said.suffix(3))"
                }
            }
        }
        writer.wait { lines in lines.count { $0.hasPrefix("ACK ") } >= acks }
        usleep(UInt32(delay))
        let lines = writer.killNow()
        report.kills += 1
        if let refusal { return refusal }
        guard writer.wasKilled else {
            return "the writer ended before the kill (status \(writer.process.terminationStatus)): \(lines.suffix(5))"
        }

        // What the writer acknowledged: per stream, seqs continuing from the last verified commit.
        var acknowledged = committed
        var started = false
        for line in lines {
            let fields = line.split(separator: " ").map(String.init)
            switch fields.first {
            case "START":
                started = true
                let starts = fields.dropFirst().compactMap { Int($0) }
                if starts != committed {
                    return "the writer reopened at \(starts), the last verify found \(committed)"
                }
            case "ACK":
                guard fields.count == 4, let stream = Int(fields[1]), let seq = Int(fields[2]),
                    acknowledged.indices.contains(stream)
                else { return "bad line from the writer: \(line)" }
                if seq != acknowledged[stream] + 1 {
                    return "stream \(stream) acknowledged \(seq) after \(acknowledged[stream])"
                }
                acknowledged[stream] = seq
            case "COMPACTED": report.compactions += 1
            // A `tryopen` process had the file open at that moment: compaction waits for no other process.
            case "COMPACT": break
            case "SHRUNK": report.shrinks += 1
            default: return "unexpected line from the writer: \(line)"
            }
        }
        if !started { report.killsBeforeStart += 1 }

        // The file as the kill left it, kept for a failure's post-mortem (verify recovers it in place).
        try? FileManager.default.removeItem(atPath: file + ".killed")
        try? FileManager.default.copyItem(atPath: file, toPath: file + ".killed")

        let verifier = try ChildProcess(executable, ["verify", file])
        let said = verifier.finish()
        guard let line = said.last(where: { $0.hasPrefix("VERIFY ") }),
            let summary = try? JSONDecoder().decode(VerifySummary.self, from: Data(line.dropFirst(7).utf8))
        else {
            if !FileManager.default.fileExists(atPath: file) && acknowledged.allSatisfy({ $0 == 0 }) {
                return nil  // killed before the file existed: nothing was acknowledged, nothing to verify
            }
            return "verify failed (status \(verifier.process.terminationStatus)): \(said.suffix(5))"
        }
        if !summary.ok || verifier.process.terminationStatus != 0 {
            return "verify found: \(summary.problems.joined(separator: "; "))"
        }
        let last = (0..<workload.streams).map { summary.last.indices.contains($0) ? summary.last[$0] : 0 }
        if summary.last.count > workload.streams { return "verify found streams \(summary.last)" }
        for stream in 0..<workload.streams {
            if last[stream] < acknowledged[stream] {
                return "stream \(stream): acknowledged \(acknowledged[stream]) commits, the file has \(last[stream])"
            }
            if last[stream] > acknowledged[stream] + 1 {
                return "stream \(stream): \(last[stream]) commits, only \(acknowledged[stream]) acknowledged (+1)"
            }
            if last[stream] == acknowledged[stream] + 1 { report.inFlightLanded += 1 }
        }
        for suffix in [".compacting", ".creating"] where FileManager.default.fileExists(atPath: file + suffix) {
            return "\(file + suffix) left after the reopen"
        }
        committed = last
        return nil
    }
}

/// The verifier's `VERIFY` JSON (Tests/CrashOracleChild/Verify.swift).
struct VerifySummary: Decodable {
    var ok: Bool
    var last: [Int]
    var commits: Int
    var purged: Int
    var entries: Int
    var problems: [String]
}

/// A small seedable PRNG (SplitMix64), so a seed replays the kill schedule.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
