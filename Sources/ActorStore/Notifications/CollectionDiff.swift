/// How one sequence became another: the index sets of a collection change.
///
/// Deleting `deletions` from `old` (descending) and then inserting `new[i]` at each of `insertions`
/// (ascending) turns `old` into `new`. Elements kept (in both, in the same relative order) and modified are
/// listed in `modifications` (new indices) and `modificationsInOld` (old indices).
struct CollectionDiff: Equatable {
    var deletions: [Int] = []
    var insertions: [Int] = []
    var modifications: [Int] = []
    var modificationsInOld: [Int] = []

    var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty && modifications.isEmpty }

    /// The general diff, for sequences that may hold an element more than once (the i-th occurrence in
    /// `old` pairs with the i-th in `new`). Common prefix and suffix are skipped in O(n) without hashing;
    /// the rest pairs elements by hash and keeps the longest run already in order (the fewest moves).
    static func between<K: Hashable>(_ old: [K], _ new: [K], modified: Set<K>) -> CollectionDiff {
        var diff = CollectionDiff()
        var prefix = 0
        let shorter = min(old.count, new.count)
        old.withUnsafeBufferPointer { o in
            new.withUnsafeBufferPointer { n in
                while prefix < shorter && o[prefix] == n[prefix] { prefix += 1 }
            }
        }
        var oldEnd = old.count
        var newEnd = new.count
        while oldEnd > prefix && newEnd > prefix && old[oldEnd - 1] == new[newEnd - 1] {
            oldEnd -= 1
            newEnd -= 1
        }
        // Pairs (old index, new index) of elements present in both, in new order.
        var pairs: [(old: Int, new: Int)] = []
        if prefix < oldEnd || prefix < newEnd {
            // The unpaired occurrences of each element in `old`: `first[k]`, then `following[i]` after `i`.
            var first: [K: Int] = [:]
            first.reserveCapacity(oldEnd - prefix)
            var following = [Int](repeating: -1, count: oldEnd - prefix)
            for i in (prefix..<oldEnd).reversed() {
                if let next = first.updateValue(i, forKey: old[i]) { following[i - prefix] = next }
            }
            var paired = [Bool](repeating: false, count: oldEnd - prefix)
            for j in prefix..<newEnd {
                if let i = first[new[j]], i >= 0 {
                    first[new[j]] = following[i - prefix]
                    pairs.append((i, j))
                    paired[i - prefix] = true
                } else {
                    diff.insertions.append(j)
                }
            }
            for i in prefix..<oldEnd where !paired[i - prefix] { diff.deletions.append(i) }
        }
        let kept = longestIncreasing(pairs.map(\.old))
        var keptPairs: [(old: Int, new: Int)] = []
        keptPairs.reserveCapacity(kept.count)
        var next = 0
        for (position, pair) in pairs.enumerated() {
            if next < kept.count && kept[next] == position {
                keptPairs.append(pair)
                next += 1
            } else {
                diff.deletions.append(pair.old)
                diff.insertions.append(pair.new)
            }
        }
        if !modified.isEmpty {
            for i in 0..<prefix where modified.contains(old[i]) {
                diff.modifications.append(i)
                diff.modificationsInOld.append(i)
            }
            for pair in keptPairs where modified.contains(new[pair.new]) {
                diff.modifications.append(pair.new)
                diff.modificationsInOld.append(pair.old)
            }
            for offset in 0..<(old.count - oldEnd) where modified.contains(old[oldEnd + offset]) {
                diff.modifications.append(newEnd + offset)
                diff.modificationsInOld.append(oldEnd + offset)
            }
        }
        diff.deletions.sort()
        diff.insertions.sort()
        diff.modifications.sort()
        diff.modificationsInOld.sort()
        return diff
    }

    /// The positions (into `values`) of one longest strictly increasing subsequence, ascending.
    /// O(n log n) (patience sorting).
    static func longestIncreasing(_ values: [Int]) -> [Int] {
        guard !values.isEmpty else { return [] }
        var tails: [Int] = []  // positions: tails[k] ends the best run of length k + 1
        var previous = [Int](repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            var lo = 0
            var hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if values[tails[mid]] < value { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 { previous[position] = tails[lo - 1] }
            if lo == tails.count { tails.append(position) } else { tails[lo] = position }
        }
        var result = [Int](repeating: 0, count: tails.count)
        var position = tails[tails.count - 1]
        for k in stride(from: tails.count - 1, through: 0, by: -1) {
            result[k] = position
            position = previous[position]
        }
        return result
    }

    /// Applies the diff to `old` (deletions, then insertions taken from `new`): what a table view does.
    /// Used by tests to check the contract.
    static func apply<K>(_ diff: CollectionDiff, to old: [K], insertingFrom new: [K]) -> [K] {
        var result = old
        for i in diff.deletions.reversed() { result.remove(at: i) }
        for j in diff.insertions { result.insert(new[j], at: j) }
        return result
    }
}
