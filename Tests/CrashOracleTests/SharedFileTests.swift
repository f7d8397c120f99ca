import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Several processes on one file (issue 20), with real processes (`actorstore-crash-child commits | follow
// | hold | manage`, see Tests/CrashOracleChild/Sharing.swift): a read-only process follows another
// process's commits, and deleting, compacting or copying over a file another process has open is refused.

@Suite("Several processes on one file", .serialized)
struct SharedFileTests {
    static let long = ProcessInfo.processInfo.environment["ACTORSTORE_LONG"] == "1"

    static func executable() throws -> URL {
        try #require(ChildProcess.executable, "\(ChildProcess.executableName) not found next to the test bundle")
    }

    static func directory(_ name: String) -> String {
        let directory = NSTemporaryDirectory() + "actorstore-shared-\(name)-\(getpid())-\(UUID())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Runs a child to its end and returns its lines and exit status.
    static func run(_ executable: URL, _ arguments: [String]) throws -> (lines: [String], status: Int32) {
        let child = try ChildProcess(executable, arguments)
        let lines = child.finish()
        return (lines, child.process.terminationStatus)
    }

    @Test(arguments: ["ro", "rw"])
    func fileManagementIsRefusedWhileAnotherProcessHasTheFileOpen(_ mode: String) async throws {
        let executable = try Self.executable()
        let failures = await onOwnThread { () -> [String] in
            let directory = Self.directory("manage")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/shared.realm"
            let other = directory + "/other.realm"
            var failures: [String] = []
            do {
                for (path, count) in [(file, "3"), (other, "1")] {
                    let created = try Self.run(executable, ["commits", path, count])
                    if !created.lines.contains("DONE") { failures.append("creating \(path): \(created.lines)") }
                }
                let holder = try ChildProcess(executable, ["hold", file, mode], holdStdin: true)
                guard holder.wait(until: { $0.contains { $0.hasPrefix("HOLDING") } }) else {
                    return ["the holder did not open the file: \(holder.finish())"]
                }
                for operation in [["delete"], ["compact"], ["copyover", other]] {
                    let tried = try Self.run(executable, ["manage", file, operation[0]] + operation.dropFirst())
                    let said = tried.lines.last ?? ""
                    if !said.hasPrefix("MANAGE \(operation[0]) refused alreadyOpen") {
                        failures.append("\(operation[0]) while a \(mode) process holds the file: \(tried.lines)")
                    }
                    // Deleting and compacting name the process that holds the file (fcntl(F_GETLK)).
                    let named = "open in another process (pid \(holder.process.processIdentifier))"
                    if operation[0] != "copyover", !said.contains(named) {
                        failures.append("\(operation[0]) refused without naming the holder (\(named)): \(said)")
                    }
                }
                if !FileManager.default.fileExists(atPath: file) { failures.append("the held file was deleted") }
                holder.closeInput()
                let held = holder.finish()
                if held.first != "HOLDING 3" || !held.contains("CLOSED") {
                    failures.append("the holder saw \(held) (3 commits expected, then a close)")
                }
                // Closed everywhere: every operation is allowed again, and nothing was lost meanwhile.
                let compacted = try Self.run(executable, ["manage", file, "compact"])
                if compacted.lines.last != "MANAGE compact done" {
                    failures.append("compact after close: \(compacted.lines)")
                }
                let reader = try ChildProcess(executable, ["hold", file, "ro"], holdStdin: true)
                reader.closeInput()
                let read = reader.finish()
                if read.first != "HOLDING 3" { failures.append("after the refusals the file holds: \(read)") }
                let deleted = try Self.run(executable, ["manage", file, "delete"])
                if deleted.lines.last != "MANAGE delete done true" {
                    failures.append("delete after close: \(deleted.lines)")
                }
                if FileManager.default.fileExists(atPath: file) { failures.append("the file survived its deletion") }
            } catch {
                failures.append("starting a child failed: \(error)")
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// Process B opens the file read-only and reads in a loop while process A commits, closing and reopening
    /// the file every 25 commits (a close gives reserved space back: never while B has the file open, whose
    /// mapping would then reach past the end of the file — a SIGBUS). B must see every commit, in order,
    /// never a partial one, and end at A's last.
    @Test func aReadOnlyProcessFollowsAnotherProcessesCommits() async throws {
        let executable = try Self.executable()
        let commits = Self.long ? 3000 : 300
        let failures = await onOwnThread { () -> [String] in
            let directory = Self.directory("follow")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/shared.realm"
            var failures: [String] = []
            do {
                let created = try Self.run(executable, ["commits", file, "1"])
                if !created.lines.contains("DONE") { return ["creating the file: \(created.lines)"] }
                let follower = try ChildProcess(executable, ["follow", file, "\(commits + 1)"])
                guard follower.wait(until: { $0.contains { $0.hasPrefix("SEEN") } }) else {
                    return ["the follower did not start: \(follower.finish())"]
                }
                let writer = try Self.run(executable, ["commits", file, "\(commits)", "25"])
                if writer.status != 0 || writer.lines.last != "DONE" {
                    failures.append("writer: \(writer.lines.suffix(3))")
                }
                let seen = follower.finish()
                if follower.process.terminationStatus != 0 || seen.last != "FOLLOWED" {
                    failures.append(
                        "follower (status \(follower.process.terminationStatus), signal: \(follower.wasKilled)): "
                            + "\(seen.suffix(4))")
                }
                let counts = seen.compactMap { line -> Int? in
                    line.hasPrefix("SEEN ") ? Int(line.split(separator: " ")[1]) : nil
                }
                if counts != counts.sorted() || counts.last != commits + 1 {
                    failures.append("the follower's counts went \(counts.prefix(20))…\(counts.suffix(3))")
                }
                // Several distinct versions seen on the way: it followed, rather than opening at the end.
                if Set(counts).count < 3 { failures.append("the follower saw only \(Set(counts).sorted())") }
            } catch {
                failures.append("starting a child failed: \(error)")
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// A writer process killed with SIGKILL at random moments and started again, while a read-only process
    /// follows the file the whole time: the restarted writer finds the killed one's torn tail and, the reader
    /// being there, zeroes it instead of cutting it off (no SIGBUS); no acknowledged commit is lost; the
    /// reader never sees a partial commit or a gap, and a new reader at the end sees the last commit.
    /// 10 kills by default, 100 with ACTORSTORE_LONG=1.
    @Test func aWriterKilledBesideAReaderLosesNothingTheReaderSaw() async throws {
        let executable = try Self.executable()
        let kills = Self.long ? 100 : 10
        let seed =
            ProcessInfo.processInfo.environment["ACTORSTORE_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        print("[SharedFile kills] seed \(seed) (replay with ACTORSTORE_SEED=\(seed))")
        let failures = await onOwnThread { () -> [String] in
            var random = SplitMix64(seed: seed)
            let directory = Self.directory("kill")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/shared.realm"
            var failures: [String] = []
            do {
                let created = try Self.run(executable, ["commits", file, "1"])
                if !created.lines.contains("DONE") { return ["creating the file: \(created.lines)"] }
                let follower = try ChildProcess(executable, ["follow", file, "1000000000"])
                var acknowledged = 1
                for kill in 0..<kills {
                    let writer = try ChildProcess(executable, ["commits", file, "1000000"])
                    let acks = Int.random(in: 0...12, using: &random)
                    writer.wait { lines in lines.filter { $0.hasPrefix("ACK") }.count >= acks }
                    usleep(UInt32.random(in: 0...3000, using: &random))
                    let lines = writer.killNow()
                    if let start = lines.first(where: { $0.hasPrefix("START") }),
                        let found = Int(start.split(separator: " ")[1]), found < acknowledged
                    {
                        failures.append(
                            "kill \(kill): the writer started at \(found), \(acknowledged) were acknowledged")
                    }
                    if let error = lines.first(where: { $0.hasPrefix("ERROR") }) {
                        failures.append("kill \(kill): \(error)")
                    }
                    for line in lines where line.hasPrefix("ACK ") {
                        acknowledged = max(acknowledged, Int(line.split(separator: " ")[1]) ?? 0)
                    }
                }
                let last = try Self.run(executable, ["commits", file, "1"])
                guard let lastLine = last.lines.first(where: { $0.hasPrefix("ACK") }),
                    let final = Int(lastLine.split(separator: " ")[1])
                else { return failures + ["the last writer: \(last.lines)"] }
                if final <= acknowledged {
                    failures.append("the last commit is \(final), \(acknowledged) were acknowledged")
                }
                // The reader that followed all along reaches the last commit, with no gap on the way.
                if !follower.wait(until: { $0.contains("SEEN \(final) \(final)") }) {
                    failures.append("the follower stopped: \(follower.finish().suffix(4))")
                }
                let seen = follower.killNow()
                if let bad = seen.first(where: { $0.hasPrefix("BAD") || $0.hasPrefix("ERROR") }) {
                    failures.append("the follower saw \(bad)")
                }
                if follower.process.terminationStatus != SIGKILL {
                    failures.append("the follower ended by itself (status \(follower.process.terminationStatus))")
                }
                let fresh = try Self.run(executable, ["follow", file, "\(final)"])
                if fresh.lines.last != "FOLLOWED" { failures.append("a new reader: \(fresh.lines.suffix(3))") }
            } catch {
                failures.append("starting a child failed: \(error)")
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// Process B iterates the change stream of a query, read-only or writable (`mode`), without reading by
    /// itself, while process A commits: B is told of each commit (the engine follows the file for its
    /// observers: inotify on Linux). Prints the delay from A's acknowledgement to B's delivery (p50, p99),
    /// measured, not asserted. 100 commits by default, 2,000 with ACTORSTORE_LONG=1.
    @Test(arguments: ["ro", "rw"])
    func anObserverInAnotherProcessHearsOfEachCommit(_ mode: String) async throws {
        let executable = try Self.executable()
        let commits = Self.long ? 2000 : 100
        let (failures, delays) = await onOwnThread { () -> ([String], [Double]) in
            let directory = Self.directory("observe")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/shared.realm"
            var failures: [String] = []
            var delays: [Double] = []
            do {
                let created = try Self.run(executable, ["commits", file, "1"])
                if !created.lines.contains("DONE") { return (["creating the file: \(created.lines)"], []) }
                let observer = try ChildProcess(executable, ["observe", file, "\(commits + 1)", mode])
                guard observer.wait(until: { $0.contains { $0.hasPrefix("SAW") } }) else {
                    return (["the observer did not start: \(observer.finish())"], [])
                }
                let writer = try Self.run(executable, ["commits", file, "\(commits)"])
                if writer.lines.last != "DONE" { failures.append("writer: \(writer.lines.suffix(3))") }
                let seen = observer.finish()
                if observer.process.terminationStatus != 0 || seen.last != "OBSERVED" {
                    failures.append("observer (status \(observer.process.terminationStatus)): \(seen.suffix(4))")
                }
                let saw = seen.compactMap { line -> (count: Int, time: UInt64)? in
                    let fields = line.split(separator: " ")
                    guard fields.count == 3, fields[0] == "SAW", let count = Int(fields[1]),
                        let time = UInt64(fields[2])
                    else { return nil }
                    return (count, time)
                }
                if saw.map(\.count) != saw.map(\.count).sorted() || saw.last?.count != commits + 1 {
                    failures.append("the observer's counts: \(saw.map(\.count).suffix(10))")
                }
                for line in writer.lines where line.hasPrefix("ACK ") {
                    let fields = line.split(separator: " ")
                    guard fields.count == 3, let id = Int(fields[1]), let acked = UInt64(fields[2]),
                        let delivery = saw.first(where: { $0.count >= id })
                    else { continue }
                    delays.append(Double(Int64(delivery.time) - Int64(acked)) / 1e6)
                }
                if delays.count != commits { failures.append("\(delays.count) of \(commits) commits were delivered") }
            } catch {
                failures.append("starting a child failed: \(error)")
            }
            return (failures, delays)
        }
        let sorted = delays.sorted()
        if !sorted.isEmpty {
            let p50 = sorted[sorted.count / 2]
            let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            print(
                "[SharedFile observe \(mode)] acknowledgement → delivery in the other process, \(sorted.count) commits: "
                    + "p50 \(p50) ms, p99 \(p99) ms, max \(sorted.last!) ms (negative: seen before the writer's sync returned)"
            )
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// A writer process killed with SIGKILL while it streams a large transaction loses nothing it committed
    /// and leaves nothing behind for the next writer process. Past 4 MiB of record, a transaction writes the
    /// finished part of it to the file while it builds the rest, behind a header of zeros written only at
    /// commit (see RecordStream): the killed writer leaves megabytes of non-zero bytes after its last record.
    /// Process W (writable) and a read-only process hold the file from before the kill, so it stays shared
    /// and nobody may cut it back. After the kill W reads (catching up to the killed writer's last commit)
    /// and commits 3 small transactions: taking the writer lock, it finds a header of zeros at its end and
    /// zeroes what follows (`catchUpWithOtherWriters`'s fast path). Else its records land on the start of
    /// the stale bytes and the rest stays after them, where the scanner expects the zeros the log appends
    /// into (it tells a torn write from damage by them): so the file past W's records must be zeros. (Only
    /// the bytes tell: a kill -9 leaves no damage that would make a later scan refuse the file; a power
    /// loss while writing over the stale bytes would.) Then, every process closed, a new one opens the file
    /// and finds exactly the committed objects.
    @Test func aWriterKilledWhileStreamingALargeTransactionLeavesNothingBehind() async throws {
        let executable = try Self.executable()
        let failures = await onOwnThread { () -> [String] in
            let directory = Self.directory("stream")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/shared.realm"
            var failures: [String] = []
            var children: [ChildProcess] = []
            // A child left waiting by a failure on the way is not left running.
            defer { for child in children where child.process.isRunning { _ = child.killNow() } }
            do {
                let resumer = try ChildProcess(executable, ["resume", file, "3"], holdStdin: true)
                children.append(resumer)
                let resumerGuard = Self.watchdog(resumer, within: 120)
                guard resumer.wait(until: { $0.contains("OPEN") }) else {
                    return ["the next writer did not open the file: \(resumer.finish())"]
                }
                let reader = try ChildProcess(executable, ["hold", file, "ro"], holdStdin: true)
                children.append(reader)
                guard reader.wait(until: { $0.contains { $0.hasPrefix("HOLDING") } }) else {
                    return ["the reader did not open the file: \(reader.finish())"]
                }
                let streamer = try ChildProcess(executable, ["stream", file, "5"], holdStdin: true)
                children.append(streamer)
                let streamerGuard = Self.watchdog(streamer, within: 120)
                guard streamer.wait(until: { $0.contains { $0.hasPrefix("STREAMED") } }) else {
                    return ["the streaming writer stopped: \(streamer.finish().suffix(3))"]
                }
                let streamed = streamer.killNow()
                if !streamer.wasKilled || streamerGuard.isSet {
                    failures.append("the streaming writer was not killed by the test: \(streamed.suffix(3))")
                }
                let committed = Self.fields(streamed, "COMMITTED")
                guard committed.count == 3, let streamedSize = Self.fields(streamed, "STREAMED").first else {
                    return failures + ["the streaming writer printed \(streamed.suffix(3))"]
                }
                let (committedEnd, committedSize) = (committed[1], committed[2])
                // The killed transaction's bytes reached the file: megabytes of them, not zeros.
                let killedEnd = try Self.lastNonZeroByte(file)
                if streamedSize < committedSize + (8 << 20) || killedEnd < committedEnd + (8 << 20) {
                    failures.append(
                        "nothing was streamed: \(committedSize) → \(streamedSize) bytes, last non-zero byte "
                            + "\(committedEnd) → \(killedEnd)")
                }
                resumer.closeInput()
                let resumed = resumer.finish()
                if resumerGuard.isSet { failures.append("the next writer blocked for minutes") }
                let before = "FOUND 1,2,3,4,5 50 0"
                let after = "FOUND 1,2,3,4,5,6,7,8 50 0"
                let found = resumed.filter { $0.hasPrefix("FOUND") }
                if found != [before, after] || !resumed.contains("DONE") {
                    failures.append("the next writer saw \(resumed.suffix(6)) (\(before), then \(after) expected)")
                }
                // W's 3 small records (and whatever its close appends) take a few KiB: nothing of the killed
                // transaction is left after them.
                let finalEnd = try Self.lastNonZeroByte(file)
                if finalEnd > committedEnd + (1 << 20) {
                    failures.append(
                        "after the next writer's commits, bytes up to \(finalEnd) are not zeros (the killed "
                            + "writer's last record ended at \(committedEnd), its stream at \(killedEnd))")
                }
                // Closed everywhere, then opened again (recovery scans the whole file, its tail included).
                reader.closeInput()
                if !reader.finish().contains("CLOSED") { failures.append("the reader did not close") }
                let reopened = try Self.run(executable, ["resume", file, "0"])
                if reopened.status != 0 || !reopened.lines.contains(after) {
                    failures.append("opened again: \(reopened.lines.suffix(3))")
                }
            } catch {
                failures.append("starting a child failed: \(error)")
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// The integers after `tag` on the last line that starts with it.
    static func fields(_ lines: [String], _ tag: String) -> [Int] {
        guard let line = lines.last(where: { $0.hasPrefix(tag + " ") }) else { return [] }
        return line.split(separator: " ").dropFirst().compactMap { Int($0) }
    }

    /// The offset of the last byte of the file at `path` that is not zero, or -1 if there is none.
    static func lastNonZeroByte(_ path: String) throws -> Int {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { bytes in
            var end = bytes.count
            while end >= 8 && bytes.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) == 0 { end -= 8 }
            while end > 0 && bytes[end - 1] == 0 { end -= 1 }
            return end - 1
        }
    }

    /// The parsed `FINAL <transactions> <checksum> <problems>` of a race child, or nil.
    static func final(_ lines: [String]) -> (transactions: Int, checksum: String, problems: String)? {
        guard let line = lines.last(where: { $0.hasPrefix("FINAL ") }) else { return nil }
        let fields = line.split(separator: " ", maxSplits: 3).map(String.init)
        guard fields.count == 4, let count = Int(fields[1]) else { return nil }
        return (count, fields[2], fields[3])
    }

    /// The (id, seq) of each `ACK <id> <seq>` line (or of another tag's, `ROW` of a checker).
    static func acks(_ lines: [String], tag: Substring = "ACK") -> [(id: Int, seq: Int)] {
        lines.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == tag, let id = Int(fields[1]), let seq = Int(fields[2]) else {
                return nil
            }
            return (id, seq)
        }
    }

    /// Runs a checker (`race <file> 99 0`): the file's transactions by id, and its summary.
    static func check(
        _ executable: URL, _ file: String
    ) throws -> (rows: [Int: Int], final: (transactions: Int, checksum: String, problems: String)?) {
        let checker = try ChildProcess(executable, ["race", file, "99", "0"], holdStdin: true)
        checker.closeInput()
        let lines = checker.finish()
        var rows: [Int: Int] = [:]
        for row in acks(lines, tag: "ROW") { rows[row.id] = row.seq }
        return (rows, final(lines))
    }

    /// Kills `child` (SIGKILL) if it has not finished `within` from now: a child that blocks forever fails
    /// the test instead of hanging it. Returns a flag that says whether it had to.
    static func watchdog(_ child: ChildProcess, within seconds: Int) -> Flag {
        let fired = Flag()
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds)) {
            if child.process.isRunning {
                fired.set()
                _ = kill(child.process.processIdentifier, SIGKILL)
            }
        }
        return fired
    }

    /// A flag set from another thread.
    final class Flag: @unchecked Sendable {
        // Safety: `value` is read and written under `lock` only.
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    /// Issue 20's acceptance: 4 writer processes commit into one file at once, each also reading after each
    /// commit. Each transaction writes two objects and records how many transactions the file held when it
    /// began (its seq): with writes serialised across processes and each transaction starting at the newest
    /// version of any process, the seqs are exactly 1...total, each transaction whole. After all exit: every
    /// acknowledged commit is in the file exactly once with the seq it was acknowledged with (so versions
    /// strictly increase in commit order), and each process's final view equals the file's (read by a fifth
    /// process). 4 × 100 by default, 4 × 2,000 with ACTORSTORE_LONG=1.
    @Test func fourWriterProcessesCommitIntoOneFile() async throws {
        let executable = try Self.executable()
        let commits = Self.long ? 2000 : 100
        let failures = await onOwnThread { () -> [String] in
            let directory = Self.directory("race")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/shared.realm"
            var failures: [String] = []
            do {
                let writers = try (1...4).map { writer in
                    try ChildProcess(executable, ["race", file, "\(writer)", "\(commits)"], holdStdin: true)
                }
                let guards = writers.map { Self.watchdog($0, within: Self.long ? 1200 : 240) }
                for (index, writer) in writers.enumerated() where !writer.wait(until: { $0.contains("DONE") }) {
                    failures.append("writer \(index + 1) did not finish: \(writer.finish().suffix(3))")
                }
                for writer in writers { writer.closeInput() }
                let outputs = writers.map { $0.finish() }
                if guards.contains(where: \.isSet) { failures.append("a writer blocked for minutes") }
                let (rows, found) = try Self.check(executable, file)
                guard let file = found else { return failures + ["the checker printed no FINAL"] }
                if file.problems != "ok" { failures.append("the file: \(file.problems)") }
                if file.transactions != 4 * commits {
                    failures.append(
                        "the file holds \(file.transactions) transactions, \(4 * commits) were acknowledged")
                }
                var acknowledged: [Int: Int] = [:]
                for (index, lines) in outputs.enumerated() {
                    if let bad = lines.first(where: { $0.hasPrefix("BAD") || $0.hasPrefix("ERROR") }) {
                        failures.append("writer \(index + 1): \(bad)")
                    }
                    let acks = Self.acks(lines)
                    if acks.count != commits { failures.append("writer \(index + 1) acknowledged \(acks.count)") }
                    // A process's own commits get ever larger seqs: versions increase in commit order.
                    if acks.map(\.seq) != acks.map(\.seq).sorted() || Set(acks.map(\.seq)).count != acks.count {
                        failures.append("writer \(index + 1)'s seqs do not increase")
                    }
                    for ack in acks {
                        acknowledged[ack.seq, default: 0] += 1
                        if rows[ack.id] != ack.seq {
                            failures.append("acknowledged \(ack) is in the file as \(String(describing: rows[ack.id]))")
                        }
                    }
                    guard let view = Self.final(lines) else {
                        failures.append("writer \(index + 1) printed no FINAL")
                        continue
                    }
                    if view != file {
                        failures.append("writer \(index + 1)'s final view \(view) is not the file's \(file)")
                    }
                }
                // Every seq acknowledged once, by one process, and all of them are the file's.
                if acknowledged.count != 4 * commits || acknowledged.values.contains(where: { $0 != 1 }) {
                    failures.append(
                        "seqs acknowledged more than once: \(acknowledged.filter { $0.value != 1 }.keys.sorted().prefix(5))"
                    )
                }
            } catch {
                failures.append("starting a child failed: \(error)")
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// A writer keeps the writer lock of every process between its commits (so a process alone pays no
    /// system call per commit) and lets it go when another process waits for it: a process committing back
    /// to back, never idle, does not keep a second writer out. The second one's 20 commits finish while
    /// the first still commits; every commit of both is in the file once. (On a loaded machine the first
    /// writer also pauses now and then, so this does not prove the hand-off: WriterLockTests does.)
    @Test func aWriterThatNeverPausesStillLetsAnotherProcessWrite() async throws {
        let executable = try Self.executable()
        let failures = await onOwnThread { () -> [String] in
            let directory = Self.directory("hog")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/shared.realm"
            var failures: [String] = []
            do {
                let hog = try ChildProcess(executable, ["hog", file, "9"], holdStdin: true)
                let hogGuard = Self.watchdog(hog, within: 300)
                // The first writer is under way (it holds the lock between commits from now on).
                guard hog.wait(until: { Self.acks($0).count >= 20 }) else {
                    return ["the first writer did not start: \(hog.finish().suffix(3))"]
                }
                let other = try ChildProcess(executable, ["race", file, "1", "20"], holdStdin: true)
                let otherGuard = Self.watchdog(other, within: 120)
                if !other.wait(until: { $0.contains("DONE") }) {
                    failures.append("the second writer did not finish beside the first: \(other.finish().suffix(3))")
                }
                // The first writer committed beside the second all along (it is stopped only now).
                let hogDone = hog.process.isRunning
                hog.closeInput()
                other.closeInput()
                let (hogLines, otherLines) = (hog.finish(), other.finish())
                if !hogDone { failures.append("the first writer stopped early: \(hogLines.suffix(3))") }
                if hogGuard.isSet || otherGuard.isSet { failures.append("a writer blocked for minutes") }
                let (rows, found) = try Self.check(executable, file)
                guard let summary = found else { return failures + ["the checker printed no FINAL"] }
                if summary.problems != "ok" { failures.append("the file: \(summary.problems)") }
                let acks = Self.acks(hogLines) + Self.acks(otherLines)
                if Self.acks(otherLines).count != 20 {
                    failures.append("the second writer acknowledged \(Self.acks(otherLines).count) of 20")
                }
                if summary.transactions != acks.count {
                    failures.append("the file holds \(summary.transactions) transactions, \(acks.count) acknowledged")
                }
                for ack in acks where rows[ack.id] != ack.seq {
                    failures.append("acknowledged \(ack) is in the file as \(String(describing: rows[ack.id]))")
                }
            } catch {
                failures.append("starting a child failed: \(error)")
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// One writer process is killed with SIGKILL at random moments (and started again) while another keeps
    /// writing the same file: the survivor never blocks for good (the kernel drops a dead process's writer
    /// lock), a killed writer's torn record is zeroed by the next writer, no acknowledged commit of either
    /// is lost, and no transaction is partial. 10 kills by default, 100 with ACTORSTORE_LONG=1.
    @Test func aWriterKilledBesideAnotherWriterLosesNothing() async throws {
        let executable = try Self.executable()
        let kills = Self.long ? 100 : 10
        let seed =
            ProcessInfo.processInfo.environment["ACTORSTORE_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        print("[SharedFile writer kills] seed \(seed) (replay with ACTORSTORE_SEED=\(seed))")
        let failures = await onOwnThread { () -> [String] in
            var random = SplitMix64(seed: seed)
            let directory = Self.directory("writerkill")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/shared.realm"
            var failures: [String] = []
            do {
                let survivor = try ChildProcess(executable, ["race", file, "1", "1000000000"], holdStdin: true)
                let survivorGuard = Self.watchdog(survivor, within: Self.long ? 1200 : 240)
                guard survivor.wait(until: { $0.contains { $0.hasPrefix("ACK") } }) else {
                    return ["the survivor did not start: \(survivor.finish().suffix(3))"]
                }
                var killedAcks: [(id: Int, seq: Int)] = []
                for kill in 0..<kills {
                    let writer = try ChildProcess(executable, ["race", file, "\(kill + 2)", "1000000000"])
                    let acks = Int.random(in: 0...12, using: &random)
                    writer.wait { lines in lines.filter { $0.hasPrefix("ACK") }.count >= acks }
                    usleep(UInt32.random(in: 0...3000, using: &random))
                    let lines = writer.killNow()
                    if let error = lines.first(where: { $0.hasPrefix("ERROR") || $0.hasPrefix("BAD") }) {
                        failures.append("kill \(kill): \(error)")
                    }
                    killedAcks += Self.acks(lines)
                }
                // The survivor still writes after the last kill: wait for 5 more of its commits.
                var survivorAcks = 0
                survivor.wait { lines in
                    survivorAcks = lines.count { $0.hasPrefix("ACK") }
                    return true
                }
                let target = survivorAcks + 5
                if !survivor.wait(until: { lines in lines.count { $0.hasPrefix("ACK") } >= target }) {
                    failures.append("the survivor stopped committing: \(survivor.finish().suffix(3))")
                }
                survivor.closeInput()
                let survived = survivor.killNow()
                if survivorGuard.isSet { failures.append("the survivor blocked for minutes") }
                if let bad = survived.first(where: { $0.hasPrefix("BAD") || $0.hasPrefix("ERROR") }) {
                    failures.append("the survivor: \(bad)")
                }
                let (rows, found) = try Self.check(executable, file)
                guard let final = found else { return failures + ["the checker printed no FINAL"] }
                if final.problems != "ok" { failures.append("the file: \(final.problems)") }
                // Every acknowledged transaction of both is there with the seq it was acknowledged with (the
                // checker checked that the seqs are exactly 1...transactions, each transaction whole); at most
                // one per killed writer landed unacknowledged.
                let acknowledged = killedAcks + Self.acks(survived)
                if Set(acknowledged.map(\.seq)).count != acknowledged.count {
                    failures.append("a seq was acknowledged twice")
                }
                for ack in acknowledged where rows[ack.id] != ack.seq {
                    failures.append("acknowledged \(ack) is in the file as \(String(describing: rows[ack.id]))")
                }
                if final.transactions > acknowledged.count + kills {
                    failures.append(
                        "\(final.transactions) transactions, \(acknowledged.count) acknowledged, \(kills) kills")
                }
            } catch {
                failures.append("starting a child failed: \(error)")
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
    }
}
