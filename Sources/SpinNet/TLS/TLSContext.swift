import COpenSSL

/// A configured OpenSSL `SSL_CTX`: certificate chain, key, TLS 1.2+ with AEAD suites
/// only, ALPN. Built once
/// by `SocketServer.start()` (or by a config check) and shared by every TLS connection.
///
/// `@unchecked Sendable`: the SSL_CTX is only read after `init`, and OpenSSL allows
/// creating SSL objects from one context on many threads.
package final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    /// The ALPN list in wire format (length-prefixed names), read by the select callback.
    private let alpnWire: [UInt8]

    /// Loads and checks everything; throws a `TLSError` naming the file at fault.
    package init(configuration: TLSConfiguration) throws(TLSError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw .contextFailed(openSSL: Self.drainErrors())
        }
        var wire: [UInt8] = []
        for name in configuration.alpnProtocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                SSL_CTX_free(context)
                throw .contextFailed(openSSL: "ALPN protocol name '\(name)' must be 1...255 bytes")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        self.context = context
        self.alpnWire = wire
        // From here `deinit` frees the context on a throw.

        let version = configuration.minimumVersion == .tls12 ? TLS1_2_VERSION : TLS1_3_VERSION
        guard COpenSSL_SSL_CTX_set_min_proto_version(context, version) == 1 else {
            throw .contextFailed(openSSL: Self.drainErrors())
        }
        // TLS 1.3 keeps OpenSSL's suites (all AEAD); TLS 1.2 gets the list below.
        guard SSL_CTX_set_cipher_list(context, Self.tls12Ciphers) == 1 else {
            throw .contextFailed(openSSL: Self.drainErrors())
        }
        _ = COpenSSL_SSL_CTX_set_server_options(context)
        _ = COpenSSL_SSL_CTX_set_release_buffers(context)

        if let code = Syscall.unreadable(path: configuration.certificateChainPath) {
            throw .certificateFileUnreadable(path: configuration.certificateChainPath, errno: code)
        }
        if let code = Syscall.unreadable(path: configuration.privateKeyPath) {
            throw .privateKeyFileUnreadable(path: configuration.privateKeyPath, errno: code)
        }
        guard SSL_CTX_use_certificate_chain_file(context, configuration.certificateChainPath) == 1 else {
            throw .certificateInvalid(path: configuration.certificateChainPath, openSSL: Self.drainErrors())
        }
        guard let key = COpenSSL_read_private_key_file(configuration.privateKeyPath) else {
            throw .privateKeyInvalid(path: configuration.privateKeyPath, openSSL: Self.drainErrors())
        }
        defer { EVP_PKEY_free(key) }
        // OpenSSL 3 refuses a key that does not match the loaded certificate here
        // (X509_R_KEY_VALUES_MISMATCH); check_private_key is the belt to that.
        guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
            throw .privateKeyMismatch(certificatePath: configuration.certificateChainPath,
                                      keyPath: configuration.privateKeyPath,
                                      openSSL: Self.drainErrors())
        }
        if !wire.isEmpty {
            SSL_CTX_set_alpn_select_cb(context, { _, out, outLength, offered, offeredLength, arg in
                guard let arg, let out, let outLength, let offered else { return SSL_TLSEXT_ERR_NOACK }
                let owner = Unmanaged<TLSContext>.fromOpaque(arg).takeUnretainedValue()
                return owner.selectALPN(out: out, outLength: outLength,
                                        offered: UnsafeBufferPointer(start: offered, count: Int(offeredLength)))
            }, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// The TLS 1.2 suites: Mozilla's "intermediate" profile (version 5.7) without its
    /// finite-field DHE suites, i.e. ECDHE key exchange (forward secrecy) with AES-GCM
    /// or ChaCha20-Poly1305, for ECDSA and RSA certificates. No CBC suite (Lucky13,
    /// padding oracles), no static RSA key exchange, no SHA-1 MAC; every browser and
    /// curl of the last decade has one of these.
    package static let tls12Ciphers = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// RFC 7301 §3.2: the first of our protocols (server preference) the client offers.
    private func selectALPN(
        out: UnsafeMutablePointer<UnsafePointer<UInt8>?>,
        outLength: UnsafeMutablePointer<UInt8>,
        offered: UnsafeBufferPointer<UInt8>
    ) -> Int32 {
        var ours = 0
        while ours < alpnWire.count {
            let length = Int(alpnWire[ours])
            let name = alpnWire[(ours + 1)..<(ours + 1 + length)]
            var theirs = 0
            while theirs < offered.count {
                let theirLength = Int(offered[theirs])
                let start = theirs + 1
                guard start + theirLength <= offered.count else { break }
                if theirLength == length, name.elementsEqual(offered[start..<(start + theirLength)]) {
                    out.pointee = offered.baseAddress! + start
                    outLength.pointee = UInt8(theirLength)
                    return SSL_TLSEXT_ERR_OK
                }
                theirs = start + theirLength
            }
            ours += 1 + length
        }
        return SSL_TLSEXT_ERR_NOACK
    }

    /// The thread's OpenSSL error queue as one line, emptied.
    static func drainErrors() -> String {
        var lines: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            ERR_error_string_n(code, &buffer, buffer.count)
            lines.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return lines.isEmpty ? "no OpenSSL error recorded" : lines.joined(separator: "; ")
    }
}
