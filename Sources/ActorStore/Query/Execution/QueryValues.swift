import ActorStorePersistence
import Foundation

// How queries compare stored values: one total order per type family, shared by filtering, sorting,
// `distinct` and aggregates, and by the row-level fast paths (which must agree with it exactly).
//
// - Numbers of every width compare by value across types (`Int` 3 equals `Double` 3.0); a `Decimal128`
//   compares as a decimal.
// - Strings compare by their UTF-8 bytes, as Realm does: case-sensitive equality is byte equality, and no
//   Unicode normalization happens (`"é"` precomposed and decomposed differ). `[c]` folds case with full
//   Unicode case folding (`ß` matches `SS`), `[d]` removes diacritics; both sides are folded, then compared
//   by bytes.
// - `nil` equals only `nil`, and `<`, `>`, `BETWEEN` and string operators are false against it. When
//   sorting, `nil` comes first.
enum QueryValues {
    /// The order of two non-null values of comparable types, or nil when they cannot be compared.
    static func order(_ a: Value, _ b: Value) -> Int? {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.string(let x), .string(let y)): return bytesOrder(x, y)
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (x ? 1 : -1)
        case (.date(let x), .date(let y)):
            return compare(x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
        case (.data(let x), .data(let y)):
            return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        case (.uuid(let x), .uuid(let y)):
            let c = withUnsafeBytes(of: x.uuid) { p in
                withUnsafeBytes(of: y.uuid) { q in
                    // A 16-byte tuple always has storage.
                    guard let a = p.baseAddress, let b = q.baseAddress else { return Int32(0) }
                    return memcmp(a, b, 16)
                }
            }
            return c < 0 ? -1 : (c == 0 ? 0 : 1)
        case (.objectId(let x), .objectId(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.link(let x), .link(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.typedLink(let t, let x), .typedLink(let u, let y)):
            guard t == u else { return bytesOrder(t, u) }
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.decimal128, _), (_, .decimal128):
            guard let x = decimal(a), let y = decimal(b) else { return nil }
            return x < y ? -1 : (x == y ? 0 : 1)
        default:
            guard let x = double(a), let y = double(b) else { return nil }
            // An Int64 compared with a Double: exact when the double is integral and in range.
            if case .int(let i) = a, let exact = Int64(exactly: y) { return i < exact ? -1 : (i == exact ? 0 : 1) }
            if case .int(let i) = b, let exact = Int64(exactly: x) { return exact < i ? -1 : (exact == i ? 0 : 1) }
            return compare(x, y)
        }
    }

    private static func compare(_ x: Double, _ y: Double) -> Int? {
        if x < y { return -1 }
        if x > y { return 1 }
        if x == y { return 0 }
        return nil  // NaN
    }

    static func bytesOrder(_ x: String, _ y: String) -> Int {
        var x = x
        var y = y
        return x.withUTF8 { a in
            y.withUTF8 { b in
                let n = Swift.min(a.count, b.count)
                if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
                    let c = memcmp(pa, pb, n)
                    if c != 0 { return c < 0 ? -1 : 1 }
                }
                return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
            }
        }
    }

    static func double(_ value: Value) -> Double? {
        switch value {
        case .int(let v): Double(v)
        case .double(let v): v
        case .float(let v): Double(v)
        case .decimal128(let v): Decimal128(bits: v).doubleValue
        default: nil
        }
    }

    static func decimal(_ value: Value) -> Decimal128? {
        switch value {
        case .int(let v): Decimal128(Int(v))
        case .double(let v): Decimal128(v)
        case .float(let v): Decimal128(Double(v))
        case .decimal128(let v): Decimal128(bits: v)
        default: nil
        }
    }

    /// Whether `a == b` under query semantics (`nil == nil`).
    static func equal(_ a: Value, _ b: Value, _ options: QueryOptions) -> Bool {
        if a.isNull || b.isNull { return a.isNull && b.isNull }
        if !options.isEmpty, case .string(let x) = a, case .string(let y) = b {
            return fold(x, options) == fold(y, options)
        }
        return order(a, b) == 0
    }

    /// The result of `a op b` for one pair of values (the quantifier is applied by the caller).
    static func test(_ a: Value, _ op: QueryOperator, _ b: Value, _ options: QueryOptions) -> Bool {
        switch op {
        case .equal, .in: return equal(a, b, options)
        case .notEqual: return !equal(a, b, options)
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if a.isNull || b.isNull { return false }
            let ordered: Int?
            if !options.isEmpty, case .string(let x) = a, case .string(let y) = b {
                ordered = bytesOrder(fold(x, options), fold(y, options))
            } else {
                ordered = order(a, b)
            }
            guard let ordered else { return false }
            switch op {
            case .less: return ordered < 0
            case .lessOrEqual: return ordered <= 0
            case .greater: return ordered > 0
            default: return ordered >= 0
            }
        case .beginsWith, .endsWith, .contains, .like:
            switch (a, b) {
            case (.string(let x), .string(let y)):
                return stringTest(fold(x, options), op, fold(y, options))
            case (.data(let x), .data(let y)):
                return bytesTest(Array(x), op, Array(y))
            default: return false
            }
        }
    }

    /// Applies `[c]`/`[d]`.
    static func fold(_ s: String, _ options: QueryOptions) -> String {
        if options.isEmpty { return s }
        var foldOptions: String.CompareOptions = []
        if options.contains(.caseInsensitive) { foldOptions.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { foldOptions.insert(.diacriticInsensitive) }
        // Fold canonically composed text, so that decomposed and precomposed input fold alike.
        return s.folding(options: foldOptions, locale: nil).precomposedStringWithCanonicalMapping
    }

    static func stringTest(_ x: String, _ op: QueryOperator, _ y: String) -> Bool {
        if op == .like { return like(Array(x.unicodeScalars), Array(y.unicodeScalars)) }
        return bytesTest(Array(x.utf8), op, Array(y.utf8))
    }

    static func bytesTest(_ x: [UInt8], _ op: QueryOperator, _ y: [UInt8]) -> Bool {
        switch op {
        case .beginsWith: return x.starts(with: y)
        case .endsWith: return x.count >= y.count && x[(x.count - y.count)...].elementsEqual(y)
        case .contains: return contains(x, y)
        case .like:
            return like(x.map { Unicode.Scalar($0) }, y.map { Unicode.Scalar($0) })
        default: return false
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        if needle.isEmpty { return true }
        guard haystack.count >= needle.count else { return false }
        return haystack.withUnsafeBufferPointer { h in
            needle.withUnsafeBufferPointer { n in contains(UnsafeRawBufferPointer(h), UnsafeRawBufferPointer(n)) }
        }
    }

    /// Whether `needle` occurs in `haystack` (byte search).
    static func contains(_ haystack: UnsafeRawBufferPointer, _ needle: UnsafeRawBufferPointer) -> Bool {
        if needle.isEmpty { return true }
        guard haystack.count >= needle.count, let h = haystack.baseAddress, let n = needle.baseAddress else {
            return false
        }
        let first = needle[0]
        var i = 0
        let last = haystack.count - needle.count
        while i <= last {
            guard let found = memchr(h + i, Int32(first), last - i + 1) else { return false }
            let at = h.distance(to: UnsafeRawPointer(found))
            if memcmp(h + at, n, needle.count) == 0 { return true }
            i = at + 1
        }
        return false
    }

    /// `LIKE`: `?` matches exactly one character (Unicode scalar), `*` any run, everything else itself.
    /// Iterative with backtracking to the last `*`: linear memory, O(n·m) time at worst.
    static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        var t = 0
        var p = 0
        var star = -1
        var mark = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "?" || (pattern[p] != "*" && pattern[p] == text[t]) {
                t += 1
                p += 1
            } else if p < pattern.count, pattern[p] == "*" {
                star = p
                mark = t
                p += 1
            } else if star >= 0 {
                p = star + 1
                mark += 1
                t = mark
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// The total order used for sorting: `nil` first, then by value; values of incomparable types order
    /// by their type so the sort stays a strict weak order.
    static func sortOrder(_ a: Value, _ b: Value) -> Int {
        switch (a.isNull, b.isNull) {
        case (true, true): return 0
        case (true, false): return -1
        case (false, true): return 1
        default: break
        }
        if let ordered = order(a, b) { return ordered }
        // NaN, or mixed types: order NaN first among numbers, then by a type rank.
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        let (na, nb) = (double(a)?.isNaN ?? false, double(b)?.isNaN ?? false)
        if na != nb { return na ? -1 : 1 }
        return 0
    }

    private static func rank(_ value: Value) -> Int {
        switch value {
        case .null: 0
        case .bool: 1
        case .int, .float, .double, .decimal128: 2
        case .string: 3
        case .data: 4
        case .date: 5
        case .uuid: 6
        case .objectId: 7
        case .link, .typedLink: 8
        case .list, .set, .map: 9
        }
    }
}
