import Foundation
import Synchronization
import Testing

@testable import ActorStore
@testable import ActorStorePersistence

// Realm files: deleting files, compacting, `writeCopy`, copying objects between files, and reading a
// file whose links dangle.

/// Records the arguments of `shouldCompactOnLaunch` calls.
private final class SeedCompactionLog: Sendable {
    let calls = Mutex<[(total: Int, used: Int)]>([])
}

/// RLMRealm `writeCopyToURL`: "if this method is called from within a write transaction, the current data is
/// written, not the data from the point when the previous write transaction was committed."
private func auditWriteCopyInsideATransaction(_ realm: isolated Realm, to url: URL) async throws {
    try await realm.beginWrite()
    realm.objects(AuditDog.self).first?.age = 5  // the committed row, rewritten in the transaction
    realm.create(AuditDog.self, value: ["name": "Uncommitted"])
    do {
        try await realm.writeCopy(toFile: url)
    } catch {
        realm.cancelWrite()
        throw error
    }
    realm.create(AuditDog.self, value: ["name": "After"])  // the transaction is still open
    try await realm.commitWrite()
}

@Suite(.timeLimit(.minutes(30))) struct RealmFileTests {
    /// Opens the engine on `config`'s file once the realm that last had it open has let go of it.
    private static func openEngine(_ config: Realm.Configuration) async throws -> StorageEngine {
        await Realm.waitUntilClosed(configuration: config)
        let path = try #require(config.fileURL).path
        return try await StorageEngine.open(.init(path: path, durability: .none, autoCompaction: nil))
    }

    /// A checksum-valid file whose kennel lists dogs A, B, C (in its list and its set), and whose log
    /// then deletes B without unlinking it first, as no ActorStore write does.
    private static func fileWithDanglingLinks() async throws -> Realm.Configuration {
        var config = testConfiguration([TrapKennel.self, TrapDog.self])
        config.encryptionKey = nil  // the log is extended below with a plain record
        let path = try #require(config.fileURL).path
        try await {
            let realm = try await Realm(configuration: config)
            try await realm.write { realm in
                let kennel = realm.create(TrapKennel.self, value: ["name": "K"])
                for name in ["A", "B", "C"] {
                    let dog = realm.create(TrapDog.self, value: ["name": name])
                    kennel.dogs.append(dog)
                    kennel.pack.insert(dog)
                }
            }
        }()
        let engine = try await openEngine(config)
        let snapshot = try engine.snapshot()
        let dogTable = try #require(snapshot.tableID(named: "TrapDog"))
        let keys = snapshot.keys(dogTable).map(\.key)
        try #require(keys.count == 3)
        let version = snapshot.version.rawValue
        _ = consume snapshot
        await engine.close()

        var payload = ByteWriter()
        payload.append(version + 1)
        payload.append(CommitPayload.Op.delete.rawValue)
        payload.append(dogTable.rawValue)
        payload.append(keys.sorted()[1].rawValue)  // B: keys are given in creation order
        var record: [UInt8] = []
        payload.bytes.withUnsafeBytes { Record.frame(kind: .commit, payload: $0, into: &record) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(record))
        try handle.close()
        return config
    }

    @Test(.tags(.seed)) func deleteFilesRefusesWhileOpenAndWorksAfterRelease() async throws {
        let config = seedConfiguration()
        var realm: Realm? = try await Realm(configuration: config)
        try await realm!.write { $0.create(SeedDog.self, value: ["name": "Rex"]) }
        #expect(Realm.fileExists(for: config))
        #expect(throws: RealmError.self) { try Realm.deleteFiles(for: config) }
        do {
            try Realm.deleteFiles(for: config)
        } catch let error as RealmError {
            #expect(error.code == .alreadyOpen)
        }
        #expect(Realm.fileExists(for: config), "a refused delete leaves the file")
        realm = nil
        #expect(try Realm.deleteFiles(for: config))
        #expect(!Realm.fileExists(for: config))
        #expect(try Realm.deleteFiles(for: config) == false, "nothing left to delete")
        let reopened = try await Realm(configuration: config)
        #expect(await reopened.isEmpty)
    }

    @Test(.tags(.seed)) func compactingAFile() async throws {
        var config = seedConfiguration()
        config.automaticCompaction = false
        let log = SeedCompactionLog()
        config.shouldCompactOnLaunch = { total, used in
            log.calls.withLock { $0.append((total, used)) }
            return total > 2 * used
        }
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { realm in
                for i in 0..<300 {
                    realm.create(SeedDog.self, value: ["name": String(repeating: "n", count: 200) + "\(i)", "age": i])
                }
            }
            try await realm.write { realm in realm.delete(realm.objects(SeedDog.self).filter { $0.age >= 10 }) }
            let before = await realm.statistics
            #expect(before.usedBytes < before.fileSize)
            try await realm.compact()
            let after = await realm.statistics
            #expect(after.fileSize < before.fileSize, "compaction drops dead space")
            #expect(after.usedBytes <= after.fileSize)
            let ages = await realm.read { $0.objects(SeedDog.self).map(\.age) }
            #expect(ages == Array(0..<10))
            try await realm.write { realm in realm.delete(realm.objects(SeedDog.self).filter { $0.age >= 2 }) }
        }
        #expect(log.calls.withLock { $0.count } == 1, "called when the file is first opened")
        let reopened = try await Realm(configuration: config)
        let calls = log.calls.withLock { $0 }
        #expect(calls.count == 2, "called again when the file is opened after every realm was released")
        if let last = calls.last { #expect(last.total >= last.used && last.used > 0) }
        let ages = await reopened.read { $0.objects(SeedDog.self).map(\.age) }
        #expect(ages == [0, 1])
    }

    @Test(.tags(.seed)) func writeCopyThenOpenTheCopy() async throws {
        let config = seedConfiguration()
        let realm = try await Realm(configuration: config)
        try await realm.write { realm in
            for i in 0..<50 { realm.create(SeedDog.self, value: ["name": "d\(i)", "age": i]) }
            realm.delete(realm.objects(SeedDog.self).filter { $0.age < 10 })
            realm.create(SeedPerson.self, value: ["name": "Jim", "address": ["city": "Oslo"], "dogs": [["Rex", 1]]])
        }
        let copyURL = temporaryRealmURL("copy.realm")
        try await realm.writeCopy(toFile: copyURL)
        #expect(FileManager.default.fileExists(atPath: copyURL.path))
        var copyConfig = config
        copyConfig.fileURL = copyURL
        copyConfig.encryptionKey = nil  // writeCopy without a key writes a plain copy
        let copy = try await Realm(configuration: copyConfig)
        let summary = await copy.read { realm in
            [
                "\(realm.objects(SeedDog.self).count)", realm.objects(SeedDog.self).first?.name ?? "nil",
                realm.objects(SeedPerson.self).first?.address?.city ?? "nil",
                realm.objects(SeedPerson.self).first?.dogs.first?.name ?? "nil",
            ]
        }
        #expect(summary == ["41", "d10", "Oslo", "Rex"])
        // The copy is independent of the original.
        try await copy.write { $0.deleteAll() }
        let original = await realm.read { $0.objects(SeedDog.self).count }
        #expect(original == 41)
        // Copying onto an existing file is refused: alreadyOpen while a realm has it open, else fileExists.
        await expectRealmError(.alreadyOpen) { try await realm.writeCopy(toFile: copyURL) }
        _ = consume copy
        await Realm.waitUntilClosed(configuration: copyConfig)
        await expectRealmError(.fileExists) { try await realm.writeCopy(toFile: copyURL) }
    }

    @Test(.tags(.audit)) func writeCopyInsideAWriteTransactionWritesTheCurrentData() async throws {
        let realm = try await Realm(configuration: auditConfiguration())
        try await realm.write { $0.create(AuditDog.self, value: ["name": "Committed"]) }
        let url = temporaryRealmURL("copy-in-transaction.realm")
        try await auditWriteCopyInsideATransaction(realm, to: url)
        var copyConfig = auditConfiguration()
        copyConfig.fileURL = url
        copyConfig.encryptionKey = nil  // writeCopy without a key writes a plain copy
        let copy = try await Realm(configuration: copyConfig)
        let copied = await copy.read { $0.objects(AuditDog.self).map { "\($0.name) \($0.age)" } }
        #expect(copied == ["Committed 5", "Uncommitted 0"], "the copy has the transaction's changes so far")
        let original = await realm.read { $0.objects(AuditDog.self).map(\.name) }
        #expect(original == ["Committed", "Uncommitted", "After"], "the transaction went on and committed")
    }

    @Test(.tags(.audit)) func writeCopyOfAnInMemoryRealm() async throws {
        // "In-memory Realms do not save data across app launches, but all other features of Realm will work as
        // expected"; writeCopy is how an in-memory realm's data is saved.
        var config = Realm.Configuration(inMemoryIdentifier: "SeedAudit-" + UUID().uuidString)
        config.objectTypes = auditTypes
        let realm = try await Realm(configuration: config)
        try await realm.write { $0.create(AuditDog.self, value: ["name": "Memory"]) }
        let url = temporaryRealmURL("from-memory.realm")
        try await realm.writeCopy(toFile: url)
        #expect(FileManager.default.fileExists(atPath: url.path), "the copy is a file on disk")
        var copyConfig = auditConfiguration()
        copyConfig.fileURL = url
        copyConfig.encryptionKey = nil  // writeCopy without a key writes a plain copy
        let copy = try await Realm(configuration: copyConfig)
        let names = await copy.read { $0.objects(AuditDog.self).map(\.name) }
        #expect(names == ["Memory"])
    }

    @Test(.tags(.audit)) func deleteFilesLeavesNoAuxiliaryFiles() async throws {
        // "you should delete auxiliary Realm files as well as the main Realm file"; deleteFiles "deletes the
        // .realm ... and associated temporary files" and returns whether any were deleted.
        let config = auditConfiguration()
        let directory = try #require(config.fileURL?.deletingLastPathComponent())
        do {
            let realm = try await Realm(configuration: config)
            try await realm.write { $0.create(AuditDog.self, value: ["name": "Rex"]) }
            try await realm.compact()
            try await realm.writeCopy(toFile: directory.appendingPathComponent("elsewhere.realm"))
        }
        #expect(try Realm.deleteFiles(for: config))
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        // The lock file stays, as Realm's `.lock` does ("It does not delete the .lock file"): it holds no data.
        #expect(left.sorted() == ["elsewhere.realm", "test.realm.lock"], "only the unrelated copy is left")
    }

    @Test(.tags(.audit)) func copyingAnObjectToARealmOnAnotherFile() async throws {
        // "Copying Realm objects to other Realms is as simple as passing in the original object to
        // Realm().create(_:value:update:)". Live objects cannot leave their actor; a frozen one can.
        let source = try await Realm(configuration: auditConfiguration())
        try await source.write { $0.create(AuditDog.self, value: ["name": "Rex", "age": 3]) }
        let frozenRex = try #require(await source.freeze().objects(AuditDog.self).first)
        let destination = try await Realm(configuration: auditConfiguration())
        try await destination.write { realm in realm.create(AuditDog.self, value: frozenRex) }
        let copied = await destination.read { realm in realm.objects(AuditDog.self).map { "\($0.name) \($0.age)" } }
        #expect(copied == ["Rex 3"])

        // With the objects it links to (a list, a set, a map, a to-one link), copied at the same version.
        try await source.write { realm in
            let jim = realm.create(AuditPerson.self, value: ["name": "Jim", "address": ["country": "NZ"]])
            let rex = realm.objects(AuditDog.self)[0]
            let fido = realm.create(AuditDog.self, value: ["name": "Fido", "age": 1])
            jim.dogs.append(objectsIn: [rex, fido, rex])
            jim.favorites.insert(fido)
            jim.dogsByNickname["boss"] = rex
        }
        let frozenJim = try #require(await source.freeze().objects(AuditPerson.self).first)
        try await destination.write { realm in realm.create(AuditPerson.self, value: frozenJim) }
        let person = await destination.read { realm -> [String] in
            guard let jim = realm.objects(AuditPerson.self).first else { return [] }
            return [
                jim.name, jim.address?.country ?? "-", jim.dogs.map(\.name).joined(separator: ","),
                jim.favorites.map(\.name).joined(), jim.dogsByNickname["boss"]??.name ?? "-",
                "\(realm.objects(AuditDog.self).count)",
            ]
        }
        // An object reached several times (twice in the list, in the set, in the map) is copied once.
        #expect(person == ["Jim", "NZ", "Rex,Fido,Rex", "Fido", "Rex", "3"])
        let sameRex = await destination.read { realm in
            realm.objects(AuditPerson.self).first.map { $0.dogs[0].isSameObject(as: $0.dogs[2]) }
        }
        #expect(sameRex == true)

        // Objects that link back to the one being copied (Rex's owner is Jim, who lists Rex): the cycle is
        // copied too, each object once, the links between the copies as between the originals.
        try await source.write { realm in realm.objects(AuditDog.self)[0].owner = realm.objects(AuditPerson.self)[0] }
        let cyclic = try #require(await source.freeze().objects(AuditPerson.self).first)
        let third = try await Realm(configuration: auditConfiguration())
        try await third.write { realm in realm.create(AuditPerson.self, value: cyclic) }
        let graph = await third.read { realm -> [String] in
            guard let jim = realm.objects(AuditPerson.self).first else { return [] }
            let rex = jim.dogs[0]
            return [
                "\(realm.objects(AuditPerson.self).count) \(realm.objects(AuditDog.self).count)",
                rex.owner.map { $0.isSameObject(as: jim) ? "owner is Jim" : "owner is another" } ?? "no owner",
                jim.dogs[2].isSameObject(as: rex) ? "same Rex" : "two Rexes",
            ]
        }
        #expect(graph == ["1 2", "owner is Jim", "same Rex"])
        // Frozen objects among nested values are copied the same way, once each.
        try await third.write { realm in
            realm.create(AuditPerson.self, value: ["name": "Ann", "dogs": [frozenRex, frozenRex]])
        }
        let ann = await third.read { realm in
            realm.objects(AuditPerson.self).first { $0.name == "Ann" }.map {
                "\($0.dogs.count) \($0.dogs[0].isSameObject(as: $0.dogs[1]))"
            }
        }
        #expect(ann == "2 true")
        // And as a to-one link's nested value.
        try await third.write { realm in
            realm.create(AuditDog.self, value: ["name": "Spot", "owner": frozenJim])
        }
        let spotsOwner = await third.read { realm in
            realm.objects(AuditDog.self).first { $0.name == "Spot" }?.owner.map { "\($0.name) \($0.dogs.count)" }
        }
        #expect(spotsOwner == "Jim 3")
        // A frozen object of another class is refused.
        await expectRealmError(.invalidValue) {
            try await destination.write { realm in realm.create(AuditPerson.self, value: frozenRex) }
        }
    }

    /// A list (and a set) holding a link to an object that no longer exists reads without it, the same
    /// way through every path; it used to stop the program ("A stored List<…> element could not be read").
    @Test(.tags(.regression)) func danglingLinksInAListAreSkippedEverywhere() async throws {
        let config = try await Self.fileWithDanglingLinks()
        // `close()` let go of the file's lock before it returned.
        let realm = try await Realm(configuration: config)
        try await realm.read { realm throws in
            let kennel = try #require(realm.objects(TrapKennel.self).first)
            let dogs = kennel.dogs
            #expect(dogs.count == 2)
            #expect(dogs.indices == 0..<2)
            #expect(dogs.map(\.name) == ["A", "C"])
            #expect((0..<dogs.count).map { dogs[$0].name } == ["A", "C"])
            #expect(dogs.first?.name == "A" && dogs.last?.name == "C")
            #expect(dogs.name == ["A", "C"])
            #expect(dogs.freeze().map { $0.name } == ["A", "C"])
            #expect(dogs.where { $0.name != "" }.map(\.name) == ["A", "C"])
            #expect(try dogs.filter("name != ''").count == 2)
            #expect(kennel.freeze().dogs.map { $0.name } == ["A", "C"])
            #expect(kennel.pack.count == 2)
            #expect(Set(kennel.pack.map(\.name)) == ["A", "C"])
        }
        let frozen = await realm.freeze()
        let frozenKennel = try #require(frozen.objects(TrapKennel.self).first)
        #expect(frozenKennel.dogs.map { $0.name } == ["A", "C"])

        // Writes index the same elements, and store the list without the missing link.
        try await realm.write { realm in
            let kennel = realm.objects(TrapKennel.self).first!
            kennel.dogs[1] = realm.create(TrapDog.self, value: ["name": "D"])
            kennel.dogs.append(realm.create(TrapDog.self, value: ["name": "E"]))
            kennel.dogs.move(from: 0, to: 2)
            kennel.pack.insert(realm.create(TrapDog.self, value: ["name": "F"]))
        }
        let after = await realm.read { realm in
            let kennel = realm.objects(TrapKennel.self).first!
            return (kennel.dogs.map(\.name), kennel.dogs.count, Set(kennel.pack.map(\.name)), kennel.pack.count)
        }
        #expect(after.0 == ["D", "E", "A"] && after.1 == 3)
        #expect(after.2 == ["A", "C", "F"] && after.3 == 3)
    }
}
