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

/// CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`): with other processes competing
/// for the cores, a single-threaded loop's rate per CPU-second is what the code itself achieves.
@inline(__always)
func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// User + system CPU seconds of the whole process (every thread), from `getrusage`.
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

/// Latency samples of one run, in nanoseconds.
struct LatencySamples {
    private(set) var nanos: [UInt64] = []

    init(capacity: Int) { nanos.reserveCapacity(capacity) }

    mutating func record(_ ns: UInt64) { nanos.append(ns) }

    /// Operations per second if they ran back to back: samples / sum of latencies.
    var ratePerSecond: Double { Double(nanos.count) / (Double(nanos.reduce(0, &+)) / 1e9) }

    /// The `p`-th percentile (0...100, nearest rank) in microseconds.
    func percentileMicros(_ p: Double) -> Double {
        let sorted = nanos.sorted()
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]) / 1000
    }
}

/// A value the optimizer must assume is observed, so benchmark loops are not deleted.
/// - Note: Only touched from one task at a time by the benchmark; the lock makes that explicit.
final class Sink: @unchecked Sendable {
    static let shared = Sink()
    private let lock = NSLock()
    private var value: UInt64 = 0

    @inline(never)
    func consume(_ x: UInt64) {
        lock.lock()
        value &+= x
        lock.unlock()
    }
}

/// The resident memory of this process, from `/proc/self/status` (Linux).
struct ResidentMemory: Codable, Sendable {
    /// VmRSS: everything resident (anonymous + file-backed mappings + shared memory), in bytes.
    var total: UInt64
    /// RssAnon: heap, stacks, anonymous mappings.
    var anonymous: UInt64
    /// RssFile: resident pages of mapped files (the store's mapping, the binary, libraries).
    var file: UInt64

    static func current() -> ResidentMemory {
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
