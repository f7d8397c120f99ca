import ActorStorePersistence

/// The one error type ActorStore throws.
///
/// A struct with an extensible ``Code`` (not an enum), so new failure kinds do not break code that
/// switches over it. ``message`` is a full sentence saying what happened and what to do about it;
/// ``underlyingError`` keeps the cause (an engine or system error) for logs.
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
/// Besides the message, an error carries its cause in readable form when there is one (``errno``, the
/// system error number; ``fileOffset``, where in the file the damage is) and the place in ActorStore's
/// sources that created it (``sourceFileID`` and ``sourceLine``), which ``debugDescription`` shows and
/// ``message`` leaves out.
public struct RealmError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure happened. Compare with the static members (`error.code == .diskFull`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as in `"diskFull"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The file could not be opened, created, read or written (permissions, a missing directory, ...).
        public static let fileAccess = Code("fileAccess")
        /// A file already exists where a new one was to be written (``Realm/writeCopy(toFile:)``).
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
    /// The error that caused this one, when there is one (for logs).
    public var underlyingError: (any Error & Sendable)?
    /// The operating system's error number (`errno`, as in `ENOENT` or `EACCES`) when the failure came
    /// from a system call; `nil` otherwise.
    public var errno: Int32?
    /// The byte offset in the realm file that the error concerns, when there is one: where the damage
    /// starts for ``Code/corrupted``. `nil` otherwise.
    public var fileOffset: UInt64?
    /// The source file inside ActorStore that created this error, as `#fileID` spells it
    /// (`"ActorStore/Realm.swift"`). For diagnosis and bug reports; not part of ``message``.
    public let sourceFileID: String
    /// The line in ``sourceFileID`` that created this error.
    public let sourceLine: Int

    /// Creates an error. ActorStore creates these; user code rarely needs to.
    ///
    /// - Parameters:
    ///   - code: What kind of failure happened.
    ///   - message: A sentence saying what happened and what to do.
    ///   - underlyingError: The error that caused this one, if any.
    ///   - errno: The system error number, if the failure came from a system call.
    ///   - fileOffset: The byte offset in the file the error concerns, if any.
    ///   - fileID: Where the error is created; leave the default (the caller's `#fileID`).
    ///   - line: Where the error is created; leave the default (the caller's `#line`).
    public init(
        _ code: Code, _ message: String, underlyingError: (any Error & Sendable)? = nil, errno: Int32? = nil,
        fileOffset: UInt64? = nil, fileID: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlyingError = underlyingError
        self.errno = errno
        self.fileOffset = fileOffset
        self.sourceFileID = fileID
        self.sourceLine = line
    }

    /// `RealmError.<code>: <message>`, as shown to users.
    public var description: String { "RealmError.\(code): \(message)" }

    /// ``description`` followed by the cause's details (``errno``, ``fileOffset``) and the source location,
    /// as in `RealmError.corrupted: ... [fileOffset 4096] (at ActorStore/Realm.swift:122)`.
    public var debugDescription: String {
        var details: [String] = []
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
    /// The public form of an engine error: its code mapped by ``Code/init(_:)``, its message, and its
    /// `errno` and offset as ``errno`` and ``fileOffset``; the engine error stays as ``underlyingError``.
    /// The source location is the caller's (where ActorStore converts the error).
    package init(_ error: StorageError, fileID: String = #fileID, line: Int = #line) {
        self.init(
            Code(error.code), error.message, underlyingError: error, errno: error.errno,
            fileOffset: error.offset?.rawValue, fileID: fileID, line: line)
    }
}
