import ActorStore
import ArgumentParser
import Foundation

struct Info: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Format, size, live and dead bytes, versions, and the classes with their counts and properties.")

    @Argument(help: "The realm file.") var file: String
    @OptionGroup var encryption: EncryptionOptions

    func run() async throws {
        try await reportingErrors {
            let realm = try await openRealm(file, readOnly: true, key: try encryption.key())
            let stats = await realm.statistics
            let schemaVersion = try await Realm.schemaVersion(
                at: URL(fileURLWithPath: file), encryptionKey: try encryption.key())
            var lines = ["file            \(file)"]
            lines.append("format          ActorStore, format \(formatVersion(file).map(String.init) ?? "unknown")")
            lines.append(
                "size            \(grouped(stats.fileSize)) bytes: \(grouped(stats.usedBytes)) live, "
                    + "\(grouped(max(0, stats.fileSize - stats.usedBytes))) dead")
            lines.append(
                "version         \(stats.version) (checkpoint: \(stats.checkpointVersion.map(String.init) ?? "none"), "
                    + "\(grouped(stats.bytesSinceCheckpoint)) bytes after it)")
            lines.append("schema version  \(schemaVersion)")
            let classes = await realm.read { realm -> [String] in
                var out: [String] = []
                for object in realm.schema.objectSchema.sorted(by: { $0.className < $1.className }) {
                    let count = realm.dynamicObjects(object.className).count
                    out.append(
                        "  \(object.className)\(object.isEmbedded ? " (embedded)" : "")  \(grouped(count)) object"
                            + (count == 1 ? "" : "s"))
                    for property in object.properties { out.append("    \(property)") }
                }
                return out
            }
            lines.append("classes         \(classes.filter { !$0.hasPrefix("    ") }.count)")
            print((lines + classes).joined(separator: "\n"))
        }
    }
}

struct Query: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The objects of a class matching a predicate, as a table or JSON lines.",
        discussion: "PREDICATE is Realm's predicate syntax: \"age > 3 AND name BEGINSWITH 'R'\".")

    @Argument(help: "The realm file.") var file: String
    @OptionGroup var encryption: EncryptionOptions
    @Argument(help: "The class to query.") var className: String
    @Argument(help: "A predicate (all objects without one).") var predicate: String?
    @Option(help: "Sort by this key path (KEY:desc for descending); repeat for more keys.") var sort: [String] = []
    @Option(help: "At most this many objects.") var limit: Int?
    @Flag(help: "One JSON object per line instead of a table.") var json = false

    func run() async throws {
        try await reportingErrors {
            let realm = try await openRealm(file, readOnly: true, key: try encryption.key())
            let (file, className, predicate, sort, limit, json) = (file, className, predicate, sort, limit, json)
            let output = try await realm.read { realm throws -> String in
                guard let schema = realm.schema[className] else {
                    throw RealmError(
                        .invalidValue,
                        "'\(file)' has no class '\(className)'; it has "
                            + realm.schema.objectSchema.map { "'\($0.className)'" }.joined(separator: ", ") + ".")
                }
                var results = realm.dynamicObjects(className)
                if let predicate { results = try results.filter(predicate) }
                if !sort.isEmpty {
                    results = try results.sorted(
                        by: sort.map { key in
                            if key.hasSuffix(":desc") {
                                return DynamicSortDescriptor(keyPath: String(key.dropLast(5)), ascending: false)
                            }
                            if key.hasPrefix("-") {
                                return DynamicSortDescriptor(keyPath: String(key.dropFirst()), ascending: false)
                            }
                            return DynamicSortDescriptor(keyPath: key.hasSuffix(":asc") ? String(key.dropLast(4)) : key)
                        })
                }
                if let limit { results = results.limit(max(0, limit)) }
                let properties = schema.properties.filter { $0.type != .linkingObjects }.map(\.name)
                return json
                    ? results.map { Formatting.jsonLine($0, properties) }.joined(separator: "\n")
                    : Formatting.table(
                        results.map { object in properties.map { Formatting.cell(object[$0]) } }, properties)
            }
            if !output.isEmpty { print(output) }
        }
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the objects as ActorStore JSON (JSON Lines), streamed.")

    @Argument(help: "The realm file.") var file: String
    @OptionGroup var encryption: EncryptionOptions
    @Option(name: .customLong("class"), help: "Export only this class; repeat for more.") var classes: [String] = []
    @Option(help: "The output file (standard output without one).") var out: String?

    func run() async throws {
        try await reportingErrors {
            let realm = try await openRealm(file, readOnly: true, key: try encryption.key())
            let frozen = await realm.freeze()
            let selected = classes.isEmpty ? nil : classes
            let progress: (Int) -> Void = { count in printError("exported \(grouped(count)) objects") }
            let written: Int
            if let out {
                written = try frozen.exportJSON(to: URL(fileURLWithPath: out), classes: selected, progress: progress)
            } else {
                written = try frozen.exportJSON(to: FileHandle.standardOutput, classes: selected, progress: progress)
            }
            printError("done: \(grouped(written)) objects")
        }
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add the objects of an ActorStore JSON document to a realm (created if missing).")

    @Argument(help: "The realm file.") var file: String
    @OptionGroup var encryption: EncryptionOptions
    @Argument(help: "The JSON document (as export writes it).") var json: String

    func run() async throws {
        try await reportingErrors {
            let realm = try await openRealm(file, readOnly: false, creating: true, key: try encryption.key())
            let count = try await realm.importJSON(from: URL(fileURLWithPath: json)) { count in
                printError("read \(grouped(count)) objects")
            }
            printError("done: \(grouped(count)) objects added")
        }
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every checksum of the file: every record and every index node.",
        discussion: "Exit status 2 when the file is damaged; the error names the byte offset of the damage.")

    @Argument(help: "The realm file.") var file: String
    @OptionGroup var encryption: EncryptionOptions

    func run() async throws {
        try await reportingErrors(damageStatus: Status.damaged) {
            let realm = try await openRealm(file, readOnly: true, key: try encryption.key())
            try await realm.verify()
            let stats = await realm.statistics
            print("ok: \(file): \(grouped(stats.fileSize)) bytes checked, version \(stats.version)")
        }
    }
}

struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rewrite the file without dead space.")

    @Argument(help: "The realm file.") var file: String
    @OptionGroup var encryption: EncryptionOptions

    func run() async throws {
        try await reportingErrors {
            let realm = try await openRealm(file, readOnly: false, key: try encryption.key())
            let before = await realm.statistics.fileSize
            try await realm.compact()
            let after = await realm.statistics.fileSize
            print("compacted \(file): \(grouped(before)) → \(grouped(after)) bytes")
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print change sets as other processes commit (not available yet).")

    @Argument(help: "The realm file.") var file: String
    @OptionGroup var encryption: EncryptionOptions
    @Argument(help: "The class to watch.") var className: String
    @Argument(help: "A predicate.") var predicate: String?

    func run() async throws {
        printError(
            "actorstore: error: watch needs multi-process support (issue 20): a realm file is opened by one process "
                + "at a time for now, so no other process can commit while actorstore watches it.")
        throw ExitCode(Status.unavailable)
    }
}
