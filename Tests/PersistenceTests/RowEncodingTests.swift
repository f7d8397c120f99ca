import ActorStoreTestSupport
import Foundation
import Testing

@testable import ActorStorePersistence

// MARK: - Tests

@Suite("Row encoding")
struct RowEncodingTests {
    @Test("Every scalar x collection kind x optionality round-trips")
    func everyTypeRoundTrips() throws {
        for type in allColumnTypes {
            var values: [Value] = []
            let elements = samples(type.scalar) + (type.isOptional ? [.null] : [])
            switch type.collection {
            case .single: values = elements
            case .list: values = [.list([]), .list(elements), .list(elements.reversed() + elements)]
            case .set: values = [.set([]), .set(elements), .set(elements + elements)]
            case .map:
                let keys = ["zeta", "", "alpha", "Ärger", "日本", "🎉", "a.b", "Zulu", "é"]
                values = [
                    .map([]),
                    .map(
                        elements.enumerated().map { .init(keys[$0.offset % keys.count] + "\($0.offset)", $0.element) }),
                ]
            }
            for value in values {
                let normalized = try RowEncoder.validate(value, for: type, column: "col")
                // Put the value between two other columns so its boundaries are exercised.
                let types = [ColumnType(.int32), type, ColumnType(.string, optional: true)]
                let row = [Value.int(-5), normalized, .string("after")]
                let decoded = try decodeRow(encodeRow(row, types), types)
                #expect(sameBits(decoded[1], normalized), "\(type): \(value) decoded as \(decoded[1])")
                #expect(decoded[0] == .int(-5) && decoded[2] == .string("after"))
                if case .map(let entries) = decoded[1] {
                    #expect(entries.map(\.key) == entries.map(\.key).sorted(), "map keys come back sorted")
                }
                if case .set(let elements) = value, case .set(let unique) = normalized {
                    #expect(
                        unique.count == Set(elements.map { setKey($0, mixed: type.scalar == .mixed) }).count,
                        "set de-duplicated")
                }
            }
        }
    }

    @Test("Empty string and empty data differ from null in optional columns")
    func emptyIsNotNull() throws {
        for scalar in [ScalarType.string, .data] {
            let empty: Value = scalar == .string ? .string("") : .data(Data())
            let optional = ColumnType(scalar, optional: true)
            let types = [optional, optional, ColumnType(scalar)]
            let bytes = encodeRow([empty, .null, empty], types)
            #expect(try decodeRow(bytes, types) == [empty, .null, empty])
            try bytes.withUnsafeBytes { raw in
                let view = try RowView(raw)
                #expect(
                    view.columnBytes(0)?.count == 1 && view.columnBytes(1)?.count == 0
                        && view.columnBytes(2)?.count == 0)
                if scalar == .string {
                    #expect(try view.string(at: 0, optional: true) == "")
                    #expect(try view.string(at: 1, optional: true) == nil)
                    #expect(try view.string(at: 2, optional: false) == "")
                }
            }
        }
    }

    @Test("Exact bytes of a small row (the documented layout)")
    func goldenBytes() throws {
        let types = [
            ColumnType(.int64), ColumnType(.string, optional: true), ColumnType(.bool), ColumnType(.objectId),
            ColumnType(.decimal128), ColumnType(.int16, .list),
        ]
        let values: [Value] = [
            .int(1), .string("a"), .bool(true), .objectId(ObjectIDBytes(high: 0x0102_0304_0506_0708, low: 0x090A_0B0C)),
            .decimal128(Decimal128Bits(low: 1, high: 2)), .list([.int(-2), .int(0x0102)]),
        ]
        let bytes = encodeRow(values, types)
        let data: [UInt8] =
            [1, 0, 0, 0, 0, 0, 0, 0] + [1, 0x61] + [1] + Array(1...12)
            + [1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0] + [2, 0, 0, 0, 0xFE, 0xFF, 0x02, 0x01]
        #expect(bytes == [6, 0, 1, 8, 10, 11, 23, 39, 47] + data)
        #expect(try decodeRow(bytes, types) == values)
    }

    @Test("validateRow returns what validating each column on its own returns, on random rows")
    func validateRowMatchesPerColumnValidation() throws {
        // validateRow hands back the caller's array unless a set or map changed when normalized; compare it
        // with the per-column path on rows whose sets hold duplicates and whose maps are out of order.
        var rng = SplitMix64(seed: testSeed("validateRowMatchesPerColumnValidation"))
        for iteration in 0..<5_000 {
            let (types, values) = try randomRow(&rng)
            let raw = values.map { value -> Value in
                switch value {
                case .set(let elements): .set(elements + elements.reversed())
                case .map(let entries): .map(entries.reversed())
                default: value
                }
            }
            let columns = types.enumerated().map { ColumnSchema("c\($0.offset)", $0.element) }
            let row = try RowEncoder.validateRow(raw, columns: columns)
            #expect(row.count == raw.count)
            for i in types.indices {
                let expected = try RowEncoder.validate(raw[i], for: types[i], column: "c\(i)")
                if !sameBits(row[i], expected) || !sameBits(row[i], values[i]) {
                    Issue.record("iteration \(iteration), column \(i) (\(types[i])): \(row[i]), expected \(expected)")
                }
            }
        }
    }

    @Test("Encoding into a record buffer writes the bytes encoding into an array writes, on random rows")
    func encodeIntoRecordBufferMatchesArray() throws {
        var rng = SplitMix64(seed: testSeed("encodeIntoRecordBufferMatchesArray"))
        let buffer = RecordBuffer(capacity: 64)
        var expected: [UInt8] = []
        for iteration in 0..<5_000 {
            let (types, values) = try randomRow(&rng)
            let start = buffer.count
            let length = RowEncoder.encode(values, types: types, into: buffer)
            let bytes = encodeRow(values, types)
            if length != bytes.count || Array(buffer.bytes(at: start, count: length)) != bytes {
                Issue.record("iteration \(iteration) (\(types)): the record buffer holds different bytes")
            }
            expected += bytes
        }
        #expect(Array(buffer.bytes) == expected)
    }

    @Test("A row written column by column (DirectRow) has the bytes of the same values encoded, on random rows")
    func directRowMatchesValues() throws {
        /// Writes its values through the typed writers where they apply, `write(_:)` otherwise.
        struct ValuesRow: DirectRow {
            let types: [ColumnType]
            let values: [Value]
            var dataLength: Int { RowEncoder.dataSize(values, types: types) }
            func value(ofColumn column: Int) -> Value { values[column] }
            func write(_ writer: inout RowColumnWriter) {
                for (type, value) in zip(types, values) {
                    switch (type.scalar, type.isOptional || type.collection != .single, value) {
                    case (.bool, false, .bool(let b)): writer.writeBool(b)
                    case (.int8, false, .int(let v)), (.int16, false, .int(let v)), (.int32, false, .int(let v)),
                        (.int64, false, .int(let v)):
                        writer.writeInteger(v)
                    case (.double, false, .double(let v)): writer.writeDouble(v)
                    case (.string, false, .string(let s)): writer.writeString(s)
                    default: writer.write(value)
                    }
                }
            }
        }
        var rng = SplitMix64(seed: testSeed("directRowMatchesValues"))
        let buffer = RecordBuffer(capacity: 64)
        for iteration in 0..<5_000 {
            let (types, values) = try randomRow(&rng)
            let start = buffer.count
            let length = RowEncoder.encode(ValuesRow(types: types, values: values), into: buffer)
            let bytes = encodeRow(values, types)
            if length != bytes.count || Array(buffer.bytes(at: start, count: length)) != bytes {
                Issue.record("iteration \(iteration) (\(types)): the direct row's bytes differ")
            }
        }
    }

    @Test("Randomized round trip of random schemas")
    func randomizedRoundTrip() throws {
        var rng = SplitMix64(seed: testSeed("randomizedRoundTrip"))
        for iteration in 0..<20_000 {
            let (types, values) = try randomRow(&rng)
            let bytes = encodeRow(values, types)
            #expect(bytes.count == RowEncoder.encodedSize(values, types: types))
            let decoded = try decodeRow(bytes, types)
            for i in types.indices where !sameBits(decoded[i], values[i]) {
                Issue.record(
                    "iteration \(iteration), column \(i) (\(types[i])): wrote \(values[i]), read \(decoded[i])")
            }
            try bytes.withUnsafeBytes { raw in
                let view = try RowView(raw)
                #expect(view.columnCount == types.count && view.encodedLength == bytes.count)
                for (i, type) in types.enumerated() {
                    try checkFastAccessors(view, i, type, values[i])
                }
            }
        }
    }

    /// The typed accessors agree with `value(at:)`.
    private func checkFastAccessors(_ view: RowView, _ i: Int, _ type: ColumnType, _ value: Value) throws {
        let keys: [ObjectKey] =
            switch value {
            case .link(let k): [k]
            case .list(let e), .set(let e): e.compactMap { if case .link(let k) = $0 { k } else { nil } }
            case .map(let e): e.compactMap { if case .link(let k) = $0.value { k } else { nil } }
            default: []
            }
        #expect(try view.links(at: i, type: type) == keys)
        guard type.collection == .single else {
            let count =
                switch value {
                case .list(let e), .set(let e): e.count
                case .map(let e): e.count
                default: -1
                }
            #expect(try view.collectionCount(at: i, type: type) == count)
            return
        }
        switch (type.scalar, value) {
        case (_, .null):
            #expect(try view.int64(at: i, type: .int64) == nil || type.scalar != .int64)
            #expect(try view.link(at: i) == nil || type.scalar != .link)
        case (.int8, .int(let v)), (.int16, .int(let v)), (.int32, .int(let v)), (.int64, .int(let v)):
            #expect(try view.int64(at: i, type: type.scalar, optional: type.isOptional) == v)
        case (.double, .double(let v)):
            #expect(try view.double(at: i, optional: type.isOptional)?.bitPattern == v.bitPattern)
        case (.float, .float(let v)):
            let read = try #require(try view.double(at: i, optional: type.isOptional))
            #expect(read.isNaN ? v.isNaN : read == Double(v))
        case (.string, .string(let v)): #expect(try view.string(at: i, optional: type.isOptional) == v)
        case (.bool, .bool(let v)): #expect(try view.bool(at: i, optional: type.isOptional) == v)
        case (.link, .link(let v)): #expect(try view.link(at: i) == v)
        default: break
        }
    }

    @Test("Reading one column does not look at the others; offset widths 1, 2 and 4")
    func columnIsolationAndOffsetWidths() throws {
        let types = [ColumnType(.data), ColumnType(.int64), ColumnType(.string), ColumnType(.int32, optional: true)]
        let big = Data(repeating: 0x41, count: 100_000)
        var bytes = encodeRow([.data(big), .int(42), .string(String(repeating: "s", count: 70_000)), .int(7)], types)
        #expect(bytes[2] == 4, "data over 64 KiB needs 4-byte offsets")
        let header = 3 + 4 * 4
        try bytes.withUnsafeBytes { raw in
            let view = try RowView(raw)
            let column = try #require(view.columnBytes(1))
            #expect(column.baseAddress == raw.baseAddress! + header + 100_000 && column.count == 8)
            #expect(view.columnBytes(2)?.count == 70_000 && view.columnBytes(4) == nil && view.columnBytes(-1) == nil)
        }
        // Scribble over the large columns: the small ones still read, the string no longer does.
        for i in header..<(header + 100_000) { bytes[i] = 0xFF }
        for i in (header + 100_008)..<(header + 170_008) { bytes[i] = 0xFF }
        try bytes.withUnsafeBytes { raw in
            let view = try RowView(raw)
            #expect(try view.int64(at: 1, type: .int64) == 42)
            #expect(try view.int64(at: 3, type: .int32) == 7)
            #expect(thrownError { _ = try view.string(at: 2, optional: false) }?.code == .corrupted)
        }
        // Width follows the data length: <= 255 -> 1, <= 65535 -> 2, else 4.
        for (length, width) in [(0, 1), (255, 1), (256, 2), (65_535, 2), (65_536, 4), (300_000, 4)] {
            let bytes = encodeRow([.data(Data(repeating: 9, count: length))], [ColumnType(.data)])
            #expect(bytes[2] == UInt8(width) && bytes.count == 3 + width + length, "length \(length)")
            #expect(try decodeRow(bytes, [ColumnType(.data)]) == [.data(Data(repeating: 9, count: length))])
        }
    }

    @Test("Columns a row does not store read as the type's default")
    func missingColumnsGiveDefaults() throws {
        let bytes = encodeRow([.int(1)], [ColumnType(.int64)])
        let types = [ColumnType(.int64)] + allColumnTypes
        let decoded = try decodeRow(bytes, types)
        #expect(decoded[0] == .int(1))
        for (type, value) in zip(types.dropFirst(), decoded.dropFirst()) {
            #expect(value == type.defaultValue, "\(type)")
            if type.isOptional && type.collection == .single { #expect(value == .null) }
        }
        #expect(ColumnType(.string).defaultValue == .string("") && ColumnType(.int8, .map).defaultValue == .map([]))
        #expect(ColumnType(.date).defaultValue == .date(Date(timeIntervalSinceReferenceDate: 0)))
        try bytes.withUnsafeBytes { raw in
            let view = try RowView(raw)
            #expect(try view.int64(at: 5, type: .int32) == nil && view.columnBytes(5) == nil)
            #expect(try view.int64(at: 5, type: .int32, optional: false) == 0)
            #expect(try view.double(at: 5) == nil && view.double(at: 5, optional: false) == 0)
            #expect(try view.bool(at: 5) == nil && view.bool(at: 5, optional: false) == false)
            #expect(try view.string(at: 5, optional: false) == "" && view.string(at: 5, optional: true) == nil)
            #expect(try view.link(at: 5) == nil && view.links(at: 5, type: ColumnType(.link, .list)) == [])
        }
    }

    @Test("Validation rejects wrong types, nulls, out-of-range integers and duplicate keys")
    func validationErrors() throws {
        func failure(_ value: Value, _ type: ColumnType) -> StorageError? {
            thrownError { _ = try RowEncoder.validate(value, for: type, column: "age") }
        }
        let wrongType = try #require(failure(.string("x"), ColumnType(.int64)))
        #expect(
            wrongType.code == .invalidValue && wrongType.message.contains("'age'")
                && wrongType.message.contains("string"))
        #expect(failure(.int(1), ColumnType(.int64, .list))?.code == .invalidValue)
        #expect(failure(.list([.int(1)]), ColumnType(.int64, .set))?.code == .invalidValue)
        #expect(failure(.double(1), ColumnType(.float))?.code == .invalidValue)
        let null = try #require(failure(.null, ColumnType(.string)))
        #expect(null.code == .invalidValue && null.message.contains("null"))
        #expect(failure(.list([.int(1), .null]), ColumnType(.int64, .list))?.code == .invalidValue)
        #expect(failure(.map([.init("k", .null)]), ColumnType(.string, .map))?.code == .invalidValue)
        #expect(failure(.null, ColumnType(.link)) == nil, "a single link is always optional")
        for (type, bad, good) in [
            (ScalarType.int8, [128, -129], [127, -128]), (.int16, [32_768, -32_769], [32_767]),
            (.int32, [Int64(Int32.max) + 1, Int64(Int32.min) - 1], [Int64(Int32.min)]),
        ] {
            for v in bad {
                let error = try #require(failure(.int(v), ColumnType(type)))
                #expect(error.code == .invalidValue && error.message.contains("\(v)"))
                #expect(failure(.list([.int(v)]), ColumnType(type, .list))?.code == .invalidValue)
            }
            for v in good { #expect(failure(.int(v), ColumnType(type)) == nil) }
        }
        let duplicate = try #require(
            failure(.map([.init("b", .int(1)), .init("a", .int(2)), .init("b", .int(3))]), ColumnType(.int64, .map)))
        #expect(duplicate.code == .invalidValue && duplicate.message.contains("\"b\""))
        // Normalization: maps sorted, sets de-duplicated keeping the first occurrence.
        let map = try RowEncoder.validate(
            .map([.init("b", .int(1)), .init("a", .int(2))]), for: ColumnType(.int64, .map), column: "m")
        #expect(map == .map([.init("a", .int(2)), .init("b", .int(1))]))
        let set = try RowEncoder.validate(
            .set([.int(3), .int(1), .int(3), .null, .null]), for: ColumnType(.int8, .set, optional: true), column: "s")
        #expect(set == .set([.int(3), .int(1), .null]))
        let row = try RowEncoder.validateRow(
            [.int(1), .string("x")],
            columns: [ColumnSchema("a", ColumnType(.int8)), ColumnSchema("b", ColumnType(.string))])
        #expect(row == [.int(1), .string("x")])
        #expect(thrownError { _ = try RowEncoder.validateRow([.int(1)], columns: []) }?.code == .invalidValue)
    }

    @Test("Strings and data are limited to 16 MB")
    func sizeLimits() throws {
        let limit = RowFormat.maxStringBytes
        #expect(limit == 16_777_216)
        let cases: [(Value, Value, ColumnType)] = [
            (
                .string(String(repeating: "a", count: limit + 1)), .string(String(repeating: "a", count: limit)),
                ColumnType(.string)
            ),
            (.data(Data(count: limit + 1)), .data(Data(count: limit)), ColumnType(.data, optional: true)),
        ]
        for (tooBig, atLimit, type) in cases {
            let error = try #require(thrownError { _ = try RowEncoder.validate(tooBig, for: type, column: "blob") })
            #expect(
                error.code == .limitExceeded && error.message.contains("16777217") && error.message.contains("16777216")
            )
            #expect(error.message.contains("'blob'"))
            let inList = thrownError {
                _ = try RowEncoder.validate(.list([tooBig]), for: ColumnType(type.scalar, .list), column: "l")
            }
            #expect(inList?.code == .limitExceeded)
            let accepted = try RowEncoder.validate(atLimit, for: type, column: "blob")
            #expect(try decodeRow(encodeRow([accepted], [type]), [type]) == [atLimit])
        }
        let key = String(repeating: "k", count: limit + 1)
        let keyError = thrownError {
            _ = try RowEncoder.validate(.map([.init(key, .int(1))]), for: ColumnType(.int64, .map), column: "m")
        }
        #expect(keyError?.code == .limitExceeded)
    }

    @Test("Malformed headers throw .corrupted")
    func malformedHeaders() {
        let cases: [[UInt8]] = [
            [], [1, 0], [1, 0, 3, 0], [1, 0, 0, 0], [1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0],  // short, bad widths
            [0x01, 0x10, 1] + [UInt8](repeating: 0, count: 4097),  // 4097 columns
            [2, 0, 1, 5, 4] + [UInt8](repeating: 0, count: 5),  // ends decrease
            [1, 0, 1, 9, 0, 0],  // end past the buffer
            [2, 0, 2, 1, 0],  // end table truncated
        ]
        for bytes in cases {
            let error = bytes.withUnsafeBytes { raw in thrownError { _ = try RowView(raw) } }
            #expect(error?.code == .corrupted, "\(bytes.prefix(12))")
        }
        // A longer buffer is fine: the row ends at its last column.
        let row = encodeRow([.int(5)], [ColumnType(.int32)]) + [0xAA, 0xBB]
        row.withUnsafeBytes { raw in #expect((try? RowView(raw))?.encodedLength == row.count - 2) }
    }

    @Test("Every truncation of a valid row, and of each column, decodes or throws .corrupted")
    func truncations() throws {
        var rng = SplitMix64(seed: 42)
        let values = try allColumnTypes.map { try RowEncoder.validate(randomValue($0, &rng), for: $0, column: "c") }
        let bytes = encodeRow(values, allColumnTypes)
        for length in 0..<bytes.count {
            expectDecodesOrCorrupted(Array(bytes[0..<length]), allColumnTypes, "prefix \(length)")
        }
        try bytes.withUnsafeBytes { raw in
            let view = try RowView(raw)
            for (i, type) in allColumnTypes.enumerated() {
                let column = Array(try #require(view.columnBytes(i)))
                for length in 0..<column.count {
                    let prefix = Array(column[0..<length])  // its own allocation, so overreads are real overreads
                    prefix.withUnsafeBytes { raw in
                        if let error = thrownError({ _ = try RowDecoding.column(raw, type: type) }) {
                            #expect(error.code == .corrupted)
                        }
                    }
                }
            }
        }
    }

    @Test("Random byte mutations and wrong schemas decode or throw .corrupted")
    func mutations() throws {
        var rng = SplitMix64(seed: testSeed("mutations"))
        var pool: [([ColumnType], [UInt8])] = []
        for _ in 0..<200 {
            let (types, values) = try randomRow(&rng)
            pool.append((types, encodeRow(values, types)))
        }
        for iteration in 0..<25_000 {
            var (types, bytes) = pool[Int(rng.next() % UInt64(pool.count))]
            switch rng.next() % 8 {
            case 0: types = (0..<types.count).map { _ in randomType(&rng) }  // read with the wrong schema
            case 1: bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count + 1))))
            default:
                for _ in 0...(rng.next() % 3) where !bytes.isEmpty {
                    let at = Int(rng.next() % UInt64(bytes.count))
                    bytes[at] =
                        rng.next() % 3 == 0 ? [0, 1, 0xFF][Int(rng.next() % 3)] : UInt8(truncatingIfNeeded: rng.next())
                }
            }
            expectDecodesOrCorrupted(bytes, types, "iteration \(iteration)")
        }
    }
}

// MARK: - Helpers

/// Helpers are members (not top-level functions) so they cannot collide with other test files.
extension RowEncodingTests {
    /// Every column type: 15 scalars x 4 collection kinds x optional or not.
    private static let columnTypes: [ColumnType] = ScalarType.allCases.flatMap { scalar in
        CollectionKind.allCases.flatMap { kind in [false, true].map { ColumnType(scalar, kind, optional: $0) } }
    }

    /// ``columnTypes``, for instance methods.
    var allColumnTypes: [ColumnType] { Self.columnTypes }

    func encodeRow(_ values: [Value], _ types: [ColumnType]) -> [UInt8] {
        var buffer: [UInt8] = []
        RowEncoder.encode(values, types: types, into: &buffer)
        return buffer
    }

    func decodeRow(_ bytes: [UInt8], _ types: [ColumnType]) throws(StorageError) -> [Value] {
        let result: Result<[Value], StorageError> = bytes.withUnsafeBytes { raw in
            do throws(StorageError) {
                let view = try RowView(raw)
                return .success(
                    try types.indices.map { i throws(StorageError) in try view.value(at: i, type: types[i]) })
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The error `body` throws, or nil.
    func thrownError(_ body: () throws -> Void) -> StorageError? {
        do {
            try body()
            return nil
        } catch let error as StorageError {
            return error
        } catch {
            Issue.record("expected a StorageError, got \(error)")
            return nil
        }
    }

    /// Equality that compares floating-point values and dates by bit pattern (so NaN equals itself).
    func sameBits(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.float(let x), .float(let y)): return x.bitPattern == y.bitPattern
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.date(let x), .date(let y)):
            return x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        case (.list(let x), .list(let y)), (.set(let x), .set(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { sameBits($0, $1) }
        case (.map(let x), .map(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && sameBits($0.value, $1.value) }
        default: return a == b
        }
    }

    /// Hand-picked values of each scalar type, extremes included.
    func samples(_ scalar: ScalarType) -> [Value] {
        switch scalar {
        case .bool: [.bool(false), .bool(true)]
        case .int8: [Int8.min, -1, 0, 1, Int8.max].map { .int(Int64($0)) }
        case .int16: [Int16.min, -1, 0, 300, Int16.max].map { .int(Int64($0)) }
        case .int32: [Int32.min, -1, 0, 70_000, Int32.max].map { .int(Int64($0)) }
        case .int64: [Int64.min, -1, 0, 1 << 40, Int64.max].map { .int($0) }
        case .float:
            [0, -0.0, 1.5, .nan, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude].map {
                .float($0)
            }
        case .double:
            [0, -0.0, -2.25, .nan, Double(nan: 7, signaling: false), .infinity, -.infinity, .ulpOfOne].map {
                .double($0)
            }
        case .string:
            ["", "a", "héllo wörld", "日本語テキスト", "🎉👩‍👩‍👧‍👦", "e\u{301}", String(repeating: "x", count: 300)].map {
                .string($0)
            }
        case .data: [Data(), Data([0]), Data([0xFF, 0x00, 0x80]), Data(repeating: 7, count: 257)].map { .data($0) }
        case .date: [0, -1e9, 1e9 + 0.125, .infinity, .nan].map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .uuid:
            [
                UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
            ]
            .map { .uuid($0) }
        case .objectId:
            [ObjectIDBytes(high: 0, low: 0), ObjectIDBytes(high: .max, low: 1), ObjectIDBytes(high: 0x0102, low: .max)]
                .map { .objectId($0) }
        case .decimal128: [RowFormat.decimalZero, Decimal128Bits(low: .max, high: 1)].map { .decimal128($0) }
        case .link: [Int64.min, 0, 1, Int64.max].map { .link(ObjectKey($0)) }
        case .mixed:
            [ScalarType.bool, .int64, .float, .double, .string, .data, .date, .uuid, .objectId, .decimal128].flatMap {
                samples($0).prefix(2)
            } + [
                .typedLink(table: "Dog", key: ObjectKey(3)), .typedLink(table: "日本", key: ObjectKey(Int64.min)),
                .typedLink(table: String(repeating: "t", count: 255), key: ObjectKey(Int64.max)),
            ]
        }
    }

    func randomString(_ rng: inout SplitMix64) -> String {
        let pools: [ClosedRange<UInt32>] = [
            0x20...0x7E, 0xA0...0x24F, 0x3040...0x30FF, 0x1F300...0x1FAFF, 0x300...0x36F,
        ]
        let length = rng.next() % 16 == 0 ? Int(rng.next() % 400) : Int(rng.next() % 12)
        var s = String.UnicodeScalarView()
        for _ in 0..<length {
            let pool = pools[Int(rng.next() % UInt64(pools.count))]
            s.append(Unicode.Scalar(UInt32.random(in: pool, using: &rng))!)
        }
        return String(s)
    }

    func randomScalar(_ scalar: ScalarType, _ rng: inout SplitMix64) -> Value {
        if rng.next() % 4 == 0 { return samples(scalar).randomElement(using: &rng)! }
        let bits = rng.next()
        switch scalar {
        case .bool: return .bool(bits & 1 == 1)
        case .int8: return .int(Int64(Int8(truncatingIfNeeded: bits)))
        case .int16: return .int(Int64(Int16(truncatingIfNeeded: bits)))
        case .int32: return .int(Int64(Int32(truncatingIfNeeded: bits)))
        case .int64: return .int(Int64(bitPattern: bits))
        case .float: return .float(Float(bitPattern: UInt32(truncatingIfNeeded: bits)))
        case .double: return .double(Double(bitPattern: bits))
        case .string: return .string(randomString(&rng))
        case .data: return .data(Data((0..<Int(bits % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(Int32(truncatingIfNeeded: bits)) / 8))
        case .uuid: return .uuid(UUID())
        case .objectId: return .objectId(ObjectIDBytes(high: bits, low: UInt32(truncatingIfNeeded: rng.next())))
        case .decimal128: return .decimal128(Decimal128Bits(low: bits, high: rng.next()))
        case .link: return .link(ObjectKey(Int64(bitPattern: bits >> (bits % 64))))
        case .mixed:
            let choices: [ScalarType] = [
                .bool, .int64, .float, .double, .string, .data, .date, .uuid, .objectId, .decimal128,
            ]
            if bits % 11 == 10 {
                return .typedLink(table: "T\(bits % 5)", key: ObjectKey(Int64(bitPattern: rng.next())))
            }
            return randomScalar(choices[Int(bits % 10)], &rng)
        }
    }

    /// A random value valid for `type` (before normalization).
    func randomValue(_ type: ColumnType, _ rng: inout SplitMix64) -> Value {
        func element() -> Value {
            type.isOptional && rng.next() % 4 == 0 ? .null : randomScalar(type.scalar, &rng)
        }
        switch type.collection {
        case .single: return element()
        case .list: return .list((0..<Int(rng.next() % 7)).map { _ in element() })
        case .set: return .set((0..<Int(rng.next() % 7)).map { _ in element() })
        case .map:
            var keys = Set<String>()
            for _ in 0..<Int(rng.next() % 6) { keys.insert(randomString(&rng)) }
            return .map(keys.shuffled(using: &rng).map { Value.MapEntry($0, element()) })
        }
    }

    func randomType(_ rng: inout SplitMix64) -> ColumnType {
        allColumnTypes[Int(rng.next() % UInt64(allColumnTypes.count))]
    }

    /// A random schema and one validated row for it.
    func randomRow(_ rng: inout SplitMix64) throws -> (types: [ColumnType], values: [Value]) {
        let types = (0..<Int(rng.next() % 10)).map { _ in randomType(&rng) }
        let values = try types.map { try RowEncoder.validate(randomValue($0, &rng), for: $0, column: "c") }
        return (types, values)
    }

    /// Calls every accessor that applies to column `i` of `type`; returns the decoded value.
    @discardableResult
    func readEverything(_ view: RowView, _ i: Int, _ type: ColumnType) throws(StorageError) -> Value {
        _ = view.columnBytes(i)
        _ = try view.links(at: i, type: type)
        _ = try view.collectionCount(at: i, type: type)
        if type.collection == .single {
            switch type.scalar {
            case .int8, .int16, .int32, .int64: _ = try view.int64(at: i, type: type.scalar, optional: type.isOptional)
            case .float, .double, .date: _ = try view.double(at: i, optional: type.isOptional)
            case .string: _ = try view.string(at: i, optional: type.isOptional)
            case .bool: _ = try view.bool(at: i, optional: type.isOptional)
            case .link: _ = try view.link(at: i)
            default: break
            }
        }
        return try view.value(at: i, type: type)
    }

    /// Feeds `bytes` to RowView and every accessor; fails the test on any error but `.corrupted`.
    func expectDecodesOrCorrupted(_ bytes: [UInt8], _ types: [ColumnType], _ comment: Comment) {
        bytes.withUnsafeBytes { raw in
            do throws(StorageError) {
                let view = try RowView(raw)
                for i in 0...(types.count) {  // one past the end: a missing column
                    let type = i < types.count ? types[i] : ColumnType(.string)
                    do throws(StorageError) {
                        try readEverything(view, i, type)
                    } catch {
                        #expect(error.code == .corrupted, comment)
                    }
                }
            } catch {
                #expect(error.code == .corrupted, comment)
            }
        }
    }

    /// Set identity as the encoder defines it (the encoded bytes), for checking de-duplication.
    /// In a mixed set the encoding carries the value's type tag, so a date and a double of the same bits differ.
    func setKey(_ value: Value, mixed: Bool = false) -> [UInt8] {
        if mixed { return encodeRow([value], [ColumnType(.mixed)]) }
        let scalar: ScalarType =
            switch value {
            case .bool: .bool
            case .int: .int64
            case .float: .float
            case .double: .double
            case .string: .string
            case .data: .data
            case .date: .date
            case .uuid: .uuid
            case .objectId: .objectId
            case .decimal128: .decimal128
            case .link, .null: .link
            case .typedLink: .mixed
            case .list, .set, .map: .data
            }
        return encodeRow([value], [ColumnType(scalar, optional: true)])
    }
}
