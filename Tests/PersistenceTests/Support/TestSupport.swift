import Foundation
import Testing

@testable import ActorStorePersistence

/// The seed for a randomized test: `ACTORSTORE_SEED` if set, else a fresh one. Printed so a failure replays.
func testSeed(_ name: String) -> UInt64 {
    let seed =
        ProcessInfo.processInfo.environment["ACTORSTORE_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 0...UInt64(UInt32.max))
    print("[\(name)] seed \(seed) (replay with ACTORSTORE_SEED=\(seed))")
    return seed
}

/// How deep the randomized and exhaustive tests go, from the environment (see the README's Tests section).
/// The default run samples; CI also runs the full versions (`.ci/run`).
enum TestDepth {
    /// `ACTORSTORE_EXHAUSTIVE=1`: crash images cut at every byte of the last 20 records (the default samples
    /// every record's boundaries and a few random offsets), and all eight bits of each byte flipped (default two).
    static let exhaustive = flag("ACTORSTORE_EXHAUSTIVE")
    /// `ACTORSTORE_LONG=1`: long randomized runs at full length (the model-based test's 100k operations).
    static let long = flag("ACTORSTORE_LONG")

    static func flag(_ name: String) -> Bool { ProcessInfo.processInfo.environment[name] == "1" }
}

/// A fresh temporary directory, removed by the caller with `cleanup` (and, with everything else the test
/// process left behind, when the process exits: see ``TestFiles``).
struct TemporaryDirectory {
    let path: String
    init() {
        path = TestFiles.root + "/" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func file(_ name: String = "test.store") -> String { path + "/" + name }
    func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}

/// The one directory this test process puts its files in, removed when the process exits: a test that
/// stops early (a failed `#require`, a thrown error) skips its own cleanup, and a test run leaving a
/// directory per test in the temporary directory added up to thousands of them.
enum TestFiles {
    static let root: String = {
        let root = NSTemporaryDirectory() + "actorstore-tests-\(getpid())-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: TestFiles.root) }
        return root
    }()
}

/// The canonical test table: Dog(id: Int primary key, name: String indexed, age: Int, owner: link Person).
enum Fixtures {
    static let person = TableSchema(
        "Person",
        columns: [
            ColumnSchema("name", ColumnType(.string)),
            ColumnSchema("dogs", ColumnType(.link, .list), linkTarget: "Dog"),
        ])
    static let dog = TableSchema(
        "Dog",
        columns: [
            ColumnSchema("id", ColumnType(.int64), primaryKey: true),
            ColumnSchema("name", ColumnType(.string), indexed: true),
            ColumnSchema("age", ColumnType(.int64)),
            ColumnSchema("owner", ColumnType(.link), linkTarget: "Person"),
        ])
    /// A schema-less key/value table used by model and crash tests: key Int (pk), payload String.
    static let kv = TableSchema(
        "KV",
        columns: [
            ColumnSchema("k", ColumnType(.int64), primaryKey: true),
            ColumnSchema("v", ColumnType(.string)),
        ])
}

/// Opens an engine on a memory file system that tracks durability. Its durable commits reserve 4 KiB of
/// zeros ahead, not 1 MiB: the same code paths, without copying a megabyte per crash image.
/// The store's key is ``StorageKind/current``'s: suites that run over plain and encrypted storage set it.
func memoryEngine(
    _ fs: any FileSystem, path: String = "/db/test.store", durability: StorageEngine.Durability = .full,
    autoCompaction: StorageEngine.AutoCompaction? = nil, reservedSpace: Int = 4096, checkpoints: Bool = true,
    recordStreamChunk: Int? = StorageEngine.Configuration(path: nil).recordStreamChunk
) async throws -> StorageEngine {
    var configuration = StorageEngine.Configuration(
        path: path, fileSystem: fs, durability: durability, autoCompaction: autoCompaction)
    configuration.reservedSpace = reservedSpace
    configuration.recordStreamChunk = recordStreamChunk
    configuration.writesCheckpoints = checkpoints
    configuration.encryptionKey = StorageKind.current.key
    return try await StorageEngine.open(configuration)
}

/// Plain or encrypted storage: suites run over both with `@Test(arguments: StorageKind.allCases)` and
/// ``run(_:)``, and every engine ``memoryEngine(_:path:durability:autoCompaction:reservedSpace:checkpoints:)``
/// opens meanwhile uses the kind's key.
enum StorageKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case plain, encrypted

    /// A fixed 64-byte test key.
    static let testKey: [UInt8] = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }

    @TaskLocal static var current: StorageKind = .plain

    var key: [UInt8]? { self == .encrypted ? Self.testKey : nil }
    var testDescription: String { rawValue }

    /// Runs `body` with this kind as ``current``.
    func run<R>(_ body: () async throws -> R) async rethrows -> R {
        try await Self.$current.withValue(self) { try await body() }
    }
}

extension ReadableStore {
    /// All rows of a table as key → values.
    func contents(_ table: String) throws -> [ObjectKey: [Value]] {
        guard let id = tableID(named: table) else { return [:] }
        var result: [ObjectKey: [Value]] = [:]
        for (key, _) in keys(id) { result[key] = try values(id, key) }
        return result
    }
}

/// Where the primary-key index of `state` disagrees with its rows: each index entry must carry the
/// current location of its object's row (lookups read the row through it without a second walk), and
/// each row must have exactly one entry. Empty when consistent.
func primaryIndexLocationProblems(_ state: DatabaseState) -> [String] {
    var problems: [String] = []
    for table in state.orderedTables where table.schema.primaryKeyColumn != nil {
        let name = table.schema.name
        if table.primaryIndex.count != table.rows.count {
            problems.append("\(name): \(table.primaryIndex.count) primary-key entries for \(table.rows.count) rows")
        }
        var previous: IndexKey? = nil
        table.primaryIndex.forEach(from: nil, inclusive: true) { value, entry in
            if let previous, !(previous < value) { problems.append("\(name): \(value) follows \(previous)") }
            previous = value
            if table.primaryIndex.value(forKey: value) != entry {
                problems.append("\(name): primary key \(value) is visited but not found")
            }
            guard let location = table.rows.value(forKey: entry.object) else {
                problems.append("\(name): primary key \(value) names \(entry.object), which has no row")
                return true
            }
            if location != entry.location {
                problems.append("\(name): primary key \(value) holds \(entry.location), the row is at \(location)")
            }
            return true
        }
    }
    return problems
}

extension Tag {
    /// Regression tests for what the outside reliability campaign of 2026-11-26 found (`shared/repro`).
    @Tag static var reliabilityCampaign: Self
}

/// A ``FileSystem`` that passes every call to `forwardee`: a test's wrapper implements only the calls it
/// watches or changes, and the defaults here forward the rest.
protocol ForwardingFileSystem: FileSystem {
    var forwardee: any FileSystem { get }
}

extension ForwardingFileSystem {
    func open(_ path: String, create: Bool, readOnly: Bool) throws(StorageError) -> OpenFile {
        try forwardee.open(path, create: create, readOnly: readOnly)
    }
    func close(_ file: OpenFile) { forwardee.close(file) }
    func read(
        _ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64
    ) throws(StorageError) -> Int {
        try forwardee.read(file, into: buffer, at: offset)
    }
    func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(StorageError) -> Int {
        try forwardee.write(file, bytes, at: offset)
    }
    func sync(_ file: OpenFile) throws(StorageError) { try forwardee.sync(file) }
    func truncate(_ file: OpenFile, to size: UInt64) throws(StorageError) { try forwardee.truncate(file, to: size) }
    func size(of file: OpenFile) throws(StorageError) -> UInt64 { try forwardee.size(of: file) }
    func lockExclusive(_ file: OpenFile) throws(StorageError) { try forwardee.lockExclusive(file) }
    func map(_ file: OpenFile, length: Int) throws(StorageError) -> MappedRegion {
        try forwardee.map(file, length: length)
    }
    func rename(_ source: String, to destination: String) throws(StorageError) {
        try forwardee.rename(source, to: destination)
    }
    func remove(_ path: String) throws(StorageError) { try forwardee.remove(path) }
    func syncDirectory(_ path: String) throws(StorageError) { try forwardee.syncDirectory(path) }
    func createExclusive(_ path: String) throws(StorageError) -> OpenFile { try forwardee.createExclusive(path) }
    func renameNoReplace(_ source: String, to destination: String) throws(StorageError) {
        try forwardee.renameNoReplace(source, to: destination)
    }
    func identity(of file: OpenFile) throws(StorageError) -> FileIdentity { try forwardee.identity(of: file) }
    func identity(atPath path: String) throws(StorageError) -> FileIdentity { try forwardee.identity(atPath: path) }
    func copyPermissions(from model: OpenFile, to file: OpenFile) throws(StorageError) {
        try forwardee.copyPermissions(from: model, to: file)
    }
    func resolvedPath(_ path: String) -> String { forwardee.resolvedPath(path) }
    func fileExists(_ path: String) -> Bool { forwardee.fileExists(path) }
    func contentsOfDirectory(_ path: String) throws(StorageError) -> [String] {
        try forwardee.contentsOfDirectory(path)
    }
}
