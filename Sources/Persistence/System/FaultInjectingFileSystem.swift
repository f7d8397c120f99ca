/// A ``FileSystem`` wrapper that counts every call and fails the one chosen by the test.
///
/// ```swift
/// let faulty = FaultInjectingFileSystem(base: MemoryFileSystem(tracksDurability: true))
/// faulty.inject(.error(ENOSPC), atCall: 7)      // the 7th call from now fails with ENOSPC
/// ```
/// A ``Fault/crash`` makes the chosen call and every later one fail, as if the process died there; the
/// test then reopens the base file system's ``MemoryFileSystem/powerLossImage()`` or
/// ``MemoryFileSystem/processCrashImage()``.
package final class FaultInjectingFileSystem: FileSystem {
    /// What happens at the chosen call.
    package enum Fault: Sendable, Equatable {
        /// The call fails with this `errno` and has no effect.
        case error(Int32)
        /// A write writes the first half of its bytes and reports that count (at another call: no effect).
        case shortWrite
        /// A write writes the first half of its bytes, then fails with this `errno` (other calls: plain error).
        case tornWrite(Int32)
        /// This call and every later one fail with EIO and have no effect.
        case crash
    }

    private struct Plan {
        var calls = 0
        var fault: Fault?
        var atCall = 0
        var crashed = false
        var injected = 0
    }

    private let base: any FileSystem
    private let plan = Locked(Plan())

    package init(base: any FileSystem) { self.base = base }

    /// Arms `fault` for the `n`th call from now (1 = the next call). Replaces any armed fault.
    package func inject(_ fault: Fault, atCall n: Int) {
        plan.withLock {
            $0.fault = fault
            $0.atCall = $0.calls + n
        }
    }

    /// Disarms any fault and forgets a crash.
    package func reset() {
        plan.withLock {
            $0.fault = nil
            $0.crashed = false
        }
    }

    /// Calls made so far.
    package var callCount: Int { plan.withLock { $0.calls } }
    /// Whether the armed fault has fired.
    package var didInject: Bool { plan.withLock { $0.injected > 0 } }

    private enum Decision { case proceed, fail(Fault) }

    private func decide() -> Decision {
        plan.withLock { plan in
            plan.calls += 1
            if plan.crashed { return .fail(.crash) }
            guard let fault = plan.fault, plan.calls == plan.atCall else { return .proceed }
            plan.injected += 1
            plan.fault = nil
            if fault == .crash { plan.crashed = true }
            return .fail(fault)
        }
    }

    private func check(_ operation: String, _ path: String) throws(StorageError) {
        if case .fail(let fault) = decide(), fault != .shortWrite { throw Self.error(for: fault, operation, path) }
    }

    private static func error(for fault: Fault, _ operation: String, _ path: String) -> StorageError {
        switch fault {
        case .error(let code), .tornWrite(let code): StorageError(errno: code, operation: operation, path: path)
        case .crash: StorageError(errno: 5, operation: "\(operation) (simulated crash)", path: path)
        case .shortWrite: StorageError(errno: 5, operation: operation, path: path)
        }
    }

    package func open(_ path: String, create: Bool, readOnly: Bool) throws(StorageError) -> OpenFile {
        try check("Opening", path)
        return try base.open(path, create: create, readOnly: readOnly)
    }

    package func close(_ file: OpenFile) {
        _ = decide()
        base.close(file)
    }

    package func read(
        _ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64
    ) throws(StorageError) -> Int {
        try check("Reading", file.path)
        return try base.read(file, into: buffer, at: offset)
    }

    package func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) -> Int
    {
        switch decide() {
        case .proceed:
            return try base.write(file, bytes, at: offset)
        case .fail(.shortWrite) where bytes.count > 1:
            return try base.write(file, UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count / 2)]), at: offset)
        case .fail(.tornWrite(let code)):
            _ = try base.write(file, UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count / 2)]), at: offset)
            throw StorageError(errno: code, operation: "Writing", path: file.path)
        case .fail(let fault):
            throw Self.error(for: fault, "Writing", file.path)
        }
    }

    package func sync(_ file: OpenFile) throws(StorageError) {
        try check("Syncing", file.path)
        try base.sync(file)
    }

    package func truncate(_ file: OpenFile, to size: UInt64) throws(StorageError) {
        try check("Truncating", file.path)
        try base.truncate(file, to: size)
    }

    package func size(of file: OpenFile) throws(StorageError) -> UInt64 {
        try check("Reading the size of", file.path)
        return try base.size(of: file)
    }

    package func lockExclusive(_ file: OpenFile) throws(StorageError) {
        try check("Locking", file.path)
        try base.lockExclusive(file)
    }

    package func map(_ file: OpenFile, length: Int) throws(StorageError) -> MappedRegion {
        try check("Mapping", file.path)
        return try base.map(file, length: length)
    }

    package func rename(_ source: String, to destination: String) throws(StorageError) {
        try check("Renaming", source)
        try base.rename(source, to: destination)
    }

    package func remove(_ path: String) throws(StorageError) {
        try check("Removing", path)
        try base.remove(path)
    }

    package func syncDirectory(_ path: String) throws(StorageError) {
        try check("Syncing the directory", path)
        try base.syncDirectory(path)
    }

    package func fileExists(_ path: String) -> Bool { base.fileExists(path) }

    package func contentsOfDirectory(_ path: String) throws(StorageError) -> [String] {
        try check("Listing the directory", path)
        return try base.contentsOfDirectory(path)
    }
}
