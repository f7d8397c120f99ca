#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Monotonic time in nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`: a vDSO call, ~20 ns).
@inline(__always)
public func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Seconds elapsed since `start` (a ``monotonicNanos()`` reading).
@inline(__always)
public func secondsSince(_ start: UInt64) -> Double { Double(monotonicNanos() &- start) / 1e9 }

/// Times an async block: (seconds, its value).
public func timed<T>(_ body: () async throws -> T) async rethrows -> (Double, T) {
    let start = monotonicNanos()
    let value = try await body()
    return (secondsSince(start), value)
}

/// CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`): what a single-threaded loop
/// itself costs, even when other processes compete for the cores.
@inline(__always)
public func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// User + system CPU seconds of the whole process (every thread), from `getrusage`: with other processes
/// competing for the cores, CPU time next to wall time tells waiting from working.
public func processCPUSeconds() -> Double {
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
public struct Stopwatch {
    private let wall = monotonicNanos()
    private let cpu = processCPUSeconds()

    /// Starts timing now.
    public init() {}

    /// Wall-clock seconds since the stopwatch was made.
    public var seconds: Double { secondsSince(wall) }
    /// Process CPU seconds (all threads) since the stopwatch was made.
    public var cpuSeconds: Double { processCPUSeconds() - cpu }
}
