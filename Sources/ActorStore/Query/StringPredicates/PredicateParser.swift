import ActorStorePersistence
import Foundation

// Realm's predicate language, parsed by hand (Linux has no `NSPredicate(format:)`) into a `QueryPredicate`.
// The parser checks syntax only: whether a property exists or a comparison fits its types is decided later,
// when the query is resolved against a schema.
//
// Grammar (keywords are case-insensitive; whitespace separates tokens anywhere):
//
//     predicate   := or
//     or          := and (("OR" | "||") and)*                  a chain becomes one .or([...])
//     and         := not (("AND" | "&&") not)*                 a chain becomes one .and([...])
//     not         := ("NOT" | "!")* primary
//     primary     := "(" predicate ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
//     comparison  := quantifier? expression operator modifier? expression
//                  | quantifier? expression "BETWEEN" ("{" constant "," constant "}" | argument)
//     quantifier  := "ANY" | "SOME" | "ALL" | "NONE"
//     operator    := "==" | "=" | "!=" | "<>" | "<" | "<=" | "=<" | ">" | ">=" | "=>"
//                  | "BEGINSWITH" | "ENDSWITH" | "CONTAINS" | "LIKE" | "IN"
//     modifier    := "[c]" | "[d]" | "[cd]" | "[dc]"         (after ==, !=, IN and the string operators)
//     expression  := keyPath | constant | "{" (constant ("," constant)*)? "}" | subquery
//     keyPath     := (name | "$variable" | "%K" | "@operator") ("." (name | "@operator") | "[" key "]")*
//     subquery    := "SUBQUERY" "(" keyPath "," "$variable" "," predicate ")" "." "@count"
//     constant    := literal | argument
//     argument    := "%@" | "%d" | "%i" | "%f" | "%s" | "$0" | "$1" | ...
//
// Literals are exactly what `QueryExpression.literal(_:)` prints: integers (`-12`, `0x1F`), floating point
// (`1.5`, `-2e-3`, `.5`, `nan`, `inf`, `-inf`), strings (`'a'`, `"a"`, escapes `\'` `\"` `\\` `\n` `\t` `\r`
// `\0`), `true`/`false`/`yes`/`no`, `nil`/`null`, `uuid(…)`, `oid(24 hex digits)`, `T<seconds>:<nanos>`
// timestamps, `B64"…"` data and `decimal128(…)`.

/// Parses Realm predicate strings such as `"age < 2 AND name BEGINSWITH[c] 'b'"` into a ``QueryPredicate``.
///
/// - Precedence: `NOT` binds tighter than `AND`, which binds tighter than `OR`. A chain `a AND b AND c` is one
///   `.and([a, b, c])`; a parenthesised group stays its own node, so `QueryPredicate.description` (which
///   parenthesises every child) reads back to the same tree.
/// - Arguments: `%@` (and its aliases `%d`, `%i`, `%f`, `%s`) and `%K` take the next argument in order;
///   `$0`, `$1`, … name an argument by index, independently of the `%@` counter. A `$name` that is not all
///   digits is a `SUBQUERY` variable and must be declared by an enclosing `SUBQUERY`. `%K` takes a `String`
///   argument holding a key path (`"owner.name"`), which is also how to name a property whose name is a
///   keyword (`and`, `in`, `no`, …). Giving fewer arguments than the predicate uses, or more, is an error
///   (more usually means a placeholder was quoted: `'%@'` is a plain string).
/// - Limits: inputs over 1 MiB of UTF-8 are rejected, and so is nesting deeper than 200 levels, counted two
///   ways: parentheses and `SUBQUERY`s enclosing a point, and the height of the tree (each `NOT`, AND/OR
///   group and `SUBQUERY` adds one). The parser itself does not recurse (its open groups are on the heap), so
///   no input can exhaust its stack; the height limit bounds the recursion of everything that walks the tree
///   later (`description`, the resolver). Memory stays proportional to the input. Every failure throws
///   `RealmError.invalidQuery`; nothing traps.
/// - Positions: error messages name a 0-based offset in the input's UTF-8 bytes, with an excerpt in which
///   `▸` marks the offset.
enum PredicateParser {
    /// The longest input accepted, in UTF-8 bytes.
    static let maximumLength = 1 << 20
    /// The deepest nesting of parentheses and `SUBQUERY`s, the greatest height of a predicate tree, and the
    /// deepest nesting of arrays given as arguments.
    static let maximumDepth = 200
    /// The most elements an array (or other sequence) given as an argument may have.
    static let maximumArgumentElements = 10_000_000

    /// Parses a Realm predicate string with its arguments.
    static func parse(_ format: String, _ arguments: [Any]) throws(RealmError) -> QueryPredicate {
        let bytes = try checkedBytes(format, subject: "predicate")
        var parser = try Parser(bytes, arguments, subject: "predicate")
        return try parser.parsePredicateString()
    }

    /// Parses a key path alone (for `sorted(byKeyPath:)`, `distinct(by:)`, `min(ofProperty:)`): `owner.name`.
    ///
    /// Any name is a property here, keywords included (`"no"` is the property `no`); variables, placeholders
    /// and `SUBQUERY` are not allowed.
    static func parseKeyPath(_ string: String) throws(RealmError) -> QueryKeyPath {
        let bytes = try checkedBytes(string, subject: "key path")
        var parser = try Parser(bytes, [], subject: "key path")
        return try parser.parseKeyPathString()
    }
}

// MARK: Errors

extension PredicateParser {
    /// The input's UTF-8 bytes, or an error when it is too long.
    private static func checkedBytes(_ string: String, subject: String) throws(RealmError) -> [UInt8] {
        let length = string.utf8.count
        guard length <= maximumLength else {
            throw RealmError(
                .invalidQuery,
                "The \(subject) is \(length) bytes long; the limit is \(maximumLength) bytes (1 MiB). Use "
                    + "arguments (IN %@ with an array) instead of spelling long lists out.")
        }
        return Array(string.utf8)
    }

    /// A syntax error at a byte offset, with an excerpt of the input around it.
    static func syntaxError(
        _ message: String, at offset: Int, in bytes: [UInt8], subject: String
    ) -> RealmError {
        RealmError(
            .invalidQuery,
            "Invalid \(subject) at offset \(offset): \(message) (near \"\(excerpt(bytes, at: offset))\").")
    }

    /// Up to about 24 bytes either side of `offset`, cut at character boundaries, with `▸` at `offset`.
    private static func excerpt(_ bytes: [UInt8], at offset: Int) -> String {
        let radius = 24
        let offset = min(max(offset, 0), bytes.count)
        var lower = max(0, offset - radius)
        while lower > 0, lower < bytes.count, bytes[lower] & 0xC0 == 0x80 { lower -= 1 }
        var upper = min(bytes.count, offset + radius)
        while upper < bytes.count, bytes[upper] & 0xC0 == 0x80 { upper += 1 }
        func text(_ range: Range<Int>) -> String {
            String(decoding: bytes[range].map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
        }
        return (lower > 0 ? "…" : "") + text(lower..<offset) + "▸" + text(offset..<upper)
            + (upper < bytes.count ? "…" : "")
    }
}
