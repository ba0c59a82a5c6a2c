import COpenSSL
@testable import SpinNet

/// An OpenSSL client over memory BIOs, to drive a server `TLSSession` with no socket.
final class MemoryTLSClient {
    private let context: OpaquePointer
    let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer

    init(caFile: String, hostname: String = "localhost", alpn: [String] = ["http/1.1"]) {
        context = SSL_CTX_new(TLS_client_method())!
        SSL_CTX_load_verify_locations(context, caFile, nil)
        ssl = SSL_new(context)!
        readBIO = BIO_new(BIO_s_mem())!
        writeBIO = BIO_new(BIO_s_mem())!
        SSL_set_bio(ssl, readBIO, writeBIO)
        SSL_set_connect_state(ssl)
        SSL_set_verify(ssl, SSL_VERIFY_PEER, nil)
        SSL_set1_host(ssl, hostname)
        _ = COpenSSL_SSL_set_tlsext_host_name(ssl, hostname)
        var wire: [UInt8] = []
        for name in alpn { wire.append(UInt8(name.utf8.count)); wire += Array(name.utf8) }
        if !wire.isEmpty { _ = SSL_set_alpn_protos(ssl, wire, UInt32(wire.count)) }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    var handshakeComplete: Bool { SSL_is_init_finished(ssl) == 1 }
    var verifyResult: Int { SSL_get_verify_result(ssl) }

    /// Ciphertext the client wants to send.
    func drain() -> [UInt8] {
        let pending = Int(COpenSSL_BIO_pending(writeBIO))
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: pending)
        let n = BIO_read(writeBIO, &bytes, Int32(pending))
        return Array(bytes.prefix(Int(max(0, n))))
    }

    func feed(_ ciphertext: [UInt8]) {
        guard !ciphertext.isEmpty else { return }
        _ = BIO_write(readBIO, ciphertext, Int32(ciphertext.count))
    }

    func stepHandshake() { _ = SSL_do_handshake(ssl) }

    func write(_ text: String) { _ = SSL_write(ssl, text, Int32(text.utf8.count)) }

    enum ReadResult: Equatable { case data(String), wantMore, closeNotify, failed }

    func read() -> ReadResult {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let n = SSL_read(ssl, &buffer, Int32(buffer.count))
        if n > 0 { return .data(String(decoding: buffer.prefix(Int(n)), as: UTF8.self)) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_READ: return .wantMore
        case SSL_ERROR_ZERO_RETURN: return .closeNotify
        default: return .failed
        }
    }
}
