/// The closing handshake of RFC 6455 §7 as a state machine returning actions.
///
/// ```
/// open ──close()──────────▶ closeSent ──peer Close──▶ closed
///   └───peer Close (reply)───────────────────────────▶ closed
/// ```
/// The server closes the TCP connection once both Close frames have passed (RFC 6455
/// §7.1.1: "the underlying TCP connection ... SHOULD be closed first by the server"); a
/// client waits for the server to do so (its owner applies a timeout). Failing the
/// connection (RFC 6455 §7.1.7) sends a Close with the error's code, if none was sent
/// yet, and closes the TCP connection at once, in both roles.
package struct WebSocketCloseStateMachine: Hashable, Sendable {
    package enum State: Hashable, Sendable {
        /// Data may flow both ways.
        case open
        /// We sent a Close and wait for the peer's.
        case closeSent
        /// Both Close frames passed, the connection failed, or TCP dropped.
        case closed
    }

    /// What the owner must do.
    package enum Action: Hashable, Sendable {
        /// Send a Close frame with this payload.
        case sendClose(WebSocketClosePayload)
        /// Close the TCP connection.
        case closeConnection
    }

    package let role: WebSocketRole
    package private(set) var state: State = .open

    package init(role: WebSocketRole) { self.role = role }

    /// Whether data frames may still be sent (RFC 6455 §5.5.1: none after our Close).
    package var canSend: Bool { state == .open }

    /// We start the closing handshake.
    package mutating func close(_ payload: WebSocketClosePayload) -> [Action] {
        guard state == .open else { return [] }
        state = .closeSent
        return [.sendClose(payload)]
    }

    /// The peer's (valid) Close frame arrived.
    package mutating func closeReceived(_ payload: WebSocketClosePayload) -> [Action] {
        switch state {
        case .open:
            state = .closed
            // RFC 6455 §5.5.1: reply with a Close, typically echoing the status code.
            let reply = WebSocketClosePayload(code: payload.code)
            return role == .server ? [.sendClose(reply), .closeConnection] : [.sendClose(reply)]
        case .closeSent:
            state = .closed
            return role == .server ? [.closeConnection] : []
        case .closed:
            return []
        }
    }

    /// RFC 6455 §7.1.7: fail the connection because of `error`.
    package mutating func fail(_ error: WebSocketError) -> [Action] {
        switch state {
        case .open:
            state = .closed
            return [.sendClose(WebSocketClosePayload(code: error.closeCode)), .closeConnection]
        case .closeSent:
            state = .closed
            return [.closeConnection]
        case .closed:
            return []
        }
    }

    /// The TCP connection is gone (RFC 6455 §7.1.4); nothing more to do.
    package mutating func connectionClosed() {
        state = .closed
    }
}
