import ActorStorePersistence
import Foundation

/// A 128-bit decimal floating-point number (IEEE 754-2008 decimal128, binary integer encoding), as
/// Realm's `Decimal128`: up to 34 significant digits, exponents from -6176 to 6111.
///
/// Values are exact in decimal (`Decimal128("0.1")` is one tenth), compare numerically
/// (`1.0 == 1.00`), and are stored in 16 bytes.
public struct Decimal128: Hashable, Comparable, Sendable, CustomStringConvertible, LosslessStringConvertible,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral
{
    static let maxCoefficient: UInt128 = 9_999_999_999_999_999_999_999_999_999_999_999  // 34 digits
    static let exponentBias = 6176
    static let maxExponent = 6111

    /// Normalised: no trailing decimal zeros in `coefficient`; zero is `+0E0`. So equal numbers are equal bits.
    private(set) var isNegative: Bool
    private(set) var coefficient: UInt128
    private(set) var exponent: Int

    private init(negative: Bool, coefficient: UInt128, exponent: Int) {
        var c = coefficient
        var e = exponent
        while c != 0, c % 10 == 0, e < Self.maxExponent {
            c /= 10
            e += 1
        }
        if c == 0 {
            self.isNegative = false
            self.coefficient = 0
            self.exponent = 0
        } else {
            self.isNegative = negative
            self.coefficient = c
            self.exponent = e
        }
    }

    /// Zero.
    public init() { self.init(negative: false, coefficient: 0, exponent: 0) }

    /// The exact value of an integer.
    public init(_ value: Int) {
        self.init(negative: value < 0, coefficient: UInt128(value.magnitude), exponent: 0)
    }

    public init(integerLiteral value: Int) { self.init(value) }

    /// The shortest decimal that reads back as `value` (`Decimal128(0.1)` is exactly one tenth). Infinite
    /// and NaN values become zero.
    public init(_ value: Double) { self = Decimal128(value.isFinite ? "\(value)" : "0") ?? Decimal128() }

    public init(floatLiteral value: Double) { self.init(value) }

    /// The value of a Foundation `Decimal` (rounded to 34 significant digits).
    public init(_ value: Decimal) { self = Decimal128(value.description) ?? Decimal128() }

    /// Parses decimal text such as `"12.5"`, `"-3"`, `"1.25e-7"`; nil for anything else. Digits past the
    /// 34th significant one are rounded half to even.
    public init?(_ description: String) {
        var chars = Substring(description.trimmingCharacters(in: .whitespaces))
        var negative = false
        if let first = chars.first, first == "-" || first == "+" {
            negative = first == "-"
            chars = chars.dropFirst()
        }
        var digits: [UInt8] = []
        var exponent = 0
        var sawPoint = false
        var sawDigit = false
        while let c = chars.first, c.isASCII, c.isNumber || c == "." {
            chars = chars.dropFirst()
            if c == "." {
                if sawPoint { return nil }
                sawPoint = true
                continue
            }
            sawDigit = true
            let digit = c.asciiValue! - 48
            if digits.isEmpty && digit == 0 {
                if sawPoint { exponent -= 1 }
                continue
            }
            digits.append(digit)
            if sawPoint { exponent -= 1 }
        }
        guard sawDigit else { return nil }
        if let c = chars.first, c == "e" || c == "E" {
            guard let e = Int(chars.dropFirst()), e > -100_000, e < 100_000 else { return nil }
            exponent += e
        } else if !chars.isEmpty {
            return nil
        }
        // Round to 34 significant digits, half to even.
        if digits.count > 34 {
            let dropped = digits[34...]
            exponent += dropped.count
            digits = Array(digits[..<34])
            let first = dropped.first!
            let rest = dropped.dropFirst().contains { $0 != 0 }
            if first > 5 || (first == 5 && (rest || digits.last! % 2 == 1)) {
                var i = digits.count - 1
                while i >= 0 {
                    if digits[i] == 9 {
                        digits[i] = 0
                        i -= 1
                    } else {
                        digits[i] += 1
                        break
                    }
                }
                if i < 0 {
                    digits.insert(1, at: 0)
                    digits.removeLast()
                    exponent += 1
                }
            }
        }
        var coefficient: UInt128 = 0
        for d in digits { coefficient = coefficient * 10 + UInt128(d) }
        guard coefficient == 0 || exponent <= Self.maxExponent + 33 else { return nil }
        if exponent < -Self.exponentBias {
            // Too small to represent: round to zero (sub-normal handling is out of scope).
            self.init()
            return
        }
        // Move excess exponent into the coefficient when it still fits (1E6120 = 1000000000E6111).
        while exponent > Self.maxExponent, coefficient != 0, coefficient * 10 <= Self.maxCoefficient {
            coefficient *= 10
            exponent -= 1
        }
        guard exponent <= Self.maxExponent || coefficient == 0 else { return nil }
        self.init(negative: negative, coefficient: coefficient, exponent: coefficient == 0 ? 0 : exponent)
    }

    /// The value as text: plain notation for moderate exponents, scientific otherwise.
    public var description: String {
        let digits = String(coefficient)
        let sign = isNegative ? "-" : ""
        if exponent >= 0 {
            if exponent + digits.count <= 34 { return sign + digits + String(repeating: "0", count: exponent) }
            return sign + digits + "E+\(exponent)"
        }
        let point = digits.count + exponent
        if point > 0 { return sign + digits.prefix(point) + "." + digits.dropFirst(point) }
        if point > -10 { return sign + "0." + String(repeating: "0", count: -point) + digits }
        return sign + digits + "E\(exponent)"
    }

    /// The value as a Foundation `Decimal` (which holds up to 38 digits, exponents -128...127).
    public var decimalValue: Decimal { Decimal(string: description) ?? 0 }

    /// The value as the nearest `Double`.
    public var doubleValue: Double { Double(description) ?? 0 }

    public static func < (lhs: Decimal128, rhs: Decimal128) -> Bool {
        if lhs.isNegative != rhs.isNegative { return lhs.isNegative }
        return lhs.isNegative ? magnitudeLess(rhs, lhs) : magnitudeLess(lhs, rhs)
    }

    private static func magnitudeLess(_ a: Decimal128, _ b: Decimal128) -> Bool {
        if a.coefficient == 0 || b.coefficient == 0 { return a.coefficient == 0 && b.coefficient != 0 }
        // Compare the positions of the most significant digits first, then the digits.
        let aDigits = String(a.coefficient).count
        let bDigits = String(b.coefficient).count
        let aTop = aDigits + a.exponent
        let bTop = bDigits + b.exponent
        if aTop != bTop { return aTop < bTop }
        var ac = a.coefficient
        var bc = b.coefficient
        for _ in aDigits..<max(aDigits, bDigits) { ac *= 10 }
        for _ in bDigits..<max(aDigits, bDigits) { bc *= 10 }
        return ac < bc
    }

    // MARK: Storage (IEEE 754 BID: sign bit 127, biased exponent bits 113...126, coefficient bits 0...112)

    var bits: Decimal128Bits {
        var high = UInt64(truncatingIfNeeded: coefficient >> 64) & 0x1_FFFF_FFFF_FFFF
        high |= UInt64(exponent + Self.exponentBias) << 49
        if isNegative { high |= 1 << 63 }
        return Decimal128Bits(low: UInt64(truncatingIfNeeded: coefficient), high: high)
    }

    init(bits: Decimal128Bits) {
        let coefficient = UInt128(bits.high & 0x1_FFFF_FFFF_FFFF) << 64 | UInt128(bits.low)
        let exponent = Int((bits.high >> 49) & 0x3FFF) - Self.exponentBias
        self.init(
            negative: bits.high >> 63 == 1, coefficient: min(coefficient, Self.maxCoefficient),
            exponent: min(exponent, Self.maxExponent))
    }
}
