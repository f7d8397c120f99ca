#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``FileSystem`` whose files live in memory: the engine's in-memory mode, and the crash-test bench.
///
/// With `tracksDurability`, it remembers what a power loss would leave: each file's bytes as of its last
/// ``sync(_:)`` and the directory entries as of the last ``syncDirectory(_:)``. ``powerLossImage()`` returns
/// a new file system holding exactly that; ``processCrashImage()`` keeps everything written (as after
/// `kill -9`, when the page cache survives).
package final class MemoryFileSystem: FileSystem {
    private let state: Locked<State>
    private let tracksDurability: Bool

    package init(tracksDurability: Bool = false) {
        self.tracksDurability = tracksDurability
        self.state = Locked(State())
    }

    /// A file system holding `files` (path → contents), all of them durable.
    package convenience init(files: [String: [UInt8]], tracksDurability: Bool = true) {
        self.init(tracksDurability: tracksDurability)
        state.withLock { state in
            for (path, bytes) in files {
                let file = MemoryFile(bytes, inode: state.newInode())
                state.names[path] = file
                state.durableNames[path] = file
            }
        }
    }

    /// The current contents of the file at `path`, or nil.
    package func contents(of path: String) -> [UInt8]? {
        state.withLock { $0.names[path]?.currentBytes }
    }

    /// Replaces (or creates) the file at `path` with `bytes`, durably.
    package func setContents(of path: String, to bytes: [UInt8]) {
        state.withLock { state in
            let file = MemoryFile(bytes, inode: state.newInode())
            state.names[path] = file
            state.durableNames[path] = file
        }
    }

    /// The paths of all files, sorted.
    package var allPaths: [String] { state.withLock { $0.names.keys.sorted() } }

    /// What survives a power loss now: synced bytes under synced names.
    package func powerLossImage() -> MemoryFileSystem {
        let files = state.withLock { state in
            state.durableNames.mapValues { tracksDurability ? $0.durable : $0.currentBytes }
        }
        return MemoryFileSystem(files: files, tracksDurability: tracksDurability)
    }

    /// What a power loss with unordered write-back may leave now (needs `tracksDurability`): each file under its
    /// synced name holds its synced bytes, except that every `pageSize` page written since its last sync holds
    /// its contents as of a moment between that sync and now, chosen by `rng` page by page (untouched, after
    /// some of the writes, or after all), and its size is one it had in that window. This is how a kernel
    /// writes dirty pages back: in any order, each page whole, none of them promised before `fdatasync`.
    package func pagedPowerLossImage<G: RandomNumberGenerator>(
        using rng: inout G, pageSize: Int = 4096
    ) -> MemoryFileSystem {
        let files = state.withLock { state in
            state.durableNames.mapValues { tracksDurability ? ($0.durable, $0.unsynced) : ($0.currentBytes, []) }
        }
        var images: [String: [UInt8]] = [:]
        for (path, (durable, events)) in files.sorted(by: { $0.key < $1.key }) {
            images[path] = Self.pagedImage(durable: durable, events: events, pageSize: pageSize, using: &rng)
        }
        return MemoryFileSystem(files: images, tracksDurability: tracksDurability)
    }

    /// One file's image for ``pagedPowerLossImage(using:pageSize:)``.
    private static func pagedImage<G: RandomNumberGenerator>(
        durable: [UInt8], events: [MemoryFile.Event], pageSize: Int, using rng: inout G
    ) -> [UInt8] {
        guard !events.isEmpty else { return durable }
        // Replay the writes since the sync, keeping each touched page's versions (the synced one first).
        var current = durable
        var versions: [Int: [[UInt8]]] = [:]
        var sizes = [durable.count]
        func page(_ index: Int, of bytes: [UInt8]) -> [UInt8] {
            let start = index * pageSize
            guard start < bytes.count else { return [] }
            return Array(bytes[start..<min(start + pageSize, bytes.count)])
        }
        for event in events {
            switch event {
            case .write(let offset, let bytes):
                guard !bytes.isEmpty else { continue }
                let touched = (offset / pageSize)...((offset + bytes.count - 1) / pageSize)
                for index in touched where versions[index] == nil { versions[index] = [page(index, of: durable)] }
                if current.count < offset + bytes.count {
                    current += [UInt8](repeating: 0, count: offset + bytes.count - current.count)
                }
                current.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
                for index in touched { versions[index]!.append(page(index, of: current)) }
            case .truncate(let size):
                let pages = Set(versions.keys).union(
                    size < current.count ? Set((size / pageSize)...((current.count - 1) / pageSize)) : [])
                for index in pages where versions[index] == nil { versions[index] = [page(index, of: durable)] }
                if size < current.count {
                    current.removeSubrange(size...)
                } else {
                    current += [UInt8](repeating: 0, count: size - current.count)
                }
                for index in pages { versions[index]!.append(page(index, of: current)) }
            }
            sizes.append(current.count)
        }
        let size = sizes.randomElement(using: &rng)!
        var image = Array(durable.prefix(size))
        if image.count < size { image += [UInt8](repeating: 0, count: size - image.count) }
        for (index, pageVersions) in versions.sorted(by: { $0.key < $1.key }) {
            let start = index * pageSize
            guard start < size else { continue }
            var chosen = pageVersions.randomElement(using: &rng)!
            let end = min(start + pageSize, size)
            if chosen.count < end - start { chosen += [UInt8](repeating: 0, count: end - start - chosen.count) }
            image.replaceSubrange(start..<end, with: chosen[..<(end - start)])
        }
        return image
    }

    /// What survives a process crash now: every completed write, every name.
    package func processCrashImage() -> MemoryFileSystem {
        let files = state.withLock { $0.names.mapValues(\.currentBytes) }
        return MemoryFileSystem(files: files, tracksDurability: tracksDurability)
    }

    // MARK: FileSystem

    package func open(_ path: String, create: Bool, readOnly: Bool) throws(StorageError) -> OpenFile {
        try state.withLock { state throws(StorageError) in
            let file: MemoryFile
            if let existing = state.names[path] {
                file = existing
            } else if create {
                file = MemoryFile([], inode: state.newInode())
                state.names[path] = file
            } else {
                throw StorageError(errno: ENOENT_, operation: "Opening", path: path)
            }
            state.nextDescriptor += 1
            state.open[state.nextDescriptor] = file
            return OpenFile(descriptor: state.nextDescriptor, path: path)
        }
    }

    package func close(_ openFile: OpenFile) {
        state.withLock { state in
            if let file = state.open.removeValue(forKey: openFile.descriptor), file.lockHolder == openFile.descriptor {
                file.lockHolder = nil
            }
        }
    }

    package func read(
        _ openFile: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64
    ) throws(StorageError) -> Int {
        try state.withLock { state throws(StorageError) in
            let file = try state.file(openFile)
            let start = Int(clamping: offset)
            guard start < file.size else { return 0 }
            let n = min(buffer.count, file.size - start)
            if n > 0, let destination = buffer.baseAddress {
                destination.copyMemory(from: file.storage.pointer + start, byteCount: n)
            }
            return n
        }
    }

    package func write(
        _ openFile: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64
    ) throws(StorageError) -> Int {
        try state.withLock { state throws(StorageError) in
            let file = try state.file(openFile)
            file.write(bytes, at: Int(clamping: offset))
            if tracksDurability { file.unsynced.append(.write(Int(clamping: offset), Array(bytes))) }
            return bytes.count
        }
    }

    package func sync(_ openFile: OpenFile) throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            let file = try state.file(openFile)
            if tracksDurability {
                file.durable = file.currentBytes
                file.unsynced = []
            }
        }
    }

    package func truncate(_ openFile: OpenFile, to size: UInt64) throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            let file = try state.file(openFile)
            try file.truncate(to: Int(clamping: size))
            if tracksDurability { file.unsynced.append(.truncate(Int(clamping: size))) }
        }
    }

    package func size(of openFile: OpenFile) throws(StorageError) -> UInt64 {
        try state.withLock { state throws(StorageError) in UInt64(try state.file(openFile).size) }
    }

    package func lockExclusive(_ openFile: OpenFile) throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            let file = try state.file(openFile)
            if let holder = file.lockHolder, holder != openFile.descriptor, state.open[holder] === file {
                throw StorageError(errno: EWOULDBLOCK_, operation: "Locking", path: openFile.path)
            }
            file.lockHolder = openFile.descriptor
        }
    }

    package func map(_ openFile: OpenFile, length: Int) throws(StorageError) -> MappedRegion {
        try state.withLock { state throws(StorageError) in
            let file = try state.file(openFile)
            file.reserve(length)
            let storage = file.storage
            return MappedRegion(base: UnsafeRawPointer(storage.pointer), length: length) {
                withExtendedLifetime(storage) {}
            }
        }
    }

    package func rename(_ source: String, to destination: String) throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            guard let file = state.names.removeValue(forKey: source) else {
                throw StorageError(errno: ENOENT_, operation: "Renaming", path: source)
            }
            state.names[destination] = file
        }
    }

    package func remove(_ path: String) throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            guard state.names.removeValue(forKey: path) != nil else {
                throw StorageError(errno: ENOENT_, operation: "Removing", path: path)
            }
        }
    }

    package func syncDirectory(_ path: String) throws(StorageError) {
        state.withLock { state in
            let prefix = path.hasSuffix("/") ? path : path + "/"
            state.durableNames = state.durableNames.filter { !$0.key.hasPrefix(prefix) }
            for (name, file) in state.names where name.hasPrefix(prefix) { state.durableNames[name] = file }
        }
    }

    package func createExclusive(_ path: String) throws(StorageError) -> OpenFile {
        try state.withLock { state throws(StorageError) in
            guard state.names[path] == nil else {
                throw StorageError(
                    .fileExists, "'\(path)' already exists (a file or a symbolic link); it was not opened.")
            }
            let file = MemoryFile([], inode: state.newInode())
            state.names[path] = file
            state.nextDescriptor += 1
            state.open[state.nextDescriptor] = file
            return OpenFile(descriptor: state.nextDescriptor, path: path)
        }
    }

    package func renameNoReplace(_ source: String, to destination: String) throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            guard state.names[source] != nil else {
                throw StorageError(errno: ENOENT_, operation: "Renaming", path: source)
            }
            guard state.names[destination] == nil else {
                throw StorageError(.fileExists, "'\(destination)' already exists; it was not replaced.")
            }
            state.names[destination] = state.names.removeValue(forKey: source)
        }
    }

    package func identity(of openFile: OpenFile) throws(StorageError) -> FileIdentity {
        try state.withLock { state throws(StorageError) in
            FileIdentity(device: 1, inode: try state.file(openFile).inode)
        }
    }

    package func identity(atPath path: String) throws(StorageError) -> FileIdentity {
        try state.withLock { state throws(StorageError) in
            guard let file = state.names[path] else {
                throw StorageError(errno: ENOENT_, operation: "Reading the identity of", path: path)
            }
            return FileIdentity(device: 1, inode: file.inode)
        }
    }

    /// Memory files have no permissions: nothing to copy.
    package func copyPermissions(from model: OpenFile, to file: OpenFile) throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            _ = try state.file(model)
            _ = try state.file(file)
        }
    }

    /// Memory files have no links: the path itself.
    package func resolvedPath(_ path: String) -> String { path }

    package func fileExists(_ path: String) -> Bool {
        state.withLock { state in
            let prefix = path.hasSuffix("/") ? path : path + "/"
            return state.names[path] != nil || state.names.keys.contains { $0.hasPrefix(prefix) }
        }
    }

    package func contentsOfDirectory(_ path: String) throws(StorageError) -> [String] {
        state.withLock { state in
            let prefix = path.hasSuffix("/") ? path : path + "/"
            return state.names.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
                .filter { !$0.contains("/") }
        }
    }
}

private let ENOENT_: Int32 = 2
private let EWOULDBLOCK_: Int32 = 11

extension MemoryFileSystem {
    fileprivate struct State {
        var nextDescriptor: Int32 = 100
        var names: [String: MemoryFile] = [:]
        var durableNames: [String: MemoryFile] = [:]
        var open: [Int32: MemoryFile] = [:]
        var lastInode: UInt64 = 0

        mutating func newInode() -> UInt64 {
            lastInode += 1
            return lastInode
        }

        func file(_ openFile: OpenFile) throws(StorageError) -> MemoryFile {
            guard let file = open[openFile.descriptor] else {
                throw StorageError(.fileAccess, "'\(openFile.path)' is not open (bad descriptor).")
            }
            return file
        }
    }
}

/// A fixed block of memory. Growing a file allocates a new block; regions keep the old one alive.
// Safety (@unchecked Sendable): `pointer` and `capacity` never change. The bytes are written only under the
// file system's lock, and a region reads only bytes the engine published after writing them, so no byte is
// read and written concurrently. Deallocation happens once, when the last owner releases the block.
private final class MemoryBlock: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    let capacity: Int
    init(capacity: Int) {
        self.capacity = capacity
        pointer = .allocate(byteCount: max(capacity, 1), alignment: 16)
        memset(pointer, 0, max(capacity, 1))
    }
    deinit { pointer.deallocate() }
}

/// One in-memory file.
// Safety (@unchecked Sendable): every property is read and written only inside `MemoryFileSystem.state`'s
// lock; the one access outside it is a region reading published bytes of a block, covered by `MemoryBlock`.
private final class MemoryFile: @unchecked Sendable {
    var storage: MemoryBlock
    /// Blocks the file outgrew that a region may still map. Writes are mirrored into them (as far as they
    /// reach), so every region sees later writes below its length — the coherence real `mmap` gives.
    private var retired: [Weak] = []
    var size: Int
    var durable: [UInt8]
    /// The writes and size changes since the last sync, in order (only with `tracksDurability`).
    var unsynced: [Event] = []
    var lockHolder: Int32?
    /// The file's identity: a rename moves it with the file.
    let inode: UInt64

    enum Event {
        case write(Int, [UInt8])
        case truncate(Int)
    }

    private struct Weak {
        weak var block: MemoryBlock?
    }

    init(_ bytes: [UInt8], inode: UInt64) {
        self.inode = inode
        storage = MemoryBlock(capacity: max(bytes.count, 4096))
        size = bytes.count
        durable = bytes
        bytes.withUnsafeBytes {
            if let base = $0.baseAddress { storage.pointer.copyMemory(from: base, byteCount: $0.count) }
        }
    }

    var currentBytes: [UInt8] { Array(UnsafeRawBufferPointer(start: storage.pointer, count: size)) }

    func reserve(_ capacity: Int) {
        guard capacity > storage.capacity else { return }
        let grown = MemoryBlock(capacity: max(capacity, storage.capacity * 2))
        grown.pointer.copyMemory(from: storage.pointer, byteCount: size)
        retired.removeAll { $0.block == nil }
        retired.append(Weak(block: storage))
        storage = grown
    }

    /// The current block and every retired block still alive.
    private var blocks: [MemoryBlock] { [storage] + retired.compactMap(\.block) }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        reserve(offset + bytes.count)
        guard let base = bytes.baseAddress else { return }
        for block in blocks where offset < block.capacity {
            (block.pointer + offset).copyMemory(from: base, byteCount: min(bytes.count, block.capacity - offset))
        }
        size = max(size, offset + bytes.count)
    }

    func truncate(to newSize: Int) throws(StorageError) {
        if newSize < size {
            for block in blocks where newSize < block.capacity {
                memset(block.pointer + newSize, 0, min(size, block.capacity) - newSize)
            }
        } else {
            reserve(newSize)
        }
        size = newSize
    }
}
