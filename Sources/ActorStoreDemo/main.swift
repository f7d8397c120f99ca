// The first thing to run: `swift run actorstore-demo`.
//
// ActorStore's public `Realm` API is being built on top of this storage engine; until it lands, the demo
// drives the engine directly to show what it guarantees: durable commits, O(1) snapshots that other tasks
// read while writers go on, crash recovery, and compaction.
import ActorStorePersistence
import Foundation

let directory = NSTemporaryDirectory() + "actorstore-demo-\(UUID().uuidString)"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
let path = directory + "/demo.store"

let person = TableSchema(
    "Person",
    columns: [
        ColumnSchema("name", ColumnType(.string), primaryKey: true),
        ColumnSchema("dogs", ColumnType(.link, .list), linkTarget: "Dog"),
    ])
let dog = TableSchema(
    "Dog",
    columns: [
        ColumnSchema("name", ColumnType(.string), indexed: true),
        ColumnSchema("age", ColumnType(.int64)),
    ])

// 1. Open (creating the file), define the schema and write durably.
var engine = try await StorageEngine.open(.init(path: path))
let ((people, dogs), created) = try await engine.write { txn in
    let ids = try txn.setSchema([person, dog], version: 1)
    return (ids[0], ids[1])
}
print("created the schema in \(created.version)")

let (rex, first) = try await engine.write { txn in
    let rex = try txn.insert(dogs, [.string("Rex"), .int(1)])
    let fido = try txn.insert(dogs, [.string("Fido"), .int(4)])
    try txn.insert(people, [.string("Alice"), .list([.link(rex), .link(fido)])])
    return rex
}
print("committed \(first.version): inserted \(first.changes.tables.values.map(\.inserted.count).reduce(0, +)) objects")

// 2. A snapshot is O(1), immutable and Sendable: hand it to another task while writes go on.
let before = try engine.snapshot()
let reader = Task.detached {
    let names = before.keys(dogs).compactMap { key, _ in try? before.value(dogs, key, column: 0) }
    return "a detached task read \(before.version): \(names)"
}
let (_, birthday) = try await engine.write { txn in try txn.update(dogs, rex, [(1, .int(2))]) }
print(await reader.value)
print(
    "committed \(birthday.version): modified columns of Rex: \(birthday.changes.tables[dogs]!.modified[rex]!.map { $0 })"
)
print(
    "the old snapshot still says Rex is \(try before.value(dogs, rex, column: 1)!), the new one \(try engine.snapshot().value(dogs, rex, column: 1)!)"
)

// 3. Deleting an object removes it from every list that held it.
let (_, deleted) = try await engine.write { txn in try txn.delete(dogs, rex) }
let alice = try engine.snapshot().object(people, primaryKey: .string("Alice"))!
print(
    "committed \(deleted.version): deleted Rex; Alice's dogs are now \(try engine.snapshot().value(people, alice, column: 1)!)"
)

// 4. Close and reopen: recovery verifies every record and replays the log.
await engine.close()
engine = try await StorageEngine.open(.init(path: path))
print("reopened at \(engine.latestVersion) after replaying \(engine.recoveryReport.recordsReplayed) records")

// 5. Compact: the live rows are rewritten into a new file that replaces the old one.
let fido = try engine.snapshot().objects(dogs, column: 0, equalTo: .string("Fido"))![0]  // an index lookup
for age in 0..<200 {
    _ = try await engine.write { txn in try txn.update(dogs, fido, [(1, .int(Int64(age)))]) }
}
let large = engine.statistics
try await engine.compact()
let small = engine.statistics
print(
    "compacted: \(large.totalBytes) → \(small.totalBytes) bytes (\(small.liveBytes) live), generation \(small.generation)"
)
await engine.close()
