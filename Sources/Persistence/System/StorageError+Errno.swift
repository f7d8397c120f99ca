#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension StorageError {
    /// Turns a failed system call into a ``StorageError`` whose code and message say what to do.
    ///
    /// - Parameters:
    ///   - code: The `errno` the call set.
    ///   - operation: What was being done, as the message's first words (`"Opening"`).
    ///   - path: The file concerned.
    ///   - systemCall: The C function that failed (`"open"`, `"pwrite"`), kept in ``systemCall``.
    ///   - offset: For a read or write, the file offset it was at, kept in ``offset``.
    ///   - fileID: Where the error is created; leave the default (the caller's `#fileID`).
    ///   - line: Where the error is created; leave the default (the caller's `#line`).
    package init(
        errno code: Int32, operation: String, path: String, systemCall: String? = nil, offset: UInt64? = nil,
        fileID: String = #fileID, line: Int = #line
    ) {
        let reason = String(cString: strerror(code))
        let (kind, message) = Self.describe(errno: code, operation: operation, path: path, reason: reason)
        self.init(
            kind, message, offset: offset.map { FileOffset($0) }, errno: code, systemCall: systemCall, fileID: fileID,
            line: line)
    }

    /// The code and message for a failed system call's `errno`.
    private static func describe(errno code: Int32, operation: String, path: String, reason: String) -> (Code, String) {
        switch code {
        case ENOSPC, EDQUOT:
            return (
                .diskFull,
                "\(operation) '\(path)' failed because the disk is full (\(reason)). Free some space and try again; "
                    + "nothing was committed by the failing operation."
            )
        case EIO:
            return (.ioFailure, "\(operation) '\(path)' failed with an I/O error (\(reason)). Check the device.")
        case ENOENT:
            return (.fileNotFound, "\(operation) '\(path)' failed: no such file or directory.")
        case EEXIST:
            return (.fileExists, "\(operation) '\(path)' failed: the file already exists.")
        case EACCES, EPERM, EROFS:
            return (
                .permissionDenied,
                "\(operation) '\(path)' failed: permission denied (\(reason)). Check the file's "
                    + "permissions and the directory's."
            )
        case EWOULDBLOCK:
            return (.alreadyOpen, "'\(path)' is already open for writing by another process. Close it there first.")
        default:
            return (.fileAccess, "\(operation) '\(path)' failed: \(reason) (errno \(code)).")
        }
    }
}
