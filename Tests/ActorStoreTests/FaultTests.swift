import ActorStore
import ActorStorePersistence
import Foundation
import Testing

final class FaultItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var payload = ""
}

/// Disk faults under the object API: a failed write throws a `RealmError`, commits nothing, and the
/// realm stays usable (or, after a failed fsync, refuses writes until reopened), and nothing acknowledged
/// is ever lost.
@Suite struct FaultTests {
    private func configuration(_ fs: any FileSystem, _ path: String) -> Realm.Configuration {
        var configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [FaultItem.self])
        configuration.fileSystem = fs
        configuration.automaticCompaction = false
        return configuration
    }

    private func ids(_ realm: Realm) async -> [Int] {
        await realm.read { $0.objects(FaultItem.self).map(\.id) }
    }

    @Test(arguments: [FaultInjectingFileSystem.Fault.error(ENOSPC), .error(EIO), .tornWrite(ENOSPC), .shortWrite])
    func aFailedWriteCommitsNothingAndTheRealmRecovers(_ fault: FaultInjectingFileSystem.Fault) async throws {
        var fired = 0
        var codes: [String] = []
        for call in 1...12 {
            let base = MemoryFileSystem(tracksDurability: true)
            let faulty = FaultInjectingFileSystem(base: base)
            let path = "/db/\(UUID().uuidString).realm"
            let config = configuration(faulty, path)
            var outcome: RealmError?
            do {
                let realm = try await Realm(configuration: config)
                try await realm.write { realm in
                    for id in 0..<10 { realm.create(FaultItem.self, value: ["id": id, "payload": "seed"]) }
                }
                faulty.inject(fault, atCall: call)
                do {
                    try await realm.write { realm in
                        for id in 10..<15 {
                            realm.create(
                                FaultItem.self, value: ["id": id, "payload": String(repeating: "x", count: 500)])
                        }
                    }
                } catch let error as RealmError {
                    outcome = error
                }
                guard faulty.didInject else {
                    faulty.reset()
                    #expect(outcome == nil, "call \(call): failed without a fault")
                    #expect(await ids(realm) == Array(0..<15))
                    continue
                }
                fired += 1
                codes.append(outcome.map { "\($0.code)" } ?? "absorbed")
                faulty.reset()
                if let outcome {
                    #expect([.diskFull, .ioFailure, .poisoned].contains(outcome.code), "call \(call): \(outcome)")
                    if outcome.code != .poisoned {
                        // Nothing of the failed write is visible, and the realm keeps working.
                        #expect(await ids(realm) == Array(0..<10), "call \(call)")
                        try await realm.write { $0.create(FaultItem.self, value: ["id": 99]) }
                        #expect(await ids(realm) == Array(0..<10) + [99], "call \(call)")
                    } else {
                        await #expect(throws: RealmError.self) {
                            try await realm.write { $0.create(FaultItem.self, value: ["id": 98]) }
                        }
                    }
                } else {
                    // The fault was absorbed (a short write is retried): the write is complete.
                    #expect(await ids(realm) == Array(0..<15), "call \(call)")
                }
            }
            // Reopened: every acknowledged write is there, the failed one entirely or not at all.
            let reopened = try await Realm(configuration: config)
            let after = await ids(reopened)
            #expect(Array(after.prefix(10)) == Array(0..<10), "call \(call): \(after)")
            let rest = Set(after.dropFirst(10))
            #expect(
                rest.isEmpty || rest == [99] || rest == Set(10..<15) || rest == Set(10..<15).union([99]),
                "call \(call): \(after)")
            if outcome == nil || outcome?.code == .poisoned {
                #expect(!rest.contains(99))
            } else {
                #expect(rest == [99], "call \(call): the failed write must not appear: \(after)")
            }
        }
        print("[faults] \(fault): fired at \(fired) calls: \(codes)")
        #expect(fired > 0)
    }
}
