#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Monotonic time in nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`: a vDSO call, ~20 ns).
@inline(__always)
package func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Seconds elapsed since `start` (a ``monotonicNanos()`` reading).
@inline(__always)
package func secondsSince(_ start: UInt64) -> Double { Double(monotonicNanos() &- start) / 1e9 }

/// CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`): what a single-threaded loop
/// itself costs, even when other processes compete for the cores.
@inline(__always)
package func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// User + system CPU seconds of the whole process (every thread), from `getrusage`: with other processes
/// competing for the cores, CPU time next to wall time tells waiting from working.
package func processCPUSeconds() -> Double {
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
package struct Stopwatch {
    private let wall = monotonicNanos()
    private let cpu = processCPUSeconds()

    package init() {}

    /// Wall-clock seconds since the stopwatch was made.
    package var seconds: Double { secondsSince(wall) }
    /// Process CPU seconds (all threads) since the stopwatch was made.
    package var cpuSeconds: Double { processCPUSeconds() - cpu }
}
