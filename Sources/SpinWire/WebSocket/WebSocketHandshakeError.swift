/// Why an HTTP request is not an acceptable WebSocket upgrade (RFC 6455 §4.2.1). Each case
/// maps to one HTTP status; the request is answered with it and not upgraded.
package enum WebSocketHandshakeError: Error, Hashable, Sendable {
    /// RFC 6455 §4.2.1 (1): the method MUST be GET.
    case methodNotGet
    /// RFC 6455 §4.2.1 (1): HTTP/1.1 or higher.
    case httpVersionTooLow
    /// RFC 6455 §4.2.1 (3): an `Upgrade` header containing the token "websocket".
    case missingUpgradeWebSocket
    /// RFC 6455 §4.2.1 (4): a `Connection` header containing the token "Upgrade".
    case missingConnectionUpgrade
    /// RFC 6455 §4.2.1 (5): `Sec-WebSocket-Key` missing, repeated, or not base64 of 16 bytes.
    case invalidKey
    /// RFC 6455 §4.2.1 (6), §4.4: `Sec-WebSocket-Version` missing or not 13.
    case unsupportedVersion

    /// The HTTP status of the refusal: 426 Upgrade Required for the version (RFC 6455
    /// §4.4), 400 Bad Request otherwise (RFC 6455 §4.2.1: "the server MUST stop processing
    /// the client's handshake and return an HTTP response with an appropriate error code
    /// (such as 400 Bad Request)").
    package var httpStatus: Int {
        switch self {
        case .unsupportedVersion: 426
        case .methodNotGet, .httpVersionTooLow, .missingUpgradeWebSocket,
             .missingConnectionUpgrade, .invalidKey: 400
        }
    }

    /// Headers the refusal must carry: RFC 6455 §4.4 — a 426 lists the versions the server
    /// supports in `Sec-WebSocket-Version`.
    package var responseHeaders: HTTPHeaders {
        switch self {
        case .unsupportedVersion: ["Sec-WebSocket-Version": "13"]
        default: [:]
        }
    }
}
