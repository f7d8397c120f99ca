import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Monotonic time in nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`: a vDSO call, ~20 ns).
@inline(__always)
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Seconds elapsed since `start` (a ``monotonicNanos()`` reading).
@inline(__always)
func secondsSince(_ start: UInt64) -> Double { Double(monotonicNanos() &- start) / 1e9 }

/// CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`): what a single-threaded loop
/// itself costs, even when other processes compete for the cores.
@inline(__always)
func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// User + system CPU seconds of the whole process (every thread), from `getrusage`: with other processes
/// competing for the 2 cores, CPU time next to wall time tells waiting from working.
func processCPUSeconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Wall and CPU time of one timed section.
struct Stopwatch {
    private let wall = monotonicNanos()
    private let cpu = processCPUSeconds()

    /// Wall-clock seconds since the stopwatch was made.
    var seconds: Double { secondsSince(wall) }
    /// Process CPU seconds (all threads) since the stopwatch was made.
    var cpuSeconds: Double { processCPUSeconds() - cpu }
}

/// The spread of a metric over the repeated runs of one measurement.
struct Summary: Codable, Sendable {
    var min: Double
    var median: Double
    var max: Double

    init(_ values: [Double]) {
        precondition(!values.isEmpty, "a summary needs at least one run")
        let sorted = values.sorted()
        min = sorted[0]
        max = sorted[sorted.count - 1]
        let mid = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }
}

/// A goal a measurement is held to: its median must be at most (or at least) `value`.
struct Target: Codable, Sendable {
    enum Direction: String, Codable, Sendable {
        case atMost = "<="
        case atLeast = ">="
    }
    var direction: Direction
    var value: Double
    /// Scaled from the full-size goal to this run's smaller N (quick mode, `--objects`).
    var scaled: Bool = false

    static func atMost(_ value: Double, scaled: Bool = false) -> Target {
        Target(direction: .atMost, value: value, scaled: scaled)
    }
    static func atLeast(_ value: Double, scaled: Bool = false) -> Target {
        Target(direction: .atLeast, value: value, scaled: scaled)
    }

    func isMet(by value: Double) -> Bool {
        switch direction {
        case .atMost: value <= self.value
        case .atLeast: value >= self.value
        }
    }
}

/// One line of the report: a metric measured over several runs, with an optional target.
struct Measurement: Codable, Sendable {
    /// The benchmark (`--only` name) it belongs to.
    var benchmark: String
    var metric: String
    var unit: String
    var runs: [Double]
    var summary: Summary
    var target: Target?
    var status: String?
    var note: String?

    init(
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

/// A value the optimizer must assume is observed, so benchmark loops are not deleted.
final class Sink: @unchecked Sendable {
    // @unchecked: the only state is behind the lock.
    static let shared = Sink()
    private let lock = NSLock()
    private var value: UInt64 = 0

    @inline(never)
    func consume(_ x: UInt64) {
        lock.lock()
        value &+= x
        lock.unlock()
    }

    @inline(never)
    func consume(_ x: Int) { consume(UInt64(bitPattern: Int64(x))) }

    @inline(never)
    func consume(_ x: Double) { consume(x.bitPattern) }
}

/// A small, fast PRNG (SplitMix64): random keys without the cost of the system generator in hot loops.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    @inline(__always)
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
