import Foundation

/// A dynamically typed stored value: what a column of a row holds.
///
/// Integers of every width are carried as `.int(Int64)`; the column's ``ScalarType`` decides the encoded
/// width, and encoding rejects a value out of its range. Collections hold their elements as `Value`s;
/// a map is kept sorted by key so that equal maps encode to equal bytes.
package enum Value: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Float)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case uuid(UUID)
    case objectId(ObjectIDBytes)
    case decimal128(Decimal128Bits)
    case link(ObjectKey)
    /// A link that names its table: the only form of link a `mixed` column holds (its target's class is
    /// not fixed by the schema). Valid in `mixed` columns only.
    case typedLink(table: String, key: ObjectKey)
    case list([Value])
    case set([Value])
    /// Entries sorted by key, keys unique.
    case map([MapEntry])

    package struct MapEntry: Hashable, Sendable {
        package var key: String
        package var value: Value
        package init(_ key: String, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension Value: CustomStringConvertible {
    package var description: String {
        switch self {
        case .null: "null"
        case .bool(let v): "\(v)"
        case .int(let v): "\(v)"
        case .float(let v): "\(v)f"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .data(let v): "<\(v.count) bytes>"
        case .date(let v): "\(v)"
        case .uuid(let v): v.uuidString
        case .objectId(let v): "oid(\(v.high),\(v.low))"
        case .decimal128(let v): "dec(\(v.high),\(v.low))"
        case .link(let k): "->\(k)"
        case .typedLink(let table, let k): "->\(table)/\(k)"
        case .list(let v): "\(v)"
        case .set(let v): "set\(v)"
        case .map(let v): "[" + v.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
        }
    }
}
