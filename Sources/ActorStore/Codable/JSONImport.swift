import ActorStorePersistence
import Foundation

/// Reads ActorStore JSON (see `JSONExporter`) into a store, one line at a time, in one write transaction.
///
/// Classes the store does not have are created from the document's schema; a class it has must have every
/// property the document describes, with the same type (properties the document lacks get their defaults).
/// Objects are added in document order, so object `id` *n* of a class becomes the *n*-th object added to
/// it: its key is known before it exists, which lets a link to an object further down the document be set
/// in a second read of the file (links are checked to exist when set). `AnyRealmValue` links need no second
/// read.
struct JSONImporter {
    /// Where the document comes from: a file (read twice when it has links) or bytes in memory.
    enum Source {
        case file(URL)
        case bytes([UInt8])
    }

    let source: Source
    let transaction: WriteTransaction

    /// The tables of the document's classes, by class name.
    private var tables: [String: ImportTable] = [:]
    /// Objects added so far, per table (pass 1), or visited (pass 2).
    private var counters: [TableID: Int64] = [:]
    private var hasLinks = false
    private var line = 0

    init(source: Source, transaction: WriteTransaction) {
        self.source = source
        self.transaction = transaction
    }

    /// One table of the import: its id, stored schema, the key of its first imported object, and for
    /// each stored column the document's property of that name.
    private struct ImportTable {
        let id: TableID
        let schema: TableSchema
        let firstKey: Int64
    }

    /// Runs the import.
    ///
    /// - Parameter progress: Called with the number of objects read so far (every 10,000 and at the end).
    /// - Returns: The number of top-level objects added.
    /// - Throws: `invalidValue` for a document that is not ActorStore JSON or a value that does not fit its
    ///   property (naming the line), `schemaMismatch` for a class whose stored properties differ,
    ///   `primaryKeyExists`, and the file's read errors.
    mutating func run(progress: ((Int) -> Void)? = nil) throws(RealmError) -> Int {
        var objects = 0
        try forEachLine { (bytes, number) throws(RealmError) in
            line = number
            let json = try parse(bytes)
            if number == 1 {
                try readHeader(json)
                return
            }
            try addObject(json)
            objects += 1
            if objects % 10_000 == 0 { progress?(objects) }
        }
        guard line >= 1 else { throw error("the document is empty") }
        if hasLinks {
            counters = [:]
            try forEachLine { (bytes, number) throws(RealmError) in
                guard number > 1 else { return }
                line = number
                try setLinks(try parse(bytes))
            }
        }
        progress?(objects)
        return objects
    }

    // MARK: Reading

    /// Calls `body` with each non-empty line of the source and its 1-based number.
    private func forEachLine(_ body: (UnsafeBufferPointer<UInt8>, Int) throws(RealmError) -> Void) throws(RealmError) {
        switch source {
        case .bytes(let bytes):
            _ = try bytes.withUnsafeBufferPointer { (all) throws(RealmError) in
                try Self.lines(of: all, startingAt: 1, body)
            }
        case .file(let url):
            guard let handle = FileHandle(forReadingAtPath: url.path) else {
                throw RealmError(.fileNotFound, "Cannot open '\(url.path)' for the import: check that it exists.")
            }
            defer { try? handle.close() }
            var pending: [UInt8] = []
            var number = 1
            while true {
                let chunk: Data?
                do {
                    chunk = try handle.read(upToCount: 1 << 20)
                } catch {
                    throw RealmError(.ioFailure, "Reading '\(url.path)' failed: \(error.localizedDescription)")
                }
                guard let chunk, !chunk.isEmpty else { break }
                pending.append(contentsOf: chunk)
                guard let last = pending.lastIndex(of: 0x0A) else { continue }
                number = try pending.withUnsafeBufferPointer { (all) throws(RealmError) in
                    try Self.lines(of: UnsafeBufferPointer(rebasing: all[...last]), startingAt: number, body)
                }
                pending.removeSubrange(...last)
            }
            if !pending.isEmpty {
                try pending.withUnsafeBufferPointer { (all) throws(RealmError) in
                    _ = try Self.lines(of: all, startingAt: number, body)
                }
            }
        }
    }

    /// Splits `bytes` at newlines; returns the number of the next line.
    @discardableResult
    private static func lines(
        of bytes: UnsafeBufferPointer<UInt8>, startingAt first: Int,
        _ body: (UnsafeBufferPointer<UInt8>, Int) throws(RealmError) -> Void
    ) throws(RealmError) -> Int {
        var number = first
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            var trimmed = end
            if trimmed > start, bytes[trimmed - 1] == 0x0D { trimmed -= 1 }
            if trimmed > start { try body(UnsafeBufferPointer(rebasing: bytes[start..<trimmed]), number) }
            number += 1
            start = end + 1
        }
        return number
    }

    private func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(RealmError) -> JSONValue {
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw self.error("invalid JSON at column \(error.offset + 1): \(error.problem)")
        }
    }

    private func error(_ problem: String, _ code: RealmError.Code = .invalidValue) -> RealmError {
        RealmError(code, "The JSON document cannot be imported: line \(line): \(problem).")
    }

    // MARK: Schema

    private mutating func readHeader(_ json: JSONValue) throws(RealmError) {
        guard case .string(JSONExporter.formatName)? = json["format"] else {
            throw error("the first line must describe the document (\"format\":\"\(JSONExporter.formatName)\")")
        }
        guard case .number(let version)? = json["formatVersion"], Int(version) == JSONExporter.formatVersion else {
            throw error(
                "this version of ActorStore reads formatVersion \(JSONExporter.formatVersion); the document has "
                    + "\(json["formatVersion"].map { "\($0)" } ?? "none")")
        }
        guard case .array(let classes)? = json["classes"] else { throw error("the first line has no \"classes\"") }
        var described: [TableSchema] = []
        for item in classes { described.append(try tableSchema(item)) }
        var created: [TableSchema] = []
        for schema in described {
            if let id = transaction.tableID(named: schema.name), let stored = transaction.tableSchema(id) {
                try check(schema, against: stored)
            } else {
                created.append(schema)
            }
        }
        if !created.isEmpty {
            let storeWasEmpty = transaction.state.schema.isEmpty
            var version: UInt64?
            if storeWasEmpty, case .number(let text)? = json["schemaVersion"] { version = UInt64(text) }
            do {
                _ = try transaction.setSchema(transaction.state.schema + created, version: version)
            } catch {
                throw self.error("its schema is not valid: \(error.message)", .schemaMismatch)
            }
        }
        for schema in described {
            guard let id = transaction.tableID(named: schema.name), let stored = transaction.tableSchema(id) else {
                continue
            }
            tables[schema.name] = ImportTable(
                id: id, schema: stored, firstKey: transaction.state.tables[id]?.nextKey ?? 0)
        }
    }

    private func tableSchema(_ json: JSONValue) throws(RealmError) -> TableSchema {
        guard case .string(let name)? = json["name"], case .array(let properties)? = json["properties"] else {
            throw error("a class needs a \"name\" and \"properties\"")
        }
        var columns: [ColumnSchema] = []
        for property in properties {
            guard case .string(let columnName)? = property["name"], case .string(let type)? = property["type"],
                let scalar = ScalarType.allCases.first(where: { "\($0)" == type })
            else { throw error("a property of '\(name)' needs a \"name\" and a known \"type\"") }
            var collection = CollectionKind.single
            if case .string(let text)? = property["collection"] {
                guard let kind = CollectionKind.allCases.first(where: { "\($0)" == text }) else {
                    throw error("'\(name).\(columnName)' has an unknown collection '\(text)'")
                }
                collection = kind
            }
            var target: String?
            if case .string(let text)? = property["target"] { target = text }
            columns.append(
                ColumnSchema(
                    columnName, ColumnType(scalar, collection, optional: property["optional"] == .bool(true)),
                    linkTarget: target, indexed: property["indexed"] == .bool(true),
                    primaryKey: property["primaryKey"] == .bool(true)))
        }
        return TableSchema(name, columns: columns, isEmbedded: json["embedded"] == .bool(true))
    }

    private func check(_ described: TableSchema, against stored: TableSchema) throws(RealmError) {
        guard described.isEmbedded == stored.isEmbedded else {
            throw error("'\(stored.name)' is \(stored.isEmbedded ? "" : "not ")embedded in the realm", .schemaMismatch)
        }
        for column in described.columns {
            guard let index = stored.columnIndex(named: column.name) else {
                throw error(
                    "'\(stored.name)' has no property '\(column.name)' in the realm; add it to the model (or "
                        + "import into a new file)", .schemaMismatch)
            }
            let existing = stored.columns[index]
            guard existing.type == column.type, existing.linkTarget == column.linkTarget else {
                throw error(
                    "'\(stored.name).\(column.name)' is \(column.type) in the document but \(existing.type) in the realm",
                    .schemaMismatch)
            }
        }
    }

    // MARK: Objects

    /// The table of an object line, and its `id` (which must count up from 0 in document order).
    private mutating func objectTable(_ json: JSONValue) throws(RealmError) -> (ImportTable, Int64, JSONValue) {
        guard case .string(let className)? = json["class"], case .number(let text)? = json["id"],
            let id = Int64(text), let values = json["values"]
        else { throw error("an object line needs \"class\", \"id\" and \"values\"") }
        guard let table = tables[className], !table.schema.isEmbedded else {
            throw error("'\(className)' is not a class of the document's first line (or is embedded)")
        }
        let expected = counters[table.id, default: 0]
        guard id == expected else {
            throw error(
                "'\(className)' object ids must count up from 0 in document order; expected \(expected), read \(id)")
        }
        counters[table.id] = expected + 1
        return (table, id, values)
    }

    private mutating func addObject(_ json: JSONValue) throws(RealmError) {
        let (table, id, values) = try objectTable(json)
        let key = try insert(table, values)
        guard key.rawValue == table.firstKey + id else {
            throw error("'\(table.schema.name)' gave key \(key.rawValue) to object \(id)", .corrupted)
        }
    }

    /// Adds one object (and its embedded objects) with its links to other objects left empty.
    private mutating func insert(_ table: ImportTable, _ json: JSONValue) throws(RealmError) -> ObjectKey {
        guard case .object = json else { throw error("the values of a '\(table.schema.name)' are \(json.kind)") }
        var row: [Value] = []
        row.reserveCapacity(table.schema.columns.count)
        for column in table.schema.columns {
            guard let member = json[column.name] else {
                row.append(column.type.defaultValue)
                continue
            }
            row.append(try columnValue(member, column, table.schema.name))
        }
        do {
            let key = try transaction.insert(table.id, row)
            counters[table.id, default: 0] += table.schema.isEmbedded ? 1 : 0
            return key
        } catch {
            throw self.error(error.message, RealmError.Code(error.code))
        }
    }

    private mutating func columnValue(
        _ json: JSONValue, _ column: ColumnSchema, _ className: String
    )
        throws(RealmError) -> Value
    {
        let label = "'\(className).\(column.name)'"
        switch column.type.collection {
        case .single:
            return try element(json, column, label)
        case .list, .set:
            guard case .array(let items) = json else { throw error("\(label) expects an array, not \(json.kind)") }
            var values: [Value] = []
            values.reserveCapacity(items.count)
            for item in items {
                let value = try element(item, column, label)
                if !(isDeferredLink(column) && value == .null) { values.append(value) }
            }
            return column.type.collection == .list ? .list(values) : .set(values)
        case .map:
            guard case .object(let members) = json else { throw error("\(label) expects an object, not \(json.kind)") }
            var entries: [Value.MapEntry] = []
            for member in members {
                entries.append(Value.MapEntry(member.key, try element(member.value, column, label)))
            }
            return .map(entries)
        }
    }

    /// Whether links of `column` are set in the second read (they go to objects that may not exist yet).
    private func isDeferredLink(_ column: ColumnSchema) -> Bool {
        guard column.type.scalar == .link, let target = column.linkTarget else { return false }
        return tables[target]?.schema.isEmbedded != true
    }

    /// One value of a column, a link to an embedded object added now, a link to another object null.
    private mutating func element(
        _ json: JSONValue, _ column: ColumnSchema, _ label: String
    ) throws(RealmError)
        -> Value
    {
        if json == .null { return .null }
        switch column.type.scalar {
        case .link:
            guard let targetName = column.linkTarget, let target = tables[targetName] else {
                throw error("\(label) links to a class the document does not describe")
            }
            if target.schema.isEmbedded { return .link(try insert(target, json)) }
            guard case .number = json else { throw error("\(label) expects an object id, not \(json.kind)") }
            hasLinks = true
            return .null
        case .mixed:
            return try mixed(json, label)
        default:
            guard let value = Self.plain(json, column.type.scalar) else {
                throw error("\(label) expects a \(column.type.scalar), not \(json)")
            }
            return value
        }
    }

    /// The value of a plain (not link, not mixed) JSON value for a column of type `scalar`.
    private static func plain(_ json: JSONValue, _ scalar: ScalarType) -> Value? {
        switch (scalar, json) {
        case (.bool, .bool(let v)): return .bool(v)
        case (.int8, .number(let t)), (.int16, .number(let t)), (.int32, .number(let t)), (.int64, .number(let t)):
            return Int64(t).map(Value.int)
        case (.float, _):
            if case .number(let t) = json { return Float(t).map(Value.float) }
            return JSONText.parseDouble(json).map { .float(Float($0)) }
        case (.double, _): return JSONText.parseDouble(json).map(Value.double)
        case (.string, .string(let v)): return .string(v)
        case (.data, .string(let v)): return Data(base64Encoded: v).map(Value.data)
        case (.date, .string(let v)): return JSONText.parseDate(v).map(Value.date)
        case (.uuid, .string(let v)): return UUID(uuidString: v).map(Value.uuid)
        case (.objectId, .string(let v)): return ObjectId(v).map { .objectId($0.storage) }
        case (.decimal128, .string(let v)): return Decimal128(v).map { .decimal128($0.bits) }
        default: return nil
        }
    }

    private func mixed(_ json: JSONValue, _ label: String) throws(RealmError) -> Value {
        guard case .object(let members) = json, members.count == 1, let member = members.first else {
            throw error("\(label) expects null or a one-member object naming the type, like {\"int\":5}")
        }
        if member.key == "link" {
            guard case .string(let className)? = member.value["class"], case .number(let text)? = member.value["id"],
                let id = Int64(text), let target = tables[className], !target.schema.isEmbedded
            else { throw error("\(label) has a link that needs a \"class\" of the document and an \"id\"") }
            return .typedLink(table: className, key: try importedKey(of: id, in: target))
        }
        let scalars: [String: ScalarType] = [
            "bool": .bool, "int": .int64, "float": .float, "double": .double, "string": .string, "data": .data,
            "date": .date, "uuid": .uuid, "objectId": .objectId, "decimal128": .decimal128,
        ]
        guard let scalar = scalars[member.key], let value = Self.plain(member.value, scalar) else {
            throw error("\(label) has a value {\"\(member.key)\": …} that is not an AnyRealmValue")
        }
        return value
    }

    /// The key object `id` of `table` gets: the table's next key when the import started, plus `id`.
    ///
    /// - Throws: `invalidValue` for a negative id or one past the last possible key.
    private func importedKey(of id: Int64, in table: ImportTable) throws(RealmError) -> ObjectKey {
        let (key, overflow) = table.firstKey.addingReportingOverflow(id)
        guard id >= 0, !overflow else {
            throw error("a link to '\(table.schema.name)' has the id \(id), which no object has")
        }
        return ObjectKey(key)
    }

    // MARK: Links (the second read)

    private mutating func setLinks(_ json: JSONValue) throws(RealmError) {
        let (table, id, values) = try objectTable(json)
        try setLinks(table, ObjectKey(table.firstKey + id), values)
    }

    /// Sets the links of one object and of its embedded objects. An embedded object's key follows from the
    /// order pass 1 added them: its own embedded objects first, then itself (`key` nil: take the next one).
    private mutating func setLinks(_ table: ImportTable, _ key: ObjectKey?, _ json: JSONValue) throws(RealmError) {
        var updates: [(column: Int, value: Value)] = []
        for (index, column) in table.schema.columns.enumerated() where column.type.scalar == .link {
            guard let member = json[column.name], let targetName = column.linkTarget, let target = tables[targetName]
            else { continue }
            if target.schema.isEmbedded {
                // Visit embedded objects in the order pass 1 added them, to know their keys.
                var children: [JSONValue] = []
                switch member {
                case .array(let items): children = items
                case .object(let members) where column.type.collection == .map: children = members.map(\.value)
                case .null: break
                default: children = [member]
                }
                for child in children where child != .null { try setLinks(target, nil, child) }
                continue
            }
            func link(_ item: JSONValue) throws(RealmError) -> Value {
                guard case .number(let text) = item, let id = Int64(text) else { return .null }
                return .link(try importedKey(of: id, in: target))
            }
            let value: Value
            switch (column.type.collection, member) {
            case (.single, _): value = try link(member)
            case (.list, .array(let items)), (.set, .array(let items)):
                var links: [Value] = []
                for item in items where item != .null { links.append(try link(item)) }
                if links.isEmpty { continue }
                value = column.type.collection == .list ? .list(links) : .set(links)
            case (.map, .object(let members)):
                var entries: [Value.MapEntry] = []
                for member in members { entries.append(Value.MapEntry(member.key, try link(member.value))) }
                value = .map(entries)
            default: continue
            }
            if value != .null { updates.append((index, value)) }
        }
        let objectKey: ObjectKey
        if let key {
            objectKey = key
        } else {
            objectKey = ObjectKey(table.firstKey + counters[table.id, default: 0])
            counters[table.id, default: 0] += 1
        }
        guard !updates.isEmpty else { return }
        do {
            try transaction.update(table.id, objectKey, updates)
        } catch {
            throw self.error(error.message, RealmError.Code(error.code))
        }
    }
}
