// object-bench: the object layer's benchmark (Object + @Persisted, Results, freeze, durable writes).
//
//   swift build -c release --product object-bench
//   .build/release/object-bench [--quick] [--json out.json] [--only NAME[,NAME...]] [--dir /path] [--runs N]
//                               [--objects N]
//
// Every measurement is repeated (default 3 runs; 1 with --quick) and reported as min / median / max;
// targets are judged on the median. Files live in a fresh directory under /tmp (or --dir) that is removed
// at the end.
import Foundation

/// What the command line asked for.
struct Options: Sendable {
    var quick = false
    var jsonPath: String?
    var only: Set<String>?
    var directory: String?
    var runs: Int?
    var objects: Int?

    static let usage = """
        usage: object-bench [--quick] [--json FILE] [--only NAME[,NAME...]] [--dir DIR] [--runs N] [--objects N]

          --quick        100,000 objects and 1 run (CI): finishes in well under a minute
          --json FILE    also write the results as JSON
          --only NAMES   run only these benchmarks (comma-separated; a prefix such as 'insert' selects a
                         group). The N-object realm the read benchmarks share is built untimed if no
                         insert-add run left one. durable-write measures the raw sync rates again before
                         each of its runs, for its ratios.
          --dir DIR      put the temporary realm files under DIR instead of /tmp
          --runs N       repetitions of each measurement (default 3; 1 with --quick)
          --objects N    objects of the bulk benchmarks (default 1,000,000; 100,000 with --quick); the
                         time targets of the bulk benchmarks scale with N
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
            let text = try value(flag).replacingOccurrences(of: "_", with: "").replacingOccurrences(of: ",", with: "")
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
            case "--runs": options.runs = try positive(argument, minimum: 1)
            case "--objects": options.objects = try positive(argument, minimum: 1000)
            case "--only":
                var selected = options.only ?? []
                for name in try value(argument).split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
                where !name.isEmpty {
                    // An exact name selects that benchmark only ('insert-create' is also a prefix of another).
                    let exact = Benchmark.allCases.filter { $0.rawValue == name }
                    let matches = exact.isEmpty ? Benchmark.allCases.filter { $0.rawValue.hasPrefix(name) } : exact
                    guard !matches.isEmpty else {
                        throw UsageError(
                            description: "unknown benchmark '\(name)'; known: "
                                + Benchmark.allCases.map(\.rawValue).joined(separator: ", "))
                    }
                    selected.formUnion(matches.map(\.rawValue))
                }
                options.only = selected
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
    FileHandle.standardError.write(Data("object-bench: \(error)\n\n\(Options.usage)\n".utf8))
    exit(2)
}

exit(await Runner.main(options))
