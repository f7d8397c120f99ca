import ActorStore
import Foundation
import Testing

// A writer must make progress while readers loop on `await realm.read { }` without ever yielding
// themselves (the peer benchmark's W9). An uncontended `await realm.read { }` does not suspend: the task
// runs the actor's code on its own thread and comes back without giving the thread up. As many such loops
// as the cooperative pool has threads used to hold every thread, so the writer task — and the resumption
// of its commit after the fsync — never ran: 0 commits in 5 s on 2 cores. The same holds for readers that
// loop on `await realm.freeze()` and read the snapshot (a `FrozenRealm` is read without awaiting at all).

final class WriterProgressItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

/// How the readers of ``WriterProgressTests`` read: in `read` calls, or from a new frozen snapshot each time.
enum ReaderLoop: String, CustomStringConvertible, CaseIterable, Sendable {
    case read
    case freeze

    var description: String { rawValue }

    /// One lookup of `key` in `realm`; whether it found the seeded object.
    func lookUp(_ key: Int, in realm: Realm) async -> Bool {
        switch self {
        case .read:
            await realm.read { realm in
                realm.object(ofType: WriterProgressItem.self, forPrimaryKey: key)?.name == "seed-\(key)"
            }
        case .freeze:
            await realm.freeze().object(ofType: WriterProgressItem.self, forPrimaryKey: key)?.name == "seed-\(key)"
        }
    }
}

/// Serialized, and alone in its suite: its readers load every thread of the pool on purpose.
@Suite(.serialized)
struct WriterProgressTests {
    /// One reader per thread of the cooperative pool (at least two), each on its own `Realm` actor and
    /// looping on `read`; one writer making durable single-object commits. The writer must finish `commits`
    /// commits before the readers have done `readBudget` reads each — progress counted against progress, so
    /// that a machine (or ThreadSanitizer, or other suites loading the pool) slowing everyone down does not
    /// fail it. With the fix a commit costs the readers a few thousand reads at most (they give their
    /// threads up as soon as the writer waits for one); before it, the writer made no commit at all while
    /// the readers ran through their budget.
    ///
    /// The deadline bounds the run. A run that reaches it with read budget left — everyone slow, as under
    /// ThreadSanitizer with every other suite loading the same two threads (a CI run got 5 of 10 commits
    /// in) — is judged by the same measure: no more than `readBudget / commits` reads per reader per commit,
    /// and at least one commit.
    @Test(arguments: ReaderLoop.allCases)
    func durableWriterProgressesWhileReadersLoopWithoutYielding(_ loop: ReaderLoop) async throws {
        var configuration = testConfiguration([WriterProgressItem.self], durability: .full)
        configuration.automaticCompaction = false
        let seeded = 100
        let setup = try await Realm(configuration: configuration)
        try await setup.write { realm in
            for id in 0..<seeded { realm.create(WriterProgressItem.self, value: ["id": id, "name": "seed-\(id)"]) }
        }

        let readerCount = max(2, ProcessInfo.processInfo.activeProcessorCount)
        var readers: [Realm] = []
        for _ in 0..<readerCount { readers.append(try await Realm(configuration: configuration)) }
        let writer = try await Realm(configuration: configuration)

        let commits = 10
        let readBudget = 1_000_000
        let deadline = ContinuousClock.now.advanced(by: .seconds(120))
        // Set by the writer after its last commit, or by a reader out of budget or time: whoever is first.
        let stop = Locked(false)
        let started = ContinuousClock.now
        // How many commits the writer had finished when the readers stopped, how many reads they did, and
        // whether a reader stopped because it ran out of budget.
        let (writes, reads, missed, writerFinishedFirst, outOfBudget) = try await withThrowingTaskGroup(
            of: (writes: Int, reads: Int, missed: Int, finished: Bool, outOfBudget: Bool).self
        ) { group in
            for (index, reader) in readers.enumerated() {
                group.addTask {
                    var reads = 0
                    var missed = 0
                    while !stop.withLock({ $0 }) && reads < readBudget && ContinuousClock.now < deadline {
                        let key = (index * 7 + reads) % seeded
                        let found = await loop.lookUp(key, in: reader)
                        if !found { missed += 1 }
                        reads += 1
                    }
                    // Out of budget (or time): the writer is too late from now on.
                    stop.withLock { $0 = true }
                    return (0, reads, missed, false, reads >= readBudget)
                }
            }
            group.addTask {
                var writes = 0
                while writes < commits && !stop.withLock({ $0 }) && ContinuousClock.now < deadline {
                    let id = seeded + writes
                    try await writer.write { realm in
                        realm.create(WriterProgressItem.self, value: ["id": id, "name": "new-\(id)"])
                    }
                    writes += 1
                }
                // Counted before the readers are released: these commits happened while they looped.
                let finished = stop.withLock { stop in
                    let first = !stop
                    stop = true
                    return first
                }
                return (writes, 0, 0, finished && writes == commits, false)
            }
            var total = (writes: 0, reads: 0, missed: 0, finished: false, outOfBudget: false)
            for try await part in group {
                total.writes += part.writes
                total.reads += part.reads
                total.missed += part.missed
                total.finished = total.finished || part.finished
                total.outOfBudget = total.outOfBudget || part.outOfBudget
            }
            return total
        }
        let elapsed = ContinuousClock.now - started
        let progress = "\(writes) of \(commits) commits and \(reads) reads in \(elapsed)"

        if !writerFinishedFirst && !outOfBudget {
            // The deadline came first, with read budget left: judged by the same measure, reads per commit.
            print("[writer progress, \(loop)] the deadline came first: \(progress)")
            #expect(
                writes > 0 && reads <= writes * (readBudget / commits) * readerCount,
                "the readers did more than \(readBudget / commits) reads each per commit: \(progress)")
        } else {
            #expect(writes == commits, "the writer finished \(progress) while the readers looped")
            #expect(
                writerFinishedFirst, "a reader ran out of its \(readBudget) reads first: \(progress)")
        }
        #expect(reads <= readerCount * readBudget)
        #expect(reads > 0)
        #expect(missed == 0)
        let stored = await setup.read { $0.objects(WriterProgressItem.self).count }
        #expect(stored == seeded + writes)
    }
}
