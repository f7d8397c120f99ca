import Foundation

/// The median of `values` (the mean of the middle two for an even count); NaN if there are none.
public func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// The `p`-th quantile of `values` (nearest rank), `p` in 0...1; NaN if there are none.
public func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[Swift.min(Swift.max(rank, 0), sorted.count - 1)]
}

/// The spread of a metric over the repeated runs of one measurement.
public struct Summary: Codable, Sendable {
    /// The smallest run.
    public var min: Double
    /// The median of the runs: what a target judges.
    public var median: Double
    /// The largest run.
    public var max: Double

    /// The summary of `values` (at least one).
    public init(_ values: [Double]) {
        precondition(!values.isEmpty, "a summary needs at least one run")
        let sorted = values.sorted()
        min = sorted[0]
        max = sorted[sorted.count - 1]
        median = ActorStoreBenchmarkKit.median(sorted)
    }
}

/// A goal a measurement is held to: its median must be at most (or at least) `value`.
public struct Target: Codable, Sendable {
    /// Which side of ``value`` the median must be on.
    public enum Direction: String, Codable, Sendable {
        /// The median must be at most the value (times, sizes).
        case atMost = "<="
        /// The median must be at least the value (rates).
        case atLeast = ">="
    }
    /// Which side of ``value`` the median must be on.
    public var direction: Direction
    /// The bound.
    public var value: Double
    /// Scaled from the full-size goal to this run's smaller N (quick mode, `--rows`, `--objects`).
    public var scaled: Bool = false

    /// A median of at most `value`.
    public static func atMost(_ value: Double, scaled: Bool = false) -> Target {
        Target(direction: .atMost, value: value, scaled: scaled)
    }
    /// A median of at least `value`.
    public static func atLeast(_ value: Double, scaled: Bool = false) -> Target {
        Target(direction: .atLeast, value: value, scaled: scaled)
    }

    /// Whether `value` (a median) meets the target.
    public func isMet(by value: Double) -> Bool {
        switch direction {
        case .atMost: value <= self.value
        case .atLeast: value >= self.value
        }
    }
}

/// One line of the report: a metric measured over several runs, with an optional target.
public struct Measurement: Codable, Sendable {
    /// The benchmark (`--only` name) it belongs to.
    public var benchmark: String
    /// What was measured.
    public var metric: String
    /// The unit of every run ("s", "/s", "µs", "MB").
    public var unit: String
    /// One value per run.
    public var runs: [Double]
    /// Their minimum, median and maximum.
    public var summary: Summary
    /// The goal the median is held to, if there is one.
    public var target: Target?
    /// "PASS" or "MISS" when there is a target.
    public var status: String?
    /// A remark printed with the measurement and under the table.
    public var note: String?

    /// A measurement of `runs` (at least one), judged against `target` if given.
    public init(
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
public struct LatencySamples {
    /// The samples, in the order they were recorded.
    public private(set) var nanos: [UInt64] = []

    /// No samples yet, room for `capacity`.
    public init(capacity: Int) { nanos.reserveCapacity(capacity) }

    /// These samples.
    public init(nanos: [UInt64]) { self.nanos = nanos }

    /// Adds one latency.
    public mutating func record(_ ns: UInt64) { nanos.append(ns) }

    /// Operations per second if they ran back to back: samples / sum of latencies.
    public var ratePerSecond: Double { Double(nanos.count) / (Double(nanos.reduce(0, &+)) / 1e9) }

    /// The `p`-th percentile (0...100, nearest rank) in microseconds.
    public func percentileMicros(_ p: Double) -> Double {
        let sorted = nanos.sorted()
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]) / 1000
    }
}

/// A value the optimizer must assume is observed, so benchmark loops are not deleted.
public final class Sink: @unchecked Sendable {
    // @unchecked: the only state is behind the lock.
    /// The one sink every benchmark feeds.
    public static let shared = Sink()
    private let lock = NSLock()
    private var value: UInt64 = 0

    /// Folds `x` into the sink.
    @inline(never)
    public func consume(_ x: UInt64) {
        lock.lock()
        value &+= x
        lock.unlock()
    }

    /// Folds `x` into the sink.
    @inline(never)
    public func consume(_ x: Int) { consume(UInt64(bitPattern: Int64(x))) }

    /// Folds `x` into the sink.
    @inline(never)
    public func consume(_ x: Double) { consume(x.bitPattern) }
}

/// Keeps any value alive so the optimiser cannot drop the loop that made it (``Sink`` takes numbers).
@inline(never)
public func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

/// The resident memory of this process, from `/proc/self/status` (Linux).
public struct ResidentMemory: Codable, Sendable {
    /// VmRSS: everything resident (anonymous + file-backed mappings + shared memory), in bytes.
    public var total: UInt64
    /// RssAnon: heap, stacks, anonymous mappings.
    public var anonymous: UInt64
    /// RssFile: resident pages of mapped files (the store's mapping, the binary, libraries).
    public var file: UInt64

    /// This process's resident memory now (zeros where `/proc` is not there).
    public static func current() -> ResidentMemory {
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
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }
    /// The next 64 random bits.
    @inline(__always)
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
