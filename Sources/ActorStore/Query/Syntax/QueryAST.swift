import ActorStorePersistence
import Foundation

// The one internal form of a query. All three front ends produce it: the predicate-string parser
// (`PredicateParser`), the type-safe `where { … }` builder (`Query<T>`) and the `#Predicate` translator.
// It names properties, not columns: `QueryPlan` resolves it against a realm's schema, type-checks it,
// picks an index and compiles it into row matchers. Everything here is a plain value and `Sendable`, so a
// query can move with a `FrozenResults` or be rebuilt against another version.

/// A condition on one object of the queried class (or on a `SUBQUERY` variable).
indirect enum QueryPredicate: Hashable, Sendable {
    /// `TRUEPREDICATE` / `FALSEPREDICATE`.
    case constant(Bool)
    case not(QueryPredicate)
    /// All must hold (an empty list is true).
    case and([QueryPredicate])
    /// One must hold (an empty list is false).
    case or([QueryPredicate])
    /// `lhs op rhs`, with string options and an explicit collection quantifier (`ANY`, `ALL`, `NONE`; nil
    /// means implicit `ANY` when a side crosses a to-many relationship).
    case comparison(QueryComparison)
    /// `value BETWEEN {lower, upper}`: lower ≤ value ≤ upper.
    case between(QueryExpression, lower: QueryExpression, upper: QueryExpression, quantifier: QueryQuantifier?)
}

/// `lhs op rhs` with its modifiers.
struct QueryComparison: Hashable, Sendable {
    var lhs: QueryExpression
    var op: QueryOperator
    var rhs: QueryExpression
    var options: QueryOptions = []
    var quantifier: QueryQuantifier? = nil

    init(
        _ lhs: QueryExpression, _ op: QueryOperator, _ rhs: QueryExpression, options: QueryOptions = [],
        quantifier: QueryQuantifier? = nil
    ) {
        self.lhs = lhs
        self.op = op
        self.rhs = rhs
        self.options = options
        self.quantifier = quantifier
    }
}

/// A comparison operator. Raw values are the predicate-string spelling.
enum QueryOperator: String, Hashable, Sendable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    /// `?` matches one character, `*` any run of characters.
    case like = "LIKE"
    /// `lhs IN {a, b}`, `lhs IN %@` (an array), or `value IN collectionKeyPath`: lhs equals one of rhs.
    case `in` = "IN"

    /// Whether the operator compares strings (and binary data) only.
    var isStringOperator: Bool {
        switch self {
        case .beginsWith, .endsWith, .contains, .like: true
        default: false
        }
    }
}

/// String comparison modifiers: `[c]`, `[d]`, `[cd]`.
struct QueryOptions: OptionSet, Hashable, Sendable {
    let rawValue: UInt8
    init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `[c]`: full Unicode case folding (`ß` matches `SS`).
    static let caseInsensitive = QueryOptions(rawValue: 1)
    /// `[d]`: ignores diacritics (`é` matches `e`).
    static let diacriticInsensitive = QueryOptions(rawValue: 2)
}

/// How a comparison over a to-many key path combines its elements.
enum QueryQuantifier: String, Hashable, Sendable {
    /// At least one element matches (also `SOME`, and the default).
    case any = "ANY"
    /// Every element matches (true for an empty collection).
    case all = "ALL"
    /// No element matches.
    case none = "NONE"
}

/// A value in a comparison: a key path, a constant, a list of constants, or a subquery count.
indirect enum QueryExpression: Hashable, Sendable {
    case keyPath(QueryKeyPath)
    /// A constant scalar (`.null` for `nil`). Integers of every width are `.int`; dates `.date`.
    case value(Value)
    /// A managed object given as an argument (`owner == %@`): matched by identity.
    case object(className: String, key: ObjectKey)
    /// `{a, b, c}` or an array argument: the right side of `IN`, or `BETWEEN`'s bounds.
    case list([QueryExpression])
    /// `SUBQUERY(collection, $variable, predicate).@count`: how many elements of `collection` match.
    case subqueryCount(collection: QueryKeyPath, variable: String, predicate: QueryPredicate)
}

/// A path from the object queried (or from a `SUBQUERY` variable) through its properties.
struct QueryKeyPath: Hashable, Sendable {
    /// Nil for the object queried; the variable's name (with its `$`) inside a `SUBQUERY`.
    var variable: String?
    var components: [Component]
    /// Where the path starts in the predicate string, for error messages (not part of equality).
    var position: Int?

    init(variable: String? = nil, _ components: [Component], position: Int? = nil) {
        self.variable = variable
        self.components = components
        self.position = position
    }

    /// A path of property names: `QueryKeyPath("owner", "name")`.
    init(_ names: String...) {
        self.init(names.map(Component.property))
    }

    enum Component: Hashable, Sendable {
        /// A property by name (through to-one links, lists, sets, maps and linking objects).
        case property(String)
        /// `@count` (also `@size`): the number of elements of a collection.
        case count
        /// `@min`, `@max`, `@sum`, `@avg` of a collection of numbers or dates, or of one property of a
        /// collection of objects (`dogs.@avg.age`).
        case min, max, sum, avg
        /// `map.@allKeys`, `map.@allValues`.
        case allKeys, allValues
        /// `map['key']`: the value of one key of a map (none when the key is absent).
        case mapKey(String)
    }

    static func == (a: Self, b: Self) -> Bool { a.variable == b.variable && a.components == b.components }

    func hash(into hasher: inout Hasher) {
        hasher.combine(variable)
        hasher.combine(components)
    }
}

// MARK: Printing

// A query prints as a predicate string the parser reads back to the same query (objects print as a
// placeholder that does not parse). Used by `explain`, error messages, and the differential tests.

extension QueryPredicate: CustomStringConvertible {
    var description: String {
        switch self {
        case .constant(let value): value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .not(let inner): "NOT (\(inner))"
        case .and(let parts): parts.isEmpty ? "TRUEPREDICATE" : parts.map { "(\($0))" }.joined(separator: " AND ")
        case .or(let parts): parts.isEmpty ? "FALSEPREDICATE" : parts.map { "(\($0))" }.joined(separator: " OR ")
        case .comparison(let c): c.description
        case .between(let value, let lower, let upper, let quantifier):
            (quantifier.map { "\($0.rawValue) " } ?? "") + "\(value) BETWEEN {\(lower), \(upper)}"
        }
    }
}

extension QueryComparison: CustomStringConvertible {
    var description: String {
        var options = ""
        if !self.options.isEmpty {
            options =
                "[" + (self.options.contains(.caseInsensitive) ? "c" : "")
                + (self.options.contains(.diacriticInsensitive) ? "d" : "") + "]"
        }
        return (quantifier.map { "\($0.rawValue) " } ?? "") + "\(lhs) \(op.rawValue)\(options) \(rhs)"
    }
}

extension QueryExpression: CustomStringConvertible {
    var description: String {
        switch self {
        case .keyPath(let path): path.description
        case .value(let value): Self.literal(value)
        case .object(let className, let key): "<\(className) \(key.rawValue)>"
        case .list(let items): "{" + items.map(\.description).joined(separator: ", ") + "}"
        case .subqueryCount(let collection, let variable, let predicate):
            "SUBQUERY(\(collection), \(variable), \(predicate)).@count"
        }
    }

    /// The predicate-string literal for a constant.
    static func literal(_ value: Value) -> String {
        switch value {
        case .null: return "nil"
        case .bool(let v): return v ? "true" : "false"
        case .int(let v): return String(v)
        case .double(let v): return v.isFinite ? "\(v)" : (v.isNaN ? "nan" : (v > 0 ? "inf" : "-inf"))
        case .float(let v): return Self.literal(.double(Double(v)))
        case .string(let v):
            return "'" + v.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
        case .data(let v): return "B64\"\(v.base64EncodedString())\""
        case .date(let v):
            // Realm's timestamp literal: T<seconds>:<nanoseconds> since 1970.
            let interval = v.timeIntervalSince1970
            // A non-finite date has no literal (and converting it to Int64 would trap).
            guard interval.isFinite else { return "<date \(interval)>" }
            var seconds = interval.rounded(.down)
            var nanos = ((interval - seconds) * 1e9).rounded()
            if nanos >= 1e9 {  // within half a nanosecond of the next second
                seconds += 1
                nanos = 0
            }
            if let s = Int64(exactly: seconds), let n = Int64(exactly: nanos) { return "T\(s):\(n)" }
            // Beyond Int64 seconds (no fraction at that magnitude): all the digits, which the parser reads.
            return "T" + String(format: "%.0f", seconds) + ":0"
        case .uuid(let v): return "uuid(\(v.uuidString))"
        case .objectId(let v): return "oid(\(ObjectId(storage: v).stringValue))"
        case .decimal128(let v): return "decimal128(\(Decimal128(bits: v)))"
        case .link(let key): return "<link \(key.rawValue)>"
        case .typedLink(let table, let key): return "<link \(table) \(key.rawValue)>"
        case .list(let items), .set(let items): return "{" + items.map(literal).joined(separator: ", ") + "}"
        case .map: return "<map>"
        }
    }
}

extension QueryKeyPath: CustomStringConvertible {
    var description: String {
        var parts: [String] = variable.map { [$0] } ?? []
        for component in components {
            switch component {
            case .property(let name): parts.append(name)
            case .count: parts.append("@count")
            case .min: parts.append("@min")
            case .max: parts.append("@max")
            case .sum: parts.append("@sum")
            case .avg: parts.append("@avg")
            case .allKeys: parts.append("@allKeys")
            case .allValues: parts.append("@allValues")
            case .mapKey(let key):
                let quoted = QueryExpression.literal(.string(key))
                if parts.isEmpty { parts.append("[\(quoted)]") } else { parts[parts.count - 1] += "[\(quoted)]" }
            }
        }
        return parts.joined(separator: ".")
    }
}
