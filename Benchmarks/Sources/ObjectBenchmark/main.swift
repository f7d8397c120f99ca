// object-bench: the object layer's benchmark (Object + @Persisted, Results, freeze, durable writes).
//
//   swift build -c release --package-path Benchmarks --product object-bench
//   Benchmarks/.build/release/object-bench [--quick] [--json out.json] [--only NAME[,NAME...]] [--dir /path] [--runs N]
//                               [--objects N]
//
// Every measurement is repeated (default 3 runs; 1 with --quick) and reported as min / median / max;
// targets are judged on the median. Files live in a fresh directory under /tmp (or --dir) that is removed
// at the end.
import ActorStoreBenchmarkKit
import Foundation

/// What the command line asked for.
struct Options: Sendable {
    /// `--quick`, `--json`, `--only`, `--dir`, `--runs` (default 3; 1 with --quick).
    var common = CommonOptions()
    var objects: Int?
    /// `--open-probe PATH KEY`: run as the `open` benchmark's child.
    var openProbe: (path: String, key: Int)?

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

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        let common = try CommonOptions.parse(
            arguments, benchmarks: Benchmark.self, usage: usage, runsMinimum: 1, commasInNumbers: true
        ) { flag, reader in
            switch flag {
            case "--objects": options.objects = try reader.integer(flag, minimum: 1000)
            case "--open-probe":
                options.openProbe = (try reader.value(flag), try reader.integer(flag, minimum: 0))
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
    FileHandle.standardError.write(Data("object-bench: \(error)\n\n\(Options.usage)\n".utf8))
    exit(2)
}

if let probe = options.openProbe {
    exit(await Workloads.openProbeChild(path: probe.path, key: probe.key))
}
exit(await Runner.main(options))
