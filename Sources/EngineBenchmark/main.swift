// engine-bench: the storage engine's benchmark.
//
//   swift build -c release --product engine-bench
//   .build/release/engine-bench [--quick] [--json out.json] [--only NAME[,NAME...]] [--dir /path] [--runs N] [--rows N]
//
// Every measurement is repeated (default 3 runs) and reported as min / median / max; targets are judged on
// the median. Files live in a fresh directory under /tmp (or --dir) that is removed at the end.
import ActorStoreBenchmarkKit
import Foundation

/// What the command line asked for.
struct Options: Sendable {
    /// `--quick`, `--json`, `--only`, `--dir`, `--runs` (default 3).
    var common = CommonOptions()
    var rows: Int?
    /// Internal: run as the child process of the `memory` benchmark on this store.
    var memoryProbePath: String?

    static let usage = """
        usage: engine-bench [--quick] [--json FILE] [--only NAME[,NAME...]] [--dir DIR] [--runs N] [--rows N]
                            [--encrypted]

          --quick        small N (CI): finishes in well under a minute
          --json FILE    also write the results as JSON
          --only NAMES   run only these benchmarks (comma-separated; a prefix such as 'raw' or 'commit' selects
                         a group). The N-row store they share is built untimed; commit-serial measures
                         raw-append first if it was not selected (its ratio needs it).
          --dir DIR      put the temporary store files under DIR instead of /tmp
          --runs N       repetitions of each measurement (at least 3; default 3)
          --rows N       rows of the large table (default 1,000,000; 100,000 with --quick); size targets scale
          --encrypted    encrypt every store (Configuration.encryptionKey): run with and without it to compare
          --list         list the benchmark names

        benchmarks: \(Benchmark.allCases.map(\.rawValue).joined(separator: ", "))
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        let common = try CommonOptions.parse(
            arguments, benchmarks: Benchmark.self, usage: usage, runsMinimum: 3, commasInNumbers: false
        ) { flag, reader in
            switch flag {
            case "--rows": options.rows = try reader.integer(flag, minimum: 1000)
            case "--memory-probe": options.memoryProbePath = try reader.value(flag)
            case "--encrypted": setenv("ENGINE_BENCH_ENCRYPTED", "1", 1)
            default: return false
            }
            return true
        }
        options.common = common
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
