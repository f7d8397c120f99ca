import ActorStorePersistence
import Foundation

extension Realm {
    /// How a ``Realm`` is opened: which file (or in-memory store), which classes, which schema version.
    ///
    /// ```swift
    /// var config = Realm.Configuration()
    /// config.fileURL = directory.appendingPathComponent("dogs.realm")
    /// config.objectTypes = [Dog.self, Person.self]
    /// let realm = try await Realm(configuration: config)
    /// ```
    public struct Configuration: Sendable {
        /// The realm file. Setting it clears ``inMemoryIdentifier``. Defaults to `default.realm` in the
        /// app's Documents directory on Apple platforms and in the current directory on Linux.
        public var fileURL: URL? {
            get { _fileURL }
            set {
                _fileURL = newValue
                if newValue != nil { _inMemoryIdentifier = nil }
            }
        }

        /// A name for an in-memory realm: realms opened with the same identifier in one process share their
        /// data until the last of them is released; nothing is written to disk. Setting it clears
        /// ``fileURL``.
        public var inMemoryIdentifier: String? {
            get { _inMemoryIdentifier }
            set {
                _inMemoryIdentifier = newValue
                if newValue != nil { _fileURL = nil }
            }
        }

        private var _fileURL: URL?
        private var _inMemoryIdentifier: String?

        /// Open without writing: writes throw `RealmError.readOnly`; the file must exist.
        public var readOnly = false

        /// The classes this realm may store; nil (the default) allows every `Object` subclass, creating
        /// tables when objects of a new class are first written. Listing them validates them all at open.
        public var objectTypes: [ObjectBase.Type]?

        /// The version of your model classes. Increase it when they change.
        public var schemaVersion: UInt64 = 0

        /// Brings the data of an older file up to the model classes: called once, inside the transaction that
        /// migrates the file, when the file's schema version is lower than ``schemaVersion``.
        ///
        /// ```swift
        /// let config = Realm.Configuration(
        ///     fileURL: url, schemaVersion: 2,
        ///     migrationBlock: { migration, oldSchemaVersion in
        ///         if oldSchemaVersion < 2 {
        ///             migration.renameProperty(onType: Person.className(), from: "age", to: "yearsSinceBirth")
        ///         }
        ///     })
        /// ```
        ///
        /// Added properties, removed properties and `nil`-ability changes need no block (raising
        /// ``schemaVersion`` is enough); type changes, renames and values computed from other properties do.
        /// The block and the schema change are one transaction: if the block throws (its error is thrown by
        /// `Realm(configuration:)` unchanged), a value it sets does not fit, or the disk fills, the file keeps
        /// its old schema, version and data. See <doc:Migrations>.
        ///
        /// - Important: The ``Migration`` and the objects it hands out are valid only while the block runs.
        public var migrationBlock: (@Sendable (_ migration: Migration, _ oldSchemaVersion: UInt64) throws -> Void)?

        /// When the stored schema does not match the classes, delete the file and start empty instead of
        /// throwing `schemaMismatch`. For caches and development only: this deletes the data.
        public var deleteRealmIfMigrationNeeded = false

        /// When a commit returns: ``Durability/full`` (default) once it is on disk; ``Durability/none`` once it
        /// is in the operating system's cache (fast, but a power loss can drop recent commits).
        public var durability: Durability = .full

        /// Called once when the file is first opened in this process, with the file size and the bytes in
        /// use; return true to compact the file before use.
        public var shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int, _ usedBytes: Int) -> Bool)?

        /// The most versions that frozen values, snapshots and thread-safe references may pin at once;
        /// taking one more throws `RealmError.tooManyVersions`. Nil (default) means no limit.
        public var maximumNumberOfActiveVersions: UInt?

        /// Compact in the background when more than half of a file of 16 MB or more is dead space.
        ///
        /// A background compaction that fails (the disk is full, an I/O error) leaves the file as it was and
        /// throws nowhere: ``Realm/lastCompactionError`` reports it, until a later compaction succeeds. The
        /// next commit that finds the file still over the threshold tries again.
        public var automaticCompaction = true

        /// About how many bytes of index nodes read from the file a realm keeps in memory (default 64 MiB).
        ///
        /// A file's indexes (object keys, primary keys, indexed properties, links) are read from the file as
        /// they are used, not at open. Past this limit, the newest version lets go of the nodes it loaded and
        /// reads them again when needed; frozen values and other snapshots keep theirs until released. Scans
        /// (iterating all objects of a class, exports) keep what they load only while they have filled less
        /// than an eighth of it; past that they load nodes for themselves and let them go as they move on.
        public var indexCacheLimit = 64 << 20

        /// Open by replaying the whole file and checking every checksum, instead of starting from its
        /// newest checkpoint (default false). O(file size): for checking a file, and for a file whose
        /// index nodes are damaged (`RealmError.corrupted` naming an index node); the realm then writes
        /// them again.
        public var verifiesWholeFileAtOpen = false

        /// The 64-byte key that encrypts the realm file (default nil: not encrypted), as Realm's
        /// `encryptionKey`.
        ///
        /// A new file is created encrypted with it; an existing file opens only with the key it was created
        /// with. Every record of the file is encrypted and authenticated (AES-256-GCM, with keys derived for
        /// each compaction of the file): see <doc:Encryption> for the scheme, what it protects and how to keep
        /// the key. Reads decrypt one object at a time.
        ///
        /// - Important: The key cannot be recovered from the file. Generate it once
        ///   (`SystemRandomNumberGenerator`, 64 bytes), keep it in the Keychain (Apple platforms) or your secret
        ///   store, and pass the same bytes every time. Opening with another key, with a key for a file that is
        ///   not encrypted, or without the key of an encrypted file throws `RealmError.wrongKey` at once (the
        ///   file's header holds a check value); a key that is not 64 bytes throws `.invalidValue`. To encrypt,
        ///   decrypt or change the key of a file, use ``Realm/writeCopy(toFile:encryptionKey:)``.
        public var encryptionKey: Data?

        /// When automatic compaction starts (tests and the crash oracle's child lower the 16 MB minimum).
        package var automaticCompactionTrigger = StorageEngine.AutoCompaction()

        /// The file system the engine uses (tests inject faults through it). Nil: the real one.
        package var fileSystem: (any FileSystem)?

        /// A configuration for the default file (or the file, in-memory identifier, schema version, migration
        /// block and classes given).
        public init(
            fileURL: URL? = Configuration.defaultFileURL, inMemoryIdentifier: String? = nil, readOnly: Bool = false,
            schemaVersion: UInt64 = 0,
            migrationBlock: (@Sendable (_ migration: Migration, _ oldSchemaVersion: UInt64) throws -> Void)? = nil,
            objectTypes: [ObjectBase.Type]? = nil, durability: Durability = .full
        ) {
            self._fileURL = inMemoryIdentifier == nil ? fileURL : nil
            self._inMemoryIdentifier = inMemoryIdentifier
            self.readOnly = readOnly
            self.schemaVersion = schemaVersion
            self.migrationBlock = migrationBlock
            self.objectTypes = objectTypes
            self.durability = durability
        }

        /// `default.realm` in the Documents directory (Apple platforms) or the current directory (Linux).
        public static var defaultFileURL: URL {
            #if canImport(Darwin)
                let directory =
                    FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).first
                    ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            #else
                let directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            #endif
            return directory.appendingPathComponent("default.realm")
        }

        private static let defaultStorage = Locked(Configuration())

        /// The configuration `Realm()` uses. Settable, for tests and apps that keep their data elsewhere.
        public static var defaultConfiguration: Configuration {
            get { defaultStorage.withLock { $0 } }
            set { defaultStorage.withLock { $0 = newValue } }
        }

        /// The registry key of a file: its resolved path (the key ``engineConfiguration()`` gives).
        static func fileKey(_ url: URL, _ fileSystem: (any FileSystem)?) -> String {
            "file:" + (fileSystem ?? PosixFileSystem()).resolvedPath(url.standardizedFileURL.path)
        }

        /// The registry key and engine configuration.
        func engineConfiguration() throws(RealmError) -> (String, StorageEngine.Configuration) {
            if let key = encryptionKey {
                do throws(StorageError) { try StoreCipher.checkKeyLength(key.count) } catch { throw RealmError(error) }
            }
            if let identifier = inMemoryIdentifier {
                var configuration = StorageEngine.Configuration.inMemory()
                configuration.durability = .none
                configuration.maximumNumberOfActiveVersions = maximumNumberOfActiveVersions.map { Int(clamping: $0) }
                configuration.encryptionKey = encryptionKey.map { [UInt8]($0) }
                return ("memory:" + identifier, configuration)
            }
            guard let url = fileURL, url.isFileURL else {
                throw RealmError(.fileAccess, "The configuration has neither a file URL nor an in-memory identifier.")
            }
            let fs = fileSystem ?? PosixFileSystem()
            // Resolved (symbolic links, `.` and `..`): two names of one file share its engine, and the engine
            // compacts next to the real file.
            let path = fs.resolvedPath(url.standardizedFileURL.path)
            var compact: (@Sendable (UInt64, UInt64) -> Bool)?
            if let user = shouldCompactOnLaunch {
                compact = { total, used in user(Int(clamping: total), Int(clamping: used)) }
            }
            var configuration = StorageEngine.Configuration(
                path: path, fileSystem: fs,
                durability: durability == .full ? .full : .none,
                readOnly: readOnly,
                autoCompaction: automaticCompaction ? automaticCompactionTrigger : nil,
                shouldCompactOnLaunch: compact,
                maximumNumberOfActiveVersions: maximumNumberOfActiveVersions.map { Int(clamping: $0) })
            configuration.nodeCacheLimit = max(indexCacheLimit, 0)
            configuration.ignoresCheckpoints = verifiesWholeFileAtOpen
            configuration.encryptionKey = encryptionKey.map { [UInt8]($0) }
            return ("file:" + path, configuration)
        }
    }

    /// When a commit counts as done.
    public enum Durability: Sendable {
        /// The commit is on stable storage (fsync) before it is visible or `write` returns. The default.
        case full
        /// The commit is handed to the operating system; a crash of the process loses nothing, a power loss
        /// may lose the latest commits (never partially). For caches and tests.
        case none
    }

    /// What `add` and `create` do when an object with the same primary key exists.
    public enum UpdatePolicy: Sendable {
        /// Fail: the write throws `RealmError.primaryKeyExists`.
        case error
        /// Update the existing object; only properties whose values differ are written and reported.
        case modified
        /// Update the existing object with every property given: each is written and reported modified to
        /// change notifications, also where the value did not change.
        case all
    }
}
