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
/// time. An encryption context is taken from and returned to `encryptors` under its lock; a decryption
/// context is taken from a slot of `decryptors` by an atomic exchange with 0 (only the thread that
/// exchanged a context out holds it) and put back by a compare-and-exchange into an empty slot, both
/// acquiring and releasing, so the context's writes by one thread happen before its use by the next. A
/// context holds only this key.
package final class AESGCMKey: @unchecked Sendable {
    private let key: [UInt8]
    #if !canImport(CryptoKit)
        private let library: LibCrypto
        // Contexts, as bit patterns (OpaquePointer is not Sendable). `Locked` (an NSLock), not `Mutex`: the
        // thread sanitizer sees the lock's ordering (it reported contexts handed between sealing threads).
        private let encryptors = Locked<[UInt]>([])
        /// Decryption contexts (bit patterns, 0 = empty), taken and returned without a lock: a point read
        /// of an encrypted store opens one unit, and a lock around the pool was a measurable share of it.
        private let decryptors: InlineArray<16, Atomic<UInt>> = InlineArray { _ in Atomic(0) }
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
            for bits in encryptors.withLock({ $0 }) { library.free(OpaquePointer(bitPattern: bits)!) }
            for index in decryptors.indices {
                if let context = OpaquePointer(bitPattern: decryptors[index].load(ordering: .acquiring)) {
                    library.free(context)
                }
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
            let context = try takeDecryptor()
            defer { returnDecryptor(context) }
            let ok = try library.open(context, text, from: input, nonce: nonce, aad: aad, tag: tag)
            if !ok { text.initializeMemory(as: UInt8.self, repeating: 0) }
            return ok
        #endif
    }

    /// Opens a small message whose associated data is one 64-bit value (a unit's offset): the row read
    /// path, one call per point read of an encrypted store, so it takes no lock and builds nothing.
    /// `text` receives `count` bytes. False when the tag does not authenticate (`text` is then zeroed).
    package func openSmall(
        _ text: UnsafeMutableRawPointer, from ciphertext: UnsafeRawPointer, count: Int, nonce: UnsafeRawPointer,
        aad: UInt64, tag: UnsafeRawPointer
    ) throws(StorageError) -> Bool {
        #if canImport(CryptoKit)
            var aad = aad
            return try withUnsafeBytes(of: &aad) { (aad) throws(StorageError) in
                try open(
                    UnsafeMutableRawBufferPointer(start: text, count: count),
                    from: UnsafeRawBufferPointer(start: ciphertext, count: count),
                    nonce: UnsafeRawBufferPointer(start: nonce, count: PlatformCrypto.nonceSize), aad: aad,
                    tag: UnsafeRawBufferPointer(start: tag, count: PlatformCrypto.tagSize))
            }
        #else
            guard count <= LibCrypto.maxUpdate else {
                // Over 1 GiB (a crafted or damaged length): the general path, which feeds it in pieces.
                var aad = aad.littleEndian
                return try withUnsafeBytes(of: &aad) { (aad) throws(StorageError) in
                    try open(
                        UnsafeMutableRawBufferPointer(start: text, count: count),
                        from: UnsafeRawBufferPointer(start: ciphertext, count: count),
                        nonce: UnsafeRawBufferPointer(start: nonce, count: PlatformCrypto.nonceSize), aad: aad,
                        tag: UnsafeRawBufferPointer(start: tag, count: PlatformCrypto.tagSize))
                }
            }
            let context = try takeDecryptor()
            defer { returnDecryptor(context) }
            switch library.openSmall(context, text, from: ciphertext, count: count, nonce: nonce, aad: aad, tag: tag) {
            case .opened: return true
            case .notAuthentic:
                text.initializeMemory(as: UInt8.self, repeating: 0, count: count)
                return false
            case .failed: throw LibCrypto.failure("decrypt")
            }
        #endif
    }

    #if !canImport(CryptoKit)
        /// A decryption context: one from a slot, else a new one.
        @inline(__always)
        private func takeDecryptor() throws(StorageError) -> OpaquePointer {
            for index in decryptors.indices {
                let bits = decryptors[index].exchange(0, ordering: .acquiringAndReleasing)
                if let context = OpaquePointer(bitPattern: bits) { return context }
            }
            return try newContext(encrypting: false)
        }

        /// Puts `context` back into an empty slot, or frees it when every slot is full.
        @inline(__always)
        private func returnDecryptor(_ context: OpaquePointer) {
            let bits = UInt(bitPattern: context)
            for index in decryptors.indices {
                if decryptors[index].compareExchange(
                    expected: 0, desired: bits, ordering: .acquiringAndReleasing
                ).exchanged {
                    return
                }
            }
            library.free(context)
        }

        private func take(
            _ pool: Locked<[UInt]>, encrypting: Bool
        ) throws(StorageError)
            -> OpaquePointer
        {
            if let bits = pool.withLock({ $0.popLast() }), let context = OpaquePointer(bitPattern: bits) {
                return context
            }
            return try newContext(encrypting: encrypting)
        }

        /// A new context for this key.
        private func newContext(encrypting: Bool) throws(StorageError) -> OpaquePointer {
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
        typealias SetParameters = @convention(c) (OpaquePointer?, UnsafeRawPointer?) -> Int32
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
        private let setParameters: SetParameters
        /// "tag", the name of the AEAD tag parameter (OSSL_CIPHER_PARAM_AEAD_TAG), as a C string that
        /// lives as long as the process (the library is never unloaded).
        private let tagParameterName: UnsafeMutablePointer<CChar>
        private let sha256: OpaquePointer
        private let hmac: HMACFunction

        private static let gcmGetTag: Int32 = 0x10
        private static let gcmSetTag: Int32 = 0x11
        /// Updates are fed at most this many bytes at a time (the C API counts in `int`).
        static let maxUpdate = 1 << 30

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
            setParameters = try symbol("EVP_CIPHER_CTX_set_params", as: SetParameters.self)
            tagParameterName = strdup("tag")!
            hmac = try symbol("HMAC", as: HMACFunction.self)
            guard let cipher = try symbol("EVP_aes_256_gcm", as: CipherFunction.self)(),
                let digest = try symbol("EVP_sha256", as: Digest.self)()
            else {
                throw StorageError(.unsupportedFormat, "The system's libcrypto offers no AES-256-GCM or SHA-256.")
            }
            aes256gcm = cipher
            sha256 = digest
        }

        static func failure(_ what: String) -> StorageError {
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

        enum SmallOpen { case opened, notAuthentic, failed }

        /// ``open(_:_:from:nonce:aad:tag:)`` for a message under 2 GiB with 8 bytes of associated data. The
        /// tag goes in through `EVP_CIPHER_CTX_set_params` with an `OSSL_PARAM` array built on the stack
        /// (`EVP_CIPHER_CTX_ctrl` builds the same array, then looks the parameter up by name again).
        @inline(__always)
        func openSmall(
            _ context: OpaquePointer, _ text: UnsafeMutableRawPointer, from input: UnsafeRawPointer, count: Int,
            nonce: UnsafeRawPointer, aad: UInt64, tag: UnsafeRawPointer
        ) -> SmallOpen {
            // Callers pass at most `maxUpdate` bytes (``AESGCMKey/openSmall`` sends larger ones elsewhere).
            var unused: Int32 = 0
            var final: UInt8 = 0
            var aad = aad.littleEndian
            // Two OSSL_PARAMs, 40 bytes each on 64-bit platforms (key, data_type, data, data_size,
            // return_size; <openssl/core.h>): the tag as an octet string (type 5), then the terminator.
            var parameters: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            parameters.0 = UInt64(UInt(bitPattern: tagParameterName))
            parameters.1 = 5
            parameters.2 = UInt64(UInt(bitPattern: tag))
            parameters.3 = UInt64(PlatformCrypto.tagSize)
            parameters.4 = .max
            let ok = withUnsafeBytes(of: &aad) { aad in
                withUnsafeBytes(of: &parameters) { parameters in
                    decryptInit(context, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self)) == 1
                        && decryptUpdate(
                            context, nil, &unused, aad.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) == 1
                        && decryptUpdate(
                            context, text.assumingMemoryBound(to: UInt8.self), &unused,
                            input.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1
                        && unused == Int32(count)
                        && setParameters(context, parameters.baseAddress) == 1
                }
            }
            guard ok else { return .failed }
            return decryptFinal(context, &final, &unused) == 1 ? .opened : .notAuthentic
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
