import Foundation

/// Everything one invocation measured, printed as a table and optionally written as JSON.
struct Report: Codable, Sendable {
    var mode: String
    /// Objects of the bulk benchmarks (the targets are written for 1,000,000).
    var objects: Int
    var runsPerMeasurement: Int
    var cores: Int
    var directory: String
    var date: String
    var totalSeconds: Double = 0
    /// `/proc/loadavg` (1, 5, 15 min) when the run started and ended: other processes on the machine
    /// compete for the same cores and disk, which shows in the spread of the runs.
    var loadAverageAtStart = Report.loadAverage()
    var loadAverageAtEnd = ""
    var measurements: [Measurement] = []

    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "n/a" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    var misses: [Measurement] { measurements.filter { $0.status == "MISS" } }

    mutating func add(_ measurement: Measurement) {
        measurements.append(measurement)
        print("  " + Report.formatLine(measurement))
        fflush(nil)  // progress stays visible when the output is piped
    }

    /// One progress line, printed as soon as a measurement is done.
    static func formatLine(_ m: Measurement) -> String {
        var line = "\(m.metric): median \(format(m.summary.median)) \(m.unit)"
        if m.runs.count > 1 {
            line += " (runs: " + m.runs.map(format).joined(separator: ", ") + ")"
        }
        if let target = m.target {
            line += "  [target \(describe(target)) \(m.unit): \(m.status ?? "")]"
        }
        if let note = m.note { line += "\n    " + note }
        return line
    }

    static func describe(_ target: Target) -> String {
        "\(target.direction.rawValue) \(format(target.value))\(target.scaled ? " (scaled)" : "")"
    }

    /// A number with about four significant digits and thousands separators.
    static func format(_ value: Double) -> String {
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
    func table() -> String {
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

    func writeJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        try data.write(to: URL(fileURLWithPath: path))
    }
}
