// TEMPORARY stand-in with the PersistentBTree API, replaced by the real B+tree. Sorted arrays, O(n) insert.
import Synchronization

private let tokenCounter = Atomic<UInt64>(0)
package struct MutationToken: Hashable, Sendable {
    package let rawValue: UInt64
    package static func next() -> MutationToken {
        MutationToken(rawValue: tokenCounter.wrappingAdd(1, ordering: .relaxed).newValue)
    }
}

package struct PersistentBTree<Key: Comparable & Sendable, Value: Sendable>: Sendable, Sequence {
    private var keys: [Key] = []
    private var values: [Value] = []
    package init() {}
    package init<S: Sequence>(sortedUniqueElements: S, token: MutationToken) where S.Element == (Key, Value) {
        for (k, v) in sortedUniqueElements {
            keys.append(k)
            values.append(v)
        }
    }
    package var count: Int { keys.count }
    package var isEmpty: Bool { keys.isEmpty }
    private func search(_ key: Key) -> Int {
        var lo = 0
        var hi = keys.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if keys[mid] < key { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
    package func value(forKey key: Key) -> Value? {
        let i = search(key)
        return i < keys.count && keys[i] == key ? values[i] : nil
    }
    package func contains(_ key: Key) -> Bool { value(forKey: key) != nil }
    @discardableResult package mutating func updateValue(_ value: Value, forKey key: Key, token: MutationToken) -> Value? {
        let i = search(key)
        if i < keys.count && keys[i] == key {
            let old = values[i]
            values[i] = value
            return old
        }
        keys.insert(key, at: i)
        values.insert(value, at: i)
        return nil
    }
    @discardableResult package mutating func removeValue(forKey key: Key, token: MutationToken) -> Value? {
        let i = search(key)
        guard i < keys.count && keys[i] == key else { return nil }
        keys.remove(at: i)
        return values.remove(at: i)
    }
    package func element(at offset: Int) -> (key: Key, value: Value) { (keys[offset], values[offset]) }
    package func offset(of key: Key) -> Int? {
        let i = search(key)
        return i < keys.count && keys[i] == key ? i : nil
    }
    package func forEach(from lowerBound: Key?, inclusive: Bool, _ body: (Key, Value) throws -> Bool) rethrows {
        var i = lowerBound.map(search) ?? 0
        if let lb = lowerBound, !inclusive, i < keys.count, keys[i] == lb { i += 1 }
        while i < keys.count {
            if try !body(keys[i], values[i]) { return }
            i += 1
        }
    }
    package var first: (key: Key, value: Value)? { keys.isEmpty ? nil : (keys[0], values[0]) }
    package var last: (key: Key, value: Value)? { keys.isEmpty ? nil : (keys[keys.count - 1], values[values.count - 1]) }
    package func floor(_ key: Key) -> (key: Key, value: Value)? {
        let i = search(key)
        if i < keys.count && keys[i] == key { return (keys[i], values[i]) }
        return i == 0 ? nil : (keys[i - 1], values[i - 1])
    }
    package func makeIterator() -> AnyIterator<(key: Key, value: Value)> {
        var i = 0
        let k = keys
        let v = values
        return AnyIterator {
            guard i < k.count else { return nil }
            defer { i += 1 }
            return (k[i], v[i])
        }
    }
    package func checkInvariants() {}
}
