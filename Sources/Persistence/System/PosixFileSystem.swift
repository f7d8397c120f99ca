#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The production ``FileSystem``: thin wrappers over the POSIX calls, retrying on `EINTR`.
package struct PosixFileSystem: FileSystem {
    package init() {}

    /// True: files on disk are shared with other processes (see ``PresenceLock``).
    package var sharesFilesBetweenProcesses: Bool { true }

    package func open(_ path: String, create: Bool, readOnly: Bool) throws(StorageError) -> OpenFile {
        var flags = readOnly ? O_RDONLY : O_RDWR
        flags |= O_CLOEXEC
        if create { flags |= O_CREAT }
        let fd = retrying { Glibc_open(path, flags, 0o600) }
        guard fd >= 0 else { throw StorageError(errno: errno, operation: "Opening", path: path, systemCall: "open") }
        return OpenFile(descriptor: fd, path: path)
    }

    package func close(_ file: OpenFile) {
        _ = systemClose(file.descriptor)
    }

    package func read(
        _ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64
    ) throws(StorageError) -> Int {
        let n = retrying { pread(file.descriptor, buffer.baseAddress, buffer.count, off_t(offset)) }
        guard n >= 0 else {
            throw StorageError(errno: errno, operation: "Reading", path: file.path, systemCall: "pread", offset: offset)
        }
        return n
    }

    package func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) -> Int
    {
        let n = retrying { pwrite(file.descriptor, bytes.baseAddress, bytes.count, off_t(offset)) }
        guard n >= 0 else {
            throw StorageError(
                errno: errno, operation: "Writing", path: file.path, systemCall: "pwrite", offset: offset)
        }
        return n
    }

    /// The call ``sync(_:)`` makes: `fcntl(F_FULLFSYNC)` on Apple platforms, `fdatasync` elsewhere.
    #if canImport(Darwin)
        private static let syncCall = "fcntl"
    #else
        private static let syncCall = "fdatasync"
    #endif

    package func sync(_ file: OpenFile) throws(StorageError) {
        #if canImport(Darwin)
            let rc = retrying { fcntl(file.descriptor, F_FULLFSYNC) }
        #else
            let rc = retrying { fdatasync(file.descriptor) }
        #endif
        guard rc == 0 else {
            throw StorageError(errno: errno, operation: "Syncing", path: file.path, systemCall: Self.syncCall)
        }
    }

    package func truncate(_ file: OpenFile, to size: UInt64) throws(StorageError) {
        let rc = retrying { ftruncate(file.descriptor, off_t(size)) }
        guard rc == 0 else {
            throw StorageError(errno: errno, operation: "Truncating", path: file.path, systemCall: "ftruncate")
        }
    }

    package func size(of file: OpenFile) throws(StorageError) -> UInt64 {
        var st = stat()
        guard fstat(file.descriptor, &st) == 0 else {
            throw StorageError(errno: errno, operation: "Reading the size of", path: file.path, systemCall: "fstat")
        }
        return UInt64(st.st_size)
    }

    package func lockExclusive(_ file: OpenFile) throws(StorageError) {
        let rc = retrying { flock(file.descriptor, LOCK_EX | LOCK_NB) }
        guard rc == 0 else {
            throw StorageError(errno: errno, operation: "Locking", path: file.path, systemCall: "flock")
        }
    }

    package func lockForSharedWriting(_ file: OpenFile) throws(StorageError) {
        var st = stat()
        guard fstat(file.descriptor, &st) == 0 else {
            throw StorageError(errno: errno, operation: "Locking", path: file.path, systemCall: "fstat")
        }
        let operation = st.st_nlink > 1 ? LOCK_EX : LOCK_SH
        let rc = retrying { flock(file.descriptor, operation | LOCK_NB) }
        guard rc == 0 else {
            throw StorageError(errno: errno, operation: "Locking", path: file.path, systemCall: "flock")
        }
    }

    package func map(_ file: OpenFile, length: Int) throws(StorageError) -> MappedRegion {
        guard length > 0 else {
            throw StorageError(.fileAccess, "Mapping '\(file.path)' needs a positive length.")
        }
        guard let pointer = mmap(nil, length, PROT_READ, MAP_SHARED, file.descriptor, 0), pointer != MAP_FAILED
        else { throw StorageError(errno: errno, operation: "Mapping", path: file.path, systemCall: "mmap") }
        // Safety: the address is only used to call munmap once, when the region is released, and madvise on
        // ranges inside the mapping before that (the region calls `dropPages` only while it is alive).
        nonisolated(unsafe) let address = pointer
        return MappedRegion(
            base: UnsafeRawPointer(pointer), length: length,
            dropPages: { offset, count in _ = madvise(address + offset, count, MADV_DONTNEED) }
        ) { _ = munmap(address, length) }
    }

    package func rename(_ source: String, to destination: String) throws(StorageError) {
        guard Glibc_rename(source, destination) == 0 else {
            throw StorageError(errno: errno, operation: "Renaming", path: source, systemCall: "rename")
        }
    }

    package func remove(_ path: String) throws(StorageError) {
        guard unlink(path) == 0 else {
            throw StorageError(errno: errno, operation: "Removing", path: path, systemCall: "unlink")
        }
    }

    package func syncDirectory(_ path: String) throws(StorageError) {
        let fd = retrying { Glibc_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) }
        guard fd >= 0 else {
            throw StorageError(errno: errno, operation: "Opening the directory", path: path, systemCall: "open")
        }
        defer { _ = systemClose(fd) }
        guard retrying({ fsync(fd) }) == 0 else {
            throw StorageError(errno: errno, operation: "Syncing the directory", path: path, systemCall: "fsync")
        }
    }

    package func createExclusive(_ path: String) throws(StorageError) -> OpenFile {
        let flags = O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL | O_NOFOLLOW
        let fd = retrying { Glibc_open(path, flags, 0o600) }
        guard fd >= 0 else {
            if errno == EEXIST || errno == ELOOP {
                throw StorageError(
                    .fileExists, "'\(path)' already exists (a file or a symbolic link); it was not opened.")
            }
            throw StorageError(errno: errno, operation: "Creating", path: path, systemCall: "open")
        }
        return OpenFile(descriptor: fd, path: path)
    }

    package func renameNoReplace(_ source: String, to destination: String) throws(StorageError) {
        if link(source, destination) == 0 {
            _ = unlink(source)
            return
        }
        let code = errno
        if code == EEXIST { throw Self.destinationExists(destination) }
        guard code == EPERM || code == ENOTSUP || code == EOPNOTSUPP || code == ENOSYS else {
            throw StorageError(errno: code, operation: "Renaming", path: source, systemCall: "link")
        }
        // A file system without hard links: a rename that refuses to replace.
        #if canImport(Darwin)
            if renamex_np(source, destination, UInt32(RENAME_EXCL)) == 0 { return }
            if errno == EEXIST { throw Self.destinationExists(destination) }
            throw StorageError(errno: errno, operation: "Renaming", path: source, systemCall: "renamex_np")
        #else
            // (Glibc does not export renameat2 to Swift.) Checked, then renamed: a file another process
            // creates in between is replaced, the behaviour of a plain rename.
            var st = stat()
            if lstat(destination, &st) == 0 { throw Self.destinationExists(destination) }
            try rename(source, to: destination)
        #endif
    }

    private static func destinationExists(_ path: String) -> StorageError {
        StorageError(.fileExists, "'\(path)' already exists; it was not replaced.")
    }

    package func identity(of file: OpenFile) throws(StorageError) -> FileIdentity {
        var st = stat()
        guard fstat(file.descriptor, &st) == 0 else {
            throw StorageError(errno: errno, operation: "Reading the identity of", path: file.path, systemCall: "fstat")
        }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    package func identity(atPath path: String) throws(StorageError) -> FileIdentity {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw StorageError(errno: errno, operation: "Reading the identity of", path: path, systemCall: "stat")
        }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    package func copyPermissions(from model: OpenFile, to file: OpenFile) throws(StorageError) {
        var st = stat()
        guard fstat(model.descriptor, &st) == 0 else {
            throw StorageError(
                errno: errno, operation: "Reading the permissions of", path: model.path, systemCall: "fstat")
        }
        if geteuid() == 0 { _ = fchown(file.descriptor, st.st_uid, st.st_gid) }
        guard retrying({ fchmod(file.descriptor, st.st_mode & 0o7777) }) == 0 else {
            throw StorageError(
                errno: errno, operation: "Setting the permissions of", path: file.path, systemCall: "fchmod")
        }
    }

    package func resolvedPath(_ path: String) -> String {
        if let resolved = Self.realPath(path) { return resolved }
        // A file not created yet: its real directory, then its name.
        guard let slash = path.lastIndex(of: "/") else { return Self.realPath(".").map { $0 + "/" + path } ?? path }
        let name = path[path.index(after: slash)...]
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        guard !name.isEmpty, name != ".", name != "..", let real = Self.realPath(directory) else { return path }
        return (real == "/" ? "" : real) + "/" + name
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    package func fileExists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    package func contentsOfDirectory(_ path: String) throws(StorageError) -> [String] {
        guard let dir = opendir(path) else {
            throw StorageError(errno: errno, operation: "Listing the directory", path: path, systemCall: "opendir")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

@inline(__always)
private func retrying<T: BinaryInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result < 0 && errno == EINTR { continue }
        return result
    }
}

// The module-qualified C functions, named apart from this type's methods of the same name.
@inline(__always)
private func Glibc_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    #if canImport(Glibc)
        Glibc.open(path, flags, mode)
    #else
        Darwin.open(path, flags, mode)
    #endif
}

@inline(__always)
private func Glibc_rename(_ source: String, _ destination: String) -> Int32 {
    #if canImport(Glibc)
        Glibc.rename(source, destination)
    #else
        Darwin.rename(source, destination)
    #endif
}

@inline(__always)
private func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.close(fd)
    #else
        Darwin.close(fd)
    #endif
}
