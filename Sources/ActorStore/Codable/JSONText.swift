import Foundation

/// The text forms of stored values in ActorStore's JSON: deterministic (one spelling per value, so an
/// export of an imported export is the same bytes) and exact (parsing a form gives back the same value).
enum JSONText {
    // MARK: Numbers

    /// A `Double` as its shortest round-trip decimal (`1.5`, `1e-05`, `-0.0`), or `"NaN"`, `"Infinity"`,
    /// `"-Infinity"` (JSON has no non-finite numbers, so those are strings).
    static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        if value.isFinite {
            out.append(contentsOf: value.description.utf8)
        } else {
            appendString(value.isNaN ? "NaN" : (value < 0 ? "-Infinity" : "Infinity"), to: &out)
        }
    }

    /// A `Float` as its shortest round-trip decimal, or a string for a non-finite value (see `appendDouble`).
    static func appendFloat(_ value: Float, to out: inout [UInt8]) {
        if value.isFinite {
            out.append(contentsOf: value.description.utf8)
        } else {
            appendString(value.isNaN ? "NaN" : (value < 0 ? "-Infinity" : "Infinity"), to: &out)
        }
    }

    /// An integer in decimal.
    @inline(__always)
    static func appendInt(_ value: Int64, to out: inout [UInt8]) {
        if value >= 0 && value < 10 {
            out.append(UInt8(48 + value))
            return
        }
        out.append(contentsOf: String(value).utf8)
    }

    // MARK: Strings

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON string: `"` and `\` escaped, control characters as `\n`, `\t`, ... or `\u00XX`, everything else
    /// as its UTF-8 bytes.
    static func appendString(_ value: String, to out: inout [UInt8]) {
        out.append(0x22)
        var value = value
        value.withUTF8 { bytes in
            var start = 0
            for i in 0..<bytes.count {
                let byte = bytes[i]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                if start < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i])) }
                start = i + 1
                out.append(0x5C)
                switch byte {
                case 0x22: out.append(0x22)
                case 0x5C: out.append(0x5C)
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
                }
            }
            if start < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...])) }
        }
        out.append(0x22)
    }

    // MARK: Dates

    /// Seconds from 1970 to 2001 (the reference date).
    private static let referenceOffset: Int64 = 978_307_200

    /// The largest magnitude of `timeIntervalSinceReferenceDate` written as ISO 8601 (years within ±9999).
    private static let isoLimit = 250_000_000_000.0

    /// A date as ISO 8601 in UTC with every digit of its fraction: `2023-11-14T22:13:20.123456789012Z`. The
    /// fraction is the shortest decimal that reads back as the same `Double`, so parsing gives the same
    /// date to the bit. A non-finite date, or one beyond the years ±9999, is written as `@` and its seconds
    /// since 2001 (`"@inf"`, `"@-1e+300"`).
    static func appendDate(_ date: Date, to out: inout [UInt8]) {
        let interval = date.timeIntervalSinceReferenceDate
        guard interval.isFinite, abs(interval) < isoLimit else {
            appendString("@" + interval.description, to: &out)
            return
        }
        let whole = interval.rounded(.down)
        let fraction = interval - whole  // exact: both are doubles of the same binade or smaller
        let seconds = Int64(whole) + referenceOffset
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        out.append(0x22)
        if year < 0 {
            out.append(UInt8(ascii: "-"))
            appendPadded(-year, 4, to: &out)
        } else {
            appendPadded(year, 4, to: &out)
        }
        out.append(UInt8(ascii: "-"))
        appendPadded(month, 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendPadded(day, 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendPadded(secondOfDay / 3600, 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay / 60 % 60, 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay % 60, 2, to: &out)
        if fraction > 0 {
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: fractionDigits(fraction).utf8)
        }
        out.append(UInt8(ascii: "Z"))
        out.append(0x22)
    }

    /// The digits after the point of the shortest decimal of `fraction` (0 < fraction < 1).
    private static func fractionDigits(_ fraction: Double) -> String {
        let text = fraction.description  // "0.125" or "1.25e-05"
        guard let e = text.firstIndex(of: "e") else { return String(text.dropFirst(2)) }
        let exponent = Int(text[text.index(after: e)...]) ?? 0  // negative
        let mantissa = text[..<e].replacingOccurrences(of: ".", with: "")
        var digits = String(repeating: "0", count: -exponent - 1) + mantissa
        while digits.hasSuffix("0") { digits.removeLast() }
        return digits
    }

    private static func appendPadded(_ value: Int64, _ width: Int, to out: inout [UInt8]) {
        let text = String(value)
        for _ in text.utf8.count..<max(width, text.utf8.count) { out.append(0x30) }
        out.append(contentsOf: text.utf8)
    }

    /// Year, month, day of the proleptic Gregorian calendar for a day count from 1970-01-01.
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 of a date of the proleptic Gregorian calendar.
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Parses what `appendDate` writes (also without a fraction, and with a `+00:00` zone).
    ///
    /// - Returns: The date, or nil if `text` is not such a date.
    static func parseDate(_ text: String) -> Date? {
        if text.hasPrefix("@") {
            return Double(text.dropFirst()).map { Date(timeIntervalSinceReferenceDate: $0) }
        }
        var bytes = Array(text.utf8)
        if bytes.last == UInt8(ascii: "Z") {
            bytes.removeLast()
        } else if bytes.count > 6, String(decoding: bytes.suffix(6), as: UTF8.self) == "+00:00" {
            bytes.removeLast(6)
        } else {
            return nil
        }
        var i = 0
        func number(_ width: Int) -> Int64? {
            guard i + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[i..<(i + width)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            i += width
            return value
        }
        func expect(_ character: Character) -> Bool {
            guard i < bytes.count, bytes[i] == character.asciiValue else { return false }
            i += 1
            return true
        }
        let negative = expect("-")
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("T"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
            second < 60
        else { return nil }
        var fraction = 0.0
        if expect(".") {
            let digits = bytes[i...]
            guard !digits.isEmpty, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Double("0." + String(decoding: digits, as: UTF8.self))
            else { return nil }
            fraction = value
            i = bytes.count
        }
        guard i == bytes.count else { return nil }
        let dayCount = days(fromCivil: negative ? -year : year, month, day)
        let seconds = dayCount * 86_400 + hour * 3600 + minute * 60 + second - referenceOffset
        return Date(timeIntervalSinceReferenceDate: Double(seconds) + fraction)
    }

    /// Parses a number or one of the strings `appendDouble` writes for non-finite values.
    static func parseDouble(_ value: JSONValue) -> Double? {
        switch value {
        case .number(let text): Double(text)
        case .string("NaN"): .nan
        case .string("Infinity"): .infinity
        case .string("-Infinity"): -.infinity
        default: nil
        }
    }
}
