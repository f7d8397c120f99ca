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
        abstract: "Print what changes in a class as other processes commit, until interrupted.",
        discussion: """
            Opens the file read-only beside the process that writes it (the DocC article "Sharing a file \
            between processes") and prints a line when a commit changes the objects of CLASS that match \
            PREDICATE: the version, how many match, then one line per object inserted (+), deleted (-) or \
            changed (~). Objects are told apart by primary key; a class without one is compared by its \
            values, so a change shows as a deletion and an insertion.
            """)

    @Argument(help: "The realm file.") var file: String
    @OptionGroup var encryption: EncryptionOptions
    @Argument(help: "The class to watch.") var className: String
    @Argument(help: "A predicate (all objects without one).") var predicate: String?
    @Option(help: "Stop after this many commits that changed the watched objects.") var count: Int?

    func run() async throws {
        try await reportingErrors {
            let realm = try await openRealm(file, readOnly: true, key: try encryption.key())
            let (className, predicate) = (className, predicate)
            let known = await realm.read { $0.schema.objectSchema.contains { $0.className == className } }
            guard known else {
                throw RealmError(.invalidValue, "'\(file)' has no class \(className).")
            }
            var previous = try await Self.matches(realm, className, predicate)
            print(
                "watching \(className)\(predicate.map { " where \($0)" } ?? ""): \(previous.count) object"
                    + (previous.count == 1 ? "" : "s") + " at version \(await realm.statistics.version)")
            fflush(nil)  // every stream: naming `stdout` is not concurrency-safe in Swift 6
            var printed = 0
            for await change in realm.changes {
                if let count, printed >= count { break }
                _ = await realm.refresh()
                let current = try await Self.matches(realm, className, predicate)
                let lines = Self.difference(from: previous, to: current)
                previous = current
                guard !lines.isEmpty else { continue }
                print("version \(change.version): \(current.count) matching")
                for line in lines { print("  \(line)") }
                fflush(nil)  // every stream: naming `stdout` is not concurrency-safe in Swift 6
                printed += 1
                if let count, printed >= count { break }
            }
        }
    }

    /// The matching objects, by identity (the primary key, else the values) → their values.
    static func matches(_ realm: Realm, _ className: String, _ predicate: String?) async throws -> [String: String] {
        try await realm.read { realm -> [String: String] in
            var results = realm.dynamicObjects(className)
            if let predicate { results = try results.filter(predicate) }
            let key = results.first?.objectSchema.primaryKeyProperty?.name
            var out: [String: String] = [:]
            for object in results {
                let values = object.description
                let identity = key.map { "\($0) = \(String(describing: object[$0] ?? "nil"))" } ?? values
                out[identity, default: ""] += values
            }
            return out
        }
    }

    /// One line per object inserted, deleted or changed, sorted by identity.
    static func difference(from old: [String: String], to new: [String: String]) -> [String] {
        var lines: [(String, String)] = []
        for (identity, values) in new {
            if let before = old[identity] {
                if before != values { lines.append((identity, "~ \(values)")) }
            } else {
                lines.append((identity, "+ \(values)"))
            }
        }
        for (identity, values) in old where new[identity] == nil { lines.append((identity, "- \(values)")) }
        return lines.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
