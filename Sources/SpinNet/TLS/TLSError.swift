/// Errors of the TLS layer. Set-up errors (the first five) stop `SocketServer.start()`
/// with a message naming the file; the last two end one connection
/// (`CloseReason.tlsFailed`) and never reach HTTP. `openSSL` holds the OpenSSL error
/// queue as text (`error:0A000086:SSL routines::certificate verify failed`, ...).
package enum TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The certificate file cannot be opened (missing, permissions): errno of open(2).
    case certificateFileUnreadable(path: String, errno: Int32)
    /// The key file cannot be opened: errno of open(2).
    case privateKeyFileUnreadable(path: String, errno: Int32)
    /// The certificate file is not a PEM certificate chain.
    case certificateInvalid(path: String, openSSL: String)
    /// The key file is not an unencrypted PEM private key.
    case privateKeyInvalid(path: String, openSSL: String)
    /// The key does not belong to the certificate.
    case privateKeyMismatch(certificatePath: String, keyPath: String, openSSL: String)
    /// SSL_CTX_new or a setting of it failed (out of memory, bad ALPN list).
    case contextFailed(openSSL: String)
    /// The handshake with one client failed (no shared version or cipher, not TLS).
    case handshakeFailed(openSSL: String)
    /// A record after the handshake failed (bad MAC, unexpected message).
    case protocolFailed(openSSL: String)

    package var description: String {
        switch self {
        case .certificateFileUnreadable(let path, let code):
            return "TLS certificate \(path) cannot be read: \(SocketError.describe(errno: code)) (errno \(code))"
        case .privateKeyFileUnreadable(let path, let code):
            return "TLS private key \(path) cannot be read: \(SocketError.describe(errno: code)) (errno \(code))"
        case .certificateInvalid(let path, let text):
            return "TLS certificate \(path) is not a PEM certificate chain: \(text)"
        case .privateKeyInvalid(let path, let text):
            return "TLS private key \(path) is not an unencrypted PEM private key: \(text)"
        case .privateKeyMismatch(let cert, let key, let text):
            return "TLS private key \(key) does not match certificate \(cert): \(text)"
        case .contextFailed(let text):
            return "TLS context set-up failed: \(text)"
        case .handshakeFailed(let text):
            return "TLS handshake failed: \(text)"
        case .protocolFailed(let text):
            return "TLS record failed: \(text)"
        }
    }
}
