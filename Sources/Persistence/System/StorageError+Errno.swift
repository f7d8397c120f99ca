#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension StorageError {
    /// Turns a failed system call into a ``StorageError`` whose code and message say what to do.
    package init(errno code: Int32, operation: String, path: String) {
        let reason = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT:
            self.init(
                .diskFull,
                "\(operation) '\(path)' failed because the disk is full (\(reason)). Free some space and try again; "
                    + "nothing was committed by the failing operation.", errno: code)
        case EIO:
            self.init(
                .ioFailure, "\(operation) '\(path)' failed with an I/O error (\(reason)). Check the device.",
                errno: code)
        case ENOENT:
            self.init(.fileNotFound, "\(operation) '\(path)' failed: no such file or directory.", errno: code)
        case EEXIST:
            self.init(.fileExists, "\(operation) '\(path)' failed: the file already exists.", errno: code)
        case EACCES, EPERM, EROFS:
            self.init(
                .permissionDenied,
                "\(operation) '\(path)' failed: permission denied (\(reason)). Check the file's "
                    + "permissions and the directory's.", errno: code)
        case EWOULDBLOCK:
            self.init(
                .alreadyOpen, "'\(path)' is already open for writing by another process. Close it there first.",
                errno: code)
        default:
            self.init(.fileAccess, "\(operation) '\(path)' failed: \(reason) (errno \(code)).", errno: code)
        }
    }
}
