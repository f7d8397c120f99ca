import Foundation
import Synchronization

/// Where a row's bytes are in the store file.
package struct RowLocation: Hashable, Sendable {
    /// File offset of the first byte of the encoded row.
    package var offset: UInt64
    package var length: UInt32
    package init(offset: UInt64, length: UInt32) {
        self.offset = offset
        self.length = length
    }
}

/// An entry of the primary-key index: the object with that primary key, and where its current row is.
///
/// The location duplicates the object's entry in ``TableState/rows`` so that a primary-key lookup is one
/// tree walk instead of two (primary key → object, then object → row). The index is in memory only
/// (open rebuilds it by replaying the log), and ``DatabaseState/applyUpsert`` — the one place a row
/// moves, whether a transaction, replay or compaction catch-up moves it — and compaction's rewrite keep
/// the two equal.
package struct PrimaryKeyEntry: Hashable, Sendable {
    package var object: ObjectKey
    package var location: RowLocation
    package init(object: ObjectKey, location: RowLocation) {
        self.object = object
        self.location = location
    }
}

/// A placeholder value for index trees that are sets of keys.
package struct Present: Hashable, Sendable {
    package init() {}
}

/// The key of a primary-key or secondary index: an indexable value, ordered within its column's type.
///
/// Keys are ordered by case (in declaration order), then by payload. `.double` (a date's time interval)
/// uses a total order, so that a key always equals itself and the trees can find every key they hold:
/// every NaN is one key, before all other doubles (as Realm orders NaN), and `-0.0` equals `0.0`. With
/// `Double`'s own `==` and `<`, a NaN date was never found again, so an update or a delete left its
/// entry behind.
package enum IndexKey: Hashable, Comparable, Sendable {
    case null
    case int(Int64)
    case double(Double)
    case string(String)
    case uuid(UInt64, UInt64)
    case objectId(UInt64, UInt32)

    package static func == (a: IndexKey, b: IndexKey) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.int(let x), .int(let y)): x == y
        case (.double(let x), .double(let y)): x == y || (x.isNaN && y.isNaN)
        case (.string(let x), .string(let y)): x == y
        case (.uuid(let x1, let x2), .uuid(let y1, let y2)): x1 == y1 && x2 == y2
        case (.objectId(let x1, let x2), .objectId(let y1, let y2)): x1 == y1 && x2 == y2
        default: false
        }
    }

    package static func < (a: IndexKey, b: IndexKey) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): x < y
        case (.double(let x), .double(let y)): x.isNaN ? !y.isNaN : x < y
        case (.string(let x), .string(let y)): x < y
        case (.uuid(let x1, let x2), .uuid(let y1, let y2)): (x1, x2) < (y1, y2)
        case (.objectId(let x1, let x2), .objectId(let y1, let y2)): (x1, x2) < (y1, y2)
        default: a.caseOrder < b.caseOrder
        }
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(caseOrder)
        switch self {
        case .null: break
        case .int(let v): hasher.combine(v)
        // Equal keys hash alike: one pattern for every NaN, and `Double` hashes -0.0 as 0.0.
        case .double(let v): hasher.combine(v.isNaN ? Double.nan : v)
        case .string(let v): hasher.combine(v)
        case .uuid(let hi, let lo):
            hasher.combine(hi)
            hasher.combine(lo)
        case .objectId(let hi, let lo):
            hasher.combine(hi)
            hasher.combine(lo)
        }
    }

    /// The position of the case in the declaration: the first criterion of the order.
    private var caseOrder: Int {
        switch self {
        case .null: 0
        case .int: 1
        case .double: 2
        case .string: 3
        case .uuid: 4
        case .objectId: 5
        }
    }

    /// The index key for a stored value, or nil if values of that kind are not indexable.
    package init?(_ value: Value) {
        switch value {
        case .null: self = .null
        case .int(let v): self = .int(v)
        case .bool(let v): self = .int(v ? 1 : 0)
        case .string(let v): self = .string(v)
        case .date(let v): self = .double(v.timeIntervalSinceReferenceDate)
        case .uuid(let v):
            let (hi, lo) = withUnsafeBytes(of: v.uuid) {
                (
                    $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self).bigEndian,
                    $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian
                )
            }
            self = .uuid(hi, lo)
        case .objectId(let v): self = .objectId(v.high, v.low)
        default: return nil
        }
    }

    /// Whether `element` counts towards the rank of `.int(target)` in a sorted run of keys: whether
    /// `element < .int(target)`, or `element <= .int(target)` when `countingEqual` — exactly as `<`
    /// (cases in declaration order, then payloads) decides, but reading only the element's
    /// case and integer payload in place: no copy, so no retain of a string payload and no call.
    ///
    /// The B-tree's search for integer keys (``PersistentBTree/rank(of:in:count:countingEqual:)``).
    @inline(__always)
    static func isCounted(_ element: UnsafeMutablePointer<IndexKey>, _ target: Int64, _ countingEqual: Bool) -> Bool {
        switch element.pointee {
        case .null: true  // null is before every integer
        case .int(let value): countingEqual ? value <= target : value < target
        case .double, .string, .uuid, .objectId: false  // after every integer
        }
    }

    /// Whether a column of this scalar type can be indexed (and be a primary key).
    package static func canIndex(_ scalar: ScalarType) -> Bool {
        switch scalar {
        case .bool, .int8, .int16, .int32, .int64, .string, .date, .uuid, .objectId: true
        default: false
        }
    }
}

/// An entry of a secondary index: (value, object). Several objects may share a value.
package struct IndexEntry: Hashable, Comparable, Sendable {
    package var key: IndexKey
    package var object: ObjectKey
    package init(_ key: IndexKey, _ object: ObjectKey) {
        self.key = key
        self.object = object
    }
    package static func < (a: Self, b: Self) -> Bool { (a.key, a.object) < (b.key, b.object) }
}

/// An entry of the backlink index: `source` row `sourceKey` links to `target` row `targetKey` through `column`.
/// Ordered by target first, so all links *to* one object are adjacent.
package struct BacklinkKey: Hashable, Comparable, Sendable {
    package var target: TableID
    package var targetKey: ObjectKey
    package var source: TableID
    package var column: Int32
    package var sourceKey: ObjectKey

    package init(target: TableID, targetKey: ObjectKey, source: TableID, column: Int32, sourceKey: ObjectKey) {
        self.target = target
        self.targetKey = targetKey
        self.source = source
        self.column = column
        self.sourceKey = sourceKey
    }

    package static func < (a: Self, b: Self) -> Bool {
        (a.target, a.targetKey, a.source, a.column, a.sourceKey)
            < (b.target, b.targetKey, b.source, b.column, b.sourceKey)
    }
    /// The smallest key for links to (target, targetKey).
    package static func lowerBound(_ target: TableID, _ key: ObjectKey) -> Self {
        Self(target: target, targetKey: key, source: TableID(0), column: Int32.min, sourceKey: ObjectKey(Int64.min))
    }
}

/// One table's persistent state in a version: its schema, rows and indexes. Copying it is O(1).
package struct TableState: Sendable {
    package var id: TableID
    package var schema: TableSchema {
        didSet { deriveColumnFacts() }
    }
    /// The type of each column, in order (cached: every insert needs it).
    package private(set) var columnTypes: [ColumnType] = []
    /// Columns whose values the backlink index tracks (cached: every upsert needs it).
    package private(set) var linkColumns: [Int] = []
    /// The key the next inserted row gets. Never decreases, so keys are never reused.
    package var nextKey: Int64
    package var rows: PersistentBTree<ObjectKey, RowLocation>
    /// Primary-key value → object and its current row location, when the table has a primary key.
    package var primaryIndex: PrimaryIndex
    /// Secondary indexes by column number.
    package var indexes: [Int: PersistentBTree<IndexEntry, Present>]

    package init(id: TableID, schema: TableSchema) {
        self.id = id
        self.schema = schema
        nextKey = 0
        rows = PersistentBTree()
        primaryIndex = PrimaryIndex()
        indexes = [:]
        for (i, column) in schema.columns.enumerated() where column.isIndexed && !column.isPrimaryKey {
            indexes[i] = PersistentBTree()
        }
        deriveColumnFacts()
    }

    private mutating func deriveColumnFacts() {
        columnTypes = schema.columns.map(\.type)
        linkColumns = schema.columns.indices.filter { schema.columns[$0].type.scalar == .link }
    }
}

/// Everything a version is: a handful of roots. Copying it is O(number of tables), and it never changes
/// once published; a write transaction mutates its own copy in place (see ``PersistentBTree``).
package struct DatabaseState: Sendable {
    package var version: Version
    package var schemaVersion: UInt64
    package var tables: TableStore
    /// The table of each class name. Every change of the schema assigns it (``applySchema``, and a
    /// checkpoint's tables when a version is read from one), which gives the version a new
    /// ``schemaGeneration``.
    package var tableIDs: [String: TableID] {
        didSet { schemaGeneration = Self.nextSchemaGeneration() }
    }
    /// Identifies the schema (the tables, their columns and indexes): a number no other schema of this
    /// process has had. Versions that share a schema share it; any schema change, even one in a write
    /// transaction that is then rolled back, gives a number never used before. What is derived from the
    /// schema alone (a query's plan) can be cached under it.
    package private(set) var schemaGeneration: UInt64
    package var backlinks: PersistentBTree<BacklinkKey, UInt32>
    /// Bytes of the file that the live rows need (row bytes plus their share of record framing).
    package var liveBytes: UInt64
    /// End of this version's commit record in its file (where the next record goes).
    package var endOffset: UInt64

    package init() {
        version = .zero
        schemaVersion = 0
        tables = TableStore()
        tableIDs = [:]
        schemaGeneration = Self.nextSchemaGeneration()
        backlinks = PersistentBTree()
        liveBytes = UInt64(FileHeader.size)
        endOffset = UInt64(FileHeader.size)
    }

    /// The source of ``schemaGeneration``s: each call returns a number no earlier call returned.
    private static func nextSchemaGeneration() -> UInt64 {
        schemaGenerations.add(1, ordering: .relaxed).newValue
    }

    private static let schemaGenerations = Atomic<UInt64>(0)

    /// The tables in id order.
    package var orderedTables: [TableState] { tables.values }

    /// The stored schema, tables in id order.
    package var schema: [TableSchema] { orderedTables.map(\.schema) }
}

extension DatabaseState {
    /// ``hasDanglingLinks()`` for a version built from a checkpoint whose log had none, plus the commits
    /// replayed after it: only their links are checked (the links of the objects they wrote, and links to
    /// the objects they deleted), so that open stays independent of the store's size.
    func hasDanglingLinks(
        after touched: Replay.Touched, readRow: (RowLocation) throws(StorageError) -> RowView
    )
        -> Bool
    {
        if touched.needsFullCheck { return hasDanglingLinks() }
        for (table, key) in touched.deleted {
            var linked = false
            backlinks.forEach(from: BacklinkKey.lowerBound(table, key), inclusive: true) { entry, _ in
                linked = entry.target == table && entry.targetKey == key
                return false
            }
            if linked { return true }
        }
        for (tableID, key) in touched.upserted {
            guard let table = tables[tableID], !table.linkColumns.isEmpty,
                let location = tables.rowLocation(tableID, key)
            else { continue }
            guard let row = try? readRow(location) else { return true }
            for column in table.linkColumns {
                let schema = table.schema.columns[column]
                guard let targetName = schema.linkTarget, let target = tableIDs[targetName] else { continue }
                guard let links = try? row.links(at: column, type: schema.type) else { return true }
                for link in links where tables.rowLocation(target, link) == nil { return true }
            }
        }
        return false
    }

    /// Whether some link points to an object this version does not have: one walk of the backlink index
    /// (ordered by target), with one row lookup per distinct target.
    package func hasDanglingLinks() -> Bool {
        var last: (table: TableID, key: ObjectKey)?
        for (entry, _) in backlinks {
            if let last, last.table == entry.target, last.key == entry.targetKey { continue }
            last = (entry.target, entry.targetKey)
            if tables.rowLocation(entry.target, entry.targetKey) == nil { return true }
        }
        return false
    }
}
