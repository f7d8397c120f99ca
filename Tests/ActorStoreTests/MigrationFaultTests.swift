import ActorStorePersistence
import Foundation
import Testing

@testable import ActorStore

/// A migration is one transaction: a disk fault or a crash at any I/O call of the open that migrates leaves
/// the file at its old schema version with its old data (or, if the fault came after the commit was
/// durable, fully migrated), never in between.
@Suite struct MigrationFaultTests {
    private func configuration(
        _ fs: any FileSystem, _ path: String, _ type: ObjectBase.Type, version: UInt64,
        block: (@Sendable (Migration, UInt64) throws -> Void)? = nil
    ) -> Realm.Configuration {
        var configuration = Realm.Configuration(
            fileURL: URL(fileURLWithPath: path), schemaVersion: version, migrationBlock: block, objectTypes: [type])
        configuration.fileSystem = fs
        configuration.automaticCompaction = false
        return configuration
    }

    /// What the file at `path` holds, read with the model of its schema version: "v1: ..." or "v3: ...".
    private func contents(_ fs: any FileSystem, _ path: String) async throws -> String {
        let url = URL(fileURLWithPath: path)
        let version = try await Realm.schemaVersion(at: url, fileSystem: fs)
        await EngineRegistry.waitUntilClosed(Realm.Configuration.fileKey(url, fs))
        defer { _ = version }
        switch version {
        case 1:
            let realm = try await Realm(configuration: configuration(fs, path, PersonV1.Person.self, version: 1))
            let people = await realm.read { realm in
                realm.objects(PersonV1.Person.self).map { "\($0.firstName) \($0.lastName) \($0.age)" }
            }
            return "v1: " + people.joined(separator: ", ")
        case 3:
            let realm = try await Realm(configuration: configuration(fs, path, PersonV3.Person.self, version: 3))
            let people = await realm.read { realm in
                realm.objects(PersonV3.Person.self).map { "\($0.fullName) \($0.age)" }
            }
            return "v3: " + people.joined(separator: ", ")
        default:
            return "schema version \(version)"
        }
    }

    private static let old = "v1: Jane Doe 30, John Smith 41"
    private static let migrated = "v3: Jane Doe 30, John Smith 41"

    @Test(arguments: [
        FaultInjectingFileSystem.Fault.error(ENOSPC), .error(EIO), .tornWrite(ENOSPC), .shortWrite, .crash,
    ])
    func aFaultAtAnyCallOfAMigrationLeavesTheOldFileOrTheMigratedOne(
        _ fault: FaultInjectingFileSystem.Fault
    )
        async throws
    {
        var failedOpens = 0
        var call = 1
        while call <= 300 {
            defer { call += 1 }
            let base = MemoryFileSystem(tracksDurability: true)
            let faulty = FaultInjectingFileSystem(base: base)
            let path = "/db/\(UUID().uuidString).realm"
            let key = Realm.Configuration.fileKey(URL(fileURLWithPath: path), faulty)
            do {
                let realm = try await Realm(
                    configuration: configuration(faulty, path, PersonV1.Person.self, version: 1))
                try await realm.write { realm in
                    realm.create(PersonV1.Person.self, value: ["firstName": "Jane", "lastName": "Doe", "age": 30])
                    realm.create(PersonV1.Person.self, value: ["firstName": "John", "lastName": "Smith", "age": 41])
                }
            }
            await EngineRegistry.waitUntilClosed(key)
            faulty.inject(fault, atCall: call)
            var outcome: (any Error)?
            do {
                let realm = try await Realm(
                    configuration: configuration(
                        faulty, path, PersonV3.Person.self, version: 3, block: SeedMigrations.toVersion3))
                _ = await realm.read { $0.objects(PersonV3.Person.self).count }
            } catch {
                outcome = error
            }
            await EngineRegistry.waitUntilClosed(key)
            guard faulty.didInject else {
                // Past the last I/O call of the migrating open: every call has had its fault.
                #expect(outcome == nil, "call \(call): \(String(describing: outcome))")
                #expect(try await contents(base, path) == Self.migrated)
                #expect(call > 5, "the migrating open made only \(call - 1) I/O calls")
                print("[migration faults] \(fault): \(call - 1) calls, \(failedOpens) opens failed")
                return
            }
            faulty.reset()
            if outcome != nil { failedOpens += 1 }
            if let error = outcome as? RealmError, [.diskFull, .ioFailure].contains(error.code), fault != .crash {
                // Refused before anything was committed: the old file, as it was.
                #expect(try await contents(faulty, path) == Self.old, "call \(call): \(error)")
            } else if outcome == nil {
                #expect(try await contents(faulty, path) == Self.migrated, "call \(call)")
            } else {
                #expect(outcome is RealmError, "call \(call): \(String(describing: outcome))")
                let now = try await contents(faulty, path)
                #expect(now == Self.old || now == Self.migrated, "call \(call): \(now)")
            }
            // What a crash of the process, or a power loss, at this call leaves: one or the other, whole.
            for image in [base.processCrashImage(), base.powerLossImage()] {
                let after = try await contents(image, path)
                #expect(after == Self.old || after == Self.migrated, "call \(call) (\(fault)): \(after)")
                if outcome != nil, fault != .crash, let code = (outcome as? RealmError)?.code,
                    [.diskFull, .ioFailure].contains(code)
                {
                    #expect(after == Self.old, "call \(call): a refused migration reached the disk")
                }
            }
        }
        Issue.record("the migrating open made more than 300 I/O calls")
    }
}
