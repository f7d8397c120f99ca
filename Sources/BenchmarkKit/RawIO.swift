#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the disk under the benchmark directory allows, with plain POSIX calls and no store: the bound of
/// every durable commit rate. The tools add their own calls in extensions.
public enum RawIO {
    /// A failed system call.
    public typealias Failure = BenchmarkFailure

    /// How a durable append is made durable.
    public enum SyncCall: String, Sendable {
        /// Data and metadata.
        case fsync
        /// Data, and the metadata needed to read it back (the engine's call).
        case fdatasync
    }

    /// Opens `path` for writing, creating or truncating it.
    public static func create(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "open(\(path)) failed: \(String(cString: strerror(errno)))") }
        return fd
    }

    /// Throws with `errno`'s message if `rc` is negative.
    public static func check(_ rc: Int, _ what: String) throws {
        if rc < 0 { throw Failure(description: "\(what) failed: \(String(cString: strerror(errno)))") }
    }

    /// Appends `recordSize` bytes at the end of a fresh file and syncs it with `call`, `samples` times (after
    /// a short warm-up); returns the latency of each append + sync. One durable commit asks this of the disk
    /// (the engine appends its commit record with `pwrite`, then `fdatasync`s).
    public static func appendSyncLatencies(
        path: String, samples: Int, call: SyncCall = .fdatasync, recordSize: Int = 100
    ) throws -> LatencySamples {
        let fd = try create(path)
        defer {
            close(fd)
            unlink(path)
        }
        let record = [UInt8](repeating: 0x5A, count: recordSize)
        var offset: off_t = 0
        var latencies = LatencySamples(capacity: samples)
        let warmup = 20
        for i in 0..<(warmup + samples) {
            let start = monotonicNanos()
            let written = record.withUnsafeBytes { pwrite(fd, $0.baseAddress, recordSize, offset) }
            guard written == recordSize else {
                throw Failure(
                    description: "pwrite wrote \(written) of \(recordSize) bytes: \(String(cString: strerror(errno)))")
            }
            try check(Int(call == .fsync ? fsync(fd) : fdatasync(fd)), call.rawValue)
            let elapsed = monotonicNanos() &- start
            offset += off_t(recordSize)
            if i >= warmup { latencies.record(elapsed) }
        }
        return latencies
    }
}
