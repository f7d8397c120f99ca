import ActorStorePersistence
import Foundation

extension FrozenRealm {
    /// Writes the objects of this version as ActorStore JSON (JSON Lines: a line describing the schema, then
    /// one line per object), from the stored schema alone.
    ///
    /// The export streams: it holds one object at a time and writes in 1 MiB chunks, so memory does not grow
    /// with the realm. Export, import into an empty realm and export again give the same bytes. See the
    /// ImportExport article for the format.
    ///
    /// ```swift
    /// try await realm.freeze().exportJSON(to: url)
    /// ```
    ///
    /// - Parameters:
    ///   - url: The file to write (created, or truncated).
    ///   - classes: The classes to write (the classes they link to are described, not written); nil for all.
    ///   - progress: Called with the number of objects written so far, every 10,000 objects and at the end.
    /// - Returns: The number of objects written (embedded objects are inside their parents and not counted).
    /// - Throws: `RealmError.invalidValue` for a class the realm does not have, `fileAccess` if the file
    ///   cannot be created, `ioFailure` if writing fails.
    /// - Complexity: O(n log n) for n objects (each link is written as its target's position).
    @discardableResult
    public func exportJSON(
        to url: URL, classes: [String]? = nil, progress: ((Int) -> Void)? = nil
    ) throws(RealmError) -> Int {
        let exporter = try JSONExporter(snapshot: context.snapshot, classes: classes)
        var sink = try JSONSink(url: url)
        var written = 0
        try exporter.write(to: &sink) { count in
            written = count
            progress?(count)
        }
        try sink.close()
        return written
    }

    /// Writes the objects of this version as ActorStore JSON to an open file, such as standard output
    /// (see ``exportJSON(to:classes:progress:)-(URL,_,_)``). The handle stays open.
    ///
    /// - Parameters:
    ///   - handle: Where to write.
    ///   - classes: The classes to write; nil for all.
    ///   - progress: Called with the number of objects written so far.
    /// - Returns: The number of objects written.
    /// - Throws: `RealmError.invalidValue` for a class the realm does not have, `ioFailure` if writing fails.
    @discardableResult
    public func exportJSON(
        to handle: FileHandle, classes: [String]? = nil, progress: ((Int) -> Void)? = nil
    ) throws(RealmError) -> Int {
        let exporter = try JSONExporter(snapshot: context.snapshot, classes: classes)
        var sink = JSONSink(handle: handle)
        var written = 0
        try exporter.write(to: &sink) { count in
            written = count
            progress?(count)
        }
        return written
    }

    /// The ActorStore JSON of this version's objects, in memory (see ``exportJSON(to:classes:progress:)-(URL,_,_)``).
    ///
    /// - Parameter classes: The classes to write; nil for all.
    /// - Returns: The document's UTF-8 bytes.
    /// - Throws: `RealmError.invalidValue` for a class the realm does not have.
    public func exportJSONData(classes: [String]? = nil) throws(RealmError) -> Data {
        let exporter = try JSONExporter(snapshot: context.snapshot, classes: classes)
        var sink = JSONSink()
        try exporter.write(to: &sink)
        return Data(sink.bytes)
    }
}

extension Realm {
    /// Writes the realm's current objects as ActorStore JSON: ``FrozenRealm/exportJSON(to:classes:progress:)-(URL,_,_)``
    /// of ``freeze()-576i``. The write happens outside the realm's actor, so the realm stays usable meanwhile.
    ///
    /// ```swift
    /// try await realm.exportJSON(to: URL(filePath: "backup.jsonl"))
    /// ```
    ///
    /// - Parameters:
    ///   - url: The file to write (created, or truncated).
    ///   - classes: The classes to write; nil for all.
    /// - Returns: The number of objects written.
    /// - Throws: As ``FrozenRealm/exportJSON(to:classes:progress:)-(URL,_,_)``.
    @discardableResult
    public nonisolated func exportJSON(to url: URL, classes: [String]? = nil) async throws(RealmError) -> Int {
        let frozen = await freeze()
        return try frozen.exportJSON(to: url, classes: classes)
    }

    /// Adds the objects of an ActorStore JSON document (as ``FrozenRealm/exportJSON(to:classes:progress:)-(URL,_,_)``
    /// writes it) to this realm, in one write transaction.
    ///
    /// Classes the realm does not have are created from the document's schema (so a realm opened without
    /// model classes takes any document); a class it has must have each of the document's properties with
    /// the same type. Objects are added, never merged: a primary key the realm already has fails the import.
    /// The document is read one line at a time (twice when it has links), so memory does not grow with it.
    ///
    /// ```swift
    /// let count = try await realm.importJSON(from: URL(filePath: "backup.jsonl"))
    /// ```
    ///
    /// - Parameters:
    ///   - url: The document.
    ///   - progress: Called with the number of objects read so far, every 10,000 objects and at the end.
    /// - Returns: The number of objects added (embedded objects not counted).
    /// - Throws: `RealmError.invalidValue` naming the line of a malformed document or value,
    ///   `schemaMismatch`, `primaryKeyExists`, `fileNotFound`; nothing is added then.
    /// - Important: Call it outside `write { }`: the import is its own transaction.
    @discardableResult
    public func importJSON(from url: URL, progress: ((Int) -> Void)? = nil) async throws(RealmError) -> Int {
        try await importJSON(.file(url), progress: progress)
    }

    /// Adds the objects of an ActorStore JSON document held in memory (see ``importJSON(from:progress:)``).
    ///
    /// - Parameter data: The document's UTF-8 bytes.
    /// - Returns: The number of objects added.
    /// - Throws: As ``importJSON(from:progress:)``.
    @discardableResult
    public func importJSON(data: Data) async throws(RealmError) -> Int {
        try await importJSON(.bytes(Array(data)), progress: nil)
    }

    /// Opens the realm of `configuration`, imports `url` into it (``importJSON(from:progress:)``), and closes
    /// it: Realm's `importJSON(from:into:)`.
    ///
    /// - Returns: The number of objects added.
    /// - Throws: What opening the realm or the import throws.
    @discardableResult
    public static func importJSON(from url: URL, into configuration: Configuration) async throws -> Int {
        let realm = try await Realm(configuration: configuration)
        return try await realm.importJSON(from: url)
    }

    private func importJSON(
        _ source: JSONImporter.Source, progress: ((Int) -> Void)?
    ) async throws(RealmError)
        -> Int
    {
        precondition(
            context.session == nil,
            "importJSON cannot be called inside write { }: the import is its own write transaction.")
        let transaction: WriteTransaction
        do {
            transaction = try await context.engine.beginWrite()
        } catch {
            throw RealmError(error)
        }
        var importer = JSONImporter(source: source, transaction: transaction)
        let count: Int
        do {
            count = try importer.run(progress: progress)
        } catch {
            transaction.rollback()
            throw error
        }
        do {
            _ = try await transaction.commit()
        } catch {
            throw RealmError(error)
        }
        return count
    }
}
