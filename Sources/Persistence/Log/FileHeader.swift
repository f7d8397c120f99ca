import Foundation

/// The first 64 bytes of a store file.
///
/// ```text
///  offset  size  field
///  ------  ----  -----------------------------------------------------------------
///       0     8  magic "ACTSTORE"
///       8     4  format version (UInt32 LE) — this engine writes 2 and reads 1 and 2 (see below)
///      12     4  flags (UInt32 LE) — bit 0: the records are encrypted (see ``EncryptedRecord``)
///      16    16  file id (UUID bytes) — identity of the store; kept by compaction
///      32     8  generation (UInt64 LE) — 0 when created, +1 per compaction
///      40     1  encryption scheme (encrypted files: 1 = AES-256-GCM units, HKDF-SHA-256 keys; else 0)
///      41     3  reserved, zero
///      44    16  key check (encrypted files: derived from the key, file id and generation; else zero)
///      60     4  CRC-32C of bytes 0..<60 (UInt32 LE)
/// ```
/// A store file is only ever created complete: the header is written to a temporary file, synced, and
/// renamed into place, so a file at the store's path always starts with a whole header.
///
/// Format 2 adds checkpoints (node and checkpoint records, see ``Checkpoint``); a format-1 file holds
/// commit records only. Format-1 files open (by replaying their log) and are written as format 2 by their
/// first compaction; until then they get no checkpoints, so that the version in the header always says
/// which records the file may hold.
package struct FileHeader: Hashable, Sendable {
    package static let size = 64
    package static let magic: [UInt8] = Array("ACTSTORE".utf8)
    package static let currentFormatVersion: UInt32 = 2
    /// The oldest format this engine opens.
    package static let oldestFormatVersion: UInt32 = 1
    /// Whether files of this format hold checkpoints (format 2 and later).
    package var hasCheckpoints: Bool { formatVersion >= 2 }

    package struct Flags: OptionSet, Hashable, Sendable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        /// The records are encrypted (see ``EncryptedRecord`` and ``StoreCipher``).
        package static let encrypted = Flags(rawValue: 1 << 0)
        package static let known: Flags = [.encrypted]
    }

    package var formatVersion: UInt32
    package var flags: Flags
    package var fileID: UUID
    package var generation: UInt64
    /// An encrypted file's key check value (see ``StoreCipher/keyCheck``); 16 zero bytes otherwise.
    package var keyCheck: [UInt8] = Array(repeating: 0, count: 16)

    package init(
        formatVersion: UInt32 = FileHeader.currentFormatVersion, flags: Flags = [], fileID: UUID = UUID(),
        generation: UInt64 = 0
    ) {
        self.formatVersion = formatVersion
        self.flags = flags
        self.fileID = fileID
        self.generation = generation
    }

    /// This header made for `cipher` (a new file's, or a compacted one's): marked encrypted, with the
    /// cipher's key check; or unencrypted when `cipher` is nil.
    package func encrypted(by cipher: StoreCipher?) -> FileHeader {
        var header = self
        if let cipher {
            header.flags.insert(.encrypted)
            header.keyCheck = cipher.keyCheck
        } else {
            header.flags.remove(.encrypted)
            header.keyCheck = Array(repeating: 0, count: 16)
        }
        return header
    }

    package func encoded() -> [UInt8] {
        var bytes = ByteWriter(capacity: Self.size)
        bytes.append(Self.magic)
        bytes.append(formatVersion)
        bytes.append(flags.rawValue)
        withUnsafeBytes(of: fileID.uuid) { bytes.append($0) }
        bytes.append(generation)
        bytes.append(flags.contains(.encrypted) ? StoreCipher.scheme : 0)
        bytes.append([UInt8](repeating: 0, count: 3))
        bytes.append(keyCheck.count == 16 ? keyCheck : [UInt8](repeating: 0, count: 16))
        let crc = CRC32C.checksum(bytes.bytes)
        bytes.append(crc)
        return bytes.bytes
    }

    /// Parses and checks a header.
    /// - Throws: `.corrupted` (not a store file, or a damaged header), `.unsupportedFormat` (newer version).
    package init(decoding raw: UnsafeRawBufferPointer, path: String) throws(StorageError) {
        guard raw.count >= Self.size, raw.prefix(8).elementsEqual(Self.magic) else {
            throw StorageError(
                .corrupted, "'\(path)' is not an ActorStore file (its first bytes are not the ActorStore header).",
                offset: FileOffset(0))
        }
        var reader = ByteReader(UnsafeRawBufferPointer(rebasing: raw[..<Self.size]))
        let stored = raw.loadUnaligned(fromByteOffset: 60, as: UInt32.self).littleEndian
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[..<60])) == stored else {
            throw StorageError(
                .corrupted, "The header of '\(path)' is damaged (checksum mismatch). Restore the file from a backup.",
                offset: FileOffset(0))
        }
        reader.skip(8)
        formatVersion = reader.uint32()
        flags = Flags(rawValue: reader.uint32())
        var uuid = UUID().uuid
        withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[16..<32])) }
        fileID = UUID(uuid: uuid)
        reader.skip(16)
        generation = reader.uint64()
        let scheme = reader.uint8()
        reader.skip(3)
        keyCheck = Array(raw[44..<60])
        guard (Self.oldestFormatVersion...Self.currentFormatVersion).contains(formatVersion) else {
            throw StorageError(
                .unsupportedFormat,
                "'\(path)' uses file format \(formatVersion); this version of ActorStore reads formats "
                    + "\(Self.oldestFormatVersion) to \(Self.currentFormatVersion). Open it with a newer version of "
                    + "ActorStore.")
        }
        guard Flags.known.isSuperset(of: flags) else {
            throw StorageError(
                .unsupportedFormat,
                "'\(path)' uses file features this version of ActorStore does not know "
                    + "(flags 0x\(String(flags.rawValue, radix: 16))).")
        }
        guard scheme == (flags.contains(.encrypted) ? StoreCipher.scheme : 0) else {
            throw StorageError(
                .unsupportedFormat,
                "'\(path)' is encrypted with scheme \(scheme), which this version of ActorStore does not know. Open it "
                    + "with a newer version of ActorStore.")
        }
    }
}
