import ActorStoreBenchmarkKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The engine benchmark's own raw-disk calls (the shared ones are in BenchmarkKit).
extension RawIO {
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
