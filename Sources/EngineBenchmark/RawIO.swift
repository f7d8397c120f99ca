#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The physical limits of the disk under the benchmark directory, with plain POSIX calls and no engine:
/// what the engine's durable paths should be compared with.
enum RawIO {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Opens `path` for writing, creating or truncating it.
    private static func create(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "open(\(path)) failed: \(String(cString: strerror(errno)))") }
        return fd
    }

    private static func check(_ rc: Int, _ what: String) throws {
        if rc < 0 { throw Failure(description: "\(what) failed: \(String(cString: strerror(errno)))") }
    }

    /// Appends `recordSize` bytes at the end of a fresh file and `fdatasync`s it, `samples` times (after a
    /// short warm-up); returns the latency of each append + sync. This is exactly what one durable commit
    /// of the engine asks of the disk (the engine's `pwrite` at the end, then `fdatasync`).
    static func appendSyncLatencies(path: String, samples: Int, recordSize: Int = 100) throws -> LatencySamples {
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
            try check(Int(fdatasync(fd)), "fdatasync")
            let elapsed = monotonicNanos() &- start
            offset += off_t(recordSize)
            if i >= warmup { latencies.record(elapsed) }
        }
        return latencies
    }

    /// Writes `totalBytes` sequentially in 1 MiB `write`s and then `fsync`s; returns the seconds taken
    /// (writes + fsync), i.e. the sustained rate at which the disk accepts durable data.
    static func sequentialWriteSeconds(path: String, totalBytes: Int) throws -> Double {
        let fd = try create(path)
        defer {
            close(fd)
            unlink(path)
        }
        let chunkSize = 1 << 20
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        var rng = SplitMix64(seed: 42)
        chunk.withUnsafeMutableBytes { raw in
            for i in stride(from: 0, to: chunkSize, by: 8) {
                raw.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self)
            }
        }
        let start = monotonicNanos()
        var remaining = totalBytes
        try chunk.withUnsafeBytes { raw in
            while remaining > 0 {
                let n = write(fd, raw.baseAddress, min(chunkSize, remaining))
                try check(n, "write")
                remaining -= n
            }
        }
        try check(Int(fsync(fd)), "fsync")
        return secondsSince(start)
    }

    /// Makes a file's data durable (used to settle copies before timing the engine on them).
    static func syncFile(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "open(\(path)) failed: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try check(Int(fsync(fd)), "fsync")
    }
}
