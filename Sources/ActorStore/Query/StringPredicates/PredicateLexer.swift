import ActorStorePersistence
import Foundation

// The lexer of the predicate language: bytes in, tokens out, one token at a time.

extension PredicateParser {
    /// The reserved words, lowercased. They cannot name a property except after a `.` or through `%K`.
    enum Keyword: String, CaseIterable {
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
    struct PackedWord: Hashable {
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
    struct Token {
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
    struct Lexer {
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
func isSpace(_ byte: UInt8) -> Bool {
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
