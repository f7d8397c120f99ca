import ActorStore
import Foundation
import FuzzSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// fuzz-open: the input's bytes become a store file, which is opened, read (live and frozen), queried, written,
// compacted and reopened. A thrown error is a correct answer; a crash, a trap or a sanitizer report is a finding.
//
// Input: byte 0 selects the mode, the rest is the file.
//   bit 0: fix the checksums first (FuzzFraming.fixChecksums), so that the input reaches replay and row decoding
//   bit 1: open read-only (no write, no compaction)
//   bit 2: shouldCompactOnLaunch answers true (compaction during open)
//   bit 3: Configuration.objectTypes lists the fuzz models (else the classes stored in the file are used)
//   bit 4: the write also updates a Person by primary key; bit 5: it also deletes the first AllTypes
//   bit 6: with bit 0, fix the checksums as a format-2 file whose records keep their kinds (checkpoints)
// This is the input format of the outside harness's `fuzzopen`, so its inputs run here unchanged.
//
// ACTORSTORE_FUZZ_SEEDGEN=<dir> writes seed inputs (valid small stores) to <dir> and exits instead of fuzzing.

/// One directory per process, in memory when /dev/shm exists; removed at a normal exit (a crash leaves it,
/// with the store that crashed).
let scratch: String = {
    let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NSTemporaryDirectory()
    let dir = base + "/actorstore-fuzz-open-\(getpid())"
    try? FileManager.default.removeItem(atPath: dir)
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: scratch) }
    return dir
}()

let storePath = scratch + "/store.realm"

func configuration(readOnly: Bool, compactOnLaunch: Bool, restricted: Bool) -> Realm.Configuration {
    var configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: storePath))
    configuration.readOnly = readOnly
    configuration.automaticCompaction = false
    configuration.durability = .none
    if compactOnLaunch { configuration.shouldCompactOnLaunch = { _, _ in true } }
    if restricted { configuration.objectTypes = fuzzObjectTypes }
    return configuration
}

/// Queries that go through the indexes, links and collections of whatever opened.
func query(_ realm: isolated Realm) -> Int {
    var h = 0
    h &+= (try? realm.objects(Dog.self).filter("age > 2 AND owner.name BEGINSWITH 'p'").count) ?? 0
    h &+= (try? realm.objects(AllTypes.self).filter("indexedInt == 1 OR indexedName == 'name1'").count) ?? 0
    h &+= (try? realm.objects(Person.self).filter("ANY dogs.age < 3 OR nicknames.@count > 1").count) ?? 0
    h &+= (try? realm.objects(AllTypes.self).sorted(byKeyPath: "string").first?.int) ?? 0
    return h
}

/// ACTORSTORE_FUZZ_VERBOSE=1 prints the errors thrown (to see how far an input gets).
let verbose = ProcessInfo.processInfo.environment["ACTORSTORE_FUZZ_VERBOSE"] == "1"

/// Opens, reads, writes, compacts and reopens the file at `storePath`. Every error is caught: only crashes count.
func exercise(_ selector: UInt8) async {
    let readOnly = selector & 2 != 0
    let restricted = selector & 8 != 0
    let config = configuration(readOnly: readOnly, compactOnLaunch: selector & 4 != 0, restricted: restricted)
    do {
        let realm = try await Realm(configuration: config)
        _ = await realm.read { realm in readEverything(realm) &+ query(realm) }
        _ = readFrozen(await realm.freeze())
        guard !readOnly else { return }
        try await realm.write { realm in
            realm.create(Dog.self, value: ["name": "fuzz", "age": 1])
            if selector & 16 != 0 {
                realm.create(Person.self, value: ["name": "person0-0", "birthdate": Date()], update: .modified)
            }
            if selector & 32 != 0, let first = realm.objects(AllTypes.self).first { realm.delete(first) }
        }
        try await realm.compact()
        _ = await realm.read { realm in readEverything(realm) &+ query(realm) }
    } catch {
        if verbose { print("fuzz-open: \(error)") }
        return
    }
    // Reopen: replay of what the write and the compaction left.
    do {
        let realm = try await Realm(
            configuration: configuration(readOnly: false, compactOnLaunch: false, restricted: restricted))
        _ = await realm.read { realm in readEverything(realm) &+ query(realm) }
    } catch {
        if verbose { print("fuzz-open (reopen): \(error)") }
    }
}

/// Removes the store and its temporary files (a failed open or compaction may leave them).
func removeStore() {
    for suffix in ["", ".creating", ".compacting", ".lock", ".note"] { unlink(storePath + suffix) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpen(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let selector = data[0]
    var bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if selector & 1 != 0 { bytes = FuzzFraming.fixChecksums(bytes, checkpoints: selector & 64 != 0) }
    removeStore()
    guard FileManager.default.createFile(atPath: storePath, contents: Data(bytes)) else {
        fatalError("fuzz-open: cannot write \(storePath)")
    }
    runBlocking { await exercise(selector) }
    removeStore()
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzOpenInitialize(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    guard let dir = ProcessInfo.processInfo.environment["ACTORSTORE_FUZZ_SEEDGEN"] else { return 0 }
    generateSeeds(into: dir)
    exit(0)
}

/// Writes small valid stores, each prefixed by a selector byte, as seed inputs: freshly populated, after
/// deletes and updates, compacted, written after compaction. The stores are built at fixed dates and ids
/// where the models allow, but object ids and file ids differ from run to run.
func generateSeeds(into dir: String) {
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    runBlocking {
        for variant in 0..<4 {
            removeStore()
            do {
                let realm = try await Realm(
                    configuration: configuration(readOnly: false, compactOnLaunch: false, restricted: true))
                try await realm.write { realm in populate(realm, seed: variant) }
                if variant >= 1 {
                    try await realm.write { realm in
                        realm.delete(realm.objects(Dog.self).filter { $0.age == 2 })
                        for a in realm.objects(AllTypes.self) { a.int += 100 }
                    }
                }
                if variant >= 2 { try await realm.compact() }
                if variant == 3 {
                    try await realm.write { realm in
                        realm.create(Dog.self, value: ["name": "after", "age": 9])
                        realm.objects(Person.self).first?.nicknames.removeAll()
                    }
                }
            } catch {
                print("seed \(variant): \(error)")
                continue
            }
            guard let file = FileManager.default.contents(atPath: storePath) else { continue }
            for selector: UInt8 in [0, 1] {
                let name = "\(dir)/store\(variant)-mode\(selector)"
                _ = FileManager.default.createFile(atPath: name, contents: Data([selector]) + file)
                print(name, file.count + 1)
            }
        }
    }
    removeStore()
}
