/// A set of object keys stored as sorted, disjoint ranges.
///
/// A transaction inserts keys in ascending order (keys come from a per-table counter), so the keys it
/// inserted are usually one range: recording a million inserts costs a few bytes, not a million hash
/// insertions.
package struct KeyRangeSet: Hashable, Sendable, Sequence, ExpressibleByArrayLiteral, CustomStringConvertible {
    private var ranges: [Range<Int64>] = []
    package private(set) var count = 0

    package init() {}
    package init(arrayLiteral keys: ObjectKey...) {
        for key in keys { insert(key) }
    }

    package var isEmpty: Bool { count == 0 }

    /// The index of the first range whose upper bound is greater than `k`.
    private func firstRange(after k: Int64) -> Int {
        var lo = 0
        var hi = ranges.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].upperBound <= k { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    package func contains(_ key: ObjectKey) -> Bool {
        let i = firstRange(after: key.rawValue)
        return i < ranges.count && ranges[i].contains(key.rawValue)
    }

    /// Inserts `key`. O(1) when `key` extends the last range, O(ranges) otherwise.
    @discardableResult
    package mutating func insert(_ key: ObjectKey) -> Bool {
        let k = key.rawValue
        if let last = ranges.last, last.upperBound == k, k < Int64.max {
            ranges[ranges.count - 1] = last.lowerBound..<(k + 1)
            count += 1
            return true
        }
        let i = firstRange(after: k)
        if i < ranges.count && ranges[i].contains(k) { return false }
        count += 1
        let joinsLeft = i > 0 && ranges[i - 1].upperBound == k
        let joinsRight = i < ranges.count && ranges[i].lowerBound == k + 1
        switch (joinsLeft, joinsRight) {
        case (true, true):
            ranges[i - 1] = ranges[i - 1].lowerBound..<ranges[i].upperBound
            ranges.remove(at: i)
        case (true, false): ranges[i - 1] = ranges[i - 1].lowerBound..<(k + 1)
        case (false, true): ranges[i] = k..<ranges[i].upperBound
        case (false, false): ranges.insert(k..<(k + 1), at: i)
        }
        return true
    }

    /// Removes `key`; returns whether it was present.
    @discardableResult
    package mutating func remove(_ key: ObjectKey) -> ObjectKey? {
        let k = key.rawValue
        let i = firstRange(after: k)
        guard i < ranges.count, ranges[i].contains(k) else { return nil }
        let range = ranges[i]
        count -= 1
        if range.count == 1 {
            ranges.remove(at: i)
        } else if k == range.lowerBound {
            ranges[i] = (k + 1)..<range.upperBound
        } else if k == range.upperBound - 1 {
            ranges[i] = range.lowerBound..<k
        } else {
            ranges[i] = range.lowerBound..<k
            ranges.insert((k + 1)..<range.upperBound, at: i + 1)
        }
        return key
    }

    package func makeIterator() -> AnyIterator<ObjectKey> {
        var outer = ranges.makeIterator()
        var inner: Range<Int64>.Iterator?
        return AnyIterator {
            while true {
                if let k = inner?.next() { return ObjectKey(k) }
                guard let next = outer.next() else { return nil }
                inner = next.makeIterator()
            }
        }
    }

    package var description: String { "\(Array(self))" }
}
