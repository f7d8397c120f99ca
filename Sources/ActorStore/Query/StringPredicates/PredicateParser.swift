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

    /// Converts one Swift argument (`%@`) into a query constant.
    ///
    /// `nil`, `NSNull` and empty optionals become `.value(.null)`; the persistable scalars (integers, `Float`,
    /// `Double`, `Bool`, `String`, `Data`, `Date`, `UUID`, ``ObjectId``, ``Decimal128``, ``PersistableEnum``
    /// values and their optionals) their stored value; a Foundation `Decimal` a decimal128; a managed object
    /// or a ``Frozen`` object `.object`; an array, set or other sequence a `.list` of its converted elements.
    /// Anything else (an unmanaged object, a dictionary, a range, an unsupported type) throws
    /// `RealmError.invalidQuery` naming the type.
    static func argument(_ value: Any) throws(RealmError) -> QueryExpression {
        try convert(value, depth: 0)
    }
}

// MARK: Arguments

/// Reads an `Optional` held in an `Any` without knowing its wrapped type.
private protocol OptionalArgument {
    /// The wrapped value, or nil for `.none`.
    var wrappedArgument: Any? { get }
}

extension Optional: OptionalArgument {
    fileprivate var wrappedArgument: Any? {
        switch self {
        case .some(let wrapped): wrapped
        case .none: nil
        }
    }
}

/// Marks dictionaries, which are sequences of pairs but not valid arguments.
private protocol DictionaryArgument {}
extension Dictionary: DictionaryArgument {}

/// Reads the bounds of a `ClosedRange` (for `BETWEEN %@`) without knowing its bound type.
private protocol ClosedRangeArgument {
    /// The lower and upper bounds.
    var argumentBounds: (lower: Any, upper: Any) { get }
}

extension ClosedRange: ClosedRangeArgument {
    fileprivate var argumentBounds: (lower: Any, upper: Any) { (lowerBound, upperBound) }
}

/// Lets a ``Frozen`` object be a query argument (`owner == %@`) without knowing its type parameter.
protocol FrozenObjectArgument {
    /// The class name of the object's table.
    var queryClassName: String { get }
    /// The object's key in its table.
    var queryObjectKey: ObjectKey { get }
}

extension Frozen: FrozenObjectArgument {
    var queryClassName: String { binding.info.className }
    var queryObjectKey: ObjectKey { key }
}

extension PredicateParser {
    private static let supportedArguments =
        "supported are nil, Bool, integers, Float, Double, Decimal, Decimal128, String, Data, Date, UUID, "
        + "ObjectId, PersistableEnum values, managed or frozen objects, and arrays or sets of these"

    /// `argument(_:)`, with the nesting depth of arrays so far.
    private static func convert(_ value: Any, depth: Int) throws(RealmError) -> QueryExpression {
        if let optional = value as? any OptionalArgument {
            guard let wrapped = optional.wrappedArgument else { return .value(.null) }
            return try convert(wrapped, depth: depth)
        }
        if value is NSNull { return .value(.null) }
        if let expression = value as? QueryExpression { return expression }
        if let stored = value as? Value { return .value(stored) }
        if let scalar = value as? any _PersistableScalar { return .value(scalar._rlmToStored.raw) }
        if let mixed = value as? AnyRealmValue { return mixed.queryExpression }
        if let decimal = value as? Decimal {
            guard !decimal.isNaN else {
                throw RealmError(.invalidQuery, "A NaN Decimal cannot be a query argument: Decimal128 has no NaN.")
            }
            return .value(.decimal128(Decimal128(decimal).bits))
        }
        if let object = value as? ObjectBase {
            guard let managed = object._managed else {
                throw RealmError(
                    .invalidQuery,
                    "An unmanaged \(type(of: object)) cannot be a query argument: objects are matched by identity, "
                        + "so add it to a realm first.")
            }
            return .object(className: managed.table.info.className, key: managed.key)
        }
        if let dynamic = value as? DynamicObject { return .object(className: dynamic.className, key: dynamic.key) }
        if let frozen = value as? any FrozenObjectArgument {
            return .object(className: frozen.queryClassName, key: frozen.queryObjectKey)
        }
        if let substring = value as? Substring { return .value(.string(String(substring))) }
        if let integer = value as? any BinaryInteger {
            guard let exact = Int64(exactly: integer) else {
                throw RealmError(
                    .invalidQuery, "The \(type(of: value)) argument \(integer) does not fit in a 64-bit integer.")
            }
            return .value(.int(exact))
        }
        if let number = value as? NSNumber {
            let integer = number.int64Value
            return Double(integer) == number.doubleValue ? .value(.int(integer)) : .value(.double(number.doubleValue))
        }
        if type(of: value) == AnyHashable.self, let hashable = value as? AnyHashable {
            return try convert(hashable.base, depth: depth)
        }
        if value is any RangeExpression {
            throw RealmError(
                .invalidQuery,
                "A range (\(type(of: value))) cannot be a query argument here: use `BETWEEN %@` with a closed "
                    + "range (a...b), or pass an array for IN.")
        }
        if value is any DictionaryArgument {
            throw RealmError(
                .invalidQuery,
                "A dictionary (\(type(of: value))) cannot be a query argument: pass an array of its keys or values.")
        }
        if let sequence = value as? any Sequence { return try convertSequence(sequence, depth: depth + 1) }
        throw RealmError(
            .invalidQuery, "A value of type \(type(of: value)) cannot be a query argument; \(supportedArguments).")
    }

    /// Converts the elements of an array, set or other sequence given as an argument.
    private static func convertSequence<S: Sequence>(_ sequence: S, depth: Int) throws(RealmError) -> QueryExpression {
        guard depth <= maximumDepth else {
            throw RealmError(
                .invalidQuery, "An argument nests arrays deeper than \(maximumDepth) levels; flatten it.")
        }
        var items: [QueryExpression] = []
        for element in sequence {
            guard items.count < maximumArgumentElements else {
                throw RealmError(
                    .invalidQuery,
                    "A \(S.self) argument has more than \(maximumArgumentElements) elements (or never ends).")
            }
            items.append(try convert(element, depth: depth))
        }
        return .list(items)
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
    fileprivate static func syntaxError(
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

// MARK: Tokens

extension PredicateParser {
    /// The reserved words, lowercased. They cannot name a property except after a `.` or through `%K`.
    fileprivate enum Keyword: String, CaseIterable {
        case and, or, not, any, all, between, like, contains, yes, no, null, subquery, nan, inf, infinity
        case someQuantifier = "some"
        case noneQuantifier = "none"
        case inOperator = "in"
        case beginsWith = "beginswith"
        case endsWith = "endswith"
        case truePredicate = "truepredicate"
        case falsePredicate = "falsepredicate"
        case trueLiteral = "true"
        case falseLiteral = "false"
        case nilLiteral = "nil"

        /// The keywords by their packed spelling.
        static let table: [PackedWord: Keyword] = {
            var table: [PackedWord: Keyword] = [:]
            for keyword in allCases {
                var packed = PackedWord()
                for byte in keyword.rawValue.utf8 { _ = packed.append(byte) }
                table[packed] = keyword
            }
            return table
        }()
    }

    /// Up to 16 bytes of an ASCII word, lowercased and packed into two integers: a cheap dictionary key.
    fileprivate struct PackedWord: Hashable {
        var low: UInt64 = 0
        var high: UInt64 = 0
        var count: UInt64 = 0

        /// Appends a byte, lowercased; false when it is not ASCII or the word is full.
        mutating func append(_ byte: UInt8) -> Bool {
            guard byte < 0x80, count < 16 else { return false }
            let lowered = UInt64(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte)
            if count < 8 { low |= lowered << (8 * count) } else { high |= lowered << (8 * (count - 8)) }
            count += 1
            return true
        }
    }

    /// One token and the byte range it was read from.
    fileprivate struct Token {
        /// What the token is.
        enum Kind {
            case end
            /// A name or keyword (the keyword, when it is one).
            case word(Keyword?)
            /// A number, a string, or one of the prefixed literals (`uuid(…)`, `T1:0`, `-inf`, …).
            case literal(Value)
            /// `@count`, `@min`, … (already mapped; `@size` is `.count`).
            case collectionOperator(QueryKeyPath.Component)
            /// `$name`, with its `$`.
            case variable(String)
            /// `$0`, `$1`, …
            case indexedArgument(Int)
            /// `%@` and its aliases.
            case nextArgument
            /// `%K`.
            case keyPathArgument
            case comparison(QueryOperator)
            /// `&&`, `||`, `!`.
            case and, or, not
            case openParen, closeParen, openBrace, closeBrace, openBracket, closeBracket, comma, dot
        }

        var kind: Kind
        var start: Int
        var end: Int
    }

    /// Reads tokens one at a time from UTF-8 bytes (so a bad input fails at its first bad token, without
    /// tokenizing the rest).
    fileprivate struct Lexer {
        let bytes: [UInt8]
        let subject: String
        var index = 0

        init(_ bytes: [UInt8], subject: String) {
            self.bytes = bytes
            self.subject = subject
        }

        /// A syntax error at `offset`.
        func fail(_ message: String, at offset: Int) -> RealmError {
            PredicateParser.syntaxError(message, at: offset, in: bytes, subject: subject)
        }

        /// The byte `offset` bytes after the current one, if any.
        func peek(_ offset: Int) -> UInt8? {
            index + offset < bytes.count ? bytes[index + offset] : nil
        }

        /// The input bytes of `range` as a string.
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }

        /// The next token; `.end` (repeatedly) at the end of the input.
        mutating func next() throws(RealmError) -> Token {
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            let start = index
            guard index < bytes.count else { return Token(kind: .end, start: start, end: start) }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "("): return single(.openParen)
            case UInt8(ascii: ")"): return single(.closeParen)
            case UInt8(ascii: "{"): return single(.openBrace)
            case UInt8(ascii: "}"): return single(.closeBrace)
            case UInt8(ascii: "["): return single(.openBracket)
            case UInt8(ascii: "]"): return single(.closeBracket)
            case UInt8(ascii: ","): return single(.comma)
            case UInt8(ascii: "="):
                switch peek(1) {
                case UInt8(ascii: "="): return double(.comparison(.equal))
                case UInt8(ascii: "<"): return double(.comparison(.lessOrEqual))
                case UInt8(ascii: ">"): return double(.comparison(.greaterOrEqual))
                default: return single(.comparison(.equal))
                }
            case UInt8(ascii: "!"):
                return peek(1) == UInt8(ascii: "=") ? double(.comparison(.notEqual)) : single(.not)
            case UInt8(ascii: "<"):
                switch peek(1) {
                case UInt8(ascii: "="): return double(.comparison(.lessOrEqual))
                case UInt8(ascii: ">"): return double(.comparison(.notEqual))
                default: return single(.comparison(.less))
                }
            case UInt8(ascii: ">"):
                return peek(1) == UInt8(ascii: "=")
                    ? double(.comparison(.greaterOrEqual)) : single(.comparison(.greater))
            case UInt8(ascii: "&"):
                guard peek(1) == UInt8(ascii: "&") else { throw fail("unexpected '&' (use && or AND)", at: start) }
                return double(.and)
            case UInt8(ascii: "|"):
                guard peek(1) == UInt8(ascii: "|") else { throw fail("unexpected '|' (use || or OR)", at: start) }
                return double(.or)
            case UInt8(ascii: "."):
                if let next = peek(1), isDigit(next) { return try number() }
                return single(.dot)
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"): return try number()
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                let string = try quoted(from: start)
                return Token(kind: .literal(.string(string)), start: start, end: index)
            case UInt8(ascii: "@"): return try collectionOperator()
            case UInt8(ascii: "$"): return try dollar()
            case UInt8(ascii: "%"):
                switch peek(1) {
                case UInt8(ascii: "@"), UInt8(ascii: "d"), UInt8(ascii: "i"), UInt8(ascii: "f"), UInt8(ascii: "s"):
                    return double(.nextArgument)
                case UInt8(ascii: "K"): return double(.keyPathArgument)
                default:
                    throw fail("unknown placeholder; use %@ for a value or %K for a key path", at: start)
                }
            default:
                if isWordStart(byte) { return try word() }
                let shown =
                    byte >= 0x21 && byte < 0x7F
                    ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16, uppercase: true))"
                throw fail("unexpected character \(shown)", at: start)
            }
        }

        /// A one-byte token.
        private mutating func single(_ kind: Token.Kind) -> Token {
            index += 1
            return Token(kind: kind, start: index - 1, end: index)
        }

        /// A two-byte token.
        private mutating func double(_ kind: Token.Kind) -> Token {
            index += 2
            return Token(kind: kind, start: index - 2, end: index)
        }

        /// The end of the run of name characters starting at `from`.
        private func wordEnd(from: Int) -> Int {
            var end = from
            while end < bytes.count, isWordChar(bytes[end]) { end += 1 }
            return end
        }

        /// The end of the run of decimal digits starting at `from`.
        private func digitsEnd(from: Int) -> Int {
            var end = from
            while end < bytes.count, isDigit(bytes[end]) { end += 1 }
            return end
        }

        /// The bytes of `range` lowercased, when they are a short ASCII word (keywords are at most 14 bytes).
        func lowercasedWord(_ range: Range<Int>) -> String? {
            guard range.count <= 16 else { return nil }
            var lowered: [UInt8] = []
            lowered.reserveCapacity(range.count)
            for byte in bytes[range] {
                guard byte < 0x80 else { return nil }
                lowered.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte)
            }
            return String(decoding: lowered, as: UTF8.self)
        }

        /// The keyword the bytes of `range` spell, in any case.
        func keyword(_ range: Range<Int>) -> Keyword? {
            guard range.count <= 16 else { return nil }
            var packed = PackedWord()
            for index in range {
                guard packed.append(bytes[index]) else { return nil }
            }
            return Keyword.table[packed]
        }

        /// An integer (decimal or `0x` hex) or floating-point number with an optional sign, or `±inf`.
        private mutating func number() throws(RealmError) -> Token {
            let start = index
            var i = start
            var negative = false
            if bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
                negative = bytes[i] == UInt8(ascii: "-")
                i += 1
            }
            if i < bytes.count, isWordStart(bytes[i]) {
                let end = wordEnd(from: i)
                let word = keyword(i..<end)
                guard word == .inf || word == .infinity else {
                    throw fail("expected a number after '\(negative ? "-" : "+")'", at: start)
                }
                index = end
                return Token(kind: .literal(.double(negative ? -.infinity : .infinity)), start: start, end: end)
            }
            if i + 1 < bytes.count, bytes[i] == UInt8(ascii: "0"),
                bytes[i + 1] == UInt8(ascii: "x") || bytes[i + 1] == UInt8(ascii: "X")
            {
                return try hexNumber(start: start, digits: i + 2, negative: negative)
            }
            var end = digitsEnd(from: i)
            var isFloat = false
            if end + 1 < bytes.count, bytes[end] == UInt8(ascii: "."), isDigit(bytes[end + 1]) {
                isFloat = true
                end = digitsEnd(from: end + 1)
            }
            guard end > i else { throw fail("expected a number", at: start) }
            if end < bytes.count, bytes[end] == UInt8(ascii: "e") || bytes[end] == UInt8(ascii: "E") {
                var exponent = end + 1
                if exponent < bytes.count, bytes[exponent] == UInt8(ascii: "-") || bytes[exponent] == UInt8(ascii: "+")
                {
                    exponent += 1
                }
                let exponentEnd = digitsEnd(from: exponent)
                guard exponentEnd > exponent else {
                    throw fail("malformed number: expected the exponent's digits after 'e'", at: start)
                }
                isFloat = true
                end = exponentEnd
            }
            if end < bytes.count, isWordChar(bytes[end]) || bytes[end] == UInt8(ascii: ".") {
                throw fail("malformed number '\(text(start..<wordEnd(from: end)).prefix(40))'", at: start)
            }
            index = end
            let literal = text(start..<end)
            if isFloat {
                guard let value = Double(literal) else { throw fail("malformed number", at: start) }
                return Token(kind: .literal(.double(value)), start: start, end: end)
            }
            guard let value = Int64(literal) else {
                throw fail(
                    "the integer \(literal.prefix(40))\(literal.count > 40 ? "…" : "") does not fit in 64 bits "
                        + "(write it with a decimal point for a floating-point value)", at: start)
            }
            return Token(kind: .literal(.int(value)), start: start, end: end)
        }

        /// `0x…` after an optional sign; `digits` is where the hex digits start.
        private mutating func hexNumber(start: Int, digits: Int, negative: Bool) throws(RealmError) -> Token {
            var magnitude: UInt64 = 0
            var end = digits
            while end < bytes.count, let digit = hexValue(bytes[end]) {
                let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 16)
                guard !overflow else {
                    throw fail("the hexadecimal integer does not fit in 64 bits", at: start)
                }
                magnitude = shifted | UInt64(digit)
                end += 1
            }
            guard end > digits else { throw fail("expected hexadecimal digits after '0x'", at: start) }
            if end < bytes.count, isWordChar(bytes[end]) || bytes[end] == UInt8(ascii: ".") {
                throw fail("malformed hexadecimal number", at: start)
            }
            let limit: UInt64 = negative ? 1 << 63 : UInt64(Int64.max)
            guard magnitude <= limit else { throw fail("the hexadecimal integer does not fit in 64 bits", at: start) }
            index = end
            let value = negative ? Int64(truncatingIfNeeded: 0 &- magnitude) : Int64(magnitude)
            return Token(kind: .literal(.int(value)), start: start, end: end)
        }

        /// A quoted string starting at `from` (its quote); leaves `index` after the closing quote.
        private mutating func quoted(from: Int) throws(RealmError) -> String {
            let quote = bytes[from]
            var i = from + 1
            var segment = i
            var unescaped: [UInt8]?
            while i < bytes.count {
                let byte = bytes[i]
                if byte == quote {
                    index = i + 1
                    guard var unescaped else { return text(segment..<i) }
                    unescaped.append(contentsOf: bytes[segment..<i])
                    return String(decoding: unescaped, as: UTF8.self)
                }
                guard byte == UInt8(ascii: "\\") else {
                    i += 1
                    continue
                }
                guard i + 1 < bytes.count else { break }
                let replacement: UInt8
                switch bytes[i + 1] {
                case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                    replacement = bytes[i + 1]
                case UInt8(ascii: "n"): replacement = 0x0A
                case UInt8(ascii: "t"): replacement = 0x09
                case UInt8(ascii: "r"): replacement = 0x0D
                case UInt8(ascii: "0"): replacement = 0
                default:
                    throw fail(
                        "unknown escape sequence in a string (known: \\' \\\" \\\\ \\n \\t \\r \\0)", at: i)
                }
                var buffer = unescaped ?? []
                unescaped = nil
                buffer.append(contentsOf: bytes[segment..<i])
                buffer.append(replacement)
                unescaped = buffer
                i += 2
                segment = i
            }
            throw fail("unterminated string: the quote here is never closed", at: from)
        }

        /// `@count`, `@size`, `@min`, `@max`, `@sum`, `@avg`, `@allKeys` (`@keys`), `@allValues` (`@values`).
        private mutating func collectionOperator() throws(RealmError) -> Token {
            let start = index
            let end = wordEnd(from: start + 1)
            let component: QueryKeyPath.Component
            switch lowercasedWord(start + 1..<end) {
            case "count", "size": component = .count
            case "min": component = .min
            case "max": component = .max
            case "sum": component = .sum
            case "avg": component = .avg
            case "allkeys", "keys": component = .allKeys
            case "allvalues", "values": component = .allValues
            default:
                throw fail(
                    "unknown collection operator; expected @count, @size, @min, @max, @sum, @avg, @allKeys or "
                        + "@allValues", at: start)
            }
            index = end
            return Token(kind: .collectionOperator(component), start: start, end: end)
        }

        /// `$0` (an argument by index) or `$name` (a SUBQUERY variable).
        private mutating func dollar() throws(RealmError) -> Token {
            let start = index
            let end = wordEnd(from: start + 1)
            guard end > start + 1 else {
                throw fail("expected an argument number ($0) or a variable name ($d) after '$'", at: start)
            }
            index = end
            let name = text(start + 1..<end)
            if bytes[start + 1..<end].allSatisfy(isDigit) {
                guard let number = Int(name), number <= PredicateParser.maximumArgumentElements else {
                    throw fail("the argument number is too large", at: start)
                }
                return Token(kind: .indexedArgument(number), start: start, end: end)
            }
            guard !isDigit(bytes[start + 1]) else {
                throw fail(
                    "'$\(name.prefix(40))' is neither an argument ($0, $1, …) nor a variable name ($d)", at: start)
            }
            return Token(kind: .variable("$" + name), start: start, end: end)
        }

        /// A name or keyword, or a literal that starts like a name: `T1:0`, `uuid(…)`, `oid(…)`,
        /// `decimal128(…)`, `B64"…"`.
        private mutating func word() throws(RealmError) -> Token {
            let start = index
            if bytes[start] == UInt8(ascii: "T"), let timestamp = try timestamp() { return timestamp }
            let end = wordEnd(from: start)
            if end < bytes.count,
                bytes[end] == UInt8(ascii: "(") || bytes[end] == UInt8(ascii: "\"")
                    || bytes[end] == UInt8(ascii: "'"), let lowered = lowercasedWord(start..<end)
            {
                let next = bytes[end]
                if next == UInt8(ascii: "("), lowered == "uuid" || lowered == "oid" || lowered == "decimal128" {
                    return try parenthesizedLiteral(lowered, start: start, open: end)
                }
                if next != UInt8(ascii: "("), lowered == "b64" {
                    let encoded = try quoted(from: end)
                    guard let data = Data(base64Encoded: encoded) else {
                        throw fail("B64\"…\" does not hold valid base64", at: start)
                    }
                    return Token(kind: .literal(.data(data)), start: start, end: index)
                }
            }
            index = end
            return Token(kind: .word(keyword(start..<end)), start: start, end: end)
        }

        /// `T<seconds>:<nanoseconds>` (seconds since 1970, either part may be negative), or nil when the
        /// bytes at `index` are a name starting with `T`.
        private mutating func timestamp() throws(RealmError) -> Token? {
            let start = index
            var secondsStart = start + 1
            if secondsStart < bytes.count, bytes[secondsStart] == UInt8(ascii: "-") { secondsStart += 1 }
            let secondsEnd = digitsEnd(from: secondsStart)
            guard secondsEnd > secondsStart, secondsEnd < bytes.count, bytes[secondsEnd] == UInt8(ascii: ":") else {
                return nil
            }
            var nanosStart = secondsEnd + 1
            if nanosStart < bytes.count, bytes[nanosStart] == UInt8(ascii: "-") { nanosStart += 1 }
            let end = digitsEnd(from: nanosStart)
            guard end > nanosStart, end >= bytes.count || !isWordChar(bytes[end]) else {
                throw fail("malformed timestamp; expected T<seconds>:<nanoseconds>, such as T1700000000:0", at: start)
            }
            let secondsText = text(start + 1..<secondsEnd)
            guard let seconds = Int64(secondsText).map(Double.init) ?? Double(secondsText), seconds.isFinite else {
                throw fail("the timestamp's seconds are out of range", at: start)
            }
            guard let nanos = Int64(text(secondsEnd + 1..<end)), nanos.magnitude < 1_000_000_000 else {
                throw fail("the timestamp's nanoseconds must be between -999999999 and 999999999", at: start)
            }
            index = end
            let date = Date(timeIntervalSince1970: seconds + Double(nanos) / 1e9)
            return Token(kind: .literal(.date(date)), start: start, end: end)
        }

        /// `uuid(…)`, `oid(…)` or `decimal128(…)`; `open` is the offset of its `(`.
        private mutating func parenthesizedLiteral(_ name: String, start: Int, open: Int) throws(RealmError) -> Token {
            var close = open + 1
            while close < bytes.count, bytes[close] != UInt8(ascii: ")") { close += 1 }
            guard close < bytes.count else { throw fail("\(name)( is never closed with ')'", at: start) }
            let content = text(open + 1..<close).trimmingCharacters(in: .whitespaces)
            let shown = content.count > 40 ? content.prefix(40) + "…" : Substring(content)
            let value: Value
            switch name {
            case "uuid":
                guard let uuid = UUID(uuidString: content) else {
                    throw fail("'\(shown)' is not a UUID (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", at: start)
                }
                value = .uuid(uuid)
            case "oid":
                guard let id = ObjectId(content) else {
                    throw fail("'\(shown)' is not an ObjectId (expected 24 hexadecimal digits)", at: start)
                }
                value = .objectId(id.storage)
            default:
                guard let decimal = Decimal128(content) else {
                    throw fail("'\(shown)' is not a Decimal128 number", at: start)
                }
                value = .decimal128(decimal.bits)
            }
            index = close + 1
            return Token(kind: .literal(value), start: start, end: index)
        }
    }
}

/// ASCII whitespace: space, tab, line feed, vertical tab, form feed, carriage return.
private func isSpace(_ byte: UInt8) -> Bool {
    byte == 0x20 || (byte >= 0x09 && byte <= 0x0D)
}

/// `0` to `9`.
private func isDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
}

/// Names start with an ASCII letter, `_`, or any non-ASCII character.
private func isWordStart(_ byte: UInt8) -> Bool {
    (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z")) || byte == UInt8(ascii: "_") || byte >= 0x80
}

/// Names continue with the characters that start them, and digits.
private func isWordChar(_ byte: UInt8) -> Bool { isWordStart(byte) || isDigit(byte) }

/// The value of a hexadecimal digit.
private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

// MARK: Parser

extension PredicateParser {
    private static let operatorList = "==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, IN or BETWEEN"

    /// A parser over the lexer's tokens, with one token of lookahead; see "Predicates" for how it nests
    /// without recursing.
    fileprivate struct Parser {
        var lexer: Lexer
        /// The current token (not yet consumed).
        var token: Token
        let arguments: [Any]
        let subject: String
        /// How many arguments `%@` and `%K` have taken.
        var sequentialArguments = 0
        /// The highest `$n` used, or -1.
        var highestIndexedArgument = -1
        /// The variables of the enclosing `SUBQUERY`s, innermost last.
        var variables: [String] = []

        init(_ bytes: [UInt8], _ arguments: [Any], subject: String) throws(RealmError) {
            var lexer = Lexer(bytes, subject: subject)
            let first = try lexer.next()
            self.lexer = lexer
            self.token = first
            self.arguments = arguments
            self.subject = subject
        }

        /// A syntax error at `offset`.
        func fail(_ message: String, at offset: Int) -> RealmError {
            PredicateParser.syntaxError(message, at: offset, in: lexer.bytes, subject: subject)
        }

        /// Consumes the current token.
        mutating func advance() throws(RealmError) { token = try lexer.next() }

        /// The current token's keyword, if it is one.
        var keyword: Keyword? {
            if case .word(let keyword) = token.kind { return keyword }
            return nil
        }

        /// The source text of the current token, for names.
        var tokenText: String { lexer.text(token.start..<token.end) }

        /// The current token as error messages show it.
        var found: String { describe(token.start..<token.end) }

        /// A stretch of the input as error messages show it: quoted, at most 40 bytes.
        func describe(_ range: Range<Int>) -> String {
            guard !range.isEmpty else { return "the end of the \(subject)" }
            var end = min(range.upperBound, range.lowerBound + 40)
            while end < lexer.bytes.count, end > range.lowerBound, lexer.bytes[end] & 0xC0 == 0x80 { end -= 1 }
            return "'" + lexer.text(range.lowerBound..<end) + (end < range.upperBound ? "…'" : "'")
        }

        /// Throws when `levels` (a nesting of parentheses and `SUBQUERY`s, or a tree height) is over the limit.
        func checkDepth(_ levels: Int, at offset: Int) throws(RealmError) {
            guard levels <= PredicateParser.maximumDepth else {
                throw fail(
                    "the \(subject) nests deeper than \(PredicateParser.maximumDepth) levels (of parentheses, "
                        + "NOT, AND/OR groups and SUBQUERY)", at: offset)
            }
        }

        // MARK: Whole inputs

        /// A whole predicate string, then checks that every argument was used.
        mutating func parsePredicateString() throws(RealmError) -> QueryPredicate {
            if case .end = token.kind {
                throw fail("the predicate is empty (use TRUEPREDICATE to match every object)", at: 0)
            }
            let predicate = try parsePredicate()
            switch token.kind {
            case .end: break
            case .closeParen: throw fail("unbalanced parenthesis: this ')' has no matching '('", at: token.start)
            default: throw fail("expected AND, OR or the end of the predicate, found \(found)", at: token.start)
            }
            let used = max(sequentialArguments, highestIndexedArgument + 1)
            if arguments.count > used {
                throw fail(
                    "the predicate uses \(Self.count(used, "argument")) but \(arguments.count) "
                        + "\(arguments.count == 1 ? "was" : "were") given (a placeholder inside quotes, such as "
                        + "'%@', is a plain string)", at: token.start)
            }
            return predicate
        }

        /// A whole key path string.
        mutating func parseKeyPathString() throws(RealmError) -> QueryKeyPath {
            let start = token.start
            guard case .word = token.kind else { throw fail("expected a property name, found \(found)", at: start) }
            let name = tokenText
            try advance()
            let path = try parseKeyPathTail(QueryKeyPath(variable: nil, [.property(name)], position: start))
            guard case .end = token.kind else {
                throw fail("expected '.' or the end of the key path, found \(found)", at: token.start)
            }
            return path
        }

        // MARK: Predicates
        //
        // Parentheses and SUBQUERYs nest, but the parser does not recurse: it keeps the open groups on an
        // explicit stack (`groups`), so it uses the same few frames of call stack however deep the input nests.
        // (Recursive descent cost over 3 KB of stack per parenthesis and 12 KB per SUBQUERY in a debug build.)
        //
        // Heights: 0 for a comparison or constant, one more than the tallest child for NOT, AND and OR, and
        // one more than its predicate for a comparison with a SUBQUERY. Both the height and the nesting of
        // parentheses and SUBQUERYs are limited to `maximumDepth`: the nesting bounds the parser's work, the
        // height every later (recursive) walk of the tree. `description` prints a tree of height h with at most
        // h levels of parentheses, so whatever parses prints as something that parses again.

        /// A predicate and its height.
        typealias Parsed = (predicate: QueryPredicate, height: Int)

        /// An open group: the whole input, a parenthesis, or a SUBQUERY's predicate.
        struct Group {
            enum Kind {
                case whole
                case parenthesis
                /// The comparison waiting for this SUBQUERY's count, and the SUBQUERY's parts.
                case subquery(PendingComparison, collection: QueryKeyPath, variable: String)
            }

            var kind: Kind
            /// Where the group opened (its `(` or `SUBQUERY`).
            var start: Int
            /// The finished AND chains of the group's OR chain, and the tallest.
            var ors: [QueryPredicate] = []
            var orsHeight = 0
            /// The operands of the current AND chain, and the tallest.
            var ands: [QueryPredicate] = []
            var andsHeight = 0
            /// The NOTs read before the operand being read, and where the first one was.
            var nots = 0
            var notsStart = 0

            init(_ kind: Kind, start: Int) {
                self.kind = kind
                self.start = start
            }
        }

        /// A comparison read up to a SUBQUERY on one of its sides.
        struct PendingComparison {
            var quantifier: QueryQuantifier?
            /// Where the left side starts.
            var start: Int
            /// Nil while the left side is the SUBQUERY being read.
            var lhs: QueryExpression?
            var lhsHeight = 0
            /// Set when the right side is the SUBQUERY being read.
            var op: QueryOperator?
            var options: QueryOptions = []
        }

        /// What reading a comparison gave: the comparison, or a SUBQUERY to read first.
        enum Step {
            case operand(Parsed)
            case subquery(Group)
        }

        /// Whether the current token is `NOT` or `!`.
        var isNot: Bool {
            switch token.kind {
            case .not, .word(.not?): true
            default: false
            }
        }

        /// Whether the current token is `AND` or `&&`.
        var isAnd: Bool {
            switch token.kind {
            case .and, .word(.and?): true
            default: false
            }
        }

        /// Whether the current token is `OR` or `||`.
        var isOr: Bool {
            switch token.kind {
            case .or, .word(.or?): true
            default: false
            }
        }

        /// Whether the current token is `SUBQUERY`.
        var isSubquery: Bool {
            if case .word(.subquery?) = token.kind { return true }
            return false
        }

        /// A predicate up to the end of the input or an unmatched `)` (which the caller reports).
        mutating func parsePredicate() throws(RealmError) -> QueryPredicate {
            var groups = [Group(.whole, start: token.start)]
            operands: while true {
                // One operand of the innermost group: NOTs, then '(', a constant or a comparison.
                let top = groups.count - 1
                while isNot {
                    if groups[top].nots == 0 { groups[top].notsStart = token.start }
                    groups[top].nots += 1
                    try checkDepth(groups[top].nots, at: token.start)
                    try advance()
                }
                var step: Step
                switch token.kind {
                case .openParen:
                    try checkDepth(groups.count, at: token.start)
                    groups.append(Group(.parenthesis, start: token.start))
                    try advance()
                    continue operands
                case .word(.truePredicate?):
                    try advance()
                    step = .operand((.constant(true), 0))
                case .word(.falsePredicate?):
                    try advance()
                    step = .operand((.constant(false), 0))
                default:
                    let quantifier = try readQuantifier()
                    step = try readComparison(PendingComparison(quantifier: quantifier, start: token.start))
                }
                // Add the operand to its group; close the groups it ends.
                while true {
                    let operand: Parsed
                    switch step {
                    case .subquery(let group):
                        try checkDepth(groups.count, at: group.start)
                        groups.append(group)
                        continue operands
                    case .operand(let parsed): operand = parsed
                    }
                    let top = groups.count - 1
                    var (predicate, height) = operand
                    let nots = groups[top].nots
                    if nots > 0 {
                        try checkDepth(height + nots, at: groups[top].notsStart)
                        for _ in 0..<nots { predicate = .not(predicate) }
                        height += nots
                        groups[top].nots = 0
                    }
                    groups[top].ands.append(predicate)
                    groups[top].andsHeight = max(groups[top].andsHeight, height)
                    if isAnd {
                        try advance()
                        continue operands
                    }
                    let chain = try chain(groups[top].ands, height: groups[top].andsHeight, QueryPredicate.and)
                    groups[top].ands = []
                    groups[top].andsHeight = 0
                    groups[top].ors.append(chain.predicate)
                    groups[top].orsHeight = max(groups[top].orsHeight, chain.height)
                    if isOr {
                        try advance()
                        continue operands
                    }
                    guard let group = groups.popLast() else { throw fail("internal parser error", at: token.start) }
                    let result = try self.chain(group.ors, height: group.orsHeight, QueryPredicate.or)
                    switch group.kind {
                    case .whole:
                        return result.predicate
                    case .parenthesis:
                        try expectClose(.closeParen, opened: group.start, what: "parenthesis")
                        step = .operand(result)
                    case .subquery(let pending, let collection, let variable):
                        try closeSubquery(opened: group.start)
                        variables.removeAll { $0 == variable }
                        try checkDepth(result.height + 1, at: group.start)
                        let count = QueryExpression.subqueryCount(
                            collection: collection, variable: variable, predicate: result.predicate)
                        step = try resume(pending, with: count, height: result.height + 1)
                    }
                }
            }
        }

        /// One operand, or an AND (or OR) of several: one level taller than the tallest.
        func chain(
            _ parts: [QueryPredicate], height: Int, _ combine: ([QueryPredicate]) -> QueryPredicate
        ) throws(RealmError) -> Parsed {
            if parts.count == 1, let only = parts.first { return (only, height) }
            try checkDepth(height + 1, at: token.start)
            return (combine(parts), height + 1)
        }

        /// `ANY`, `SOME`, `ALL` or `NONE`, if present.
        mutating func readQuantifier() throws(RealmError) -> QueryQuantifier? {
            let quantifier: QueryQuantifier
            switch keyword {
            case .any?, .someQuantifier?: quantifier = .any
            case .all?: quantifier = .all
            case .noneQuantifier?: quantifier = QueryQuantifier.none
            default: return nil
            }
            try advance()
            return quantifier
        }

        /// Reads a comparison from where `pending` left off to its end, or up to a SUBQUERY on either side,
        /// which it opens (its count comes back through `resume`).
        mutating func readComparison(_ pending: PendingComparison) throws(RealmError) -> Step {
            var pending = pending
            let lhs: QueryExpression
            if let known = pending.lhs {
                lhs = known
            } else {
                if isSubquery { return .subquery(try openSubquery(pending)) }
                lhs = try parseExpression()
                pending.lhs = lhs
            }
            guard let op = try readOperator(after: lhs, start: pending.start) else {
                return .operand((try parseBetween(lhs, quantifier: pending.quantifier), pending.lhsHeight))
            }
            let options = try parseOptions(for: op)
            if isSubquery {
                pending.op = op
                pending.options = options
                return .subquery(try openSubquery(pending))
            }
            let rhs = try parseExpression()
            let comparison = QueryComparison(lhs, op, rhs, options: options, quantifier: pending.quantifier)
            return .operand((.comparison(comparison), pending.lhsHeight))
        }

        /// Continues the comparison a SUBQUERY interrupted, now that its count has been read.
        mutating func resume(
            _ pending: PendingComparison, with count: QueryExpression, height: Int
        ) throws(RealmError) -> Step {
            var pending = pending
            if let lhs = pending.lhs, let op = pending.op {
                let comparison = QueryComparison(
                    lhs, op, count, options: pending.options, quantifier: pending.quantifier)
                return .operand((.comparison(comparison), max(pending.lhsHeight, height)))
            }
            pending.lhs = count
            pending.lhsHeight = height
            return try readComparison(pending)
        }

        /// The operator after a comparison's left side (nil for `BETWEEN`), consumed.
        mutating func readOperator(after lhs: QueryExpression, start: Int) throws(RealmError) -> QueryOperator? {
            let op: QueryOperator?
            switch token.kind {
            case .comparison(let comparison): op = comparison
            case .word(.inOperator?): op = .in
            case .word(.beginsWith?): op = .beginsWith
            case .word(.endsWith?): op = .endsWith
            case .word(.contains?): op = .contains
            case .word(.like?): op = .like
            case .word(.between?): op = nil
            default: throw operatorError(after: lhs, start: start)
            }
            try advance()
            return op
        }

        /// The error for a missing or unknown operator after a comparison's left side.
        func operatorError(after lhs: QueryExpression, start: Int) -> RealmError {
            let lhsText = describe(start..<previousEnd)
            switch token.kind {
            case .word(nil):
                return fail("unknown operator \(found); expected \(PredicateParser.operatorList)", at: token.start)
            case .end, .and, .or, .closeParen, .word(.and?), .word(.or?):
                if case .keyPath(let path) = lhs {
                    return fail(
                        "\(lhsText) is not a condition: compare it with a value, such as '\(path) == true'", at: start)
                }
                return fail("expected a comparison operator after \(lhsText), found \(found)", at: token.start)
            default:
                return fail(
                    "expected a comparison operator (\(PredicateParser.operatorList)) after \(lhsText), found "
                        + "\(found)", at: token.start)
            }
        }

        /// Reads `SUBQUERY(collection, $variable,` and declares the variable; the predicate is read next, as a
        /// group.
        mutating func openSubquery(_ pending: PendingComparison) throws(RealmError) -> Group {
            let start = token.start
            try advance()
            guard case .openParen = token.kind else {
                throw fail("expected '(' after SUBQUERY, found \(found)", at: token.start)
            }
            try advance()
            let collectionStart = token.start
            guard !isSubquery, case .keyPath(let collection) = try parseExpression() else {
                throw fail(
                    "SUBQUERY's first argument must be a key path to a collection, as in SUBQUERY(dogs, $d, "
                        + "$d.age < 2).@count", at: collectionStart)
            }
            guard case .comma = token.kind else {
                throw fail("expected ',' after SUBQUERY's collection, found \(found)", at: token.start)
            }
            try advance()
            guard case .variable(let variable) = token.kind else {
                throw fail(
                    "expected a variable such as $d as SUBQUERY's second argument, found \(found)", at: token.start)
            }
            guard !variables.contains(variable) else {
                throw fail("the variable \(variable) is already declared by an enclosing SUBQUERY", at: token.start)
            }
            try advance()
            guard case .comma = token.kind else {
                throw fail("expected ',' after SUBQUERY's variable, found \(found)", at: token.start)
            }
            try advance()
            variables.append(variable)
            return Group(.subquery(pending, collection: collection, variable: variable), start: start)
        }

        /// Reads the `).@count` that ends a SUBQUERY opened at `opened`.
        mutating func closeSubquery(opened: Int) throws(RealmError) {
            try expectClose(.closeParen, opened: opened, what: "SUBQUERY")
            let countStart = token.start
            var counted = false
            if case .dot = token.kind {
                try advance()
                if case .collectionOperator(.count) = token.kind { counted = true }
            }
            guard counted else {
                throw fail(
                    "SUBQUERY(…) must be followed by .@count (the number of elements that match)", at: countStart)
            }
            try advance()
        }

        /// Consumes a `)` or `]` closing what was opened at `opened`, or throws.
        mutating func expectClose(_ kind: Token.Kind, opened: Int, what: String) throws(RealmError) {
            switch (kind, token.kind) {
            case (.closeParen, .closeParen), (.closeBracket, .closeBracket):
                try advance()
            case (_, .end):
                throw fail("unbalanced \(what): the opening at offset \(opened) is never closed", at: token.start)
            default:
                let close = if case .closeParen = kind { "')'" } else { "']'" }
                throw fail(
                    "expected \(close) to close the \(what) at offset \(opened), found \(found)", at: token.start)
            }
        }

        /// Where the last consumed token ended (the start of the current one, less whitespace).
        var previousEnd: Int {
            var end = token.start
            while end > 0, isSpace(lexer.bytes[end - 1]) { end -= 1 }
            return end
        }

        /// `[c]`, `[d]`, `[cd]` or `[dc]` after an operator, if present.
        mutating func parseOptions(for op: QueryOperator) throws(RealmError) -> QueryOptions {
            guard case .openBracket = token.kind else { return [] }
            let open = token.start
            try advance()
            var options: QueryOptions = []
            var valid = false
            if case .word = token.kind, token.end - token.start <= 2 {
                valid = true
                for byte in lexer.bytes[token.start..<token.end] {
                    let option: QueryOptions
                    switch byte | 0x20 {
                    case UInt8(ascii: "c"): option = .caseInsensitive
                    case UInt8(ascii: "d"): option = .diacriticInsensitive
                    default:
                        valid = false
                        option = []
                    }
                    if options.contains(option) { valid = false }
                    options.insert(option)
                }
            }
            guard valid else {
                throw fail(
                    "expected a modifier c, d or cd inside '[…]' after the operator, found \(found)", at: token.start)
            }
            try advance()
            try expectClose(.closeBracket, opened: open, what: "modifier bracket")
            switch op {
            case .equal, .notEqual, .in, .beginsWith, .endsWith, .contains, .like: break
            default:
                throw fail(
                    "modifiers such as [c] apply to ==, !=, IN, BEGINSWITH, ENDSWITH, CONTAINS and LIKE, not to "
                        + op.rawValue, at: open)
            }
            return options
        }

        /// `lhs BETWEEN {lower, upper}` or `lhs BETWEEN %@` (a two-element array or a closed range).
        mutating func parseBetween(
            _ lhs: QueryExpression, quantifier: QueryQuantifier?
        ) throws(RealmError)
            -> QueryPredicate
        {
            let start = token.start
            let bounds: QueryExpression
            switch token.kind {
            case .openBrace:
                bounds = try parseList()
            case .nextArgument, .indexedArgument:
                let (value, index) = try takeArgument()
                if let range = value as? any ClosedRangeArgument {
                    let (lower, upper) = range.argumentBounds
                    bounds = .list([
                        try convertArgument(lower, index: index, at: start),
                        try convertArgument(upper, index: index, at: start),
                    ])
                } else {
                    bounds = try convertArgument(value, index: index, at: start)
                }
                try advance()
            case .openBracket:
                throw fail("BETWEEN takes no modifiers", at: start)
            default:
                throw fail("expected {lower, upper} or an argument after BETWEEN, found \(found)", at: start)
            }
            guard case .list(let items) = bounds, items.count == 2 else {
                throw fail(
                    "BETWEEN needs exactly two bounds: {lower, upper}, or an argument holding a two-element array "
                        + "or a closed range", at: start)
            }
            return .between(lhs, lower: items[0], upper: items[1], quantifier: quantifier)
        }

        // MARK: Expressions

        /// A key path, constant or list.
        mutating func parseExpression() throws(RealmError) -> QueryExpression {
            let start = token.start
            switch token.kind {
            case .word(nil):
                let name = tokenText
                try advance()
                return .keyPath(try parseKeyPathTail(QueryKeyPath(variable: nil, [.property(name)], position: start)))
            case .word(let keyword?):
                let value: Value
                switch keyword {
                case .trueLiteral, .yes: value = .bool(true)
                case .falseLiteral, .no: value = .bool(false)
                case .nilLiteral, .null: value = .null
                case .nan: value = .double(.nan)
                case .inf, .infinity: value = .double(.infinity)
                default:
                    throw fail(
                        "expected a key path or a value, found the keyword \(found) (to name a property called "
                            + "that, use %K with the name as its argument)", at: start)
                }
                try advance()
                return .value(value)
            case .literal(let value):
                try advance()
                return .value(value)
            case .variable(let name):
                guard variables.contains(name) else {
                    throw fail(
                        "unknown variable \(name): variables are declared by SUBQUERY(collection, \(name), "
                            + "predicate) and used inside it", at: start)
                }
                try advance()
                return .keyPath(try parseKeyPathTail(QueryKeyPath(variable: name, [], position: start)))
            case .collectionOperator(let component):
                try advance()
                return .keyPath(try parseKeyPathTail(QueryKeyPath(variable: nil, [component], position: start)))
            case .keyPathArgument:
                let (value, index) = try takeArgument()
                guard let string = value as? String else {
                    throw fail(
                        "%K takes a String key path, but argument \(index) is a \(type(of: value))", at: start)
                }
                var path: QueryKeyPath
                do {
                    path = try PredicateParser.parseKeyPath(string)
                } catch {
                    throw fail("the %K argument \(index) is not a key path: \(error.message)", at: start)
                }
                path.position = start
                try advance()
                return .keyPath(try parseKeyPathTail(path))
            case .nextArgument, .indexedArgument:
                let (value, index) = try takeArgument()
                let expression = try convertArgument(value, index: index, at: start)
                try advance()
                return expression
            case .openBrace:
                return try parseList()
            default:
                throw fail("expected a key path or a value, found \(found)", at: start)
            }
        }

        /// `.name`, `.@operator` and `['key']` after the start of a key path.
        mutating func parseKeyPathTail(_ path: QueryKeyPath) throws(RealmError) -> QueryKeyPath {
            var path = path
            while true {
                switch token.kind {
                case .dot:
                    try advance()
                    switch token.kind {
                    case .word: path.components.append(.property(tokenText))
                    case .collectionOperator(let component): path.components.append(component)
                    default:
                        throw fail(
                            "expected a property name or a collection operator such as @count after '.', found "
                                + found, at: token.start)
                    }
                    try advance()
                case .openBracket:
                    let open = token.start
                    try advance()
                    let key: String
                    switch token.kind {
                    case .literal(.string(let string)): key = string
                    case .nextArgument, .indexedArgument:
                        let (value, index) = try takeArgument()
                        guard let string = value as? String else {
                            throw fail(
                                "a map key must be a String, but argument \(index) is a \(type(of: value))",
                                at: token.start)
                        }
                        key = string
                    default:
                        throw fail("expected a quoted map key, such as ['key'], found \(found)", at: token.start)
                    }
                    try advance()
                    try expectClose(.closeBracket, opened: open, what: "map subscript")
                    path.components.append(.mapKey(key))
                default:
                    return path
                }
            }
        }

        /// `{a, b, …}` of constants (literals and arguments).
        mutating func parseList() throws(RealmError) -> QueryExpression {
            let open = token.start
            try advance()
            var items: [QueryExpression] = []
            if case .closeBrace = token.kind {
                try advance()
                return .list([])
            }
            while true {
                let itemStart = token.start
                if case .openBrace = token.kind { throw fail("lists cannot be nested", at: itemStart) }
                let item = try parseExpression()
                switch item {
                case .keyPath, .subqueryCount:
                    throw fail("a list holds constant values only, not key paths", at: itemStart)
                case .list:
                    throw fail("lists cannot be nested: an array argument cannot be an element of {…}", at: itemStart)
                default: items.append(item)
                }
                switch token.kind {
                case .comma: try advance()
                case .closeBrace:
                    try advance()
                    return .list(items)
                case .end:
                    throw fail("unbalanced brace: the '{' at offset \(open) is never closed", at: token.start)
                default:
                    throw fail(
                        "expected ',' or '}' in the list starting at offset \(open), found \(found)", at: token.start)
                }
            }
        }

        // MARK: Arguments

        /// The argument the current placeholder token (`%@`, `%K`, `$n`) refers to, and its index; does not
        /// consume the token.
        mutating func takeArgument() throws(RealmError) -> (value: Any, index: Int) {
            guard subject == "predicate" else {
                throw fail("a key path cannot contain placeholders", at: token.start)
            }
            let index: Int
            if case .indexedArgument(let number) = token.kind {
                index = number
                highestIndexedArgument = max(highestIndexedArgument, number)
                guard index < arguments.count else {
                    throw fail(
                        "$\(number) refers to argument \(number) (numbered from $0) but "
                            + "\(Self.count(arguments.count, "argument")) \(arguments.count == 1 ? "was" : "were") "
                            + "given", at: token.start)
                }
            } else {
                index = sequentialArguments
                sequentialArguments += 1
                guard index < arguments.count else {
                    let used = max(Self.argumentsUsed(lexer.bytes), index + 1)
                    throw fail(
                        "the predicate uses \(Self.count(used, "argument")) but \(arguments.count) "
                            + "\(arguments.count == 1 ? "was" : "were") given", at: token.start)
                }
            }
            return (arguments[index], index)
        }

        /// An argument as a query constant, with the position in any error.
        func convertArgument(_ value: Any, index: Int, at offset: Int) throws(RealmError) -> QueryExpression {
            do {
                return try PredicateParser.convert(value, depth: 0)
            } catch {
                throw fail("argument \(index) cannot be used: \(error.message)", at: offset)
            }
        }

        /// How many arguments a predicate refers to, counting every `%@`/`%K` and the highest `$n` (read up to
        /// its first lexical error).
        static func argumentsUsed(_ bytes: [UInt8]) -> Int {
            var lexer = Lexer(bytes, subject: "predicate")
            var sequential = 0
            var highest = -1
            while let token = try? lexer.next() {
                switch token.kind {
                case .end: return max(sequential, highest + 1)
                case .nextArgument, .keyPathArgument: sequential += 1
                case .indexedArgument(let number): highest = max(highest, number)
                default: break
                }
            }
            return max(sequential, highest + 1)
        }

        /// "1 argument", "3 arguments".
        static func count(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }
    }
}
