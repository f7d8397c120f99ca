import Foundation

/// A parsed JSON value. Numbers keep their text, so that an `Int64` or a `Float` is read exactly as its
/// column needs it (a `Double` cannot hold every `Int64`); object members keep their order.
enum JSONValue: Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.elementsEqual(b) { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// The member `key` of an object, or nil.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// A short name of the value's kind, for error messages.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Parses one JSON value from UTF-8 bytes (strict RFC 8259: no comments, no trailing commas).
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var i = 0
    /// Nesting limit, so that hostile input cannot exhaust the stack.
    private static let maxDepth = 512

    /// Parses `bytes` as exactly one JSON value (surrounding whitespace allowed).
    ///
    /// - Throws: `JSONParser.Failure` naming the byte offset and the problem.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.i == bytes.count else { throw parser.fail("unexpected text after the value") }
        return value
    }

    /// A syntax error: what was wrong and at which byte of the input.
    struct Failure: Error {
        let offset: Int
        let problem: String
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private func fail(_ problem: String) -> Failure { Failure(offset: i, problem: problem) }

    private mutating func skipWhitespace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private mutating func literal(_ text: StaticString, _ value: JSONValue) throws(Failure) -> JSONValue {
        let count = text.utf8CodeUnitCount
        guard i + count <= bytes.count,
            memcmp(bytes.baseAddress.unsafelyUnwrapped + i, text.utf8Start, count) == 0
        else { throw fail("unexpected character") }
        i += count
        return value
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        skipWhitespace()
        guard i < bytes.count else { throw fail("unexpected end of input") }
        guard depth < Self.maxDepth else { throw fail("nested more than \(Self.maxDepth) levels deep") }
        switch bytes[i] {
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case 0x22: return .string(try string())
        case UInt8(ascii: "["):
            i += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                i += 1
                return .array(items)
            }
            while true {
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of input in an array") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                } else if bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    return .array(items)
                } else {
                    throw fail("expected , or ] in an array")
                }
            }
        case UInt8(ascii: "{"):
            i += 1
            var members: [(key: String, value: JSONValue)] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                i += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard i < bytes.count, bytes[i] == 0x22 else { throw fail("expected a member name") }
                let key = try string()
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected :") }
                i += 1
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of input in an object") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                } else if bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    return .object(members)
                } else {
                    throw fail("expected , or } in an object")
                }
            }
        default: return try number()
        }
    }

    private mutating func number() throws(Failure) -> JSONValue {
        let start = i
        func digits() -> Int {
            let from = i
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
            return i - from
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard digits() > 0 else { throw fail("unexpected character") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw fail("expected digits after the decimal point") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw fail("expected digits in the exponent") }
        }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self))
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("unexpected end of input in a \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let digit: UInt32
            switch c {
            case 0x30...0x39: digit = UInt32(c - 0x30)
            case 0x41...0x46: digit = UInt32(c - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(c - 0x61 + 10)
            default: throw fail("invalid hex digit in a \\u escape")
            }
            value = value * 16 + digit
            i += 1
        }
        return value
    }

    private mutating func string() throws(Failure) -> String {
        i += 1  // the opening quote
        let start = i
        // Fast path: no escapes.
        while i < bytes.count, bytes[i] != 0x22, bytes[i] != 0x5C, bytes[i] >= 0x20 { i += 1 }
        if i < bytes.count, bytes[i] == 0x22 {
            let slice = UnsafeBufferPointer(rebasing: bytes[start..<i])
            i += 1
            return try validUTF8(slice)
        }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<i]))
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            if c == 0x22 {
                i += 1
                return try out.withUnsafeBufferPointer { (b) throws(Failure) in try validUTF8(b) }
            }
            guard c >= 0x20 else { throw fail("a control character in a string must be escaped") }
            guard c == 0x5C else {
                out.append(c)
                i += 1
                continue
            }
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case 0x22, 0x5C, 0x2F: out.append(e)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard i + 2 <= bytes.count, bytes[i] == 0x5C, bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("an unpaired surrogate in a \\u escape")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("an unpaired surrogate in a \\u escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw fail("an unpaired surrogate in a \\u escape") }
                out.append(contentsOf: String(Character(unicode)).utf8)
            default: throw fail("invalid escape")
            }
        }
    }

    private func validUTF8(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> String {
        guard let string = String(validating: bytes, as: UTF8.self) else { throw fail("a string is not valid UTF-8") }
        return string
    }
}
