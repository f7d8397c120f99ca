import ActorStoreBenchmarkKit
import BenchmarkModels
import GRDB
import GRDBSQLite

/// GRDB's best case: its prepared statements (`cachedStatement`) driven with the SQLite C API (bind, step,
/// column), no `Row`, no `Decodable`.
enum Raw {
    static let insertSQL = "INSERT INTO item (id, name, age, score) VALUES (?, ?, ?, ?)"
    static let selectByKeySQL = "SELECT id, name, age, score FROM item WHERE id = ?"

    @inline(__always) static func check(_ rc: Int32, _ expected: Int32, _ db: Database, _ what: String) throws {
        if rc != expected {
            throw Failure("\(what): SQLite error \(rc): \(String(cString: sqlite3_errmsg(db.sqliteConnection)))")
        }
    }

    /// `SQLITE_TRANSIENT`: SQLite copies the bound text.
    @inline(__always) static var transient: sqlite3_destructor_type {
        unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    }

    /// Inserts object `i` with a prepared INSERT.
    @inline(__always) static func insert(_ statement: Statement, _ db: Database, _ i: Int) throws {
        try insert(statement, db, id: i, name: Dataset.name(i), age: Dataset.age(i), score: Dataset.score(i))
    }

    @inline(__always) static func insert(
        _ statement: Statement, _ db: Database, id: Int, name: String, age: Int, score: Double
    ) throws {
        let s = statement.sqliteStatement
        sqlite3_reset(s)
        sqlite3_bind_int64(s, 1, Int64(id))
        _ = name.utf8CString.withUnsafeBufferPointer { sqlite3_bind_text(s, 2, $0.baseAddress, -1, transient) }
        sqlite3_bind_int64(s, 3, Int64(age))
        sqlite3_bind_double(s, 4, score)
        try check(sqlite3_step(s), SQLITE_DONE, db, "insert")
    }

    /// Binds the parameters and steps a statement that returns no row.
    @inline(__always) static func execute(_ statement: Statement, _ db: Database, _ ints: Int...) throws {
        let s = statement.sqliteStatement
        sqlite3_reset(s)
        for (k, value) in ints.enumerated() { sqlite3_bind_int64(s, Int32(k + 1), Int64(value)) }
        try check(sqlite3_step(s), SQLITE_DONE, db, "execute")
    }

    /// Adds 1 to the score of every row, row by row: reads every (id, score) with a prepared `SELECT`, then runs
    /// one prepared `UPDATE item SET score = ? WHERE id = ?` per row (what object-by-object code does with raw
    /// statements). `expected` sizes the array of rows read.
    static func incrementScoresRowByRow(_ db: Database, _ expected: Int) throws {
        var rows: [(id: Int64, score: Double)] = []
        rows.reserveCapacity(expected)
        let select = try db.cachedStatement(sql: "SELECT id, score FROM item").sqliteStatement
        sqlite3_reset(select)
        while true {
            let rc = sqlite3_step(select)
            if rc == SQLITE_DONE { break }
            try check(rc, SQLITE_ROW, db, "select")
            rows.append((sqlite3_column_int64(select, 0), sqlite3_column_double(select, 1)))
        }
        sqlite3_reset(select)
        let update = try db.cachedStatement(sql: "UPDATE item SET score = ? WHERE id = ?").sqliteStatement
        for row in rows {
            sqlite3_reset(update)
            sqlite3_bind_double(update, 1, row.score + 1)
            sqlite3_bind_int64(update, 2, row.id)
            try check(sqlite3_step(update), SQLITE_DONE, db, "update")
        }
    }

    /// Deletes the rows with `age < 50` row by row: reads their ids with a prepared `SELECT`, then runs one
    /// prepared `DELETE FROM item WHERE id = ?` per row (what object-by-object code does with raw statements).
    static func deleteYoungRowByRow(_ db: Database) throws {
        var ids: [Int64] = []
        let select = try db.cachedStatement(sql: "SELECT id FROM item WHERE age < 50").sqliteStatement
        sqlite3_reset(select)
        while true {
            let rc = sqlite3_step(select)
            if rc == SQLITE_DONE { break }
            try check(rc, SQLITE_ROW, db, "select")
            ids.append(sqlite3_column_int64(select, 0))
        }
        sqlite3_reset(select)
        let delete = try db.cachedStatement(sql: "DELETE FROM item WHERE id = ?").sqliteStatement
        for id in ids {
            sqlite3_reset(delete)
            sqlite3_bind_int64(delete, 1, id)
            try check(sqlite3_step(delete), SQLITE_DONE, db, "delete")
        }
    }

    /// Reads the four columns of the current row (id, name, age, score) into a checksum.
    @inline(__always) static func rowDigest(_ s: SQLiteStatement) -> Int {
        let id = Int(sqlite3_column_int64(s, 0))
        let text = sqlite3_column_text(s, 1)!
        let length = Int(sqlite3_column_bytes(s, 1))
        let name = String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)
        let age = Int(sqlite3_column_int64(s, 2))
        let score = sqlite3_column_double(s, 3)
        return Dataset.digest(id: id, name: name, age: age, score: score)
    }

    /// Looks one object up by primary key; its checksum, or nil if missing.
    @inline(__always) static func digest(byKey statement: Statement, _ db: Database, _ key: Int) throws -> Int? {
        let s = statement.sqliteStatement
        sqlite3_reset(s)
        sqlite3_bind_int64(s, 1, Int64(key))
        let rc = sqlite3_step(s)
        if rc == SQLITE_DONE { return nil }
        try check(rc, SQLITE_ROW, db, "select")
        let digest = rowDigest(s)
        // Reset now: a statement left stepping keeps its connection's read transaction (and snapshot) open.
        sqlite3_reset(s)
        return digest
    }

    /// Steps a query over (id, name, age, score) rows: (row count, checksum).
    static func scan(_ statement: Statement, _ db: Database, _ ints: [Int] = []) throws -> (Int, Int) {
        let s = statement.sqliteStatement
        sqlite3_reset(s)
        for (k, value) in ints.enumerated() { sqlite3_bind_int64(s, Int32(k + 1), Int64(value)) }
        var count = 0
        var digest = 0
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { break }
            if rc != SQLITE_ROW { sqlite3_reset(s) }
            try check(rc, SQLITE_ROW, db, "scan")
            count += 1
            digest &+= rowDigest(s)
        }
        return (count, digest)
    }

    /// Steps a query returning one integer (a count).
    static func integer(_ statement: Statement, _ db: Database, _ ints: [Int] = []) throws -> Int {
        let s = statement.sqliteStatement
        sqlite3_reset(s)
        for (k, value) in ints.enumerated() { sqlite3_bind_int64(s, Int32(k + 1), Int64(value)) }
        try check(sqlite3_step(s), SQLITE_ROW, db, "integer")
        let value = Int(sqlite3_column_int64(s, 0))
        sqlite3_reset(s)
        return value
    }
}

extension ItemRecord {
    init(_ i: Int) { self.init(id: i, name: Dataset.name(i), age: Dataset.age(i), score: Dataset.score(i)) }
    var digest: Int { Dataset.digest(id: id, name: name, age: age, score: score) }
}

enum Schema {
    /// What a GRDB user writes: an INTEGER PRIMARY KEY (the rowid), NOT NULL columns.
    static func create(_ db: Database, indexed: Bool) throws {
        try db.create(table: "item") { t in
            t.primaryKey("id", .integer)
            t.column("name", .text).notNull()
            t.column("age", .integer).notNull()
            t.column("score", .double).notNull()
        }
        if indexed { try db.create(index: "item_age", on: "item", columns: ["age"]) }
    }

    /// (count, checksum of all four properties) of every row, computed by SQLite.
    static func summary(_ db: Database) throws -> (Int, Int) {
        let row = try Row.fetchOne(
            db,
            sql:
                "SELECT count(*), coalesce(sum(id + age + CAST(score * 2 AS INTEGER) + length(CAST(name AS BLOB))), 0) FROM item"
        )!
        return (row[0], row[1])
    }
}

@inline(__always) func sqlite3Reset(_ s: SQLiteStatement) { sqlite3_reset(s) }
@inline(__always) func sqlite3ColumnInt(_ s: SQLiteStatement, _ column: Int32) -> Int {
    Int(sqlite3_column_int64(s, column))
}
/// Steps: true on a row, false when done, throws on an error.
@inline(__always) func sqlite3StepRow(_ s: SQLiteStatement, _ db: Database) throws -> Bool {
    let rc = sqlite3_step(s)
    if rc == SQLITE_DONE { return false }
    try Raw.check(rc, SQLITE_ROW, db, "step")
    return true
}
