import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A running `actorstore-crash-child`: its stdout and stderr go through one pipe that a thread reads line by
/// line, so lines the child wrote before a SIGKILL are all seen.
final class ChildProcess: @unchecked Sendable {
    static let executableName = "actorstore-crash-child"

    /// The child executable: `ACTORSTORE_CRASH_CHILD` if set, else next to the test bundle (the build
    /// products directory, e.g. `.build/debug`), else `<package>/.build/debug`.
    static let executable: URL? = {
        if let path = ProcessInfo.processInfo.environment["ACTORSTORE_CRASH_CHILD"] {
            return URL(fileURLWithPath: path)
        }
        var directories: [URL] = []
        for start in [
            Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ] {
            // On macOS the test binary sits in X.xctest/Contents/MacOS: look a few levels up.
            var directory = start?.standardizedFileURL
            for _ in 0..<4 {
                guard let current = directory else { break }
                directories.append(current)
                directory = current.deletingLastPathComponent()
            }
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        directories.append(packageRoot.appendingPathComponent(".build/debug"))
        return directories.map { $0.appendingPathComponent(executableName) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    let process = Process()
    private let output = Pipe()
    private let input: Pipe?
    private let condition = NSCondition()
    private var lines: [String] = []
    private var ended = false

    /// Starts the child. With `holdStdin` its stdin is a pipe this object keeps open until the child is
    /// reaped (a `write --watch-stdin` child exits when it closes, e.g. when the test process dies).
    init(_ executable: URL, _ arguments: [String], holdStdin: Bool = false) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        input = holdStdin ? Pipe() : nil
        process.standardInput = input ?? FileHandle.nullDevice
        try process.run()
        let descriptor = output.fileHandleForReading.fileDescriptor
        let thread = Thread { [self] in readLines(descriptor) }
        thread.start()
    }

    private func readLines(_ descriptor: Int32) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            pending.append(contentsOf: buffer[0..<count])
            var complete: [String] = []
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                complete.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
            if !complete.isEmpty {
                condition.lock()
                lines += complete
                condition.broadcast()
                condition.unlock()
            }
        }
        condition.lock()
        if !pending.isEmpty { lines.append(String(decoding: pending, as: UTF8.self) + " (no newline)") }
        ended = true
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until `done(lines so far)` holds or the output ends; returns whether `done` held.
    @discardableResult
    func wait(until done: ([String]) -> Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !done(lines) {
            if ended { return false }
            condition.wait()
        }
        return true
    }

    /// Closes the child's stdin (started with `holdStdin`): a `hold` child then closes its realm and exits.
    func closeInput() {
        try? input?.fileHandleForWriting.close()
    }

    /// Kills the child with SIGKILL (if it is still running), then reaps it.
    func killNow() -> [String] {
        _ = kill(process.processIdentifier, SIGKILL)
        return finish()
    }

    /// Waits for the child to exit and its output to end; returns every line it printed.
    func finish() -> [String] {
        process.waitUntilExit()
        wait { _ in false }
        try? input?.fileHandleForWriting.close()
        try? output.fileHandleForReading.close()
        condition.lock()
        defer { condition.unlock() }
        return lines
    }

    /// Whether the child was ended by SIGKILL.
    var wasKilled: Bool {
        process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
    }
}
