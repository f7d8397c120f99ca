import ActorStorePersistence
import Foundation

/// Writes a whole version of a store as ActorStore JSON, from its stored schema alone (no model classes).
///
/// The document is JSON Lines: one JSON object per line, so that it is written and read one object at a
/// time. The first line describes the schema; each further line is one object:
///
/// ```text
/// {"format":"actorstore-json","formatVersion":1,"schemaVersion":3,"classes":[{"name":"Dog","embedded":false,
///   "properties":[{"name":"name","type":"string","collection":"single","optional":false,"indexed":false,
///   "primaryKey":false,"target":null}, ...]}, ...]}
/// {"class":"Dog","id":0,"values":{"name":"Rex","owner":0,"address":{"city":"Oslo"},"tags":["a","b"]}}
/// ```
///
/// Classes are written in name order, each class's objects in the store's key order; an object's `id` is
/// its position among the objects of its class (0, 1, 2, ...), and a link is the `id` of its target, so
/// links, cycles included, need no other identity. Embedded objects are written inside their parent.
/// Values: numbers as JSON numbers (the shortest form that reads back exactly; `"NaN"`, `"Infinity"` and
/// `"-Infinity"` as strings), `Data` as base64, `Date` as ISO 8601 with the whole fraction, `UUID`,
/// `ObjectId` and `Decimal128` as strings, maps as objects in key order, and `AnyRealmValue` as a one-member
/// object naming its type (`{"int":5}`, `{"link":{"class":"Dog","id":0}}`) or null.
struct JSONExporter {
    let snapshot: Snapshot
    /// The tables written, in name order (embedded ones only inside their parents).
    private let tables: [(id: TableID, schema: TableSchema, columns: [Int])]
    /// Each table's columns written (retired columns of a migration are left out), by table id.
    private let columnsByTable: [TableID: [Int]]

    /// The format's name and version, in the first line.
    static let formatName = "actorstore-json"
    static let formatVersion = 1

    /// An exporter of `classes` (nil: every class) of `snapshot`.
    ///
    /// - Throws: `invalidValue` naming a class the store does not have.
    init(snapshot: Snapshot, classes: [String]?) throws(RealmError) {
        self.snapshot = snapshot
        var all: [(id: TableID, schema: TableSchema, columns: [Int])] = []
        var byTable: [TableID: [Int]] = [:]
        for id in snapshot.state.tableIDs.sorted(by: { $0.key < $1.key }).map(\.value) {
            guard let schema = snapshot.tableSchema(id) else { continue }
            let columns = schema.columns.indices.filter { !SchemaCheck.isRetired(schema.columns[$0].name) }
            all.append((id, schema, columns))
            byTable[id] = columns
        }
        if let classes {
            for name in classes where !all.contains(where: { $0.schema.name == name }) {
                throw RealmError(
                    .invalidValue,
                    "The realm has no class '\(name)'; it has "
                        + all.map { "'\($0.schema.name)'" }.joined(separator: ", ")
                        + ".")
            }
        }
        self.tables = all.filter { classes?.contains($0.schema.name) ?? true }
        self.columnsByTable = byTable
    }

    /// The number of top-level objects an export writes (for progress reports).
    var objectCount: Int {
        tables.reduce(0) { $0 + ($1.schema.isEmbedded ? 0 : snapshot.state.rowCount($1.id)) }
    }

    /// Writes the document to `sink`, calling `progress` with the number of objects written so far (every
    /// 10,000 objects and at the end).
    ///
    /// - Throws: what `sink` throws; `corrupted` for a row that cannot be read.
    func write(to sink: inout JSONSink, progress: ((Int) -> Void)? = nil) throws(RealmError) {
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20)
        writeHeader(&out)
        var written = 0
        for table in tables where !table.schema.isEmbedded {
            var cursor = snapshot.state.rowCursor(table.id, releasingPagesOf: snapshot.region)
            var id: Int64 = 0
            let className = table.schema.name
            while let (_, location) = cursor.next() {
                out.append(contentsOf: #"{"class":"#.utf8)
                JSONText.appendString(className, to: &out)
                out.append(contentsOf: #","id":"#.utf8)
                JSONText.appendInt(id, to: &out)
                out.append(contentsOf: #","values":"#.utf8)
                try writeObject(table.id, table.schema, table.columns, at: location, depth: 0, to: &out)
                out.append(contentsOf: "}\n".utf8)
                id += 1
                written += 1
                if out.count >= 1 << 20 {
                    try sink.write(out)
                    out.removeAll(keepingCapacity: true)
                }
                if written % 10_000 == 0 { progress?(written) }
            }
        }
        try sink.write(out)
        progress?(written)
    }

    private func writeHeader(_ out: inout [UInt8]) {
        out.append(contentsOf: #"{"format":"#.utf8)
        JSONText.appendString(Self.formatName, to: &out)
        out.append(contentsOf: #","formatVersion":"#.utf8)
        JSONText.appendInt(Int64(Self.formatVersion), to: &out)
        out.append(contentsOf: #","schemaVersion":"#.utf8)
        out.append(contentsOf: String(snapshot.schemaVersion).utf8)
        out.append(contentsOf: #","classes":["#.utf8)
        // Every class the written ones reach through links (and embedded ones), so that an import can create them.
        var included = Set(tables.map(\.schema.name))
        var queue = tables.map(\.schema)
        while let schema = queue.popLast() {
            for column in schema.columns {
                guard let target = column.linkTarget, !included.contains(target),
                    let id = snapshot.tableID(named: target), let targetSchema = snapshot.tableSchema(id)
                else { continue }
                included.insert(target)
                queue.append(targetSchema)
            }
        }
        var first = true
        for (name, id) in snapshot.state.tableIDs.sorted(by: { $0.key < $1.key }) where included.contains(name) {
            guard let schema = snapshot.tableSchema(id) else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(contentsOf: #"{"name":"#.utf8)
            JSONText.appendString(schema.name, to: &out)
            out.append(contentsOf: (schema.isEmbedded ? #","embedded":true"# : #","embedded":false"#).utf8)
            out.append(contentsOf: #","properties":["#.utf8)
            var firstColumn = true
            for index in columnsByTable[id] ?? [] {
                let column = schema.columns[index]
                if !firstColumn { out.append(UInt8(ascii: ",")) }
                firstColumn = false
                out.append(contentsOf: #"{"name":"#.utf8)
                JSONText.appendString(column.name, to: &out)
                out.append(contentsOf: #","type":"#.utf8)
                JSONText.appendString("\(column.type.scalar)", to: &out)
                out.append(contentsOf: #","collection":"#.utf8)
                JSONText.appendString("\(column.type.collection)", to: &out)
                out.append(contentsOf: #","optional":\#(column.type.isOptional)"#.utf8)
                out.append(contentsOf: #","indexed":\#(column.isIndexed)"#.utf8)
                out.append(contentsOf: #","primaryKey":\#(column.isPrimaryKey)"#.utf8)
                out.append(contentsOf: #","target":"#.utf8)
                if let target = column.linkTarget {
                    JSONText.appendString(target, to: &out)
                } else {
                    out.append(contentsOf: "null".utf8)
                }
                out.append(UInt8(ascii: "}"))
            }
            out.append(contentsOf: "]}".utf8)
        }
        out.append(contentsOf: "]}\n".utf8)
    }

    /// Writes the object at `location` as a JSON object of its values.
    private func writeObject(
        _ table: TableID, _ schema: TableSchema, _ columns: [Int], at location: RowLocation, depth: Int,
        to out: inout [UInt8]
    ) throws(RealmError) {
        let values: [Value]
        do {
            values = try Snapshot.withRowBytes(in: snapshot.region, at: location) { (row) throws(StorageError) in
                var values: [Value] = []
                values.reserveCapacity(columns.count)
                for column in columns { values.append(try row.value(at: column, type: schema.columns[column].type)) }
                return values
            }
        } catch {
            throw RealmError(error)
        }
        out.append(UInt8(ascii: "{"))
        for (i, column) in columns.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            let columnSchema = schema.columns[column]
            JSONText.appendString(columnSchema.name, to: &out)
            out.append(UInt8(ascii: ":"))
            try writeColumn(values[i], columnSchema, depth: depth, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    private func writeColumn(
        _ value: Value, _ column: ColumnSchema, depth: Int, to out: inout [UInt8]
    )
        throws(RealmError)
    {
        switch value {
        case .list(let items), .set(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                try writeScalar(item, column, depth: depth, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .map(let entries):
            out.append(UInt8(ascii: "{"))
            for (i, entry) in entries.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendString(entry.key, to: &out)
                out.append(UInt8(ascii: ":"))
                try writeScalar(entry.value, column, depth: depth, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        default:
            try writeScalar(value, column, depth: depth, to: &out)
        }
    }

    /// Writes one value of a column (a single value, an element or a map value).
    private func writeScalar(
        _ value: Value, _ column: ColumnSchema, depth: Int, to out: inout [UInt8]
    )
        throws(RealmError)
    {
        if column.type.scalar == .mixed {
            writeMixed(value, to: &out)
            return
        }
        switch value {
        case .link(let key):
            guard let target = column.linkTarget, let targetID = snapshot.tableID(named: target),
                let targetSchema = snapshot.tableSchema(targetID)
            else { return out.append(contentsOf: "null".utf8) }
            if targetSchema.isEmbedded {
                guard let location = snapshot.state.rowLocation(targetID, key), depth < 100 else {
                    return out.append(contentsOf: "null".utf8)
                }
                try writeObject(
                    targetID, targetSchema, columnsByTable[targetID] ?? [], at: location, depth: depth + 1, to: &out)
            } else if let rank = snapshot.state.rowOffset(targetID, key) {
                JSONText.appendInt(Int64(rank), to: &out)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        default:
            writePlain(value, to: &out)
        }
    }

    /// Writes a value that is not a link in its plain form.
    private func writePlain(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let v): out.append(contentsOf: (v ? "true" : "false").utf8)
        case .int(let v): JSONText.appendInt(v, to: &out)
        case .float(let v): JSONText.appendFloat(v, to: &out)
        case .double(let v): JSONText.appendDouble(v, to: &out)
        case .string(let v): JSONText.appendString(v, to: &out)
        case .data(let v): JSONText.appendString(v.base64EncodedString(), to: &out)
        case .date(let v): JSONText.appendDate(v, to: &out)
        case .uuid(let v): JSONText.appendString(v.uuidString, to: &out)
        case .objectId(let v): JSONText.appendString(ObjectId(storage: v).stringValue, to: &out)
        case .decimal128(let v): JSONText.appendString(Decimal128(bits: v).description, to: &out)
        case .link, .typedLink, .list, .set, .map: out.append(contentsOf: "null".utf8)
        }
    }

    /// Writes a mixed value as a one-member object naming its type, or null.
    private func writeMixed(_ value: Value, to out: inout [UInt8]) {
        let tag: String
        switch value {
        case .null, .link, .list, .set, .map: return out.append(contentsOf: "null".utf8)
        case .typedLink(let table, let key):
            guard let id = snapshot.tableID(named: table), snapshot.tableSchema(id)?.isEmbedded == false,
                let rank = snapshot.state.rowOffset(id, key)
            else { return out.append(contentsOf: "null".utf8) }
            out.append(contentsOf: #"{"link":{"class":"#.utf8)
            JSONText.appendString(table, to: &out)
            out.append(contentsOf: #","id":"#.utf8)
            JSONText.appendInt(Int64(rank), to: &out)
            out.append(contentsOf: "}}".utf8)
            return
        case .bool: tag = "bool"
        case .int: tag = "int"
        case .float: tag = "float"
        case .double: tag = "double"
        case .string: tag = "string"
        case .data: tag = "data"
        case .date: tag = "date"
        case .uuid: tag = "uuid"
        case .objectId: tag = "objectId"
        case .decimal128: tag = "decimal128"
        }
        out.append(UInt8(ascii: "{"))
        JSONText.appendString(tag, to: &out)
        out.append(UInt8(ascii: ":"))
        writePlain(value, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}

/// Where an export's bytes go: a file (written in 1 MiB chunks) or memory.
struct JSONSink {
    private let handle: FileHandle?
    private let path: String
    /// Whether `close()` closes the handle (a file the sink created).
    private var ownsHandle = true
    /// The bytes written, when the sink is memory.
    private(set) var bytes: [UInt8] = []

    /// A sink that collects the bytes in memory.
    init() {
        handle = nil
        path = "memory"
    }

    /// A sink that writes to an open file (standard output, a pipe), which it does not close.
    init(handle: FileHandle) {
        self.handle = handle
        path = "the output"
        ownsHandle = false
    }

    /// A sink that creates (or truncates) the file at `url`.
    ///
    /// - Throws: `fileAccess` if the file cannot be created.
    init(url: URL) throws(RealmError) {
        path = url.path
        guard FileManager.default.createFile(atPath: url.path, contents: nil),
            let handle = FileHandle(forWritingAtPath: url.path)
        else {
            throw RealmError(
                .fileAccess,
                "Cannot create '\(url.path)' for the export: check that its directory exists and is writable.")
        }
        self.handle = handle
    }

    /// Appends `chunk`.
    ///
    /// - Throws: `ioFailure` if the file cannot be written (a full disk, a closed descriptor).
    mutating func write(_ chunk: [UInt8]) throws(RealmError) {
        guard let handle else { return bytes.append(contentsOf: chunk) }
        do {
            try handle.write(contentsOf: chunk)
        } catch {
            throw RealmError(.ioFailure, "Writing the export to '\(path)' failed: \(error.localizedDescription)")
        }
    }

    /// Flushes and closes the file.
    func close() throws(RealmError) {
        guard ownsHandle else { return }
        do {
            try handle?.synchronize()
            try handle?.close()
        } catch {
            throw RealmError(.ioFailure, "Closing the export '\(path)' failed: \(error.localizedDescription)")
        }
    }
}
