import Foundation
import Testing

@testable import ActorStorePersistence

/// How an open tells its own just-released lock (still held through a child process's copy of the
/// descriptor until the child's exec) from another process's lock (issue 20's immediate reopen).
@Suite("An open that meets its own released lock waits for it")
struct OwnLockTests {
    private let fs = PosixFileSystem()

    private func file() throws -> (path: String, file: OpenFile) {
        let path = NSTemporaryDirectory() + "actorstore-ownlock-\(UUID().uuidString)"
        return (path, try fs.open(path, create: true, readOnly: false))
    }

    @Test("a lock this process took and no engine of it holds is its own: the open waits")
    func aLockOfThisProcessOnly() throws {
        let (path, holder) = try file()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try fs.lockExclusive(holder)
        let opener = try fs.open(path, create: false, readOnly: false)
        #expect(throws: StorageError.self) { try fs.lockExclusive(opener) }
        #expect(StorageEngine.heldOnlyByOwnClosedDescriptor(fs, opener))
        fs.close(opener)
        fs.close(holder)
    }

    /// The holder (a child's exec) can let go between the failed attempt and the reading of `/proc/locks`:
    /// no lock listed at all means try again. Before, that was taken as another process's lock, and 2 of
    /// about 4,000 immediate reopens on a loaded machine failed with `alreadyOpen`.
    @Test("no lock listed at all (the holder just let go) is worth another attempt")
    func aLockReleasedMeanwhile() throws {
        let (path, opener) = try file()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(StorageEngine.heldOnlyByOwnClosedDescriptor(fs, opener))
        fs.close(opener)
    }

    @Test("while an engine of this process holds the file, its lock is not a released one")
    func aLockAnEngineHolds() throws {
        let (path, holder) = try file()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try StorageEngine.lockPatiently(fs, holder, shared: false)
        let opener = try fs.open(path, create: false, readOnly: false)
        #expect(!StorageEngine.heldOnlyByOwnClosedDescriptor(fs, opener))
        #expect(throws: StorageError.self) { try StorageEngine.lockPatiently(fs, opener, shared: false) }
        fs.close(opener)
        StorageEngine.closeLock(fs, holder)
    }

    @Test("another process's lock is reported, not waited for")
    func anotherProcesssLock() throws {
        let (path, probe) = try file()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let flock = "/usr/bin/flock"
        try #require(FileManager.default.isExecutableFile(atPath: flock), "util-linux flock(1) is needed")
        // flock(1) takes the lock, then prints and waits for its standard input to close.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: flock)
        process.arguments = ["-x", path, "sh", "-c", "echo locked; cat > /dev/null"]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        let said = output.fileHandleForReading.availableData
        #expect(String(decoding: said, as: UTF8.self).hasPrefix("locked"))
        #expect(!StorageEngine.heldOnlyByOwnClosedDescriptor(fs, probe))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        fs.close(probe)
    }
}
