import Foundation

/// Everything one invocation measured, printed as a table and optionally written as JSON.
public struct Report: Encodable, Sendable {
    /// "quick" or "full".
    public var mode: String
    /// The JSON key of ``size`` (`rows`, `objects`): what N counts in this tool.
    public var sizeKey: String
    /// N of the bulk benchmarks (the targets are written for 1,000,000).
    public var size: Int
    /// Runs of each measurement (`--runs`).
    public var runsPerMeasurement: Int
    /// Active processors of the machine.
    public var cores: Int
    /// The temporary directory the files were in.
    public var directory: String
    /// When the run started (ISO 8601).
    public var date: String
    /// The whole run's wall-clock seconds.
    public var totalSeconds: Double = 0
    /// `/proc/loadavg` (1, 5, 15 min) when the run started and ended: other processes on the machine
    /// compete for the same cores and disk, which shows in the spread of the runs.
    public var loadAverageAtStart = Report.loadAverage()
    /// `/proc/loadavg` when the run ended.
    public var loadAverageAtEnd = ""
    /// Every measurement, in the order they were made.
    public var measurements: [Measurement] = []
    /// Progress lines also list every run's value and the note (not part of the JSON).
    public var detailedProgress: Bool

    /// An empty report of a run with these settings.
    public init(
        mode: String, sizeKey: String, size: Int, runsPerMeasurement: Int, cores: Int, directory: String,
        date: String, detailedProgress: Bool = false
    ) {
        self.mode = mode
        self.sizeKey = sizeKey
        self.size = size
        self.runsPerMeasurement = runsPerMeasurement
        self.cores = cores
        self.directory = directory
        self.date = date
        self.detailedProgress = detailedProgress
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The JSON: the settings, ``size`` under ``sizeKey``, the times, the load averages, the measurements.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(mode, forKey: Key("mode"))
        try container.encode(size, forKey: Key(sizeKey))
        try container.encode(runsPerMeasurement, forKey: Key("runsPerMeasurement"))
        try container.encode(cores, forKey: Key("cores"))
        try container.encode(directory, forKey: Key("directory"))
        try container.encode(date, forKey: Key("date"))
        try container.encode(totalSeconds, forKey: Key("totalSeconds"))
        try container.encode(loadAverageAtStart, forKey: Key("loadAverageAtStart"))
        try container.encode(loadAverageAtEnd, forKey: Key("loadAverageAtEnd"))
        try container.encode(measurements, forKey: Key("measurements"))
    }

    /// The 1, 5 and 15 minute load averages from `/proc/loadavg` ("n/a" where there is none).
    public static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "n/a" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// The measurements that missed their target.
    public var misses: [Measurement] { measurements.filter { $0.status == "MISS" } }

    /// Adds a measurement and prints its progress line.
    public mutating func add(_ measurement: Measurement) {
        measurements.append(measurement)
        print("  " + formatLine(measurement))
        fflush(nil)  // progress stays visible when the output is piped
    }

    /// One progress line, printed as soon as a measurement is done.
    public func formatLine(_ m: Measurement) -> String {
        var line = "\(m.metric): median \(Report.format(m.summary.median)) \(m.unit)"
        if detailedProgress && m.runs.count > 1 {
            line += " (runs: " + m.runs.map(Report.format).joined(separator: ", ") + ")"
        }
        if let target = m.target {
            line += "  [target \(Report.describe(target)) \(m.unit): \(m.status ?? "")]"
        }
        if detailedProgress, let note = m.note { line += "\n    " + note }
        return line
    }

    /// A target as the table shows it (`<= 0.06 (scaled)`).
    public static func describe(_ target: Target) -> String {
        "\(target.direction.rawValue) \(format(target.value))\(target.scaled ? " (scaled)" : "")"
    }

    /// A number with about four significant digits and thousands separators.
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "n/a" }
        let magnitude = abs(value)
        let decimals: Int
        switch magnitude {
        case 0: decimals = 0
        case ..<0.01: decimals = 5
        case ..<1: decimals = 4
        case ..<10: decimals = 3
        case ..<100: decimals = 2
        case ..<1000: decimals = 1
        default: decimals = 0
        }
        let fixed = String(format: "%.\(decimals)f", value)
        guard magnitude >= 10_000 else { return fixed }
        // Group the integer digits: 1234567 -> 1,234,567.
        let negative = fixed.hasPrefix("-")
        let digits = Array(negative ? String(fixed.dropFirst()) : fixed)
        var grouped = ""
        for (i, ch) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { grouped.append(",") }
            grouped.append(ch)
        }
        return (negative ? "-" : "") + grouped
    }

    /// The results table.
    public func table() -> String {
        let header = ["benchmark", "metric", "min", "median", "max", "unit", "target", "result"]
        var rows: [[String]] = [header]
        for m in measurements {
            rows.append([
                m.benchmark, m.metric, Report.format(m.summary.min), Report.format(m.summary.median),
                Report.format(m.summary.max), m.unit, m.target.map(Report.describe) ?? "", m.status ?? "",
            ])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        let numeric: Set<Int> = [2, 3, 4]
        func render(_ row: [String]) -> String {
            row.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                return numeric.contains(i) ? pad + cell : cell + pad
            }.joined(separator: " | ")
        }
        let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-")
        var lines = [render(rows[0]), rule]
        var previous: String?
        for row in rows.dropFirst() {
            if let previous, previous != row[0] { lines.append(rule) }
            previous = row[0]
            lines.append(render(row))
        }
        let notes = measurements.compactMap { m in m.note.map { "  \(m.benchmark) / \(m.metric): \($0)" } }
        if !notes.isEmpty { lines += ["", "notes:"] + notes }
        return lines.joined(separator: "\n")
    }

    /// Writes the JSON (pretty-printed, keys sorted) to `path`.
    public func writeJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        try data.write(to: URL(fileURLWithPath: path))
    }
}
