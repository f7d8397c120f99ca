// engine-bench: the storage engine's benchmark.
//
//   swift build -c release --product engine-bench
//   .build/release/engine-bench [--quick] [--json out.json] [--only NAME[,NAME...]] [--dir /path] [--runs N] [--rows N]
//
// Every measurement is repeated (default 3 runs) and reported as min / median / max; targets are judged on
// the median. Files live in a fresh directory under /tmp (or --dir) that is removed at the end.
import Foundation

/// What the command line asked for.
struct Options: Sendable {
    var quick = false
    var jsonPath: String?
    var only: Set<String>?
    var directory: String?
    var runs = 3
    var rows: Int?
    /// Internal: run as the child process of the `memory` benchmark on this store.
    var memoryProbePath: String?

    static let usage = """
        usage: engine-bench [--quick] [--json FILE] [--only NAME[,NAME...]] [--dir DIR] [--runs N] [--rows N]

          --quick        small N (CI): finishes in well under a minute
          --json FILE    also write the results as JSON
          --only NAMES   run only these benchmarks (comma-separated; a prefix such as 'raw' or 'commit' selects
                         a group). The N-row store they share is built untimed; commit-serial measures
                         raw-append first if it was not selected (its ratio needs it).
          --dir DIR      put the temporary store files under DIR instead of /tmp
          --runs N       repetitions of each measurement (at least 3; default 3)
          --rows N       rows of the large table (default 1,000,000; 100,000 with --quick); size targets scale
          --list         list the benchmark names

        benchmarks: \(Benchmark.allCases.map(\.rawValue).joined(separator: ", "))
        """

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var i = 0
        func value(_ flag: String) throws -> String {
            i += 1
            guard i < arguments.count else { throw UsageError(description: "\(flag) needs a value") }
            return arguments[i]
        }
        func positive(_ flag: String, minimum: Int) throws -> Int {
            let text = try value(flag).replacingOccurrences(of: "_", with: "")
            guard let n = Int(text), n >= minimum else {
                throw UsageError(description: "\(flag) needs an integer of at least \(minimum), not '\(text)'")
            }
            return n
        }
        while i < arguments.count {
            let argument = arguments[i]
            switch argument {
            case "--quick": options.quick = true
            case "--json": options.jsonPath = try value(argument)
            case "--dir": options.directory = try value(argument)
            case "--runs": options.runs = try positive(argument, minimum: 3)
            case "--rows": options.rows = try positive(argument, minimum: 1000)
            case "--only":
                var selected = options.only ?? []
                for name in try value(argument).split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
                where !name.isEmpty {
                    let matches = Benchmark.allCases.filter { $0.rawValue == name || $0.rawValue.hasPrefix(name) }
                    guard !matches.isEmpty else {
                        throw UsageError(
                            description: "unknown benchmark '\(name)'; known: "
                                + Benchmark.allCases.map(\.rawValue).joined(separator: ", "))
                    }
                    selected.formUnion(matches.map(\.rawValue))
                }
                options.only = selected
            case "--memory-probe": options.memoryProbePath = try value(argument)
            case "--list":
                print(Benchmark.allCases.map { "\($0.rawValue)\t\($0.summary)" }.joined(separator: "\n"))
                exit(0)
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                throw UsageError(description: "unknown argument '\(argument)'")
            }
            i += 1
        }
        return options
    }
}

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("engine-bench: \(error)\n\n\(Options.usage)\n".utf8))
    exit(2)
}

if let probePath = options.memoryProbePath {
    exit(await MemoryProbe.runChild(storePath: probePath))
}
exit(await Runner.main(options))
