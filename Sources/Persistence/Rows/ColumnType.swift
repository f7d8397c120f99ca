/// The element type of a column, as stored.
///
/// Raw values are part of the file format: never renumber a case.
package enum ScalarType: UInt8, Sendable, Hashable, CaseIterable {
    case bool = 1
    case int8 = 2
    case int16 = 3
    case int32 = 4
    case int64 = 5
    case float = 6
    case double = 7
    case string = 8
    case data = 9
    case date = 10
    case uuid = 11
    case objectId = 12
    case decimal128 = 13
    /// An ``ObjectKey`` of the column's target table.
    case link = 14
    /// A value of any of the types above except the narrow integers (Realm's mixed type, `AnyRealmValue`):
    /// each value carries its own type tag, and a link names its table (see ``RowFormat``). Added in
    /// format 2 without a version change: an engine that predates it refuses the file when it reads the
    /// schema (an unknown column type code), so it never misreads a mixed column.
    case mixed = 15

    /// The encoded width of one value, or nil for variable-width types (string, data).
    package var fixedWidth: Int? {
        switch self {
        case .bool, .int8: 1
        case .int16: 2
        case .int32, .float: 4
        case .int64, .double, .date, .link: 8
        case .objectId: 12
        case .uuid, .decimal128: 16
        case .string, .data, .mixed: nil
        }
    }
}

/// Whether a column holds one value or a collection of them. Raw values are part of the file format.
package enum CollectionKind: UInt8, Sendable, Hashable, CaseIterable {
    case single = 0
    case list = 1
    case set = 2
    /// A dictionary with `String` keys.
    case map = 3
}

/// The full type of a column: element type, collection kind, and whether elements may be null.
///
/// For `single` columns `isOptional` says whether the value may be null (a `link` is always optional, and so
/// is a map's link value, which becomes null when its target is deleted; a `mixed` value always is).
/// For collections it says whether *elements* may be null; a collection itself is never null (it is empty).
package struct ColumnType: Hashable, Sendable, CustomStringConvertible {
    package var scalar: ScalarType
    package var collection: CollectionKind
    package var isOptional: Bool

    package init(_ scalar: ScalarType, _ collection: CollectionKind = .single, optional: Bool = false) {
        self.scalar = scalar
        self.collection = collection
        // A mixed value may always be null (AnyRealmValue's `.none`).
        self.isOptional =
            optional || scalar == .mixed || (scalar == .link && (collection == .single || collection == .map))
    }

    package var description: String {
        let base = "\(scalar)\(isOptional ? "?" : "")"
        switch collection {
        case .single: return base
        case .list: return "list<\(base)>"
        case .set: return "set<\(base)>"
        case .map: return "map<string, \(base)>"
        }
    }
}
