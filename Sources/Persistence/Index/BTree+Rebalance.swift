/// The structural operations shared by insertion and removal: splitting an overfull node, moving
/// elements between siblings, and merging siblings. Each keeps the parent's separators valid bounds
/// and its subtree counts exact; all nodes passed in must already be mutable under the caller's token, except the
/// right node of ``PersistentBTree/merge(_:into:parent:at:)``, which is only read.
extension PersistentBTree {
    /// Splits the overfull child `index` of `parent` (both mutable under `token`) into two halves and
    /// inserts the right half, owned by `token`, as child `index + 1`. `parent` may overflow by one.
    ///
    /// A child of `maxFill + 1` elements splits into `maxFill / 2 + 1` and `maxFill / 2`, both at least
    /// ``minFill``.
    ///
    /// - Complexity: O(fanout).
    static func splitChild(at index: Int, of parent: Node, token: UInt64) {
        let left = parent.children[index]
        let right = Node.make(isLeaf: left.isLeaf, owner: token)
        let total = left.count
        let leftCount = (total &+ 1) / 2
        let rightCount = total &- leftCount
        let separator: Key
        let movedEntries: Int
        if left.isLeaf {
            right.keys.moveInitialize(from: left.keys + leftCount, count: rightCount)
            right.values.moveInitialize(from: left.values + leftCount, count: rightCount)
            separator = right.keys[0]
            movedEntries = rightCount
        } else {
            // Separators: s(0..<leftCount-1) stay, s(leftCount-1) moves up, the rest move right.
            separator = (left.keys + (leftCount &- 1)).move()
            right.keys.moveInitialize(from: left.keys + leftCount, count: rightCount &- 1)
            right.children.moveInitialize(from: left.children + leftCount, count: rightCount)
            right.subtreeCounts.moveInitialize(from: left.subtreeCounts + leftCount, count: rightCount)
            var moved = 0
            for child in 0..<rightCount { moved &+= right.subtreeCounts[child] }
            movedEntries = moved
        }
        left.count = leftCount
        right.count = rightCount
        insertElement(separator, at: index, in: parent.keys, count: parent.count &- 1)
        insertElement(right, at: index &+ 1, in: parent.children, count: parent.count)
        parent.subtreeCounts[index] &-= movedEntries
        insertElement(movedEntries, at: index &+ 1, in: parent.subtreeCounts, count: parent.count)
        parent.count &+= 1
    }

    /// Moves the last `moved` elements of `left` (child `separatorIndex` of `parent`) to the front of
    /// its right sibling `right`, updating the separator between them and both subtree counts.
    ///
    /// - Complexity: O(fanout).
    static func shiftRight(from left: Node, to right: Node, count moved: Int, parent: Node, at separatorIndex: Int) {
        let start = left.count &- moved
        var movedEntries = moved
        if left.isLeaf {
            (right.keys + moved).moveInitialize(from: right.keys, count: right.count)
            (right.values + moved).moveInitialize(from: right.values, count: right.count)
            right.keys.moveInitialize(from: left.keys + start, count: moved)
            right.values.moveInitialize(from: left.values + start, count: moved)
            parent.keys[separatorIndex] = right.keys[0]
        } else {
            movedEntries = 0
            for child in start..<left.count { movedEntries &+= left.subtreeCounts[child] }
            // right's separators: left's last moved - 1 separators, then the parent's, then its own.
            (right.keys + moved).moveInitialize(from: right.keys, count: right.count &- 1)
            (right.keys + (moved &- 1)).initialize(to: parent.keys[separatorIndex])
            right.keys.moveInitialize(from: left.keys + start, count: moved &- 1)
            (parent.keys + separatorIndex).pointee = (left.keys + (start &- 1)).move()
            (right.children + moved).moveInitialize(from: right.children, count: right.count)
            right.children.moveInitialize(from: left.children + start, count: moved)
            (right.subtreeCounts + moved).moveInitialize(from: right.subtreeCounts, count: right.count)
            right.subtreeCounts.moveInitialize(from: left.subtreeCounts + start, count: moved)
        }
        left.count = start
        right.count &+= moved
        parent.subtreeCounts[separatorIndex] &-= movedEntries
        parent.subtreeCounts[separatorIndex &+ 1] &+= movedEntries
    }

    /// Moves the first `moved` elements of `right` (child `separatorIndex + 1` of `parent`) to the end of
    /// its left sibling `left`, updating the separator between them and both subtree counts.
    ///
    /// - Complexity: O(fanout).
    static func shiftLeft(from right: Node, to left: Node, count moved: Int, parent: Node, at separatorIndex: Int) {
        let end = left.count
        var movedEntries = moved
        if left.isLeaf {
            (left.keys + end).moveInitialize(from: right.keys, count: moved)
            (left.values + end).moveInitialize(from: right.values, count: moved)
            right.keys.moveInitialize(from: right.keys + moved, count: right.count &- moved)
            right.values.moveInitialize(from: right.values + moved, count: right.count &- moved)
            parent.keys[separatorIndex] = right.keys[0]
        } else {
            movedEntries = 0
            for child in 0..<moved { movedEntries &+= right.subtreeCounts[child] }
            // left's new separators: the parent's, then right's first moved - 1.
            (left.keys + (end &- 1)).initialize(to: parent.keys[separatorIndex])
            (left.keys + end).moveInitialize(from: right.keys, count: moved &- 1)
            (parent.keys + separatorIndex).pointee = (right.keys + (moved &- 1)).move()
            right.keys.moveInitialize(from: right.keys + moved, count: right.count &- 1 &- moved)
            (left.children + end).moveInitialize(from: right.children, count: moved)
            right.children.moveInitialize(from: right.children + moved, count: right.count &- moved)
            (left.subtreeCounts + end).moveInitialize(from: right.subtreeCounts, count: moved)
            right.subtreeCounts.moveInitialize(from: right.subtreeCounts + moved, count: right.count &- moved)
        }
        left.count &+= moved
        right.count &-= moved
        parent.subtreeCounts[separatorIndex] &+= movedEntries
        parent.subtreeCounts[separatorIndex &+ 1] &-= movedEntries
    }

    /// Appends the elements of `right` (child `separatorIndex + 1` of `parent`, possibly shared, so its
    /// elements are copied, not moved) to `left` (mutable), and removes `right` and the separator before
    /// it from `parent`.
    ///
    /// - Complexity: O(fanout).
    static func merge(_ right: Node, into left: Node, parent: Node, at separatorIndex: Int) {
        let end = left.count
        if left.isLeaf {
            (left.keys + end).initialize(from: right.keys, count: right.count)
            (left.values + end).initialize(from: right.values, count: right.count)
        } else {
            (left.keys + (end &- 1)).initialize(to: parent.keys[separatorIndex])
            (left.keys + end).initialize(from: right.keys, count: right.count &- 1)
            (left.children + end).initialize(from: right.children, count: right.count)
            (left.subtreeCounts + end).initialize(from: right.subtreeCounts, count: right.count)
        }
        left.count &+= right.count
        let rightEntries = removeElement(at: separatorIndex &+ 1, in: parent.subtreeCounts, count: parent.count)
        parent.subtreeCounts[separatorIndex] &+= rightEntries
        _ = removeElement(at: separatorIndex, in: parent.keys, count: parent.count &- 1)
        _ = removeElement(at: separatorIndex &+ 1, in: parent.children, count: parent.count)
        parent.count &-= 1
    }
}
