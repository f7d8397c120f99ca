// ActorStoreBenchmarkKit: the harness of this project's benchmark tools (engine-bench here; object-bench and
// actorstore-bench in Benchmarks/). A tool library, not part of ActorStore's API: it is public only because
// Benchmarks/ is another package, and its API changes with the tools' needs.

import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A tool's list of benchmarks, in the order they run. The raw names are what `--only` takes.
public protocol BenchmarkCase: RawRepresentable, CaseIterable, Sendable where RawValue == String {
    /// One line for `--list` and the header printed before the benchmark runs.
    var summary: String { get }
}

/// A command-line error; the tool prints it with its usage and exits with status 2.
public struct UsageError: Error, CustomStringConvertible {
    /// What is wrong with the command line.
    public var description: String
    /// An error saying `description`.
    public init(description: String) { self.description = description }
}

/// A benchmark that could not run or whose results are wrong (a failed check, a failed system call).
public struct BenchmarkFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// A failure saying `description`.
    public init(_ description: String) { self.description = description }
    /// A failure saying `description`.
    public init(description: String) { self.description = description }
}

/// The arguments being parsed; a tool's own flags read their values through it.
public struct ArgumentReader {
    /// Every argument (without the program's name).
    public let arguments: [String]
    /// The argument being parsed.
    public var index = 0
    /// Whether integers may be grouped with `,` (`_` always may).
    public var commasInNumbers: Bool

    /// The argument after `flag`.
    public mutating func value(_ flag: String) throws -> String {
        index += 1
        guard index < arguments.count else { throw UsageError(description: "\(flag) needs a value") }
        return arguments[index]
    }

    /// The integer after `flag`, at least `minimum`.
    public mutating func integer(_ flag: String, minimum: Int) throws -> Int {
        var text = try value(flag).replacingOccurrences(of: "_", with: "")
        if commasInNumbers { text = text.replacingOccurrences(of: ",", with: "") }
        guard let n = Int(text), n >= minimum else {
            throw UsageError(description: "\(flag) needs an integer of at least \(minimum), not '\(text)'")
        }
        return n
    }
}

/// The flags every tool shares: `--quick`, `--json`, `--only`, `--dir`, `--runs`, `--list`, `-h`/`--help`.
public struct CommonOptions: Sendable {
    /// `--quick`: small sizes and one run, for CI.
    public var quick = false
    /// `--json PATH`: where to write the results as JSON too.
    public var jsonPath: String?
    /// The selected benchmark names; `nil` runs all of them.
    public var only: Set<String>?
    /// `--dir DIR`: the parent of the temporary directory, instead of the system's.
    public var directory: String?
    /// `--runs N`: repetitions of each measurement, instead of the tool's default.
    public var runs: Int?

    /// No flag given.
    public init() {}

    /// "quick" or "full".
    public var mode: String { quick ? "quick" : "full" }

    /// The benchmarks to run, in their declared order.
    public func selected<B: BenchmarkCase>(_: B.Type) -> [B] {
        B.allCases.filter { only?.contains($0.rawValue) ?? true }
    }

    /// Parses `arguments`; `extra` handles the tool's own flags and returns false for one it does not know.
    /// `--list` and `--help` print and exit. `--only` takes names and name prefixes, in any case.
    public static func parse<B: BenchmarkCase>(
        _ arguments: [String], benchmarks: B.Type, usage: String, runsMinimum: Int, commasInNumbers: Bool,
        extra: (String, inout ArgumentReader) throws -> Bool
    ) throws -> CommonOptions {
        var options = CommonOptions()
        var reader = ArgumentReader(arguments: arguments, commasInNumbers: commasInNumbers)
        while reader.index < arguments.count {
            let argument = arguments[reader.index]
            switch argument {
            case "--quick": options.quick = true
            case "--json": options.jsonPath = try reader.value(argument)
            case "--dir": options.directory = try reader.value(argument)
            case "--runs": options.runs = try reader.integer(argument, minimum: runsMinimum)
            case "--only":
                var selected = options.only ?? []
                let names = try reader.value(argument).split(separator: ",")
                for name in names.map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
                    // An exact name selects that benchmark only ('insert-create' is also a prefix of another,
                    // 'W1' of 'W10').
                    let key = name.lowercased()
                    let exact = B.allCases.filter { $0.rawValue.lowercased() == key }
                    let matches = exact.isEmpty ? B.allCases.filter { $0.rawValue.lowercased().hasPrefix(key) } : exact
                    guard !matches.isEmpty else {
                        throw UsageError(
                            description: "unknown benchmark '\(name)'; known: "
                                + B.allCases.map(\.rawValue).joined(separator: ", "))
                    }
                    selected.formUnion(matches.map(\.rawValue))
                }
                options.only = selected
            case "--list":
                print(B.allCases.map { "\($0.rawValue)\t\($0.summary)" }.joined(separator: "\n"))
                exit(0)
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                guard try extra(argument, &reader) else {
                    throw UsageError(description: "unknown argument '\(argument)'")
                }
            }
            reader.index += 1
        }
        return options
    }
}

/// The run loop and the closing summary of the tools that report ``Measurement``s.
public enum Harness {
    /// Runs each benchmark under a `[name] summary` header, followed by its duration; an error is printed
    /// and the next benchmark runs. Returns false if any benchmark threw.
    public static func runEach<B: BenchmarkCase>(_ benchmarks: [B], _ body: (B) async throws -> Void) async -> Bool {
        var failed = false
        for benchmark in benchmarks {
            print("\n[\(benchmark.rawValue)] \(benchmark.summary)")
            fflush(nil)
            let benchmarkStart = monotonicNanos()
            do {
                try await body(benchmark)
            } catch {
                failed = true
                print("  FAILED: \(error)")
            }
            print(String(format: "  (%.1f s)", secondsSince(benchmarkStart)))
            fflush(nil)
        }
        return !failed
    }

    /// Records the total time (since `start`, a ``monotonicNanos()`` reading) and the load average, prints
    /// the table and the target tally, writes the JSON to `jsonPath` if given. Returns false if that failed.
    public static func finish(_ report: inout Report, tool: String, start: UInt64, jsonPath: String?) -> Bool {
        report.totalSeconds = secondsSince(start)
        report.loadAverageAtEnd = Report.loadAverage()
        print("\n" + report.table())
        let misses = report.misses.count
        let judged = report.measurements.filter { $0.target != nil }.count
        print(
            "\n\(judged - misses) of \(judged) targets met, \(misses) missed; total "
                + String(format: "%.1f", report.totalSeconds) + " s (mode \(report.mode)); load average "
                + "\(report.loadAverageAtStart) at start, \(report.loadAverageAtEnd) at end")
        if let path = jsonPath {
            do {
                try report.writeJSON(to: path)
                print("wrote \(path)")
            } catch {
                FileHandle.standardError.write(Data("\(tool): cannot write \(path): \(error)\n".utf8))
                return false
            }
        }
        return true
    }

    /// Removes the directory `root` if the run is interrupted (Ctrl-C, SIGTERM). Cancel the returned source
    /// to stop.
    public static func removeOnInterrupt(tool: String, root: String) -> DispatchSourceSignal {
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let term = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        for signalSource in [source, term] {
            signalSource.setEventHandler {
                try? FileManager.default.removeItem(atPath: root)
                FileHandle.standardError.write(Data("\n\(tool): interrupted; removed \(root)\n".utf8))
                exit(130)
            }
            signalSource.resume()
        }
        // Keep the SIGTERM source alive as long as the SIGINT one: cancelling the returned source cancels both.
        source.setCancelHandler { term.cancel() }
        return source
    }
}
