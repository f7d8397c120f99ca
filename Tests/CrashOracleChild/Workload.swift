import ActorStore
import ActorStorePersistence
import Foundation

/// What a `write` child commits, until it is killed.
enum Workload: String, CaseIterable, Sendable {
    /// One object per durable commit, sequential ids, one writer.
    case serial
    /// 2,000 objects per transaction.
    case big
    /// Four writer tasks committing at once: two share the first `Realm`, two open their own on the file.
    case concurrent
    /// Two writers; old transactions' entries deleted as they go, and stream 0 calls `compact()` after
    /// every fourth of its commits while stream 1 keeps writing.
    case compact
    /// Old entries deleted as it goes, with automatic compaction lowered to files of 64 KiB (so it runs
    /// every few commits) and compaction on launch when more than half of the file is dead.
    case autocompact

    /// How many writer tasks (streams) commit at once.
    var streams: Int {
        switch self {
        case .concurrent: 4
        case .compact: 2
        case .serial, .big, .autocompact: 1
        }
    }

    /// The number of `Entry` objects transaction `seq` writes.
    func count(_ seq: Int) -> Int {
        switch self {
        case .serial: 1
        case .big: 2000
        case .concurrent: 1 + seq % 3
        case .compact: seq % 5 == 0 ? 400 : 20
        case .autocompact: 40
        }
    }

    /// Characters of padding in each entry's payload.
    var pad: Int {
        switch self {
        case .serial, .concurrent: 16
        case .big: 24
        case .compact: 100
        case .autocompact: 200
        }
    }

    /// Transaction seq deletes the entries of transaction seq - purgeLag of its stream (0: never).
    var purgeLag: Int {
        switch self {
        case .serial, .big, .concurrent: 0
        case .compact: 6
        case .autocompact: 3
        }
    }

    /// Stream 0 calls `compact()` after each commit whose seq is a multiple of this.
    var compactEvery: Int? { self == .compact ? 4 : nil }

    func configuration(path: String) -> Realm.Configuration {
        var configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: path))
        if self == .autocompact {
            configuration.automaticCompactionTrigger = StorageEngine.AutoCompaction(minimumFileSize: 64 << 10)
            configuration.shouldCompactOnLaunch = { total, used in used < total / 2 }
        }
        return configuration
    }
}
