import ActorStore
import Foundation

// Models shared by the ActorStore tests. Kept at file scope (Realm model classes are global types).

final class Dog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: Person?
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<Person>
}

final class Person: Object {
    @Persisted var name = ""
    @Persisted var birthdate = Date(timeIntervalSince1970: 1)
    @Persisted var dogs: List<Dog>
    @Persisted var address: Address?
    @Persisted var nicknames: List<String>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
}

final class Address: EmbeddedObject {
    @Persisted var street = ""
    @Persisted var city = ""
}

final class Book: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var title = ""
    @Persisted var price = 0.0
    @Persisted var subtitle: String?
}

enum Taste: String, PersistableEnum {
    case sweet, sour, bitter
}

final class AllTypes: Object {
    @Persisted(primaryKey: true) var id = UUID()
    @Persisted var bool = false
    @Persisted var int = 0
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int64: Int64 = 0
    @Persisted var float: Float = 0
    @Persisted var double = 0.0
    @Persisted var string = ""
    @Persisted var data = Data()
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var uuid = UUID()
    @Persisted var objectId = ObjectId.generate()
    @Persisted var decimal = Decimal128(0)
    @Persisted var taste = Taste.sweet
    @Persisted var optionalInt: Int?
    @Persisted var optionalString: String?
    @Persisted var optionalDate: Date?
    @Persisted var optionalTaste: Taste?
    @Persisted(indexed: true) var indexedName = ""
    var ignored = 42
}

final class Account: Object {
    @Persisted(primaryKey: true) var number = 0
    @Persisted var balance = 0
}

/// The one directory this test process puts its files in, removed when the process exits: most tests
/// never delete their realm files, and a run leaving a directory per test added up to thousands of them.
/// Exit tests' child processes (which trap, so never run `atexit`) inherit the parent's root through the
/// environment and leave the removal to the parent.
enum TestFiles {
    static let root: URL = {
        let variable = "ACTORSTORE_TEST_FILES"
        if let inherited = ProcessInfo.processInfo.environment[variable] {
            return URL(fileURLWithPath: inherited)
        }
        let root = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("actorstore-tests-\(getpid())-" + UUID().uuidString)
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        setenv(variable, root.path, 1)
        atexit { try? FileManager.default.removeItem(at: TestFiles.root) }
        return root
    }()
}

/// A unique file URL in a fresh directory under ``TestFiles/root``.
func temporaryRealmURL(_ name: String = "test.realm") -> URL {
    let directory = TestFiles.root.appendingPathComponent(UUID().uuidString)
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent(name)
}

/// A configuration on a fresh temporary file.
func testConfiguration(_ types: [ObjectBase.Type]? = nil, durability: Realm.Durability = .none) -> Realm.Configuration {
    var configuration = Realm.Configuration(fileURL: temporaryRealmURL())
    configuration.objectTypes = types
    configuration.durability = durability
    configuration.encryptionKey = TestStorage.encryptionKey
    return configuration
}

/// The storage the object-layer suites run on: a plain file by default; an encrypted file with
/// `ACTORSTORE_TEST_STORAGE=encrypted` (CI runs the suites both ways).
enum TestStorage {
    static let encrypted = ProcessInfo.processInfo.environment["ACTORSTORE_TEST_STORAGE"] == "encrypted"
    /// The key every ``testConfiguration(_:durability:)`` carries when the suites run encrypted.
    static let encryptionKey: Data? = encrypted ? Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }) : nil
}

/// A value behind an `NSLock` (which ThreadSanitizer understands; `Synchronization.Mutex` waits with raw
/// futex calls on Linux, which it does not, so every access through one is reported as a race).
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
