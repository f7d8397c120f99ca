import Foundation
import Synchronization

/// The encryption of one store file (one generation of it): AES-256-GCM under a key derived from the
/// user's 64-byte key, applied to *units* inside records (see ``Record`` and the FileFormat article).
///
/// ```text
///  unit := length: u32 (nonce + ciphertext + tag) | nonce: 12 | ciphertext | tag: 16
///  nonce := session: 8 random bytes | counter: u32 (LE)
///  aad   := the unit's file offset: u64 | context (a record's seal unit: the record's offset and header)
/// ```
/// **Keys.** The file key is HKDF-SHA-256(secret: the user's key, salt: file id ‖ generation, info:
/// "ActorStore v1 record key"); the header holds a 16-byte check value derived the same way (info
/// "ActorStore v1 key check") so a wrong key is told at open without decrypting anything. Compaction writes
/// a new generation, so it rotates the file key.
///
/// **Nonces are never reused under one key.** A key belongs to one generation of one file. Each engine
/// that writes it (each open) draws a fresh random 8-byte session and counts units from 0; after 2^32
/// units it draws a new session. Within a session the counter makes nonces distinct; across sessions
/// (reopens, a torn tail truncated and written again, a crash) two sessions collide with probability
/// about n²/2^65 for n sessions. Bytes once sealed are never sealed again in place: a record is written
/// once, and a rewrite after a crash is a new record with new nonces.
package final class StoreCipher: Sendable {
    /// Size of the user's key, as Realm's `encryptionKey`.
    package static let userKeySize = 64
    /// Bytes a unit adds to its plaintext: length, nonce and tag.
    package static let unitOverhead = 4 + PlatformCrypto.nonceSize + PlatformCrypto.tagSize
    /// Bytes of a unit's header: its length and nonce.
    package static let unitHeaderSize = 4 + PlatformCrypto.nonceSize
    /// Plaintext of a record's seal unit: the number of units before it (u64).
    package static let sealUnitSize = unitOverhead + 8
    /// The scheme written in the file header.
    package static let scheme: UInt8 = 1

    private let key: AESGCMKey
    /// The header's key check value for this key, file and generation.
    package let keyCheck: [UInt8]
    private let nonces = Locked<(session: UInt64, counter: UInt32)>((.random(in: .min ... .max), 0))

    /// - Throws: `.invalidValue` for a key that is not 64 bytes; `.unsupportedFormat` when the platform's
    ///   cryptography is missing.
    /// The store's path, for error messages.
    package let path: String

    package init(userKey: [UInt8], fileID: UUID, generation: UInt64, path: String) throws(StorageError) {
        try Self.checkKeyLength(userKey.count)
        self.path = path
        var salt = withUnsafeBytes(of: fileID.uuid) { Array($0) }
        withUnsafeBytes(of: generation.littleEndian) { salt.append(contentsOf: $0) }
        let fileKey = try PlatformCrypto.hkdf(
            secret: userKey, salt: salt, info: Array("ActorStore v1 record key".utf8))
        keyCheck = try PlatformCrypto.hkdf(
            secret: userKey, salt: salt, info: Array("ActorStore v1 key check".utf8), length: 16)
        key = try AESGCMKey(fileKey)
    }

    package static func checkKeyLength(_ count: Int) throws(StorageError) {
        guard count == userKeySize else {
            throw StorageError(
                .invalidValue,
                "An encryption key must be \(userKeySize) bytes; this one is \(count). Generate \(userKeySize) random "
                    + "bytes once, keep them in the Keychain or your secret store, and pass the same bytes every time.")
        }
    }

    /// The next nonce of this session.
    private func nextNonce() -> (UInt64, UInt32) {
        nonces.withLock { state in
            if state.counter == .max { state = (.random(in: .min ... .max), 0) }
            defer { state.counter += 1 }
            return (state.session, state.counter)
        }
    }

    /// Seals the unit that fills `unit` in place: its plaintext is at
    /// `unit[unitHeaderSize ..< unit.count - tagSize]`; the length, nonce and tag are written around it.
    /// `offset` is where the unit lies in the file; `context` is more associated data (a seal unit's).
    package func seal(
        _ unit: UnsafeMutableRawBufferPointer, at offset: UInt64, context: [UInt8]? = nil
    ) throws(StorageError) {
        let (session, counter) = nextNonce()
        try seal(unit, at: offset, context: context, nonce: (session, counter))
    }

    /// ``seal(_:at:context:)`` with a nonce from ``reserveNonces(_:)``.
    package func seal(
        _ unit: UnsafeMutableRawBufferPointer, at offset: UInt64, context: [UInt8]? = nil,
        nonce: (session: UInt64, counter: UInt32)
    ) throws(StorageError) {
        precondition(unit.count >= Self.unitOverhead && unit.count - 4 <= Int(UInt32.max))
        unit.storeBytes(of: UInt32(unit.count - 4).littleEndian, toByteOffset: 0, as: UInt32.self)
        unit.storeBytes(of: nonce.session.littleEndian, toByteOffset: 4, as: UInt64.self)
        unit.storeBytes(of: nonce.counter.littleEndian, toByteOffset: 12, as: UInt32.self)
        let textEnd = unit.count - PlatformCrypto.tagSize
        var aad = AssociatedData(offset, context)
        try aad.withBytes { (aad) throws(StorageError) in
            try key.seal(
                UnsafeMutableRawBufferPointer(rebasing: unit[Self.unitHeaderSize..<textEnd]),
                nonce: UnsafeRawBufferPointer(rebasing: unit[4..<Self.unitHeaderSize]), aad: aad,
                tag: UnsafeMutableRawBufferPointer(rebasing: unit[textEnd...]))
        }
    }

    /// `count` nonces in a row, of one session: unit `i` of a batch takes counter `counter + i`.
    package func reserveNonces(_ count: Int) -> (session: UInt64, counter: UInt32) {
        precondition(count >= 0 && count < Int(UInt32.max))
        return nonces.withLock { state in
            if Int(UInt32.max - state.counter) < count { state = (.random(in: .min ... .max), 0) }
            defer { state.counter += UInt32(count) }
            return (state.session, state.counter)
        }
    }

    /// The length of the unit starting at `bytes` (its whole size, length field included), if `bytes`
    /// holds at least a unit's framing and the whole unit.
    package static func unitSize(at bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)))
        guard length >= unitOverhead - 4, length <= bytes.count - 4 else { return nil }
        return length + 4
    }

    /// Opens the unit `unit` (exactly one whole unit, as in the file at `offset`) into `plaintext`, which
    /// holds `unit.count - unitOverhead` bytes. False when it does not authenticate.
    package func open(
        _ unit: UnsafeRawBufferPointer, at offset: UInt64, into plaintext: UnsafeMutableRawBufferPointer,
        context: [UInt8]? = nil
    ) throws(StorageError) -> Bool {
        let textEnd = unit.count - PlatformCrypto.tagSize
        precondition(unit.count >= Self.unitOverhead && plaintext.count == unit.count - Self.unitOverhead)
        var aad = AssociatedData(offset, context)
        return try aad.withBytes { (aad) throws(StorageError) in
            try key.open(
                plaintext, from: UnsafeRawBufferPointer(rebasing: unit[Self.unitHeaderSize..<textEnd]),
                nonce: UnsafeRawBufferPointer(rebasing: unit[4..<Self.unitHeaderSize]), aad: aad,
                tag: UnsafeRawBufferPointer(rebasing: unit[textEnd...]))
        }
    }

    /// The unit at `offset` in `bytes`, checked to lie in `bytes` (and to be `expected` bytes, when given).
    private func unit(
        in bytes: UnsafeRawBufferPointer, at offset: UInt64, size expected: Int?, path: String, what: String
    ) throws(StorageError) -> UnsafeRawBufferPointer {
        guard let start = Int(exactly: offset), start <= bytes.count,
            let size = Self.unitSize(at: UnsafeRawBufferPointer(rebasing: bytes[start...])),
            expected == nil || expected == size
        else { throw Self.damaged(path, offset, what, "its length runs past its record") }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<start + size])
    }

    /// Calls `body` with the plaintext of the unit at `offset` in `bytes` (a region from the file's start,
    /// or a node's body with offset 0); `.corrupted` naming the offset when the unit does not lie in
    /// `bytes` or does not authenticate. The plaintext is valid during the call only.
    /// `size`, when given, is the unit's size as its reference says (a row location's length).
    /// The plaintext of the unit at `offset` in `bytes`, in memory the caller deallocates (`storage`);
    /// `.corrupted` as ``withOpenedUnit(in:at:size:path:what:context:_:)`` throws it. Not generic: the row
    /// read path calls it for every row.
    package func openUnit(
        in bytes: UnsafeRawBufferPointer, at offset: UInt64, size expected: Int?, path: String, what: String
    ) throws(StorageError) -> (storage: UnsafeMutableRawBufferPointer, plaintext: UnsafeRawBufferPointer) {
        let unit = try unit(in: bytes, at: offset, size: expected, path: path, what: what)
        let count = unit.count - Self.unitOverhead
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        do throws(StorageError) {
            try openSmall(unit, at: offset, into: storage.baseAddress!, path: path, what: what)
        } catch {
            storage.deallocate()
            throw error
        }
        return (storage, UnsafeRawBufferPointer(rebasing: storage[..<count]))
    }

    /// Opens `unit` (at `offset`, no context) into `text`, which has room for its plaintext; `.corrupted`
    /// when it does not authenticate.
    @inline(__always)
    private func openSmall(
        _ unit: UnsafeRawBufferPointer, at offset: UInt64, into text: UnsafeMutableRawPointer, path: String,
        what: String
    ) throws(StorageError) {
        let base = unit.baseAddress!
        let textEnd = unit.count - PlatformCrypto.tagSize
        guard
            try key.openSmall(
                text, from: base + Self.unitHeaderSize, count: textEnd - Self.unitHeaderSize, nonce: base + 4,
                aad: offset, tag: base + textEnd)
        else { throw Self.damaged(path, offset, what, "it does not authenticate") }
    }

    /// ``openUnit(in:at:size:path:what:)`` into `buffer` when the plaintext fits in it (else nil: the
    /// caller allocates). Returns the plaintext.
    package func openUnit(
        in bytes: UnsafeRawBufferPointer, at offset: UInt64, size expected: Int?, path: String, what: String,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(StorageError) -> UnsafeRawBufferPointer? {
        let unit = try unit(in: bytes, at: offset, size: expected, path: path, what: what)
        let count = unit.count - Self.unitOverhead
        guard count <= buffer.count else { return nil }
        try openSmall(unit, at: offset, into: buffer.baseAddress!, path: path, what: what)
        return UnsafeRawBufferPointer(rebasing: buffer[..<count])
    }

    package func withOpenedUnit<R>(
        in bytes: UnsafeRawBufferPointer, at offset: UInt64, size expected: Int? = nil, path: String, what: String,
        context: [UInt8]? = nil, _ body: (UnsafeRawBufferPointer) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        let unit = try unit(in: bytes, at: offset, size: expected, path: path, what: what)
        // A heap buffer, not a generic temporary allocation: this runs for every row read, unspecialised.
        let count = unit.count - Self.unitOverhead
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        defer { storage.deallocate() }
        let plaintext = UnsafeMutableRawBufferPointer(rebasing: storage[..<count])
        guard try open(unit, at: offset, into: plaintext, context: context) else {
            throw Self.damaged(path, offset, what, "it does not authenticate")
        }
        return try body(UnsafeRawBufferPointer(plaintext))
    }

    package static func damaged(_ path: String, _ offset: UInt64, _ what: String, _ why: String) -> StorageError {
        StorageError(
            .corrupted,
            "The encrypted \(what) at byte \(offset) of '\(path)' is damaged (\(why)): the file was changed or damaged "
                + "on disk. Restore it from a backup.",
            offset: FileOffset(offset))
    }

    /// A unit's associated data on the stack: its offset, then the context (at most 24 bytes).
    private struct AssociatedData {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let count: Int

        init(_ offset: UInt64, _ context: [UInt8]?) {
            let extra = min(context?.count ?? 0, 24)
            count = 8 + extra
            words.0 = offset.littleEndian
            if let context, extra > 0 {
                withUnsafeMutableBytes(of: &words) { raw in
                    context.withUnsafeBytes {
                        raw.baseAddress!.advanced(by: 8).copyMemory(from: $0.baseAddress!, byteCount: extra)
                    }
                }
            }
        }

        mutating func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(StorageError) -> R) throws(StorageError) -> R
        {
            let count = self.count
            var result: Result<R, StorageError>?
            withUnsafeBytes(of: &words) { raw in
                do throws(StorageError) {
                    result = .success(try body(UnsafeRawBufferPointer(rebasing: raw[..<count])))
                } catch { result = .failure(error) }
            }
            return try result!.get()
        }
    }

    /// A record's seal unit's associated data besides its offset: the record's offset and its header's first
    /// 16 bytes (magic, kind, flags, length). Binds the header, the record's place and its unit count.
    package static func sealContext(recordStart: UInt64, header: [UInt8]) -> [UInt8] {
        var context = withUnsafeBytes(of: recordStart.littleEndian) { Array($0) }
        context.append(contentsOf: header.prefix(16))
        return context
    }
}
