#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the disk under the benchmark directory allows, with plain POSIX calls and no ActorStore: the
/// bound of every durable commit rate.
enum RawIO {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    enum SyncCall: String {
        case fsync
        case fdatasync
    }

    /// Appends `recordSize` bytes at the end of a fresh file and syncs it with `call`, `samples` times (after
    /// a short warm-up); returns the latency of each append + sync in nanoseconds. One durable commit asks
    /// this of the disk (ActorStore's engine appends its commit record, then `fdatasync`s).
    static func appendSyncLatencies(
        path: String, samples: Int, call: SyncCall, recordSize: Int = 100
    ) throws
        -> [UInt64]
    {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "open(\(path)) failed: \(String(cString: strerror(errno)))") }
        defer {
            close(fd)
            unlink(path)
        }
        let record = [UInt8](repeating: 0x5A, count: recordSize)
        var offset: off_t = 0
        var latencies: [UInt64] = []
        latencies.reserveCapacity(samples)
        let warmup = 20
        for i in 0..<(warmup + samples) {
            let start = monotonicNanos()
            let written = record.withUnsafeBytes { pwrite(fd, $0.baseAddress, recordSize, offset) }
            guard written == recordSize else {
                throw Failure(
                    description: "pwrite wrote \(written) of \(recordSize) bytes: \(String(cString: strerror(errno)))")
            }
            let rc = call == .fsync ? fsync(fd) : fdatasync(fd)
            guard rc == 0 else {
                throw Failure(description: "\(call.rawValue) failed: \(String(cString: strerror(errno)))")
            }
            let elapsed = monotonicNanos() &- start
            offset += off_t(recordSize)
            if i >= warmup { latencies.append(elapsed) }
        }
        return latencies
    }
}

/// Latency samples in nanoseconds.
struct Latencies {
    var nanos: [UInt64]

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
