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

    /// A call as ``onNextCall(where:fail:run:)`` sees it: the operation's name as error messages give it
    /// ("Opening", "Locking", "Writing", "Renaming", ...) and the path of the file.
    package struct Call: Sendable {
        package let operation: String
        package let path: String
    }

    private struct Hook {
        let matches: @Sendable (Call) -> Bool
        let fault: Fault?
        let action: (@Sendable () -> Void)?
    }

    private struct Plan {
        var calls = 0
        var fault: Fault?
        var atCall = 0
        var crashed = false
        var injected = 0
        var hooks: [Hook] = []
    }

    private let base: any FileSystem
    private let plan = Locked(Plan())

    package init(base: any FileSystem) { self.base = base }

    /// The base file system's: the presence lock itself is not a call of this protocol (no faults).
    package var sharesFilesBetweenProcesses: Bool { base.sharesFilesBetweenProcesses }

    /// Arms `fault` for the `n`th call from now (1 = the next call). Replaces any armed fault.
    package func inject(_ fault: Fault, atCall n: Int) {
        plan.withLock {
            $0.fault = fault
            $0.atCall = $0.calls + n
        }
    }

    /// Before the next call that `matches` accepts, runs `action` on the calling thread (it may block: a
    /// test runs another engine's work there, exactly between two steps of this one), then fails that
    /// call with `fault` if given. Fires once; hooks armed together fire in the order they were armed.
    package func onNextCall(
        where matches: @escaping @Sendable (Call) -> Bool, fail fault: Fault? = nil,
        run action: (@Sendable () -> Void)? = nil
    ) {
        plan.withLock { $0.hooks.append(Hook(matches: matches, fault: fault, action: action)) }
    }

    /// Disarms any fault and forgets a crash.
    package func reset() {
        plan.withLock {
            $0.fault = nil
            $0.crashed = false
            $0.hooks = []
        }
    }

    /// Calls made so far.
    package var callCount: Int { plan.withLock { $0.calls } }
    /// Whether the armed fault has fired.
    package var didInject: Bool { plan.withLock { $0.injected > 0 } }

    private enum Decision { case proceed, fail(Fault) }

    private func decide(_ operation: String, _ path: String) -> Decision {
        let call = Call(operation: operation, path: path)
        let (decision, action) = plan.withLock { plan -> (Decision, (@Sendable () -> Void)?) in
            plan.calls += 1
            if plan.crashed { return (.fail(.crash), nil) }
            var action: (@Sendable () -> Void)?
            var fault: Fault?
            if let index = plan.hooks.firstIndex(where: { $0.matches(call) }) {
                let hook = plan.hooks.remove(at: index)
                action = hook.action
                fault = hook.fault
            }
            if fault == nil, let armed = plan.fault, plan.calls == plan.atCall {
                plan.fault = nil
                fault = armed
            }
            guard let fault else { return (.proceed, action) }
            plan.injected += 1
            if fault == .crash { plan.crashed = true }
            return (.fail(fault), action)
        }
        action?()
        return decision
    }

    private func check(_ operation: String, _ path: String) throws(StorageError) {
        if case .fail(let fault) = decide(operation, path), fault != .shortWrite {
            throw Self.error(for: fault, operation, path)
        }
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
        _ = decide("Closing", file.path)
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
        switch decide("Writing", file.path) {
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

    package func lockForSharedWriting(_ file: OpenFile) throws(StorageError) {
        try check("Locking", file.path)
        try base.lockForSharedWriting(file)
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

    package func createExclusive(_ path: String) throws(StorageError) -> OpenFile {
        try check("Creating", path)
        return try base.createExclusive(path)
    }

    package func renameNoReplace(_ source: String, to destination: String) throws(StorageError) {
        try check("Renaming", source)
        try base.renameNoReplace(source, to: destination)
    }

    package func identity(of file: OpenFile) throws(StorageError) -> FileIdentity {
        try check("Reading the identity of", file.path)
        return try base.identity(of: file)
    }

    package func identity(atPath path: String) throws(StorageError) -> FileIdentity {
        try check("Reading the identity of", path)
        return try base.identity(atPath: path)
    }

    package func copyPermissions(from model: OpenFile, to file: OpenFile) throws(StorageError) {
        try check("Setting the permissions of", file.path)
        try base.copyPermissions(from: model, to: file)
    }

    package func resolvedPath(_ path: String) -> String { base.resolvedPath(path) }

    package func fileExists(_ path: String) -> Bool { base.fileExists(path) }

    package func contentsOfDirectory(_ path: String) throws(StorageError) -> [String] {
        try check("Listing the directory", path)
        return try base.contentsOfDirectory(path)
    }
}
