import COpenSSL

/// One server-side TLS session over two memory BIOs: ciphertext from `recv` is
/// written into the read BIO, ciphertext to send is drained from the write BIO.
///
/// Why memory BIOs and not `SSL_set_fd`: OpenSSL then never touches the socket, so
/// every byte still goes through `Connection`'s one non-blocking read/write path —
/// the same event-loop watch, the same MSG_NOSIGNAL send (no SIGPIPE from OpenSSL's
/// socket BIO), the same backpressure accounting and write-stall timer — and the TLS
/// logic is plain function calls that tests can drive without a socket. The cost is
/// one extra copy per record, small next to the cipher work.
///
/// Confined to the connection's event loop (OpenSSL's SSL objects are not thread-safe).
final class TLSSession {
    /// What feeding ciphertext produced, besides the plaintext handed to the closure.
    enum ReceiveStatus: Equatable {
        case ok
        /// The peer sent close_notify: no more plaintext will come.
        case closeNotify
        case failed(TLSError)
    }

    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer

    init?(context: TLSContext) {
        guard let ssl = SSL_new(context.context) else { return nil }
        guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            return nil
        }
        SSL_set_bio(ssl, readBIO, writeBIO)  // the SSL owns both BIOs from here
        SSL_set_accept_state(ssl)
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
    }

    deinit {
        SSL_free(ssl)
    }

    /// True once the handshake finished; plaintext can be written from then on.
    var handshakeComplete: Bool { SSL_is_init_finished(ssl) == 1 }

    /// The ALPN protocol agreed on, if any.
    var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Ciphertext waiting to be sent (handshake messages, records, alerts).
    var hasOutput: Bool { COpenSSL_BIO_pending(writeBIO) > 0 }

    /// Bytes of ciphertext waiting in the write BIO.
    var pendingOutput: Int { Int(COpenSSL_BIO_pending(writeBIO)) }

    /// Moves up to `buffer.count` bytes of pending ciphertext into `buffer`; returns
    /// how many (no allocation: the connection sends straight from the loop's buffer).
    func readOutput(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(buffer.count, pendingOutput)
        guard count > 0 else { return 0 }
        return Int(max(0, BIO_read(writeBIO, buffer.baseAddress, Int32(count))))
    }

    /// Feeds ciphertext, drives the handshake, and hands every plaintext piece to
    /// `plaintext` (a view into `scratch`, valid during the call).
    func receive(
        _ ciphertext: UnsafeRawBufferPointer,
        scratch: UnsafeMutableRawBufferPointer,
        plaintext: (UnsafeRawBufferPointer) -> Void
    ) -> ReceiveStatus {
        ERR_clear_error()
        if ciphertext.count > 0 {
            // A memory BIO grows to take everything.
            _ = BIO_write(readBIO, ciphertext.baseAddress, Int32(ciphertext.count))
        }
        while true {
            let n = SSL_read(ssl, scratch.baseAddress, Int32(scratch.count))
            if n > 0 {
                plaintext(UnsafeRawBufferPointer(rebasing: scratch[0..<Int(n)]))
                continue
            }
            switch SSL_get_error(ssl, n) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .ok
            case SSL_ERROR_ZERO_RETURN:
                return .closeNotify
            default:
                let text = TLSContext.drainErrors()
                return .failed(handshakeComplete ? .protocolFailed(openSSL: text) : .handshakeFailed(openSSL: text))
            }
        }
    }

    /// Encrypts `bytes` into the write BIO. Only after the handshake.
    func send(_ bytes: ArraySlice<UInt8>) -> TLSError? {
        ERR_clear_error()
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let count = min(bytes.endIndex - offset, Int(Int32.max))
            let written = bytes[offset...].withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(count)) }
            guard written > 0 else { return .protocolFailed(openSSL: TLSContext.drainErrors()) }
            offset += Int(written)
        }
        return nil
    }

    /// Queues close_notify (RFC 8446 §6.1). Only meaningful after the handshake.
    func shutdown() {
        ERR_clear_error()
        if handshakeComplete { _ = SSL_shutdown(ssl) }
        ERR_clear_error()
    }

    /// Takes the pending ciphertext out of the write BIO (empty when there is none).
    func takeOutput() -> [UInt8] {
        let pending = Int(COpenSSL_BIO_pending(writeBIO))
        guard pending > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: pending) { buffer, initialized in
            initialized = Int(max(0, BIO_read(writeBIO, buffer.baseAddress, Int32(pending))))
        }
    }
}
