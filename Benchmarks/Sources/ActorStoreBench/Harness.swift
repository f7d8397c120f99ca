import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: Clock

/// Monotonic time in nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`).
@inline(__always)
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Seconds elapsed since `start` (a ``monotonicNanos()`` reading).
@inline(__always)
func secondsSince(_ start: UInt64) -> Double { Double(monotonicNanos() &- start) / 1e9 }

/// Times an async block: (seconds, its value).
func timed<T>(_ body: () async throws -> T) async rethrows -> (Double, T) {
    let start = monotonicNanos()
    let value = try await body()
    return (secondsSince(start), value)
}

/// Percentile of a sample (nearest rank); `p` in 0...1.
func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// A deterministic random generator (SplitMix64): every engine gets the same keys and strings.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Keeps results alive so the optimiser cannot drop a timed loop.
@inline(never)
func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

// MARK: Engines and samples

enum Engine: String, CaseIterable, Sendable {
    case actorStore = "ActorStore"
    case grdbRecords = "GRDB records"
    case grdbRaw = "GRDB raw"

    var jsonKey: String {
        switch self {
        case .actorStore: "actorStore"
        case .grdbRecords: "grdbRecords"
        case .grdbRaw: "grdbRaw"
        }
    }
}

/// What one run of one engine produced: its metrics (by key) and the values every engine must agree on.
struct Sample {
    var metrics: [String: Double] = [:]
    var checks: [String: String] = [:]
    /// Set when the engine cannot be measured yet (the metric prints as the note).
    var unavailable: String?

    static func notMeasured(_ why: String) -> Sample { Sample(unavailable: why) }
}

/// One printed row: a metric of a workload.
struct Metric {
    var key: String
    var label: String
    /// Display unit: "s", "ms", "µs", "ns", "/s", "MB".
    var unit: String
    /// Rates (ops/s): higher is better. Times and sizes: lower is better.
    var higherIsBetter = false
    /// The engines measured for this row (a row may not apply to the raw variant).
    var engines: [Engine] = Engine.allCases
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: Report

struct RowResult {
    var workload: String
    var metric: Metric
    /// Runs per engine, in the metric's unit.
    var runs: [Engine: [Double]]
    var notes: [Engine: String]

    func summary(_ engine: Engine) -> (min: Double, median: Double, max: Double)? {
        guard let values = runs[engine], !values.isEmpty else { return nil }
        return (values.min()!, median(values), values.max()!)
    }

    /// ActorStore / GRDB of the medians, in the metric's own direction (a time ratio < 1 and a rate ratio > 1
    /// both mean ActorStore is better).
    func ratio(_ other: Engine) -> Double? {
        guard let a = summary(.actorStore)?.median, let b = summary(other)?.median, b != 0 else { return nil }
        return a / b
    }
}

final class Report {
    var rows: [RowResult] = []
    var settings: [String: String] = [:]

    func add(_ row: RowResult) {
        rows.append(row)
        printRow(row)
    }

    static func format(_ value: Double) -> String {
        if value.isNaN { return "—" }
        let magnitude = abs(value)
        if magnitude == 0 { return "0" }
        if magnitude >= 100_000 { return String(format: "%.0f", value).withThousands }
        if magnitude >= 100 { return String(format: "%.0f", value) }
        if magnitude >= 10 { return String(format: "%.1f", value) }
        if magnitude >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3g", value)
    }

    static func ratioText(_ ratio: Double?) -> String {
        guard let ratio else { return "—" }
        return String(format: ratio < 0.01 && ratio > 0 ? "%.2g" : "%.2f", ratio)
    }

    func cell(_ row: RowResult, _ engine: Engine) -> String {
        if let note = row.notes[engine], row.runs[engine] == nil { return note }
        guard let s = row.summary(engine) else { return "—" }
        if row.runs[engine]!.count == 1 { return Self.format(s.median) }
        return "\(Self.format(s.median)) (\(Self.format(s.min))–\(Self.format(s.max)))"
    }

    func printHeader() {
        print(
            "| ID | Measurement | Unit | ActorStore | GRDB records | GRDB raw | AS/records | AS/raw |\n"
                + "|---|---|---|---|---|---|---|---|")
    }

    func line(_ row: RowResult) -> String {
        let unit = row.metric.unit + (row.metric.higherIsBetter ? " ↑" : " ↓")
        return "| \(row.workload) | \(row.metric.label) | \(unit) | \(cell(row, .actorStore)) | "
            + "\(cell(row, .grdbRecords)) | \(cell(row, .grdbRaw)) | \(Self.ratioText(row.ratio(.grdbRecords))) | "
            + "\(Self.ratioText(row.ratio(.grdbRaw))) |"
    }

    func printRow(_ row: RowResult) {
        print(line(row))
        fflush(nil)
    }

    func printTable() {
        print("\nResults (median (min–max) of the runs; ↓ lower is better, ↑ higher is better; ratios are ActorStore/GRDB medians):\n")
        printHeader()
        for row in rows { print(line(row)) }
    }

    func json(command: String) throws -> Data {
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
            if let r = row.ratio(.grdbRecords) { entry["ratioActorStoreOverGRDBRecords"] = r }
            if let r = row.ratio(.grdbRaw) { entry["ratioActorStoreOverGRDBRaw"] = r }
            return entry
        }
        return try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys])
    }
}

extension String {
    var withThousands: String {
        var digits = Array(self)
        var negative = false
        if digits.first == "-" {
            negative = true
            digits.removeFirst()
        }
        var out: [Character] = []
        for (i, c) in digits.reversed().enumerated() {
            if i > 0 && i % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (negative ? "-" : "") + String(out.reversed())
    }
}

// MARK: Running a workload

/// Runs a workload: `runs` rounds, each running every engine once, the engine order rotating per round
/// (ActorStore first, then GRDB records first, then raw first, ...), after a `sync()`. After every round the engines' checks
/// must agree, or the benchmark fails.
func runWorkload(
    _ id: String, _ title: String, metrics: [Metric], runs: Int, report: Report,
    engines: [Engine: () async throws -> Sample]
) async throws {
    print("\n## \(id): \(title)")
    fflush(nil)
    // Which engine goes first rotates with the round and with the workload (so a one-run --quick alternates too).
    let workloadRotation = nextRotation()
    var collected: [Engine: [String: [Double]]] = [:]
    var notes: [Engine: String] = [:]
    let order = Engine.allCases.filter { engines[$0] != nil }
    for round in 0..<runs {
        var checks: [Engine: [String: String]] = [:]
        for k in 0..<order.count {
            let engine = order[(k + round + workloadRotation) % order.count]
            // Untimed: write back the dirty pages of earlier work (a 1M-object bulk load leaves hundreds of MB),
            // so that they do not land in the fsyncs of this sample.
            sync()
            let sample: Sample
            do {
                sample = try await engines[engine]!()
            } catch {
                throw Failure("\(id), \(engine.rawValue), run \(round + 1): \(error)")
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
                throw Failure(
                    "\(id): the engines disagree: \(first.rawValue) \(checks[first]!.sorted { $0.key < $1.key }) "
                        + "vs \(other.rawValue) \(checks[other]!.sorted { $0.key < $1.key })")
            }
        }
        if round == 0, let first = measured.first {
            let text = checks[first]!.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
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
        report.add(RowResult(workload: id, metric: metric, runs: runsByEngine, notes: rowNotes))
    }
}

private nonisolated(unsafe) var rotationCounter = 0

/// 0, 1, 2, ... per workload (called from the one task that drives the benchmark).
private func nextRotation() -> Int {
    defer { rotationCounter += 1 }
    return rotationCounter
}
