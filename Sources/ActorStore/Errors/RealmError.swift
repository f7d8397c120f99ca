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
public struct RealmError: Error, Sendable, CustomStringConvertible {
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

    /// Creates an error. ActorStore creates these; user code rarely needs to.
    public init(_ code: Code, _ message: String, underlyingError: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlyingError = underlyingError
    }

    public var description: String { "RealmError.\(code): \(message)" }
}

extension RealmError {
    /// The public form of an engine error.
    init(_ error: StorageError) {
        let code: Code =
            switch error.code {
            case .fileAccess, .permissionDenied: .fileAccess
            case .fileExists: .fileExists
            case .fileNotFound: .fileNotFound
            case .alreadyOpen: .alreadyOpen
            case .corrupted: .corrupted
            case .diskFull: .diskFull
            case .ioFailure: .ioFailure
            case .poisoned: .poisoned
            case .closed: .closed
            case .limitExceeded: .limitExceeded
            case .invalidValue: .invalidValue
            case .schemaMismatch: .schemaMismatch
            case .invalidObject: .invalidObject
            case .readOnly: .readOnly
            case .wrongKey: .wrongKey
            case .unsupportedFormat: .unsupportedFormat
            case .tooManyVersions: .tooManyVersions
            case .primaryKeyExists: .primaryKeyExists
            default: .ioFailure
            }
        self.init(code, error.message, underlyingError: error)
    }
}
