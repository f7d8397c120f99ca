import ActorStore
import ArgumentParser
import Foundation

/// `actorstore`: look into a realm file from its stored schema alone (no model classes).
///
/// Exit statuses: 0 success; 1 the operation failed (the file cannot be opened, a bad predicate, a bad
/// document, a full disk): one line on standard error says why; 2 `verify` found damage (the line names
/// its byte offset); 64 a bad command line (usage on standard error). `watch` runs until interrupted (or
/// `--count` commits). Progress of long operations goes to standard error, results to standard output.
@main
struct ActorStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "actorstore",
        abstract: "Inspect, query, export, import, verify, compact and watch ActorStore realm files.",
        discussion: """
            Works from the file's stored schema alone. Exit status: 0 success, 1 the operation failed, \
            2 verify found damage, 64 bad command line.
            """,
        subcommands: [Info.self, Query.self, Export.self, Import.self, Verify.self, Compact.self, Watch.self])
}

/// Exit statuses, as documented on ``ActorStoreCommand``.
enum Status {
    static let failure: Int32 = 1
    static let damaged: Int32 = 2
}

/// Runs `body`, turning any error into one line on standard error and an exit status.
func reportingErrors(damageStatus: Int32 = Status.failure, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ExitCode {
        throw error
    } catch let error as RealmError {
        // The offset of the damage, unless the message already names it.
        let offset = error.fileOffset.flatMap { error.message.contains("byte \($0)") ? nil : " (at byte \($0))" } ?? ""
        printError("actorstore: error: \(error.message)\(offset)")
        throw ExitCode(error.code == .corrupted ? damageStatus : Status.failure)
    } catch {
        printError("actorstore: error: \(error)")
        throw ExitCode(Status.failure)
    }
}

/// One line on standard error.
func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Opens the realm at `path` with no model classes; the file must exist unless `creating`.
func openRealm(_ path: String, readOnly: Bool, creating: Bool = false, key: Data? = nil) async throws -> Realm {
    let url = URL(fileURLWithPath: path)
    if !creating {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw RealmError(.fileNotFound, "'\(path)' does not exist.")
        }
    }
    var configuration = Realm.Configuration(fileURL: url)
    configuration.readOnly = readOnly
    configuration.encryptionKey = key
    return try await Realm(configuration: configuration)
}

/// `--key-file`: the key of an encrypted realm, read from a file.
struct EncryptionOptions: ParsableArguments {
    @Option(
        name: .customLong("key-file"),
        help: "A file holding the realm's 64-byte encryption key: the raw bytes, or 128 hexadecimal digits.")
    var keyFile: String?

    /// The key, or nil without `--key-file`.
    /// - Throws: `RealmError.invalidValue` when the file cannot be read or holds no 64-byte key.
    func key() throws -> Data? {
        guard let keyFile else { return nil }
        guard let contents = FileManager.default.contents(atPath: keyFile) else {
            throw RealmError(.invalidValue, "The key file '\(keyFile)' cannot be read.")
        }
        if contents.count == 64 { return contents }
        let hex = String(decoding: contents, as: UTF8.self).filter { !$0.isWhitespace }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
            let byte = UInt8(hex[index..<next], radix: 16)
        {
            bytes.append(byte)
            index = next
        }
        guard index == hex.endIndex, bytes.count == 64 else {
            throw RealmError(
                .invalidValue,
                "The key file '\(keyFile)' holds no 64-byte key: it must hold the 64 raw bytes, or 128 hexadecimal "
                    + "digits.")
        }
        return Data(bytes)
    }
}

/// The file's format version, from its header (`ACTSTORE`, then a little-endian `UInt32`), or nil.
func formatVersion(_ path: String) -> UInt32? {
    guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    guard let header = try? handle.read(upToCount: 12), header.count == 12,
        String(decoding: header.prefix(8), as: UTF8.self) == "ACTSTORE"
    else { return nil }
    return header.suffix(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
}

/// A number with thousands separators.
func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return (value < 0 ? "-" : "") + out
}
