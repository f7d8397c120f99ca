import ActorStore
import Foundation

/// What `verify` prints after `VERIFY `, as JSON. `last[s]` is stream s's last committed seq (0 for a
/// stream without commits; streams after the last one with commits are left out).
struct VerifySummary: Codable, Sendable {
    var ok: Bool
    var last: [Int]
    var commits: Int
    var purged: Int
    var entries: Int
    /// The first problems found (at most 20); empty when `ok`.
    var problems: [String]
}

/// Opens the store and checks: each stream's transactions 1...last exist exactly once and none beyond;
/// each has all of its entries, with the right contents, or (purged) none; no entry is duplicated or
/// belongs to no transaction.
func runVerify(path: String) async -> Int32 {
    let realm: Realm
    do {
        realm = try await Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: path)))
    } catch {
        emit("ERROR \(describe(error))")
        return 2
    }
    let summary = await realm.read { realm in check(realm) }
    let json = (try? JSONEncoder().encode(summary)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    emit("VERIFY " + json)
    return summary.ok ? 0 : 1
}

private func check(_ realm: isolated Realm) -> VerifySummary {
    var problems: [String] = []
    func problem(_ text: String) { if problems.count < 20 { problems.append(text) } }

    // A stream's progress object appears with its first commit: streams of a concurrent run that have not
    // committed yet are missing (last 0), so ids may have gaps.
    let streams = Array(realm.objects(WriterStream.self))
    let count = (streams.map(\.id).filter { (0..<1000).contains($0) }.max() ?? -1) + 1
    var last = Array(repeating: 0, count: count)
    var lags = Array(repeating: 0, count: count)
    for stream in streams {
        guard (0..<count).contains(stream.id) else {
            problem("stream id \(stream.id)")
            continue
        }
        if stream.last < 1 { problem("stream \(stream.id) has last \(stream.last)") }
        last[stream.id] = stream.last
        lags[stream.id] = stream.purgeLag
    }
    func expectPurged(_ stream: Int, _ seq: Int) -> Bool {
        lags[stream] > 0 && seq <= last[stream] - lags[stream]
    }

    // Transactions: exactly 1...last of each stream.
    var counts: [Int: Int] = [:]
    var purgedCount = 0
    for record in realm.objects(Commit.self) {
        let (stream, seq) = (record.id / Model.streamFactor, record.id % Model.streamFactor)
        guard stream == record.stream, seq == record.seq, stream >= 0, stream < last.count else {
            problem("transaction \(record.id) (stream \(record.stream), seq \(record.seq)) has no stream")
            continue
        }
        guard seq >= 1, seq <= last[stream] else {
            problem("transaction \(record.id) beyond its stream's last \(last[stream]) (a partial transaction)")
            continue
        }
        if counts.updateValue(record.count, forKey: record.id) != nil { problem("transaction \(record.id) twice") }
        if record.count < 1 { problem("transaction \(record.id) has count \(record.count)") }
        if record.purged != expectPurged(stream, seq) {
            problem("transaction \(record.id) purged \(record.purged), expected \(!record.purged)")
        }
        if record.purged { purgedCount += 1 }
    }
    for stream in last.indices {
        for seq in stride(from: 1, through: last[stream], by: 1)
        where counts[Model.txn(stream: stream, seq: seq)] == nil {
            problem("transaction \(Model.txn(stream: stream, seq: seq)) missing (stream last \(last[stream]))")
        }
    }

    // Entries: all of each live transaction, none of a purged one, nothing twice, nothing else.
    var seen: [Int: Set<Int>] = [:]
    var entries = 0
    for entry in realm.objects(Entry.self) {
        entries += 1
        let txn = entry.txn
        guard let count = counts[txn] else {
            problem("entry \(txn)/\(entry.index) of no committed transaction (a partial transaction)")
            continue
        }
        if entry.count != count { problem("entry \(txn)/\(entry.index) count \(entry.count), transaction \(count)") }
        if entry.index < 0 || entry.index >= count { problem("entry \(txn)/\(entry.index) out of 0..<\(count)") }
        if entry.check != Model.check(txn, entry.index) { problem("entry \(txn)/\(entry.index) check wrong") }
        if !entry.payload.hasPrefix("\(txn)/\(entry.index):") { problem("entry \(txn)/\(entry.index) payload wrong") }
        if !seen[txn, default: []].insert(entry.index).inserted { problem("entry \(txn)/\(entry.index) twice") }
    }
    for (txn, count) in counts {
        let (stream, seq) = (txn / Model.streamFactor, txn % Model.streamFactor)
        let want = expectPurged(stream, seq) ? 0 : count
        let have = seen[txn]?.count ?? 0
        if have != want { problem("transaction \(txn) has \(have) of \(want) entries") }
    }
    return VerifySummary(
        ok: problems.isEmpty, last: last, commits: counts.count, purged: purgedCount, entries: entries,
        problems: problems)
}
