/// The payload of a commit record: the version it creates, then its operations in order.
///
/// ```text
///  payload := version: u64 | op*
///  op      := 0x01 upsert  table: u32 | key: i64 | rowLength: u32 | row bytes (see RowFormat)
///           | 0x02 delete  table: u32 | key: i64
///           | 0x03 schema  schemaVersion: u64 | tableCount: u32 | table*      (replaces the whole schema)
///           | 0x04 clear   table: u32                                          (deletes every row)
///  table   := id: u32 | name: str | flags: u8 (bit 0 embedded) | nextKey: i64 | columnCount: u16 | column*
///  column  := name: str | scalar: u8 | collection: u8 | flags: u8 (1 optional, 2 indexed, 4 primary key)
///           | linkTarget: str (empty = none)
///  str     := length: u32 | UTF-8 bytes
/// ```
/// Replaying the operations of every commit in file order rebuilds the database; rows are not decoded
/// except the columns that feed indexes and backlinks. An upsert's row bytes stay in the file and the
/// index points at them, so a row is written once and read in place.
package enum CommitPayload {
    package enum Op: UInt8 {
        case upsert = 1
        case delete = 2
        case schema = 3
        case clear = 4
    }

    /// The largest table id a file may use (ids are dense, assigned from 1; this bounds a crafted file).
    package static let maxTableID: UInt32 = 1 << 16

    /// Bytes of an upsert op before the row bytes.
    package static let upsertHeaderSize = 1 + 4 + 8 + 4

    /// A schema operation's table description.
    package struct TableEntry: Sendable, Equatable {
        package var id: TableID
        package var schema: TableSchema
        package var nextKey: Int64
    }

    package static func appendSchema(_ tables: [TableEntry], version: UInt64, to w: inout ByteWriter) {
        w.append(Op.schema.rawValue)
        w.append(version)
        w.append(UInt32(tables.count))
        for table in tables {
            w.append(table.id.rawValue)
            w.appendString(table.schema.name)
            w.append(UInt8(table.schema.isEmbedded ? 1 : 0))
            w.append(table.nextKey)
            w.append(UInt16(table.schema.columns.count))
            for column in table.schema.columns {
                w.appendString(column.name)
                w.append(column.type.scalar.rawValue)
                w.append(column.type.collection.rawValue)
                var flags: UInt8 = 0
                if column.type.isOptional { flags |= 1 }
                if column.isIndexed { flags |= 2 }
                if column.isPrimaryKey { flags |= 4 }
                w.append(flags)
                w.appendString(column.linkTarget ?? "")
            }
        }
    }

    /// Reads a schema op's body (after the op byte).
    package static func readSchema(
        _ r: inout ByteReader, at offset: Int, path: String
    ) throws(StorageError) -> (version: UInt64, tables: [TableEntry]) {
        let version = r.uint64()
        let count = Int(r.uint32())
        guard count <= r.remaining else { throw malformed(path, offset, "schema table count") }
        var tables: [TableEntry] = []
        for _ in 0..<count {
            let id = TableID(r.uint32())
            // Table ids index an array (TableStore): a crafted huge id must not make it allocate.
            guard id.rawValue <= maxTableID else { throw malformed(path, offset, "table id") }
            let name = r.string()
            let embedded = r.uint8() & 1 == 1
            let nextKey = r.int64()
            let columnCount = Int(r.uint16())
            var columns: [ColumnSchema] = []
            for _ in 0..<columnCount {
                let columnName = r.string()
                let code = r.uint8()
                guard let scalar = ScalarType(rawValue: code) else { throw unknownType(path, offset, code) }
                guard let kind = CollectionKind(rawValue: r.uint8()) else {
                    throw malformed(path, offset, "column type")
                }
                let flags = r.uint8()
                let target = r.string()
                guard !r.overrun else { throw malformed(path, offset, "schema") }
                columns.append(
                    ColumnSchema(
                        columnName, ColumnType(scalar, kind, optional: flags & 1 != 0),
                        linkTarget: target.isEmpty ? nil : target, indexed: flags & 2 != 0,
                        primaryKey: flags & 4 != 0))
            }
            guard !r.overrun else { throw malformed(path, offset, "schema") }
            tables.append(
                TableEntry(id: id, schema: TableSchema(name, columns: columns, isEmbedded: embedded), nextKey: nextKey))
        }
        return (version, tables)
    }

    /// The error for a column type code this engine does not know: a newer engine wrote the file.
    static func unknownType(_ path: String, _ offset: Int, _ code: UInt8) -> StorageError {
        StorageError(
            .corrupted,
            "'\(path)' has a schema (commit record at byte \(offset)) with a column of type code \(code), which this "
                + "version of ActorStore does not know: the file was written by a newer version. Open it with that "
                + "version or a later one.",
            offset: FileOffset(offset))
    }

    package static func malformed(_ path: String, _ offset: Int, _ what: String) -> StorageError {
        StorageError(
            .corrupted,
            "'\(path)' has a commit record at byte \(offset) whose checksum is valid but whose \(what) is malformed. "
                + "The file was written by an incompatible or faulty program; restore it from a backup.",
            offset: FileOffset(offset))
    }
}
