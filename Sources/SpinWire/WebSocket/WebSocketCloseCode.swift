/// A WebSocket close status code (RFC 6455 §7.4, IANA "WebSocket Close Code Number Registry").
///
/// A struct rather than an enum because any code in 3000-4999 is legal on the wire and
/// must round-trip unchanged.
package struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package var rawValue: UInt16

    package init(rawValue: UInt16) { self.rawValue = rawValue }
    package init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// 4001 (the private range, RFC 6455 §7.4.2): the credentials the stream was opened
    /// with expired and the client did not refresh them; connect again with new ones.
    package static let credentialsExpired = WebSocketCloseCode(4001)
    /// 4004 (the private range): the stream's Spin was deleted (`DELETE /v1/spins/{name}`).
    package static let spinDeleted = WebSocketCloseCode(4004)
    /// 1000: the purpose of the connection is fulfilled.
    package static let normalClosure = WebSocketCloseCode(1000)
    /// 1001: the server goes down or a browser navigates away.
    package static let goingAway = WebSocketCloseCode(1001)
    /// 1002: the peer broke the protocol.
    package static let protocolError = WebSocketCloseCode(1002)
    /// 1003: a data type the endpoint cannot accept (e.g. binary where only text is understood).
    package static let unsupportedData = WebSocketCloseCode(1003)
    /// 1005: reserved, never on the wire: "the close frame had no status code".
    package static let noStatusReceived = WebSocketCloseCode(1005)
    /// 1006: reserved, never on the wire: "the connection dropped without a close frame".
    package static let abnormalClosure = WebSocketCloseCode(1006)
    /// 1007: message data inconsistent with its type (invalid UTF-8 in a text message).
    package static let invalidFramePayloadData = WebSocketCloseCode(1007)
    /// 1008: a generic policy violation.
    package static let policyViolation = WebSocketCloseCode(1008)
    /// 1009: a frame or message larger than this endpoint accepts.
    package static let messageTooBig = WebSocketCloseCode(1009)
    /// 1010: (client) the server did not negotiate a required extension.
    package static let mandatoryExtension = WebSocketCloseCode(1010)
    /// 1011: the server met an unexpected condition.
    package static let internalServerError = WebSocketCloseCode(1011)
    /// 1012: the service is restarting (IANA registry).
    package static let serviceRestart = WebSocketCloseCode(1012)
    /// 1013: try again later (IANA registry).
    package static let tryAgainLater = WebSocketCloseCode(1013)
    /// 1014: bad gateway (IANA registry).
    package static let badGateway = WebSocketCloseCode(1014)
    /// 1015: reserved, never on the wire: "the TLS handshake failed".
    package static let tlsHandshake = WebSocketCloseCode(1015)

    /// Whether this code may appear in a Close frame on the wire.
    ///
    /// RFC 6455 §7.4.1/§7.4.2: 1004 is reserved; 1005, 1006 and 1015 "MUST NOT be set as a
    /// status code in a Close control frame"; 0-999 are unused; 1016-2999 are reserved for
    /// future RFCs; 3000-3999 are IANA-registered for libraries and 4000-4999 private use;
    /// 5000+ is not defined. 1012-1014 are registered with IANA and accepted (as browsers and
    /// Autobahn|Testsuite expect).
    package var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014: true
        case 3000...4999: true
        default: false
        }
    }

    package var description: String { String(rawValue) }
}
