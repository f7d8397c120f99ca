import Foundation

/// The spread of a metric over the repeated runs of one measurement.
package struct Summary: Codable, Sendable {
    package var min: Double
    package var median: Double
    package var max: Double

    package init(_ values: [Double]) {
        precondition(!values.isEmpty, "a summary needs at least one run")
        let sorted = values.sorted()
        min = sorted[0]
        max = sorted[sorted.count - 1]
        let mid = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }
}

/// A goal a measurement is held to: its median must be at most (or at least) `value`.
package struct Target: Codable, Sendable {
    package enum Direction: String, Codable, Sendable {
        case atMost = "<="
        case atLeast = ">="
    }
    package var direction: Direction
    package var value: Double
    /// Scaled from the full-size goal to this run's smaller N (quick mode, `--rows`, `--objects`).
    package var scaled: Bool = false

    package static func atMost(_ value: Double, scaled: Bool = false) -> Target {
        Target(direction: .atMost, value: value, scaled: scaled)
    }
    package static func atLeast(_ value: Double, scaled: Bool = false) -> Target {
        Target(direction: .atLeast, value: value, scaled: scaled)
    }

    package func isMet(by value: Double) -> Bool {
        switch direction {
        case .atMost: value <= self.value
        case .atLeast: value >= self.value
        }
    }
}

/// One line of the report: a metric measured over several runs, with an optional target.
package struct Measurement: Codable, Sendable {
    /// The benchmark (`--only` name) it belongs to.
    package var benchmark: String
    package var metric: String
    package var unit: String
    package var runs: [Double]
    package var summary: Summary
    package var target: Target?
    package var status: String?
    package var note: String?

    package init(
        _ benchmark: String, _ metric: String, unit: String, runs: [Double], target: Target? = nil, note: String? = nil
    ) {
        self.benchmark = benchmark
        self.metric = metric
        self.unit = unit
        self.runs = runs
        self.summary = Summary(runs)
        self.target = target
        self.note = note
        self.status = target.map { $0.isMet(by: summary.median) ? "PASS" : "MISS" }
    }
}

/// Latency samples of one run, in nanoseconds.
package struct LatencySamples {
    package private(set) var nanos: [UInt64] = []

    package init(capacity: Int) { nanos.reserveCapacity(capacity) }

    package init(nanos: [UInt64]) { self.nanos = nanos }

    package mutating func record(_ ns: UInt64) { nanos.append(ns) }

    /// Operations per second if they ran back to back: samples / sum of latencies.
    package var ratePerSecond: Double { Double(nanos.count) / (Double(nanos.reduce(0, &+)) / 1e9) }

    /// The `p`-th percentile (0...100, nearest rank) in microseconds.
    package func percentileMicros(_ p: Double) -> Double {
        let sorted = nanos.sorted()
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]) / 1000
    }
}

/// A value the optimizer must assume is observed, so benchmark loops are not deleted.
package final class Sink: @unchecked Sendable {
    // @unchecked: the only state is behind the lock.
    package static let shared = Sink()
    private let lock = NSLock()
    private var value: UInt64 = 0

    @inline(never)
    package func consume(_ x: UInt64) {
        lock.lock()
        value &+= x
        lock.unlock()
    }

    @inline(never)
    package func consume(_ x: Int) { consume(UInt64(bitPattern: Int64(x))) }

    @inline(never)
    package func consume(_ x: Double) { consume(x.bitPattern) }
}

/// The resident memory of this process, from `/proc/self/status` (Linux).
package struct ResidentMemory: Codable, Sendable {
    /// VmRSS: everything resident (anonymous + file-backed mappings + shared memory), in bytes.
    package var total: UInt64
    /// RssAnon: heap, stacks, anonymous mappings.
    package var anonymous: UInt64
    /// RssFile: resident pages of mapped files (the store's mapping, the binary, libraries).
    package var file: UInt64

    package static func current() -> ResidentMemory {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
            return ResidentMemory(total: 0, anonymous: 0, file: 0)
        }
        func field(_ name: String) -> UInt64 {
            for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
                let digits = line.dropFirst(name.count + 1).filter(\.isNumber)
                return (UInt64(String(digits)) ?? 0) * 1024  // reported in kB
            }
            return 0
        }
        return ResidentMemory(total: field("VmRSS"), anonymous: field("RssAnon"), file: field("RssFile"))
    }
}

/// A small, fast PRNG (SplitMix64): random keys without the cost of the system generator in hot loops.
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    package init(seed: UInt64) { state = seed }
    @inline(__always)
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
