import ActorStore
import Foundation

/// Commits transactions 1, 2, ... of each stream (continuing after what the file holds) until killed.
func runWriter(path: String, workload: Workload) async throws {
    let configuration = workload.configuration(path: path)
    let first = try await Realm(configuration: configuration)
    let starts = await first.read { realm in
        (0..<workload.streams).map { realm.object(ofType: WriterStream.self, forPrimaryKey: $0)?.last ?? 0 }
    }
    emit("START " + starts.map(String.init).joined(separator: " "))
    try await withThrowingTaskGroup(of: Void.self) { group in
        for stream in 0..<workload.streams {
            group.addTask {
                // Even streams share the first Realm (several tasks, one actor); odd ones open their own.
                let realm = stream % 2 == 0 ? first : try await Realm(configuration: configuration)
                var seq = starts[stream]
                var fileSize = await realm.statistics.fileSize
                while true {
                    seq += 1
                    let committing = seq
                    try await realm.write { realm in try commit(realm, workload, stream: stream, seq: committing) }
                    emit("ACK \(stream) \(seq) \(workload.count(seq))")
                    if stream == 0, let every = workload.compactEvery, seq.isMultiple(of: every) {
                        do {
                            try await realm.compact()
                            emit("COMPACTED \(seq)")
                        } catch let error as RealmError where error.code == .alreadyOpen {
                            // A `tryopen` process has the file open right now: compaction waits for none.
                            emit("COMPACT refused \(seq)")
                        }
                    }
                    let size = await realm.statistics.fileSize
                    if size < fileSize { emit("SHRUNK \(fileSize) \(size)") }
                    fileSize = size
                }
            }
        }
        try await group.waitForAll()
    }
}

/// Transaction `seq` of `stream`: its `Commit`, its entries, the purge of an old transaction's entries
/// and the stream's progress, all in one write.
func commit(_ realm: isolated Realm, _ workload: Workload, stream: Int, seq: Int) throws {
    let txn = Model.txn(stream: stream, seq: seq)
    let count = workload.count(seq)
    let record = Commit()
    record.id = txn
    record.stream = stream
    record.seq = seq
    record.count = count
    realm.add(record)
    for index in 0..<count {
        let entry = Entry()
        entry.txn = txn
        entry.index = index
        entry.count = count
        entry.check = Model.check(txn, index)
        entry.payload = Model.payload(txn, index, pad: workload.pad)
        realm.add(entry)
    }
    let lag = workload.purgeLag
    if lag > 0, seq > lag {
        let old = Model.txn(stream: stream, seq: seq - lag)
        realm.delete(try realm.objects(Entry.self).filter("txn == %@", old))
        realm.object(ofType: Commit.self, forPrimaryKey: old)?.purged = true
    }
    realm.create(WriterStream.self, value: ["id": stream, "last": seq, "purgeLag": lag], update: .modified)
}
