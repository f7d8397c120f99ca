/// Counts the snapshots alive for each version, so the engine can report how many versions are pinned
/// and the oldest, and refuse runaway pinning.
package final class VersionPins: Sendable {
    private let counts = Locked<[Version: Int]>([:])

    package init() {}

    /// Pins `version`; the returned token unpins it when released.
    /// - Throws: `.tooManyVersions` if that would pin more than `limit` distinct versions.
    /// - Parameter replacing: a version the caller is about to release: when this is its only pin, it does
    ///   not count against `limit` (moving a reader forward must not need room for two versions).
    package func pin(_ version: Version, limit: Int?, replacing: Version? = nil) throws(StorageError) -> VersionPin {
        try counts.withLock { counts throws(StorageError) in
            let releasing = replacing.map { $0 != version && counts[$0] == 1 } ?? false
            if let limit, counts[version] == nil, counts.count - (releasing ? 1 : 0) >= limit {
                throw StorageError(
                    .tooManyVersions,
                    "\(counts.count) versions are pinned by live snapshots (maximumNumberOfActiveVersions is \(limit)). "
                        + "Release frozen objects and snapshots you no longer need, or raise the limit.")
            }
            counts[version, default: 0] += 1
        }
        return VersionPin(version: version, pins: self)
    }

    fileprivate func unpin(_ version: Version) {
        counts.withLock { counts in
            if let n = counts[version], n > 1 { counts[version] = n - 1 } else { counts[version] = nil }
        }
    }

    /// How many distinct versions are pinned besides `version` when `version` has a single pin (the
    /// caller's own, about to be replaced).
    package func count(excludingSolePinOf version: Version?) -> Int {
        counts.withLock { counts in
            counts.count - (version.map { counts[$0] == 1 ? 1 : 0 } ?? 0)
        }
    }

    /// How many distinct versions are pinned, and the oldest.
    package var summary: (count: Int, oldest: Version?) {
        counts.withLock { ($0.count, $0.keys.min()) }
    }
}

/// Keeps one version pinned while alive.
package final class VersionPin: Sendable {
    package let version: Version
    private let pins: VersionPins
    fileprivate init(version: Version, pins: VersionPins) {
        self.version = version
        self.pins = pins
    }
    deinit { pins.unpin(version) }
}
