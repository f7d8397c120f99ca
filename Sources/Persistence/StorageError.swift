/// The one error type the engine throws.
///
/// A struct with an extensible ``Code`` rather than an enum, so that new failure kinds do not break
/// callers that switch over it (the ActorStore layer maps it onto the public `RealmError`).
/// `message` is a full sentence that tells the user what happened and what to do.
package struct StorageError: Error, Sendable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable, CaseIterable {
            case fileAccess, fileExists, fileNotFound, alreadyOpen, permissionDenied
            case corrupted, diskFull, ioFailure, poisoned, closed
            case limitExceeded, invalidValue, schemaMismatch, invalidObject, readOnly
            case wrongKey, unsupportedFormat, tooManyVersions, primaryKeyExists
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        package var description: String { base.rawValue }
        /// Every code the engine defines (for tests that check a mapping covers them all).
        package static var allCases: [Code] { Base.allCases.map(Code.init) }

        /// The file could not be opened, created, read or written for a reason other than those below.
        package static let fileAccess = Code(.fileAccess)
        package static let fileExists = Code(.fileExists)
        package static let fileNotFound = Code(.fileNotFound)
        /// Another process (or another engine in this process) holds the file's exclusive lock.
        package static let alreadyOpen = Code(.alreadyOpen)
        package static let permissionDenied = Code(.permissionDenied)
        /// The file's bytes are not a valid store: a checksum failed with valid data after it, a header is wrong.
        package static let corrupted = Code(.corrupted)
        /// The disk or quota is full (ENOSPC, EDQUOT). Nothing was committed by the failing call.
        package static let diskFull = Code(.diskFull)
        /// The operating system reported an I/O error (EIO and friends).
        package static let ioFailure = Code(.ioFailure)
        /// An earlier fsync failed: durability of later writes cannot be promised until the store is reopened.
        package static let poisoned = Code(.poisoned)
        /// The engine was closed.
        package static let closed = Code(.closed)
        /// A value exceeds a limit (String/Data over 16 MB, too many columns, ...).
        package static let limitExceeded = Code(.limitExceeded)
        /// A value does not fit its column (wrong type, out of range, null in a required column).
        package static let invalidValue = Code(.invalidValue)
        /// The schema given does not match the one stored, or is itself invalid.
        package static let schemaMismatch = Code(.schemaMismatch)
        /// The object does not exist (deleted, or never existed) in this version.
        package static let invalidObject = Code(.invalidObject)
        /// A write was attempted on a store opened read-only.
        package static let readOnly = Code(.readOnly)
        /// The file is encrypted with another key, or not encrypted when a key was given.
        package static let wrongKey = Code(.wrongKey)
        /// The file was written by a newer, incompatible format version.
        package static let unsupportedFormat = Code(.unsupportedFormat)
        /// An object with the same primary-key value already exists.
        package static let primaryKeyExists = Code(.primaryKeyExists)
        /// More versions are pinned than the configured maximum.
        package static let tooManyVersions = Code(.tooManyVersions)
    }

    package var code: Code
    package var message: String
    /// The file offset the error concerns, when there is one (corruption).
    package var offset: FileOffset?
    /// The operating-system error number, when the error came from a system call.
    package var errno: Int32?
    /// The system call that failed (`open`, `pwrite`, `fsync`, ...), when the error came from one.
    package var systemCall: String?
    /// Where the engine created the error, as `#fileID` spells it (`"ActorStorePersistence/Replay.swift"`).
    package let fileID: String
    /// The line in ``fileID`` that created the error.
    package let line: Int

    /// - Parameters:
    ///   - systemCall: The system call that failed, if the error came from one.
    ///   - fileID: Where the error is created; leave the default (the caller's `#fileID`).
    ///   - line: Where the error is created; leave the default (the caller's `#line`).
    package init(
        _ code: Code, _ message: String, offset: FileOffset? = nil, errno: Int32? = nil, systemCall: String? = nil,
        fileID: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.offset = offset
        self.errno = errno
        self.systemCall = systemCall
        self.fileID = fileID
        self.line = line
    }

    package var description: String { "\(code): \(message)" }
}
