import Foundation
import Synchronization

#if canImport(CryptoKit)
    import CryptoKit
#elseif canImport(Glibc)
    import Glibc
#endif

/// The platform's cryptography, the only place ActorStore touches it: AES-256-GCM and HMAC-SHA-256.
/// Nothing here is a cipher of ours: on Apple platforms it is CryptoKit; on Linux it is the system's
/// libcrypto (OpenSSL 3), loaded when an encrypted store is first opened, so that building and running
/// ActorStore needs no OpenSSL headers and a program that never encrypts never loads it.
package enum PlatformCrypto {
    package static let keySize = 32
    package static let nonceSize = 12
    package static let tagSize = 16

    /// Whether encryption is available here; the error says why not (and what to install) when it is not.
    package static func checkAvailable() throws(StorageError) {
        #if canImport(CryptoKit)
            return
        #else
            _ = try LibCrypto.shared()
        #endif
    }

    /// HMAC-SHA-256 of `message` under `key` (32 bytes).
    package static func hmacSHA256(key: [UInt8], message: [UInt8]) throws(StorageError) -> [UInt8] {
        #if canImport(CryptoKit)
            return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        #else
            return try LibCrypto.shared().hmacSHA256(key: key, message: message)
        #endif
    }

    /// HKDF-SHA-256 (RFC 5869): `length` (≤ 32) bytes of key derived from `secret`, `salt` and `info`.
    package static func hkdf(
        secret: [UInt8], salt: [UInt8], info: [UInt8], length: Int = 32
    ) throws(StorageError)
        -> [UInt8]
    {
        precondition(length <= 32, "one HKDF block is enough for every key ActorStore derives")
        let prk = try hmacSHA256(key: salt, message: secret)
        return Array(try hmacSHA256(key: prk, message: info + [1]).prefix(length))
    }
}

/// One AES-256-GCM key, ready to seal and open many messages: the key schedule is computed once.
///
/// ## Thread safety (why `@unchecked Sendable` is sound)
/// `key` never changes. On Linux, cipher contexts are mutable C objects: each is used by one thread at a
/// time, taken from and returned to `pool` under its mutex; a context holds only this key.
package final class AESGCMKey: @unchecked Sendable {
    private let key: [UInt8]
    #if !canImport(CryptoKit)
        private let library: LibCrypto
        // Contexts, as bit patterns (OpaquePointer is not Sendable). `Locked` (an NSLock), not `Mutex`: the
        // thread sanitizer sees the lock's ordering (it reported contexts handed between sealing threads).
        private let encryptors = Locked<[UInt]>([])
        private let decryptors = Locked<[UInt]>([])
    #else
        private let symmetric: SymmetricKey
    #endif

    package init(_ key: [UInt8]) throws(StorageError) {
        precondition(key.count == PlatformCrypto.keySize)
        self.key = key
        #if canImport(CryptoKit)
            symmetric = SymmetricKey(data: key)
        #else
            library = try LibCrypto.shared()
        #endif
    }

    deinit {
        #if !canImport(CryptoKit)
            for bits in encryptors.withLock({ $0 }) + decryptors.withLock({ $0 }) {
                library.free(OpaquePointer(bitPattern: bits)!)
            }
        #endif
    }

    /// Encrypts `text` in place and writes the 16-byte tag to `tag`.
    package func seal(
        _ text: UnsafeMutableRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        tag: UnsafeMutableRawBufferPointer
    ) throws(StorageError) {
        #if canImport(CryptoKit)
            do {
                let box = try AES.GCM.seal(
                    Data(text), using: symmetric, nonce: try AES.GCM.Nonce(data: Data(nonce)), authenticating: Data(aad)
                )
                box.ciphertext.copyBytes(to: text)
                box.tag.copyBytes(to: tag)
            } catch {
                throw StorageError(.ioFailure, "Encrypting failed (\(error)).")
            }
        #else
            let context = try take(encryptors, encrypting: true)
            defer { encryptors.withLock { $0.append(UInt(bitPattern: context)) } }
            try library.seal(context, text, nonce: nonce, aad: aad, tag: tag)
        #endif
    }

    /// Decrypts `ciphertext` (by default `text` itself) into `text`, which has its size; false when the
    /// tag does not authenticate it (wrong key or changed bytes), and `text` is then zeroed.
    package func open(
        _ text: UnsafeMutableRawBufferPointer, from ciphertext: UnsafeRawBufferPointer? = nil,
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer
    ) throws(StorageError) -> Bool {
        let input = ciphertext ?? UnsafeRawBufferPointer(text)
        precondition(input.count == text.count)
        #if canImport(CryptoKit)
            do {
                let box = try AES.GCM.SealedBox(
                    nonce: try AES.GCM.Nonce(data: Data(nonce)), ciphertext: Data(input), tag: Data(tag))
                let plain = try AES.GCM.open(box, using: symmetric, authenticating: Data(aad))
                plain.copyBytes(to: text)
                return true
            } catch {
                text.initializeMemory(as: UInt8.self, repeating: 0)
                return false
            }
        #else
            let context = try take(decryptors, encrypting: false)
            defer { decryptors.withLock { $0.append(UInt(bitPattern: context)) } }
            let ok = try library.open(context, text, from: input, nonce: nonce, aad: aad, tag: tag)
            if !ok { text.initializeMemory(as: UInt8.self, repeating: 0) }
            return ok
        #endif
    }

    #if !canImport(CryptoKit)
        private func take(
            _ pool: Locked<[UInt]>, encrypting: Bool
        ) throws(StorageError)
            -> OpaquePointer
        {
            if let bits = pool.withLock({ $0.popLast() }), let context = OpaquePointer(bitPattern: bits) {
                return context
            }
            var result: Result<OpaquePointer, StorageError> = .failure(StorageError(.ioFailure, "unreachable"))
            key.withUnsafeBytes { key in
                do throws(StorageError) {
                    result = .success(try library.newContext(key: key, encrypting: encrypting))
                } catch { result = .failure(error) }
            }
            return try result.get()
        }
    #endif
}

#if !canImport(CryptoKit)
    /// The functions ActorStore uses from the system's libcrypto (OpenSSL 3), looked up at run time.
    ///
    /// ## Thread safety (why `@unchecked Sendable` is sound)
    /// Every stored property is a constant (function pointers and the library handle, never closed); the
    /// OpenSSL functions called are thread-safe for distinct contexts, and contexts are never shared.
    final class LibCrypto: @unchecked Sendable {
        typealias NewContext = @convention(c) () -> OpaquePointer?
        typealias FreeContext = @convention(c) (OpaquePointer?) -> Void
        typealias CipherFunction = @convention(c) () -> OpaquePointer?
        typealias Init =
            @convention(c) (
                OpaquePointer?, OpaquePointer?, OpaquePointer?, UnsafePointer<UInt8>?, UnsafePointer<UInt8>?
            )
            -> Int32
        typealias Update =
            @convention(c) (
                OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int32>?, UnsafePointer<UInt8>?,
                Int32
            ) -> Int32
        typealias Final =
            @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int32>?)
            -> Int32
        typealias Control = @convention(c) (OpaquePointer?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
        typealias Digest = @convention(c) () -> OpaquePointer?
        typealias HMACFunction =
            @convention(c) (
                OpaquePointer?, UnsafeRawPointer?, Int32, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?,
                UnsafeMutablePointer<UInt32>?
            ) -> UnsafeMutablePointer<UInt8>?

        private let newContextFunction: NewContext
        private let freeContextFunction: FreeContext
        private let aes256gcm: OpaquePointer
        private let encryptInit: Init
        private let encryptUpdate: Update
        private let encryptFinal: Final
        private let decryptInit: Init
        private let decryptUpdate: Update
        private let decryptFinal: Final
        private let control: Control
        private let sha256: OpaquePointer
        private let hmac: HMACFunction

        private static let gcmGetTag: Int32 = 0x10
        private static let gcmSetTag: Int32 = 0x11
        /// Updates are fed at most this many bytes at a time (the C API counts in `int`).
        private static let maxUpdate = 1 << 30

        private static let loaded = Locked<Result<LibCrypto, StorageError>?>(nil)

        /// The library, loaded once per process.
        static func shared() throws(StorageError) -> LibCrypto {
            try loaded.withLock { loaded in
                if let loaded { return loaded }
                let result: Result<LibCrypto, StorageError>
                do throws(StorageError) { result = .success(try LibCrypto()) } catch { result = .failure(error) }
                loaded = result
                return result
            }.get()
        }

        private init() throws(StorageError) {
            var handle: UnsafeMutableRawPointer?
            for name in ["libcrypto.so.3", "libcrypto.so"] where handle == nil {
                handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)
            }
            guard let handle else {
                throw StorageError(
                    .unsupportedFormat,
                    "Encrypted stores need the system's libcrypto (OpenSSL 3), which is not installed: install it "
                        + "(Debian and Ubuntu: apt-get install libssl3) and try again.")
            }
            func symbol<T>(_ name: String, as type: T.Type) throws(StorageError) -> T {
                guard let pointer = dlsym(handle, name) else {
                    throw StorageError(
                        .unsupportedFormat,
                        "The system's libcrypto has no \(name): encrypted stores need OpenSSL 3 or later.")
                }
                return unsafeBitCast(pointer, to: type)
            }
            newContextFunction = try symbol("EVP_CIPHER_CTX_new", as: NewContext.self)
            freeContextFunction = try symbol("EVP_CIPHER_CTX_free", as: FreeContext.self)
            encryptInit = try symbol("EVP_EncryptInit_ex", as: Init.self)
            encryptUpdate = try symbol("EVP_EncryptUpdate", as: Update.self)
            encryptFinal = try symbol("EVP_EncryptFinal_ex", as: Final.self)
            decryptInit = try symbol("EVP_DecryptInit_ex", as: Init.self)
            decryptUpdate = try symbol("EVP_DecryptUpdate", as: Update.self)
            decryptFinal = try symbol("EVP_DecryptFinal_ex", as: Final.self)
            control = try symbol("EVP_CIPHER_CTX_ctrl", as: Control.self)
            hmac = try symbol("HMAC", as: HMACFunction.self)
            guard let cipher = try symbol("EVP_aes_256_gcm", as: CipherFunction.self)(),
                let digest = try symbol("EVP_sha256", as: Digest.self)()
            else {
                throw StorageError(.unsupportedFormat, "The system's libcrypto offers no AES-256-GCM or SHA-256.")
            }
            aes256gcm = cipher
            sha256 = digest
        }

        private static func failure(_ what: String) -> StorageError {
            StorageError(.ioFailure, "libcrypto failed to \(what).")
        }

        func newContext(key: UnsafeRawBufferPointer, encrypting: Bool) throws(StorageError) -> OpaquePointer {
            guard let context = newContextFunction() else { throw Self.failure("allocate a cipher context") }
            let initialise = encrypting ? encryptInit : decryptInit
            let ok = initialise(context, aes256gcm, nil, key.bindMemory(to: UInt8.self).baseAddress, nil)
            guard ok == 1 else {
                freeContextFunction(context)
                throw Self.failure("set up AES-256-GCM")
            }
            return context
        }

        func free(_ context: OpaquePointer) { freeContextFunction(context) }

        private func update(
            _ function: Update, _ context: OpaquePointer, _ text: UnsafeMutableRawBufferPointer?,
            _ input: UnsafeRawBufferPointer
        ) -> Bool {
            var done = 0
            while done < input.count {
                let count = min(input.count - done, Self.maxUpdate)
                var written: Int32 = 0
                let output = text.map { $0.baseAddress!.assumingMemoryBound(to: UInt8.self) + done }
                let source = input.baseAddress!.assumingMemoryBound(to: UInt8.self) + done
                guard function(context, output, &written, source, Int32(count)) == 1, Int(written) == count else {
                    return false
                }
                done += count
            }
            return true
        }

        func seal(
            _ context: OpaquePointer, _ text: UnsafeMutableRawBufferPointer, nonce: UnsafeRawBufferPointer,
            aad: UnsafeRawBufferPointer, tag: UnsafeMutableRawBufferPointer
        ) throws(StorageError) {
            var unused: Int32 = 0
            var final: UInt8 = 0
            guard encryptInit(context, nil, nil, nil, nonce.bindMemory(to: UInt8.self).baseAddress) == 1,
                update(encryptUpdate, context, nil, aad),
                update(encryptUpdate, context, text, UnsafeRawBufferPointer(text)),
                encryptFinal(context, &final, &unused) == 1,
                control(context, Self.gcmGetTag, Int32(PlatformCrypto.tagSize), tag.baseAddress) == 1
            else { throw Self.failure("encrypt") }
        }

        func open(
            _ context: OpaquePointer, _ text: UnsafeMutableRawBufferPointer, from input: UnsafeRawBufferPointer,
            nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer
        ) throws(StorageError) -> Bool {
            var unused: Int32 = 0
            var final: UInt8 = 0
            guard decryptInit(context, nil, nil, nil, nonce.bindMemory(to: UInt8.self).baseAddress) == 1,
                update(decryptUpdate, context, nil, aad),
                update(decryptUpdate, context, text, input),
                control(
                    context, Self.gcmSetTag, Int32(PlatformCrypto.tagSize),
                    UnsafeMutableRawPointer(mutating: tag.baseAddress))
                    == 1
            else { throw Self.failure("decrypt") }
            return decryptFinal(context, &final, &unused) == 1
        }

        func hmacSHA256(key: [UInt8], message: [UInt8]) throws(StorageError) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            let ok = key.withUnsafeBytes { key in
                message.withUnsafeBufferPointer { message in
                    out.withUnsafeMutableBufferPointer { out in
                        hmac(
                            sha256, key.baseAddress, Int32(key.count), message.baseAddress, message.count,
                            out.baseAddress, &length)
                            != nil
                    }
                }
            }
            guard ok, length == 32 else { throw Self.failure("compute HMAC-SHA-256") }
            return out
        }
    }
#endif
