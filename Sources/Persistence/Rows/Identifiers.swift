/// The identity of an object inside its table.
///
/// Keys are assigned by the engine from a per-table counter that never goes backwards, so a deleted
/// object's key is never handed to a new object (a stale reference resolves to nothing rather than to a
/// stranger). Keys survive compaction unchanged. Ordering by key is insertion order, which is the order
/// an unsorted query returns.
package struct ObjectKey: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    package var rawValue: Int64
    package init(rawValue: Int64) { self.rawValue = rawValue }
    package init(_ rawValue: Int64) { self.rawValue = rawValue }
    package static func < (lhs: ObjectKey, rhs: ObjectKey) -> Bool { lhs.rawValue < rhs.rawValue }
    package var description: String { "O\(rawValue)" }
}

/// The identity of a table in a file. Stable for the life of the file, including across compaction.
package struct TableID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    package var rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }
    package init(_ rawValue: UInt32) { self.rawValue = rawValue }
    package static func < (lhs: TableID, rhs: TableID) -> Bool { lhs.rawValue < rhs.rawValue }
    package var description: String { "T\(rawValue)" }
}

/// A committed version of the database. Version 0 is the empty database; every commit adds one.
package struct Version: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    package var rawValue: UInt64
    package init(rawValue: UInt64) { self.rawValue = rawValue }
    package init(_ rawValue: UInt64) { self.rawValue = rawValue }
    package static func < (lhs: Version, rhs: Version) -> Bool { lhs.rawValue < rhs.rawValue }
    package static let zero = Version(0)
    /// The newest version a store may hold. Replay rejects a record for a later version as malformed
    /// and ``StorageEngine/beginWrite()`` refuses to start a transaction once it is reached, so every
    /// version in a state, and its ``next``, is representable.
    package static let max = Version(UInt64.max - 1)
    /// The version after this one. Saturates at `UInt64.max` instead of trapping (the checks above keep
    /// every state at or below ``max``, so a version compared with `next` is never at the limit).
    package var next: Version { Version(rawValue == UInt64.max ? rawValue : rawValue + 1) }
    package var description: String { "v\(rawValue)" }
}

/// A byte offset in a store file.
package struct FileOffset: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    package var rawValue: UInt64
    package init(rawValue: UInt64) { self.rawValue = rawValue }
    package init(_ rawValue: UInt64) { self.rawValue = rawValue }
    package init(_ rawValue: Int) { self.rawValue = UInt64(rawValue) }
    package static func < (lhs: FileOffset, rhs: FileOffset) -> Bool { lhs.rawValue < rhs.rawValue }
    package var int: Int { Int(rawValue) }
    package var description: String { "offset \(rawValue)" }
}

/// A 12-byte MongoDB-style ObjectId, stored as raw bytes. (The public `ObjectId` type lives in ActorStore.)
package struct ObjectIDBytes: Hashable, Comparable, Sendable {
    package var high: UInt64  // bytes 0..<8, big-endian so that comparison follows byte order
    package var low: UInt32  // bytes 8..<12, big-endian
    package init(high: UInt64, low: UInt32) {
        self.high = high
        self.low = low
    }
    package static func < (lhs: Self, rhs: Self) -> Bool { (lhs.high, lhs.low) < (rhs.high, rhs.low) }
}

/// A 128-bit IEEE 754-2008 decimal (BID encoding, as Realm's Decimal128), stored as two words.
/// The engine only stores and compares bit patterns; arithmetic belongs to the public type.
package struct Decimal128Bits: Hashable, Comparable, Sendable {
    package var low: UInt64
    package var high: UInt64
    package init(low: UInt64, high: UInt64) {
        self.low = low
        self.high = high
    }
    package static func < (lhs: Self, rhs: Self) -> Bool { (lhs.high, lhs.low) < (rhs.high, rhs.low) }
}
