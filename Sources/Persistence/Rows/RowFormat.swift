import Foundation

/// The byte layout of one row (the stored bytes of one object) and its limits.
///
/// Rows are read in place from the memory-mapped log, so the layout puts a table of column end offsets
/// first: reading one column touches the header and that column's bytes only. All integers are
/// little-endian unless stated otherwise.
///
/// ```
/// row:
/// +----------------+------------------+---------------------------------------+------------------+
/// | columnCount    | offsetWidth      | ends[0] | ends[1] | ... | ends[n-1]   | data             |
/// | u16            | u8 (1, 2 or 4)   | columnCount x offsetWidth bytes       | ends[n-1] bytes  |
/// +----------------+------------------+---------------------------------------+------------------+
///  0                2                  3                                       3 + n*offsetWidth
///
/// ends[i]  = end of column i's bytes, relative to the start of `data`
/// column i = data[ends[i-1] ..< ends[i]]          (ends[-1] = 0; ends never decrease)
/// offsetWidth = smallest of 1, 2, 4 that can hold the data length
///
/// column bytes, by ColumnType (w = ScalarType.fixedWidth):
///
///   single, fixed-width      | value: w bytes |                      optional: zero-length slot = null
///   single string / data     | raw bytes      |                      non-optional
///   single string? / data?   | 0x01 | raw bytes |                    optional: zero-length slot = null
///   list / set               | count: u32 | element x count |
///   map<String, V>           | count: u32 | entry x count |        entries sorted by key (String <), unique
///       entry                | keyLength: u32 | key: UTF-8 | element |
///
/// element (of a list, a set, or a map entry's value):
///   fixed-width, required    | value: w bytes |
///   fixed-width, optional    | 0x00 |                                null
///                            | 0x01 | value: w bytes |               present
///   string / data            | length: u32 | bytes |                length 0xFFFF_FFFF (no bytes) = null
///
/// fixed-width values:
///   bool        1 byte, 0 or 1              int8/16/32/64  1/2/4/8 bytes, two's complement
///   float       4 bytes, IEEE bit pattern   double         8 bytes, IEEE bit pattern
///   date        8 bytes, bit pattern of timeIntervalSinceReferenceDate as Double
///   uuid        16 bytes, in UUID byte order
///   objectId    12 bytes: high u64 BIG-endian, then low u32 BIG-endian (bytes compare like the value)
///   decimal128  16 bytes: low u64, then high u64
///   link        8 bytes, the target's ObjectKey as Int64
///
/// mixed (ScalarType 15, AnyRealmValue): self-delimiting, the same bytes as a single column and as an
/// element of a list, set or map (a null single column is a zero-length slot):
///   | tag: u8 | payload |        tag = the ScalarType raw value of the value held
///   tag 0  null                  no payload
///   tag 1  bool                  1 byte          tag 5  int (always int64)   8 bytes
///   tag 6  float                 4 bytes         tag 7  double               8 bytes
///   tag 10 date                  8 bytes         tag 11 uuid                16 bytes
///   tag 12 objectId             12 bytes         tag 13 decimal128          16 bytes
///   tag 8  string, tag 9 data    | length: u32 | bytes |
///   tag 14 link                  | nameLength: u8 | table name: UTF-8 | key: i64 |
///   any other tag (2, 3, 4, 15, >15) is corruption
/// ```
///
/// A column the row does not store (the row was written before the column was added) reads as
/// ``ColumnType/defaultValue``. Readers validate every length against the bytes actually present, so a
/// malformed row throws ``StorageError/Code/corrupted`` and never traps.
package enum RowFormat {
    /// The largest String (UTF-8 bytes) or Data value a column or element may hold: 16 MiB, as Realm.
    package static let maxStringBytes = 16 * 1024 * 1024
    /// The largest number of columns a row may have.
    package static let maxColumns = 4096
    /// The largest `data` section of a row: the column end offsets are at most 32 bits wide.
    package static let maxDataBytes = Int(UInt32.max)
    /// The largest encoded row (header and data): an upsert stores the row's length in 32 bits.
    package static let maxRowBytes = Int(UInt32.max)
    /// The size of the fixed part of the header: `columnCount: u16` and `offsetWidth: u8`.
    package static let fixedHeaderSize = 3
    /// The length stored for a null string or data element of a collection.
    package static let nullLength: UInt32 = 0xFFFF_FFFF
    /// The byte that precedes the bytes of a present optional single string/data, or a present
    /// optional fixed-width collection element.
    package static let presentMarker: UInt8 = 1
    /// The byte that stands for a null optional fixed-width collection element.
    package static let nullMarker: UInt8 = 0

    /// The offset width the format requires for a `data` section of `dataLength` bytes.
    ///
    /// - Parameter dataLength: The length of the data section, at most ``maxDataBytes``.
    /// - Returns: 1, 2 or 4.
    @inline(__always)
    package static func offsetWidth(forDataLength dataLength: Int) -> Int {
        if dataLength <= 0xFF { return 1 }
        if dataLength <= 0xFFFF { return 2 }
        return 4
    }

    /// The length of the header (fixed part plus end table) of a row of `columnCount` columns.
    ///
    /// - Parameters:
    ///   - columnCount: The number of columns.
    ///   - offsetWidth: The width of one end offset (1, 2 or 4).
    /// - Returns: `3 + columnCount * offsetWidth`.
    @inline(__always)
    package static func headerSize(columnCount: Int, offsetWidth: Int) -> Int {
        fixedHeaderSize + columnCount * offsetWidth
    }

    /// The tag of a null mixed value (a null element of a mixed collection; a null single mixed column is
    /// a zero-length slot, as for other optional columns).
    package static let mixedNullTag: UInt8 = 0
    /// The longest table name a mixed link can carry (its length is one byte).
    package static let maxMixedTableNameBytes = 255

    /// The zero `Decimal128` Realm uses as a default: coefficient 0, exponent 0 (BID bits `0x3040…0`).
    package static let decimalZero = Decimal128Bits(low: 0, high: 0x3040_0000_0000_0000)
}

extension ColumnType {
    /// The value a row shows for a column it does not store (an older row, the column was added later).
    ///
    /// `0`, `false`, `""`, empty `Data`, `Date(timeIntervalSinceReferenceDate: 0)`, the all-zero UUID and
    /// ObjectId, the decimal zero (`0E0`, ``RowFormat/decimalZero``), `null` if the column is optional
    /// (always, for a single link), and an empty collection of the column's kind.
    package var defaultValue: Value {
        switch collection {
        case .list: return .list([])
        case .set: return .set([])
        case .map: return .map([])
        case .single: break
        }
        if isOptional { return .null }
        switch scalar {
        case .bool: return .bool(false)
        case .int8, .int16, .int32, .int64: return .int(0)
        case .float: return .float(0)
        case .double: return .double(0)
        case .string: return .string("")
        case .data: return .data(Data())
        case .date: return .date(Date(timeIntervalSinceReferenceDate: 0))
        case .uuid: return .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .objectId: return .objectId(ObjectIDBytes(high: 0, low: 0))
        case .decimal128: return .decimal128(RowFormat.decimalZero)
        case .link, .mixed: return .null
        }
    }
}
