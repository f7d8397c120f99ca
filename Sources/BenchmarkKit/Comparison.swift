import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// A peer comparison: the same workload run by several engines in one process, alternating, their results
// checked against each other, and each row reported with the first engine's ratio to every other one.

/// An engine a comparison runs. The first of `allCases` is the subject: every ratio is its median over another
/// engine's. The raw value is the engine's column title.
public protocol ComparedEngine: RawRepresentable, CaseIterable, Hashable, Sendable
where RawValue == String, AllCases: RandomAccessCollection {
    /// The engine's key in the JSON rows (`actorStore`).
    var jsonKey: String { get }
    /// The title of the column of the subject's ratios to this engine (`AS/records`).
    var ratioTitle: String { get }
    /// The JSON key of the subject's ratio to this engine (`ratioActorStoreOverGRDBRecords`).
    var ratioJSONKey: String { get }
}

extension ComparedEngine {
    /// The engine every ratio is about: the first case.
    public static var subject: Self { allCases[allCases.startIndex] }
    /// The engines the subject is compared with: every case but the first.
    public static var peers: [Self] { Array(allCases.dropFirst()) }
}

/// What one run of one engine produced: its metrics (by key) and the values every engine must agree on.
public struct ComparisonSample {
    /// Metric key → value, in the metric's unit.
    public var metrics: [String: Double]
    /// Check name → value: after every round, all engines that ran must report the same checks.
    public var checks: [String: String]
    /// Set when the engine cannot be measured yet (the metric prints as the note).
    public var unavailable: String?

    /// A measured run.
    public init(metrics: [String: Double] = [:], checks: [String: String] = [:], unavailable: String? = nil) {
        self.metrics = metrics
        self.checks = checks
        self.unavailable = unavailable
    }

    /// A run the engine cannot do: its cells show `why`.
    public static func notMeasured(_ why: String) -> ComparisonSample { ComparisonSample(unavailable: why) }
}

/// One printed row: a metric of a workload.
public struct ComparedMetric<Engine: ComparedEngine> {
    /// The metric's key in the samples.
    public var key: String
    /// The row's text.
    public var label: String
    /// Display unit: "s", "ms", "µs", "ns", "/s", "MB".
    public var unit: String
    /// Rates (ops/s): higher is better. Times and sizes: lower is better.
    public var higherIsBetter: Bool
    /// The engines measured for this row (a row may not apply to every engine).
    public var engines: [Engine]

    /// A row of the metric `key`.
    public init(
        key: String, label: String, unit: String, higherIsBetter: Bool = false,
        engines: [Engine] = Array(Engine.allCases)
    ) {
        self.key = key
        self.label = label
        self.unit = unit
        self.higherIsBetter = higherIsBetter
        self.engines = engines
    }
}

/// The runs of one metric of one workload, per engine.
public struct ComparisonRow<Engine: ComparedEngine> {
    /// The workload's ID (`W3`).
    public var workload: String
    /// What the row measures.
    public var metric: ComparedMetric<Engine>
    /// Runs per engine, in the metric's unit.
    public var runs: [Engine: [Double]]
    /// What a cell without runs shows (`n/a`, why the engine was not measured).
    public var notes: [Engine: String]

    /// A row of `metric` with these runs and notes.
    public init(
        workload: String, metric: ComparedMetric<Engine>, runs: [Engine: [Double]], notes: [Engine: String]
    ) {
        self.workload = workload
        self.metric = metric
        self.runs = runs
        self.notes = notes
    }

    /// Minimum, median and maximum of an engine's runs, if it has any.
    public func summary(_ engine: Engine) -> (min: Double, median: Double, max: Double)? {
        guard let values = runs[engine], !values.isEmpty else { return nil }
        return (values.min()!, ActorStoreBenchmarkKit.median(values), values.max()!)
    }

    /// The subject's median over `other`'s, in the metric's own direction (a time ratio < 1 and a rate ratio
    /// > 1 both mean the subject is better).
    public func ratio(_ other: Engine) -> Double? {
        guard let a = summary(Engine.subject)?.median, let b = summary(other)?.median, b != 0 else { return nil }
        return a / b
    }
}

/// The rows of a comparison: printed as a Markdown table while they are measured and at the end, and written
/// as JSON. Used from the one task that drives the benchmark.
public final class ComparisonReport<Engine: ComparedEngine> {
    /// The rows, in the order they were measured.
    public var rows: [ComparisonRow<Engine>] = []
    /// How each engine is configured (name → value), written to the JSON.
    public var settings: [String: String] = [:]
    /// The sentence after "ratios are" in the heading of the final table (`ActorStore/GRDB medians`).
    public let ratioLegend: String
    /// Which engine goes first in a workload's rounds: it advances with every workload.
    private var rotation = 0

    /// An empty report.
    public init(ratioLegend: String) { self.ratioLegend = ratioLegend }

    /// Adds a row and prints it.
    public func add(_ row: ComparisonRow<Engine>) {
        rows.append(row)
        printRow(row)
    }

    /// A number with about three significant digits (thousands grouped from 100,000); NaN is "—".
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "—" }
        let magnitude = abs(value)
        if magnitude == 0 { return "0" }
        if magnitude >= 100_000 { return groupingThousands(String(format: "%.0f", value)) }
        if magnitude >= 100 { return String(format: "%.0f", value) }
        if magnitude >= 10 { return String(format: "%.1f", value) }
        if magnitude >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3g", value)
    }

    /// A ratio with two decimals (two significant digits below 0.01); "—" if there is none.
    public static func ratioText(_ ratio: Double?) -> String {
        guard let ratio else { return "—" }
        return String(format: ratio < 0.01 && ratio > 0 ? "%.2g" : "%.2f", ratio)
    }

    /// `1234567` → `1,234,567` (an optional leading minus kept).
    static func groupingThousands(_ digits: String) -> String {
        var characters = Array(digits)
        var negative = false
        if characters.first == "-" {
            negative = true
            characters.removeFirst()
        }
        var out: [Character] = []
        for (i, c) in characters.reversed().enumerated() {
            if i > 0 && i % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (negative ? "-" : "") + String(out.reversed())
    }

    /// One engine's cell of a row: median (min–max), the median alone for one run, or the note.
    public func cell(_ row: ComparisonRow<Engine>, _ engine: Engine) -> String {
        if let note = row.notes[engine], row.runs[engine] == nil { return note }
        guard let s = row.summary(engine) else { return "—" }
        if row.runs[engine]!.count == 1 { return Self.format(s.median) }
        return "\(Self.format(s.median)) (\(Self.format(s.min))–\(Self.format(s.max)))"
    }

    /// Prints the table's header: ID, measurement, unit, one column per engine, one per ratio.
    public func printHeader() {
        let columns = ["ID", "Measurement", "Unit"] + Engine.allCases.map(\.rawValue) + Engine.peers.map(\.ratioTitle)
        print(
            "| " + columns.joined(separator: " | ") + " |\n"
                + String(repeating: "|---", count: columns.count) + "|")
    }

    /// A row as a line of the Markdown table.
    public func line(_ row: ComparisonRow<Engine>) -> String {
        let unit = row.metric.unit + (row.metric.higherIsBetter ? " ↑" : " ↓")
        let cells =
            [row.workload, row.metric.label, unit] + Engine.allCases.map { cell(row, $0) }
            + Engine.peers.map { Self.ratioText(row.ratio($0)) }
        return "| " + cells.joined(separator: " | ") + " |"
    }

    /// Prints a row as it is measured (flushed: progress stays visible when the output is piped).
    public func printRow(_ row: ComparisonRow<Engine>) {
        print(line(row))
        fflush(nil)
    }

    /// Prints every row again, under the header.
    public func printTable() {
        print(
            "\nResults (median (min–max) of the runs; ↓ lower is better, ↑ higher is better; ratios are "
                + "\(ratioLegend)):\n")
        printHeader()
        for row in rows { print(line(row)) }
    }

    /// The JSON document: date, command, settings, processors, memory, and every row with every engine's
    /// runs and the ratios.
    public func json(command: String) throws -> Data {
        var out: [String: Any] = [:]
        out["date"] = ISO8601DateFormatter().string(from: Date())
        out["command"] = command
        out["settings"] = settings
        out["processors"] = ProcessInfo.processInfo.activeProcessorCount
        out["memoryBytes"] = ProcessInfo.processInfo.physicalMemory
        out["rows"] = rows.map { row -> [String: Any] in
            var engines: [String: Any] = [:]
            for engine in Engine.allCases {
                if let s = row.summary(engine) {
                    engines[engine.jsonKey] = [
                        "min": s.min, "median": s.median, "max": s.max, "runs": row.runs[engine]!,
                    ]
                } else if let note = row.notes[engine] {
                    engines[engine.jsonKey] = ["note": note]
                }
            }
            var entry: [String: Any] = [
                "workload": row.workload, "metric": row.metric.key, "label": row.metric.label,
                "unit": row.metric.unit, "higherIsBetter": row.metric.higherIsBetter, "engines": engines,
            ]
            for peer in Engine.peers {
                if let r = row.ratio(peer) { entry[peer.ratioJSONKey] = r }
            }
            return entry
        }
        return try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys])
    }

    /// Runs a workload: `runs` rounds, each running every engine once, after an untimed `sync()`; which
    /// engine goes first rotates with the round and with the workload (so a one-run `--quick` alternates
    /// too). After every round the engines' checks must agree, or it throws. Then adds one row per metric.
    public func run(
        _ id: String, _ title: String, metrics: [ComparedMetric<Engine>], runs: Int,
        engines: [Engine: () async throws -> ComparisonSample]
    ) async throws {
        print("\n## \(id): \(title)")
        fflush(nil)
        let workloadRotation = rotation
        rotation += 1
        var collected: [Engine: [String: [Double]]] = [:]
        var notes: [Engine: String] = [:]
        let order = Engine.allCases.filter { engines[$0] != nil }
        for round in 0..<runs {
            var checks: [Engine: [String: String]] = [:]
            for k in 0..<order.count {
                let engine = order[(k + round + workloadRotation) % order.count]
                // Untimed: write back the dirty pages of earlier work (a 1M-object bulk load leaves hundreds of
                // MB), so that they do not land in the fsyncs of this sample.
                sync()
                let sample: ComparisonSample
                do {
                    sample = try await engines[engine]!()
                } catch {
                    throw BenchmarkFailure("\(id), \(engine.rawValue), run \(round + 1): \(error)")
                }
                if let why = sample.unavailable {
                    notes[engine] = why
                    continue
                }
                checks[engine] = sample.checks
                for (key, value) in sample.metrics { collected[engine, default: [:]][key, default: []].append(value) }
            }
            // Every engine that ran must report the same checks.
            let measured = checks.keys.sorted { $0.rawValue < $1.rawValue }
            if let first = measured.first {
                for other in measured.dropFirst() where checks[other]! != checks[first]! {
                    throw BenchmarkFailure(
                        "\(id): the engines disagree: \(first.rawValue) \(checks[first]!.sorted { $0.key < $1.key }) "
                            + "vs \(other.rawValue) \(checks[other]!.sorted { $0.key < $1.key })")
                }
            }
            if round == 0, let first = measured.first {
                let text = checks[first]!.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                    .joined(separator: ", ")
                print("checks agree (\(measured.map(\.rawValue).joined(separator: ", "))): \(text)")
            }
        }
        for metric in metrics {
            var runsByEngine: [Engine: [Double]] = [:]
            var rowNotes: [Engine: String] = [:]
            for engine in Engine.allCases {
                if !metric.engines.contains(engine) {
                    rowNotes[engine] = "n/a"
                    continue
                }
                if let values = collected[engine]?[metric.key] {
                    runsByEngine[engine] = values
                } else if let note = notes[engine] {
                    rowNotes[engine] = note
                } else {
                    rowNotes[engine] = "n/a"
                }
            }
            add(ComparisonRow(workload: id, metric: metric, runs: runsByEngine, notes: rowNotes))
        }
    }
}
