/// A key or value type that ``PersistentBTree`` nodes can store in the file (format 2, see
/// ``BTreeNodeFormat``). Encodings are little-endian and self-delimiting; a decoder never reads past the
/// node's bytes (``ByteReader`` records an overrun instead), and a malformed value is an error, not a trap.
package protocol NodeCodable {
    /// Appends the encoding of `self`.
    func encode(to writer: inout ByteWriter)
    /// Reads one value; `nil` when the bytes do not hold one (the node is then damaged).
    static func decode(from reader: inout ByteReader) -> Self?
}

// MARK: Encodings of the engine's keys and values

extension Int64: NodeCodable {
    package func encode(to writer: inout ByteWriter) { writer.append(self) }
    package static func decode(from reader: inout ByteReader) -> Int64? { reader.int64() }
}

extension UInt32: NodeCodable {
    package func encode(to writer: inout ByteWriter) { writer.append(self) }
    package static func decode(from reader: inout ByteReader) -> UInt32? { reader.uint32() }
}

extension ObjectKey: NodeCodable {
    package func encode(to writer: inout ByteWriter) { writer.append(rawValue) }
    package static func decode(from reader: inout ByteReader) -> ObjectKey? { ObjectKey(reader.int64()) }
}

extension TableID: NodeCodable {
    package func encode(to writer: inout ByteWriter) { writer.append(rawValue) }
    package static func decode(from reader: inout ByteReader) -> TableID? { TableID(reader.uint32()) }
}

extension Present: NodeCodable {
    package func encode(to writer: inout ByteWriter) {}
    package static func decode(from reader: inout ByteReader) -> Present? { Present() }
}

extension RowLocation: NodeCodable {
    package func encode(to writer: inout ByteWriter) {
        writer.append(offset)
        writer.append(length)
    }
    package static func decode(from reader: inout ByteReader) -> RowLocation? {
        RowLocation(offset: reader.uint64(), length: reader.uint32())
    }
}

extension PrimaryKeyEntry: NodeCodable {
    package func encode(to writer: inout ByteWriter) {
        object.encode(to: &writer)
        location.encode(to: &writer)
    }
    package static func decode(from reader: inout ByteReader) -> PrimaryKeyEntry? {
        guard let object = ObjectKey.decode(from: &reader), let location = RowLocation.decode(from: &reader) else {
            return nil
        }
        return PrimaryKeyEntry(object: object, location: location)
    }
}

extension IndexKey: NodeCodable {
    /// `case: u8` (0 null, 1 int, 2 double, 3 string, 4 uuid, 5 objectId), then the payload.
    package func encode(to writer: inout ByteWriter) {
        switch self {
        case .null: writer.append(UInt8(0))
        case .int(let value):
            writer.append(UInt8(1))
            writer.append(value)
        case .double(let value):
            writer.append(UInt8(2))
            writer.append(value.bitPattern)
        case .string(let value):
            writer.append(UInt8(3))
            writer.appendString(value)
        case .uuid(let high, let low):
            writer.append(UInt8(4))
            writer.append(high)
            writer.append(low)
        case .objectId(let high, let low):
            writer.append(UInt8(5))
            writer.append(high)
            writer.append(low)
        }
    }

    package static func decode(from reader: inout ByteReader) -> IndexKey? {
        switch reader.uint8() {
        case 0: .null
        case 1: .int(reader.int64())
        case 2: .double(Double(bitPattern: reader.uint64()))
        case 3: .string(reader.string())
        case 4: .uuid(reader.uint64(), reader.uint64())
        case 5: .objectId(reader.uint64(), reader.uint32())
        default: nil
        }
    }
}

extension IndexEntry: NodeCodable {
    package func encode(to writer: inout ByteWriter) {
        key.encode(to: &writer)
        object.encode(to: &writer)
    }
    package static func decode(from reader: inout ByteReader) -> IndexEntry? {
        guard let key = IndexKey.decode(from: &reader), let object = ObjectKey.decode(from: &reader) else {
            return nil
        }
        return IndexEntry(key, object)
    }
}

extension BacklinkKey: NodeCodable {
    package func encode(to writer: inout ByteWriter) {
        target.encode(to: &writer)
        targetKey.encode(to: &writer)
        source.encode(to: &writer)
        writer.append(column)
        sourceKey.encode(to: &writer)
    }
    package static func decode(from reader: inout ByteReader) -> BacklinkKey? {
        guard let target = TableID.decode(from: &reader), let targetKey = ObjectKey.decode(from: &reader),
            let source = TableID.decode(from: &reader)
        else { return nil }
        let column = Int32(bitPattern: reader.uint32())
        guard let sourceKey = ObjectKey.decode(from: &reader) else { return nil }
        return BacklinkKey(target: target, targetKey: targetKey, source: source, column: column, sourceKey: sourceKey)
    }
}
