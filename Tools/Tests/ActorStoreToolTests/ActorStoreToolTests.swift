import ActorStore
import Foundation
import Testing

final class ToolDog: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
    @Persisted var owner: ToolPerson?
    @Persisted var extra: AnyRealmValue
}

final class ToolPerson: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var dogs: List<ToolDog>
}

/// What one run of the executable did.
struct ToolRun {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs the built `actorstore` (next to the test bundle, the build products directory) on files these tests
/// make with the library, as a user would.
@Suite struct ActorStoreToolTests {
    static let executable: URL? = {
        var directories: [URL] = []
        for start in [
            Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ] {
            var directory = start?.standardizedFileURL
            for _ in 0..<4 {
                guard let current = directory else { break }
                directories.append(current)
                directory = current.deletingLastPathComponent()
            }
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        directories.append(packageRoot.appendingPathComponent(".build/debug"))
        return directories.map { $0.appendingPathComponent("actorstore") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    func run(_ arguments: [String]) throws -> ToolRun {
        let executable = try #require(Self.executable, "build the actorstore product first (swift build)")
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes to the end before waiting, so a large output cannot fill a pipe and block the tool.
        let errorData = Locked(Data())
        let finished = DispatchSemaphore(value: 0)
        let reader = Thread {
            errorData.set(errors.fileHandleForReading.readDataToEndOfFile())
            finished.signal()
        }
        reader.start()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        finished.wait()
        return ToolRun(
            status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
            errors: String(decoding: errorData.value, as: UTF8.self))
    }

    /// Returns once this process has closed `path`: a realm closes its file asynchronously after its last
    /// `Realm` is released (writing its checkpoint, giving back the space it reserved ahead of its records),
    /// and the tool, another process, must find it closed (compact refuses a file open elsewhere).
    func waitUntilClosed(_ path: String) async throws {
        await Realm.waitUntilClosed(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: path)))
    }

    /// A directory with a realm of two dogs and their owner (closed again).
    func makeRealm() async throws -> (directory: URL, file: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("actorstore-tool-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("dogs.realm")
        do {
            let realm = try await Realm(
                configuration: Realm.Configuration(fileURL: url, objectTypes: [ToolDog.self, ToolPerson.self]))
            try await realm.write { realm in
                let alice = realm.create(ToolPerson.self, value: ["name": "Alice"])
                for (name, age) in [("Rex", 3), ("Fido", 7), ("Bella", 1)] {
                    let dog = realm.create(ToolDog.self, value: ["name": name, "age": age])
                    dog.owner = alice
                    dog.extra = .string("x\(age)")
                    alice.dogs.append(dog)
                }
            }
        }
        try await waitUntilClosed(url.path)
        return (directory, url.path)
    }

    @Test func infoShowsTheFormatSizesVersionAndClassesWithCountsAndProperties() async throws {
        let (directory, file) = try await makeRealm()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try run(["info", file])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("format 2"))
        #expect(result.output.contains("live"))
        #expect(result.output.contains("ToolDog  3 objects"))
        #expect(result.output.contains("ToolPerson  1 object"))
        #expect(result.output.contains("owner: ToolPerson?"))
        #expect(result.output.contains("extra: any"))
    }

    @Test func queryFiltersSortsLimitsAndPrintsATableOrJSONLines() async throws {
        let (directory, file) = try await makeRealm()
        defer { try? FileManager.default.removeItem(at: directory) }
        let table = try run(["query", file, "ToolDog", "age > 2", "--sort", "age:desc"])
        #expect(table.status == 0, "\(table.errors)")
        let lines = table.output.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("name") == true)
        #expect(lines.count == 5)  // header, rule, Fido, Rex, count
        #expect(lines[2].hasPrefix("Fido") && lines[3].hasPrefix("Rex"))
        #expect(lines[2].contains("ToolPerson(Alice)"))
        #expect(lines.last == "(2 objects)")
        let json = try run(["query", file, "ToolDog", "--sort", "name", "--limit", "2", "--json"])
        #expect(json.status == 0, "\(json.errors)")
        #expect(
            json.output.split(separator: "\n") == [
                #"{"name":"Bella","age":1,"owner":"Alice","extra":"x1"}"#,
                #"{"name":"Fido","age":7,"owner":"Alice","extra":"x7"}"#,
            ])
        let bad = try run(["query", file, "ToolDog", "age >"])
        #expect(bad.status == 1)
        #expect(bad.errors.hasPrefix("actorstore: error:"))
        #expect(bad.errors.split(separator: "\n").count == 1)
        let unknown = try run(["query", file, "Cat"])
        #expect(unknown.status == 1)
        #expect(unknown.errors.contains("no class 'Cat'"))
    }

    @Test func exportThenImportIntoANewFileGivesTheSameDocument() async throws {
        let (directory, file) = try await makeRealm()
        defer { try? FileManager.default.removeItem(at: directory) }
        let document = directory.appendingPathComponent("dogs.jsonl").path
        let export = try run(["export", file, "--out", document])
        #expect(export.status == 0, "\(export.errors)")
        #expect(export.errors.contains("done: 4 objects"))
        let stdout = try run(["export", file])
        #expect(stdout.output == (try String(contentsOfFile: document, encoding: .utf8)))
        let copy = directory.appendingPathComponent("copy.realm").path
        let imported = try run(["import", copy, document])
        #expect(imported.status == 0, "\(imported.errors)")
        #expect(imported.errors.contains("4 objects added"))
        #expect(try run(["export", copy]).output == stdout.output)
        let onlyDogs = try run(["export", file, "--class", "ToolDog"])
        #expect(onlyDogs.output.split(separator: "\n").count == 4)
    }

    @Test func verifyPassesAGoodFileAndFailsADamagedCopyNamingTheOffset() async throws {
        let (directory, file) = try await makeRealm()
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = try run(["verify", file])
        #expect(good.status == 0, "\(good.errors)")
        #expect(good.output.hasPrefix("ok:"))
        // Flip one byte of the first record (after the 64-byte header), which committed records follow: damage,
        // not an interrupted write.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        try #require(bytes.count > 200)
        bytes[100] ^= 0xFF
        let damaged = directory.appendingPathComponent("damaged.realm")
        try bytes.write(to: damaged)
        let bad = try run(["verify", damaged.path])
        #expect(bad.status == 2, "\(bad.output) \(bad.errors)")
        #expect(bad.errors.hasPrefix("actorstore: error:"))
        #expect(bad.errors.contains("at byte 64"))
        #expect(bad.errors.split(separator: "\n").count == 1)
        let missing = try run(["verify", directory.appendingPathComponent("nothing.realm").path])
        #expect(missing.status == 1)
        #expect(missing.errors.contains("does not exist"))
    }

    @Test func compactShrinksAFileWithDeadSpace() async throws {
        let (directory, file) = try await makeRealm()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let realm = try await Realm(
                configuration: Realm.Configuration(
                    fileURL: URL(fileURLWithPath: file), objectTypes: [ToolDog.self, ToolPerson.self]))
            for age in 0..<50 {
                try await realm.write { realm in realm.objects(ToolDog.self).forEach { $0.age = age } }
            }
        }
        try await waitUntilClosed(file)
        let before = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0
        let result = try run(["compact", file])
        #expect(result.status == 0, "\(result.errors)")
        let after = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0
        #expect(after < before)
        #expect(try run(["query", file, "ToolDog", "age == 49"]).output.contains("(3 objects)"))
    }

    @Test func anEncryptedFileOpensWithItsKeyFileAndIsRefusedWithoutIt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("actorstore-tool-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = Data((0..<64).map { UInt8($0 * 3 % 256) })
        let url = directory.appendingPathComponent("secret.realm")
        do {
            var configuration = Realm.Configuration(fileURL: url, objectTypes: [ToolDog.self, ToolPerson.self])
            configuration.encryptionKey = key
            let realm = try await Realm(configuration: configuration)
            try await realm.write { realm in realm.create(ToolDog.self, value: ["name": "Rex", "age": 3]) }
        }
        try await waitUntilClosed(url.path)
        let hexFile = directory.appendingPathComponent("key.hex")
        try Data(key.map { String(format: "%02x", $0) }.joined().utf8).write(to: hexFile)
        let rawFile = directory.appendingPathComponent("key.bin")
        try key.write(to: rawFile)

        let withHex = try run(["query", url.path, "ToolDog", "age == 3", "--key-file", hexFile.path])
        #expect(withHex.status == 0, "\(withHex.errors)")
        #expect(withHex.output.contains("Rex"))
        let info = try run(["info", url.path, "--key-file", rawFile.path])
        #expect(info.status == 0, "\(info.errors)")
        #expect(info.output.contains("ToolDog  1 object"))
        #expect(try run(["verify", url.path, "--key-file", rawFile.path]).status == 0)

        let without = try run(["query", url.path, "ToolDog"])
        #expect(without.status == 1)
        #expect(without.errors.contains("encrypted"), "\(without.errors)")
        try Data("not a key".utf8).write(to: hexFile)
        let bad = try run(["info", url.path, "--key-file", hexFile.path])
        #expect(bad.status == 1)
        #expect(bad.errors.contains("64-byte key"), "\(bad.errors)")
    }

    @Test func watchPrintsWhatAnotherProcessCommits() async throws {
        let (directory, file) = try await makeRealm()
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = try #require(Self.executable, "build the actorstore product first (swift build)")
        let process = Process()
        process.executableURL = executable
        process.arguments = ["watch", file, "ToolDog", "age > 2", "--count", "2"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // The tool's standard output, line by line, as it comes.
        let lines = Locked([String]())
        let arrived = DispatchSemaphore(value: 0)
        let reader = Thread {
            var pending = Data()
            while case let chunk = output.fileHandleForReading.availableData, !chunk.isEmpty {
                pending += chunk
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[(newline + 1)...])
                    lines.set(lines.value + [line])
                    arrived.signal()
                }
            }
            arrived.signal()
        }
        reader.start()
        /// Waits (at most 30 s) until the tool printed `count` lines.
        func awaitLines(_ count: Int) {
            while lines.value.count < count, arrived.wait(timeout: .now() + 30) == .success {}
        }
        awaitLines(1)
        #expect(
            lines.value.first?.hasPrefix("watching ToolDog where age > 2: 2 objects at version ") == true,
            "\(lines.value)")

        // This process writes while the tool, another process, has the file open read-only.
        let realm = try await Realm(
            configuration: Realm.Configuration(
                fileURL: URL(fileURLWithPath: file), objectTypes: [ToolDog.self, ToolPerson.self]))
        try await realm.write { realm in
            realm.objects(ToolDog.self).first { $0.name == "Rex" }?.age = 9
            realm.create(ToolDog.self, value: ["name": "Max", "age": 5])
        }
        awaitLines(4)
        // Not watched: Bella stays under 3. Then Fido leaves.
        try await realm.write { realm in realm.objects(ToolDog.self).first { $0.name == "Bella" }?.age = 2 }
        try await realm.write { realm in
            if let fido = realm.objects(ToolDog.self).first(where: { $0.name == "Fido" }) { realm.delete(fido) }
        }
        awaitLines(6)
        process.waitUntilExit()
        let printed = lines.value
        #expect(process.terminationStatus == 0)
        #expect(printed.count == 6, "\(printed)")
        guard printed.count == 6 else { return }
        #expect(printed[1].hasSuffix(": 3 matching"), "\(printed[1])")
        #expect(printed[2].hasPrefix("  + ") && printed[2].contains("Max"), "\(printed[2])")
        #expect(printed[3].hasPrefix("  ~ ") && printed[3].contains("Rex") && printed[3].contains("9"), "\(printed[3])")
        #expect(printed[4].hasSuffix(": 2 matching"), "\(printed[4])")
        #expect(printed[5].hasPrefix("  - ") && printed[5].contains("Fido"), "\(printed[5])")

        let usage = try run(["query"])
        #expect(usage.status == 64)
        let missing = try run(["watch", file, "Cat"])
        #expect(missing.status == 1)
        #expect(missing.errors.contains("no class Cat"), "\(missing.errors)")
    }
}

/// A value set by one thread and read by another.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `stored` is only touched under `lock`.
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    func set(_ value: Value) {
        lock.lock()
        stored = value
        lock.unlock()
    }
    var value: Value {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}
