import ActorStorePersistence
import Foundation

extension Realm {
    /// The classes stored in the realm's file and their properties, as of the version the realm sees.
    ///
    /// ```swift
    /// let dog = await realm.schema["Dog"]
    /// print(dog?.primaryKeyProperty?.name ?? "no primary key", dog?.properties.map(\.name) ?? [])
    /// ```
    ///
    /// It lists what the file holds, also classes this program has no model class for.
    public var schema: Schema {
        context.withStore { store in Schema(stored: store.state.schema) }
    }

    /// Every object of the class named `className`, read by property name (`dog["name"]`) and queried
    /// without the model class: for tools that open any realm, and code that must read a class it does not
    /// declare.
    ///
    /// ```swift
    /// let names = await realm.read { realm in
    ///     try realm.dynamicObjects("Dog").filter("age > 2").sorted(byKeyPath: "name").map { $0["name"] as! String }
    /// }
    /// ```
    ///
    /// The results filter, sort, make distinct and limit as ``Results`` do, against the class's schema as the
    /// file stores it (see ``DynamicResults``). The objects are read-only, and live: the results follow the
    /// realm's version. An unknown class name gives empty results.
    public func dynamicObjects(_ className: String) -> DynamicResults {
        DynamicResults(source: context, className: className, generation: .current)
    }

    /// The schema version of the realm file at `url`, read without opening it for writing (and without
    /// migrating it): what a program checks before deciding how to open a file.
    ///
    /// ```swift
    /// if try await Realm.schemaVersion(at: url) < 3 { showMigrationProgress() }
    /// ```
    /// - Parameters:
    ///   - url: the realm file.
    ///   - encryptionKey: the file's 64-byte key, if it is encrypted.
    /// - Throws: `RealmError.fileNotFound` or `.fileAccess` if the file cannot be read, `.corrupted` or
    ///   `.unsupportedFormat` if it is not a realm file, `.wrongKey` if the key is not the file's (or the file
    ///   is encrypted and no key was given).
    public static func schemaVersion(at url: URL, encryptionKey: Data? = nil) async throws -> UInt64 {
        try await schemaVersion(at: url, encryptionKey: encryptionKey, fileSystem: nil)
    }

    /// ``schemaVersion(at:encryptionKey:)`` through a file system of the tests.
    static func schemaVersion(
        at url: URL, encryptionKey: Data? = nil, fileSystem: (any FileSystem)?
    ) async throws -> UInt64 {
        var configuration = Configuration(fileURL: url, readOnly: true)
        configuration.fileSystem = fileSystem
        configuration.automaticCompaction = false
        configuration.encryptionKey = encryptionKey
        let (key, engineConfiguration) = try configuration.engineConfiguration()
        let engine = try await EngineRegistry.acquire(
            key, readOnly: true, durable: true, fileSystem: fileSystem, encryptionKey: engineConfiguration.encryptionKey
        ) {
            () async throws(StorageError) in
            try await StorageEngine.open(engineConfiguration)
        }
        defer { EngineRegistry.release(key, engine: engine) }
        do {
            return try engine.snapshot().schemaVersion
        } catch {
            throw RealmError(error)
        }
    }
}

extension RealmContext: DynamicRowSource {
    func read(_ object: DynamicObject, column: Int, type: ColumnType) -> Value? {
        withStore { store in (try? store.value(object.table, object.key, column: column)) ?? nil }
    }

    func write(_ object: DynamicObject, column: Int, value: Value) {
        preconditionFailure("Objects of Realm.dynamicObjects are read-only: write through the model class.")
    }

    func linkedObject(_ key: ObjectKey, target: String, generation: DynamicGeneration) -> DynamicObject? {
        withStore { store in
            guard let id = store.tableID(named: target), let schema = store.tableSchema(id), store.contains(id, key)
            else { return nil }
            return DynamicObject(source: self, table: id, schema: schema, key: key, generation: .current)
        }
    }

    func fail(_ error: RealmError) { recordFailure(error) }
}

extension ObjectBase {
    /// The name of the class in the schema and the file: the class's name without its module
    /// (`Person.className()` is `"Person"`). Migrations name classes with it.
    public class func className() -> String { ClassRegistry.info(for: self).className }

    /// The schema of the object's class: its properties as the model declares them.
    public var objectSchema: ObjectSchema { ObjectSchema(ClassRegistry.info(for: type(of: self))) }

    /// The schema of the class: its properties as the model declares them.
    public class var sharedSchema: ObjectSchema { ObjectSchema(ClassRegistry.info(for: self)) }
}
