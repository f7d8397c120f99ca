import ActorStorePersistence
import Foundation

/// A 12-byte, roughly time-ordered unique identifier, as MongoDB's and Realm's `ObjectId`: a 4-byte
/// timestamp (seconds), 5 random bytes fixed per process, and a 3-byte counter.
///
/// Usable as a primary key: `@Persisted(primaryKey: true) var _id: ObjectId`.
public struct ObjectId: Hashable, Comparable, Sendable, CustomStringConvertible, LosslessStringConvertible {
    /// The twelve bytes, most significant first.
    public let bytes: [UInt8]

    var storage: ObjectIDBytes {
        var high: UInt64 = 0
        for i in 0..<8 { high = high << 8 | UInt64(bytes[i]) }
        var low: UInt32 = 0
        for i in 8..<12 { low = low << 8 | UInt32(bytes[i]) }
        return ObjectIDBytes(high: high, low: low)
    }

    init(storage: ObjectIDBytes) {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: storage.high >> (56 - 8 * UInt64(i))) }
        for i in 0..<4 { bytes[8 + i] = UInt8(truncatingIfNeeded: storage.low >> (24 - 8 * UInt32(i))) }
        self.bytes = bytes
    }

    /// The all-zero id (Realm's default value for a non-optional `ObjectId` property).
    public init() { bytes = [UInt8](repeating: 0, count: 12) }

    /// A new id, unique within this process and very likely across processes.
    public static func generate() -> ObjectId {
        let seconds = UInt32(truncatingIfNeeded: Int(Date().timeIntervalSince1970))
        let count = ObjectIdCounter.next()
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<4 { bytes[i] = UInt8(truncatingIfNeeded: seconds >> (24 - 8 * UInt32(i))) }
        for i in 0..<5 { bytes[4 + i] = ObjectIdCounter.processRandom[i] }
        for i in 0..<3 { bytes[9 + i] = UInt8(truncatingIfNeeded: count >> (16 - 8 * UInt32(i))) }
        return ObjectId(validatedBytes: bytes)
    }

    private init(validatedBytes: [UInt8]) { bytes = validatedBytes }

    /// Parses 24 hexadecimal digits; nil for anything else.
    public init?(_ description: String) {
        let utf8 = Array(description.utf8)
        guard utf8.count == 24 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<12 {
            guard let hi = Self.hexValue(utf8[2 * i]), let lo = Self.hexValue(utf8[2 * i + 1]) else { return nil }
            bytes[i] = hi << 4 | lo
        }
        self.bytes = bytes
    }

    /// Parses 24 hexadecimal digits.
    /// - Throws: `RealmError.invalidValue` naming the string, for anything else.
    public init(string: String) throws(RealmError) {
        guard let id = ObjectId(string) else {
            throw RealmError(.invalidValue, "'\(string)' is not an ObjectId: expected 24 hexadecimal digits.")
        }
        self = id
    }

    /// The creation time encoded in the first four bytes (one-second resolution).
    public var timestamp: Date {
        let seconds = bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// The 24 lowercase hexadecimal digits.
    public var stringValue: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(24)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { stringValue }

    public static func < (lhs: ObjectId, rhs: ObjectId) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

private enum ObjectIdCounter {
    static let processRandom: [UInt8] = (0..<5).map { _ in UInt8.random(in: 0...255) }
    static let counter = Locked<UInt32>(UInt32.random(in: 0..<(1 << 24)))
    static func next() -> UInt32 {
        counter.withLock { value in
            value = (value &+ 1) & 0xFF_FFFF
            return value
        }
    }
}
