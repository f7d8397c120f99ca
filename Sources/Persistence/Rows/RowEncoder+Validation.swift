import Foundation

extension RowEncoder {
    /// Checks `value` against `type` and returns it normalized for encoding.
    ///
    /// Normalization: map entries are sorted by key (Swift `String` `<`); set elements are de-duplicated,
    /// keeping the first occurrence (two elements are the same when they encode to the same bytes: strings
    /// compare by UTF-8, floating-point values by bit pattern, so `0.0` and `-0.0` differ and identical NaNs
    /// collapse). Values of any other shape come back unchanged.
    ///
    /// - Parameters:
    ///   - value: The value to store.
    ///   - type: The column's type.
    ///   - column: The column's name, for error messages.
    /// - Returns: The value to pass to ``encode(_:types:into:)``.
    /// - Throws: `.invalidValue` when the value has the wrong type, is null in a non-optional column (or has
    ///   a null element in a collection of non-optional elements), is an integer out of the column's range,
    ///   or is a map with two equal keys; `.limitExceeded` when a String, Data or map key is over
    ///   ``RowFormat/maxStringBytes`` or the encoded column is over ``RowFormat/maxDataBytes``.
    package static func validate(_ value: Value, for type: ColumnType, column: String) throws(StorageError) -> Value {
        let context = ValidationContext(column: column, type: type)
        switch type.collection {
        case .single:
            try checkElement(value, type: type, context: context, position: .single)
            return value
        case .list:
            guard case .list(let elements) = value else { throw context.wrongShape(value) }
            try checkElements(elements, type: type, context: context)
            try checkColumnSize(value, context: context)
            return value
        case .set:
            guard case .set(let elements) = value else { throw context.wrongShape(value) }
            try checkElements(elements, type: type, context: context)
            let normalized = Value.set(deduplicated(elements))
            try checkColumnSize(normalized, context: context)
            return normalized
        case .map:
            guard case .map(var entries) = value else { throw context.wrongShape(value) }
            for entry in entries {
                let keyBytes = entry.key.utf8.count
                if keyBytes > RowFormat.maxStringBytes {
                    throw context.tooLarge("a map key", bytes: keyBytes)
                }
                try checkElement(entry.value, type: type, context: context, position: .mapValue(entry.key))
            }
            if !isStrictlySorted(entries) {
                entries.sort { $0.key < $1.key }
                for i in entries.indices.dropFirst() where entries[i - 1].key == entries[i].key {
                    throw StorageError(
                        .invalidValue,
                        "\(context.subject) has two entries with the key \(quoted(entries[i].key)); map keys must be unique."
                    )
                }
            }
            let normalized = Value.map(entries)
            try checkColumnSize(normalized, context: context)
            return normalized
        }
    }

    /// Validates a whole row against its columns.
    ///
    /// - Parameters:
    ///   - values: One value per column, in storage order.
    ///   - columns: The table's columns.
    /// - Returns: The normalized values, ready for ``encode(_:types:into:)``.
    /// - Throws: `.invalidValue` when the counts differ or a value does not fit its column;
    ///   `.limitExceeded` when there are more than ``RowFormat/maxColumns`` columns, a value is too large,
    ///   or the row's data would exceed ``RowFormat/maxDataBytes``.
    package static func validateRow(_ values: [Value], columns: [ColumnSchema]) throws(StorageError) -> [Value] {
        try validateRowMeasuring(values, columns: columns).values
    }

    /// ``validateRow(_:columns:)``, also returning the length of the row's data section (the sum of its
    /// column sizes, within the row-size limits), which ``encode(_:types:dataLength:into:)`` takes instead of
    /// adding up the sizes again.
    package static func validateRowMeasuring(
        _ values: [Value], columns: [ColumnSchema]
    ) throws(StorageError) -> (values: [Value], dataSize: Int) {
        guard values.count == columns.count else {
            throw StorageError(
                .invalidValue, "The row has \(values.count) values but the table has \(columns.count) columns.")
        }
        guard columns.count <= RowFormat.maxColumns else {
            throw StorageError(
                .limitExceeded, "The row has \(columns.count) columns; the limit is \(RowFormat.maxColumns) columns.")
        }
        // Only sets and maps can change when normalized, so the result starts as the caller's array (no
        // copy: it shares its storage) and is copied only when such a value actually changes; a row of
        // single values costs no allocation. Indexing, not `zip`, so that no `ColumnSchema` is copied.
        var result = values
        var dataSize = 0
        for i in 0..<columns.count {
            let type = columns[i].type
            if type.collection == .single && isPlainSingle(values[i], type) {
                // What `validate` accepts unchanged, decided without building its error context.
                dataSize += columnSize(values[i], type: type)
                continue
            }
            let normalized = try validate(values[i], for: type, column: columns[i].name)
            dataSize += columnSize(normalized, type: type)
            if type.collection == .set || type.collection == .map { result[i] = normalized }
        }
        try checkRowSize(dataSize: dataSize, columnCount: columns.count)
        return (result, dataSize)
    }

    /// Whether `value` is valid for the single (non-collection) column type `type` by the checks of
    /// ``validate(_:for:column:)``, for the common cases only: a value of the column's own kind, a string
    /// within ``RowFormat/maxStringBytes``. `false` for every other value (nulls, narrow integers, data, mixed
    /// columns, mismatches), which `validate` then checks (and reports).
    @inline(__always)
    static func isPlainSingle(_ value: Value, _ type: ColumnType) -> Bool {
        switch (type.scalar, value) {
        case (.bool, .bool), (.int64, .int), (.float, .float), (.double, .double), (.date, .date), (.uuid, .uuid),
            (.objectId, .objectId), (.decimal128, .decimal128), (.link, .link):
            return true
        case (.string, .string(let s)):
            return s.utf8.count <= RowFormat.maxStringBytes
        default:
            return false
        }
    }

    /// Checks that a row of `columnCount` columns whose data takes `dataSize` bytes can be encoded and
    /// stored: data within ``RowFormat/maxDataBytes``, and header plus data within ``RowFormat/maxRowBytes``
    /// (a row's length is stored in 32 bits, and the header comes on top of the data).
    ///
    /// - Throws: `.limitExceeded` naming the size and the limit.
    package static func checkRowSize(dataSize: Int, columnCount: Int) throws(StorageError) {
        guard dataSize <= RowFormat.maxDataBytes else {
            throw StorageError(
                .limitExceeded,
                "The object's values take \(dataSize) bytes; the limit is \(RowFormat.maxDataBytes) bytes per object.")
        }
        let width = RowFormat.offsetWidth(forDataLength: dataSize)
        let encoded = RowFormat.headerSize(columnCount: columnCount, offsetWidth: width) + dataSize
        guard encoded <= RowFormat.maxRowBytes else {
            throw StorageError(
                .limitExceeded,
                "The object takes \(encoded) bytes stored (\(dataSize) bytes of values and the table of their "
                    + "\(columnCount) offsets); the limit is \(RowFormat.maxRowBytes) bytes per object.")
        }
    }

    /// Checks every element of a list or set.
    private static func checkElements(
        _ elements: [Value], type: ColumnType, context: ValidationContext
    )
        throws(StorageError)
    {
        guard elements.count <= Int(UInt32.max) else {
            throw StorageError(
                .limitExceeded, "\(context.subject) has \(elements.count) elements; the limit is \(UInt32.max).")
        }
        for (i, element) in elements.enumerated() {
            try checkElement(element, type: type, context: context, position: .element(i))
        }
    }

    /// Checks one single value, collection element or map value against the column's scalar type.
    ///
    /// - Parameter position: Where the value sits in the column, for error messages.
    private static func checkElement(
        _ value: Value, type: ColumnType, context: ValidationContext, position: ValuePosition
    ) throws(StorageError) {
        if type.scalar == .mixed { return try checkMixed(value, type: type, context: context, position: position) }
        let matches: Bool
        switch (type.scalar, value) {
        case (_, .null):
            guard type.isOptional else {
                if case .single = position {
                    throw StorageError(.invalidValue, "\(context.subject) is not optional and cannot be set to null.")
                }
                throw StorageError(
                    .invalidValue, "\(context.at(position)) is null, but the elements of \(type) are not optional.")
            }
            return
        case (.int8, .int(let v)), (.int16, .int(let v)), (.int32, .int(let v)):
            let range = integerRange(type.scalar)
            guard range ~= v else {
                throw StorageError(
                    .invalidValue,
                    "\(context.at(position)) cannot hold \(v): a \(type.scalar) holds \(range.lowerBound) through \(range.upperBound)."
                )
            }
            return
        case (.string, .string(let s)):
            let bytes = s.utf8.count
            if bytes > RowFormat.maxStringBytes {
                throw context.tooLarge(position.noun(or: "the string"), bytes: bytes)
            }
            return
        case (.data, .data(let d)):
            if d.count > RowFormat.maxStringBytes {
                throw context.tooLarge(position.noun(or: "the data"), bytes: d.count)
            }
            return
        case (.bool, .bool), (.int64, .int), (.float, .float), (.double, .double), (.date, .date), (.uuid, .uuid),
            (.objectId, .objectId), (.decimal128, .decimal128), (.link, .link):
            matches = true
        default:
            matches = false
        }
        if !matches {
            throw StorageError(
                .invalidValue,
                "\(context.at(position)) expects a \(type.scalar) value but was given \(value.validationKind).")
        }
    }

    /// Checks one value of a mixed column or collection: any single stored type (null included), or a
    /// typed link; never an untyped link or a collection.
    private static func checkMixed(
        _ value: Value, type: ColumnType, context: ValidationContext, position: ValuePosition
    ) throws(StorageError) {
        switch value {
        case .null, .bool, .int, .float, .double, .date, .uuid, .objectId, .decimal128: return
        case .string(let s):
            let bytes = s.utf8.count
            if bytes > RowFormat.maxStringBytes {
                throw context.tooLarge(position.noun(or: "the string"), bytes: bytes)
            }
        case .data(let d):
            if d.count > RowFormat.maxStringBytes {
                throw context.tooLarge(position.noun(or: "the data"), bytes: d.count)
            }
        case .typedLink(let table, _):
            guard !table.isEmpty, table.utf8.count <= RowFormat.maxMixedTableNameBytes else {
                throw StorageError(
                    .invalidValue,
                    "\(context.at(position)) links to a table named \(quoted(table)); a mixed link needs a table name "
                        + "of 1 to \(RowFormat.maxMixedTableNameBytes) UTF-8 bytes.")
            }
        case .link, .list, .set, .map:
            throw StorageError(
                .invalidValue,
                "\(context.at(position)) holds a mixed value, which cannot be \(value.validationKind): store a single "
                    + "value or a link to an object.")
        }
    }

    /// The range an `.int` must lie in for an `int8`, `int16` or `int32` column (`Int64`'s range otherwise).
    private static func integerRange(_ scalar: ScalarType) -> ClosedRange<Int64> {
        switch scalar {
        case .int8: Int64(Int8.min)...Int64(Int8.max)
        case .int16: Int64(Int16.min)...Int64(Int16.max)
        case .int32: Int64(Int32.min)...Int64(Int32.max)
        default: Int64.min...Int64.max
        }
    }

    /// Throws `.limitExceeded` if the encoded column would not fit in a row.
    private static func checkColumnSize(_ value: Value, context: ValidationContext) throws(StorageError) {
        let size = columnSize(value, type: context.type)
        guard size <= RowFormat.maxDataBytes else {
            throw StorageError(
                .limitExceeded,
                "\(context.subject) takes \(size) bytes encoded; the limit is \(RowFormat.maxDataBytes) bytes per object."
            )
        }
    }

    /// Whether map entries are already in strictly increasing key order.
    private static func isStrictlySorted(_ entries: [Value.MapEntry]) -> Bool {
        for i in entries.indices.dropFirst() where !(entries[i - 1].key < entries[i].key) {
            return false
        }
        return true
    }

    /// The elements with repeats removed, first occurrence kept (equality: same encoded bytes).
    private static func deduplicated(_ elements: [Value]) -> [Value] {
        guard elements.count > 1 else { return elements }
        var seen = Set<SetElementKey>(minimumCapacity: elements.count)
        var result: [Value] = []
        result.reserveCapacity(elements.count)
        for element in elements where seen.insert(SetElementKey(element)).inserted {
            result.append(element)
        }
        return result
    }
}

/// Where a checked value sits in its column.
private enum ValuePosition {
    /// The value of a single column.
    case single
    /// Element `i` of a list or set.
    case element(Int)
    /// The value stored under a map key.
    case mapValue(String)

    /// "element 3", "the value for key \"k\"", or `single` for a single column.
    func noun(or single: String) -> String {
        switch self {
        case .single: single
        case .element(let i): "element \(i)"
        case .mapValue(let key): "the value for key \(quoted(key))"
        }
    }
}

/// A string quoted for an error message, shortened to 60 characters.
private func quoted(_ s: String) -> String {
    s.count <= 60 ? "\"\(s)\"" : "\"\(s.prefix(57))...\""
}

/// What a validation error message names: the column and its type.
private struct ValidationContext {
    /// The column's name.
    let column: String
    /// The column's type.
    let type: ColumnType

    /// "Column 'name' (type)".
    var subject: String { "Column '\(column)' (\(type))" }

    /// "Column 'name' (type)" or "Column 'name' (type): element 3".
    func at(_ position: ValuePosition) -> String {
        if case .single = position { return subject }
        return "\(subject): \(position.noun(or: ""))"
    }

    /// The error for a value of the wrong kind for the column as a whole (a collection column given a scalar...).
    func wrongShape(_ value: Value) -> StorageError {
        StorageError(.invalidValue, "\(subject) expects a \(type.collection) but was given \(value.validationKind).")
    }

    /// The error for a String, Data or key over the size limit.
    func tooLarge(_ what: String, bytes: Int) -> StorageError {
        StorageError(
            .limitExceeded,
            "\(subject): \(what) is \(bytes) bytes, over the limit of \(RowFormat.maxStringBytes) bytes (16 MB).")
    }
}

/// A set element compared and hashed by its encoded bytes.
private struct SetElementKey: Hashable {
    /// The element's identity: a tag plus up to 128 bits, or the bytes of a string or data value.
    private enum Storage: Hashable {
        case null
        case fixed(UInt8, UInt64, UInt64)
        case bytes(UInt8, Data)
    }

    /// The element's identity.
    private let storage: Storage

    /// Wraps one (validated) element.
    init(_ value: Value) {
        switch value {
        case .null: storage = .null
        case .bool(let b): storage = .fixed(1, b ? 1 : 0, 0)
        case .int(let v): storage = .fixed(2, UInt64(bitPattern: v), 0)
        case .float(let v): storage = .fixed(3, UInt64(v.bitPattern), 0)
        case .double(let v): storage = .fixed(4, v.bitPattern, 0)
        case .date(let v): storage = .fixed(5, v.timeIntervalSinceReferenceDate.bitPattern, 0)
        case .uuid(let u):
            let words = withUnsafeBytes(of: u.uuid) {
                ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            storage = .fixed(6, words.0, words.1)
        case .objectId(let o): storage = .fixed(7, o.high, UInt64(o.low))
        case .decimal128(let d): storage = .fixed(8, d.low, d.high)
        case .link(let k): storage = .fixed(9, UInt64(bitPattern: k.rawValue), 0)
        case .string(let s): storage = .bytes(10, Data(s.utf8))
        case .data(let d): storage = .bytes(11, d)
        case .typedLink(let table, let k):
            var bytes = Data(table.utf8)
            withUnsafeBytes(of: k.rawValue.littleEndian) { bytes.append(contentsOf: $0) }
            storage = .bytes(13, bytes)
        case .list, .set, .map: storage = .bytes(12, Data())  // Not an element; rejected before.
        }
    }
}

extension Value {
    /// A short description of the value's kind for error messages ("a string", "null", ...), never its
    /// contents (which may be 16 MB).
    fileprivate var validationKind: String {
        switch self {
        case .null: "null"
        case .bool: "a bool"
        case .int(let v): "the integer \(v)"
        case .float: "a float"
        case .double: "a double"
        case .string: "a string"
        case .data: "data"
        case .date: "a date"
        case .uuid: "a UUID"
        case .objectId: "an ObjectId"
        case .decimal128: "a Decimal128"
        case .link: "a link"
        case .typedLink: "a link"
        case .list: "a list"
        case .set: "a set"
        case .map: "a map"
        }
    }
}
