import ActorStorePersistence

/// The one error type ActorStore throws.
///
/// A struct with an extensible ``Code`` (not an enum), so new failure kinds do not break code that
/// switches over it. ``message`` is a full sentence saying what happened and what to do about it.
///
/// ```swift
/// do {
///     let realm = try await Realm(configuration: config)
/// } catch let error as RealmError where error.code == .schemaMismatch {
///     print(error.message)  // names the property that changed and how to fix it
/// }
/// ```
///
/// Anything a user, a file or the disk can cause is thrown as a `RealmError`; only programmer errors
/// (writing outside a write transaction, resolving a ``ThreadSafeReference`` twice) stop the program, with
/// a message naming the API misused.
///
/// Besides the message, an error carries its cause in readable form when there is one: ``systemCall``, the
/// C function that failed (`open`, `pwrite`, `fsync`, ...); ``errno``, the error number it set;
/// ``fileOffset``, where in the file the damage is or the failed read or write was. It also carries the
/// place in ActorStore's sources where the failure was detected (``sourceFileID`` and ``sourceLine``),
/// which ``debugDescription`` shows and ``message`` leaves out:
///
/// ```swift
/// catch let error as RealmError {
///     logger.error("\(error.debugDescription)")
///     // RealmError.fileNotFound: Opening '/data/x/app.realm' failed: no such file or directory.
///     //   [systemCall open, errno 2] (at ActorStorePersistence/PosixFileSystem.swift:16)
/// }
/// ```
///
/// ``underlyingError`` holds an error that is not ActorStore's own, when one caused this one: the error a
/// migration block threw, or Foundation's.
public struct RealmError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure happened. Compare with the static members (`error.code == .diskFull`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as in `"diskFull"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The file could not be opened, created, read or written (permissions, a missing directory, ...).
        public static let fileAccess = Code("fileAccess")
        /// A file already exists where a new one was to be written (``Realm/writeCopy(toFile:encryptionKey:)``).
        public static let fileExists = Code("fileExists")
        /// The file (or its directory) does not exist and could not be created, or a read-only open found
        /// no file.
        public static let fileNotFound = Code("fileNotFound")
        /// The file is open elsewhere: by another process, or in this process when deleting its files.
        public static let alreadyOpen = Code("alreadyOpen")
        /// The model classes do not match the schema stored in the file, or are themselves invalid.
        public static let schemaMismatch = Code("schemaMismatch")
        /// The object was deleted, never added, or belongs to another realm.
        public static let invalidObject = Code("invalidObject")
        /// A value does not fit its property (wrong type, out of range, a missing required value).
        public static let invalidValue = Code("invalidValue")
        /// An object with the same primary key already exists (use `update: .modified` or `.all`).
        public static let primaryKeyExists = Code("primaryKeyExists")
        /// A value exceeds a limit (String or Data over 16 MB, too many properties, ...).
        public static let limitExceeded = Code("limitExceeded")
        /// The file's bytes are not a valid realm (a checksum failed with valid data after it).
        public static let corrupted = Code("corrupted")
        /// The disk or quota is full. Nothing was committed by the failing call; free space and retry.
        public static let diskFull = Code("diskFull")
        /// The operating system reported an I/O error.
        public static let ioFailure = Code("ioFailure")
        /// An earlier `fsync` failed, so durability cannot be promised: close every `Realm` on the file and
        /// open it again.
        public static let poisoned = Code("poisoned")
        /// The file is encrypted with another key, or not encrypted when a key was given.
        public static let wrongKey = Code("wrongKey")
        /// The file was written by a newer, incompatible version of ActorStore.
        public static let unsupportedFormat = Code("unsupportedFormat")
        /// A write was attempted on a realm opened with `readOnly`.
        public static let readOnly = Code("readOnly")
        /// More versions are pinned (by frozen values, snapshots and references) than
        /// ``Realm/Configuration/maximumNumberOfActiveVersions`` allows.
        public static let tooManyVersions = Code("tooManyVersions")
        /// The realm's file was closed.
        public static let closed = Code("closed")
        /// A query is malformed or does not fit the model: a syntax error, an unknown property, a type
        /// mismatch, a missing argument, or a `#Predicate` expression with no translation. The message
        /// names the problem and, for predicate strings, its position.
        public static let invalidQuery = Code("invalidQuery")
        /// A key path given to observe changes names no property of the class, or crosses a property that
        /// cannot be followed (an inverse relationship, a value).
        public static let invalidKeyPath = Code("invalidKeyPath")
    }

    /// What kind of failure happened.
    public var code: Code
    /// A sentence saying what happened and what to do.
    public var message: String
    /// An error from outside ActorStore that caused this one, when there is one (for logs): the error a
    /// migration block threw, or Foundation's. Failures of the file and the disk have none; their cause is
    /// in ``systemCall``, ``errno`` and ``fileOffset``.
    public var underlyingError: (any Error & Sendable)?
    /// The system call that failed (`open`, `pread`, `pwrite`, `fdatasync`, `flock`, `rename`, ...) when the
    /// failure came from one; `nil` otherwise. ``errno`` is the error number it set.
    public var systemCall: String?
    /// The operating system's error number (`errno`, as in `ENOENT` or `EACCES`) when the failure came
    /// from a system call; `nil` otherwise.
    public var errno: Int32?
    /// The byte offset in the realm file that the error concerns, when there is one: where the damage
    /// starts for ``Code/corrupted``; where the failed read or write was, for a `pread` or `pwrite`
    /// (``systemCall``). `nil` otherwise.
    public var fileOffset: UInt64?
    /// The source file inside ActorStore where the failure was detected, as `#fileID` spells it
    /// (`"ActorStore/Realm.swift"`). For diagnosis and bug reports; not part of ``message``.
    ///
    /// For a failure the storage engine detects (the file, the disk, damage), this is the line in the engine
    /// (module `ActorStorePersistence`) that made the error: the system call's wrapper, the check that found
    /// the damage, or the helper that words that kind of failure. For other failures it is where ActorStore
    /// made the error. An error you create yourself records your call site.
    public let sourceFileID: String
    /// The line in ``sourceFileID`` where the failure was detected.
    public let sourceLine: Int

    /// Creates an error. ActorStore creates these; user code rarely needs to.
    ///
    /// - Parameters:
    ///   - code: What kind of failure happened.
    ///   - message: A sentence saying what happened and what to do.
    ///   - underlyingError: The error that caused this one, if any.
    ///   - errno: The system error number, if the failure came from a system call.
    ///   - fileOffset: The byte offset in the file the error concerns, if any.
    ///   - systemCall: The system call that failed, if the failure came from one.
    ///   - fileID: Where the error is created; leave the default (the caller's `#fileID`).
    ///   - line: Where the error is created; leave the default (the caller's `#line`).
    public init(
        _ code: Code, _ message: String, underlyingError: (any Error & Sendable)? = nil, errno: Int32? = nil,
        fileOffset: UInt64? = nil, systemCall: String? = nil, fileID: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlyingError = underlyingError
        self.errno = errno
        self.fileOffset = fileOffset
        self.systemCall = systemCall
        self.sourceFileID = fileID
        self.sourceLine = line
    }

    /// `RealmError.<code>: <message>`, as shown to users.
    public var description: String { "RealmError.\(code): \(message)" }

    /// ``description`` followed by the cause's details (``systemCall``, ``errno``, ``fileOffset``) and the
    /// source location, as in
    /// `RealmError.ioFailure: ... [systemCall pwrite, errno 5, fileOffset 4096] (at ActorStorePersistence/PosixFileSystem.swift:38)`.
    public var debugDescription: String {
        var details: [String] = []
        if let systemCall { details.append("systemCall \(systemCall)") }
        if let errno { details.append("errno \(errno)") }
        if let fileOffset { details.append("fileOffset \(fileOffset)") }
        let cause = details.isEmpty ? "" : " [\(details.joined(separator: ", "))]"
        return "\(description)\(cause) (at \(sourceFileID):\(sourceLine))"
    }
}

extension RealmError.Code {
    /// Engine codes whose public code has another name. Every other engine code is public under its own
    /// name.
    private static let engineAliases: [StorageError.Code: Self] = [.permissionDenied: .fileAccess]

    /// The public code for an engine code, without a second list of codes: the engine code's name is the
    /// public code's ``rawValue`` (`StorageError.Code.diskFull` becomes ``diskFull``), except for the
    /// aliases above (`permissionDenied` becomes ``fileAccess``).
    ///
    /// Fallback: an engine code added later with no public static of the same name still comes through
    /// under its own name (``RealmError/Code`` is extensible, so that is a valid code, not a crash or a
    /// misleading ``ioFailure``); `ErrorTests` fails until it gets a public static or an alias.
    package init(_ engineCode: StorageError.Code) {
        self = Self.engineAliases[engineCode] ?? Self(engineCode.description)
    }
}

extension RealmError {
    /// The public form of an engine error: its code mapped by ``Code/init(_:)``, its message, its system
    /// call, `errno` and offset as ``systemCall``, ``errno`` and ``fileOffset``, and the engine's source
    /// location (where the failure was detected). Nothing is left in a type users cannot read: there is no
    /// ``underlyingError``.
    package init(_ error: StorageError) {
        self.init(
            Code(error.code), error.message, errno: error.errno, fileOffset: error.offset?.rawValue,
            systemCall: error.systemCall, fileID: error.fileID, line: error.line)
    }
}
