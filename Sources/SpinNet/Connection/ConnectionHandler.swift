/// Why a connection closed. Given once, in `ConnectionHandler.didClose(_:reason:)`.
/// Nothing can be written any more at that point; what the HTTP layer may send
/// before is said on each case.
package enum CloseReason: Sendable, Hashable {
    /// `close()` was called, or `closeAfterFlush()` finished.
    case closedLocally
    /// The peer closed (FIN, or TLS close_notify) and we had nothing left to do.
    case peerClosed
    /// ECONNRESET / EPIPE / ETIMEDOUT: the peer vanished. No response possible
    /// (WebSocket 1006, never sent on the wire).
    case reset(errno: Int32)
    /// A timeout: the handler's deadline (it heard `didReachDeadline` first and could
    /// write a last word: an HTTP 408, a WebSocket 1001), a write stall or the linger.
    case timedOut(TimeoutKind)
    /// The producer wrote past `maxPendingOutput`: closed at once (a WebSocket layer
    /// maps its own earlier refusal to 1008/1009; on the wire this is an abrupt close).
    case outputLimitExceeded
    /// The TLS handshake or a record failed (bad client, wrong protocol, plain HTTP on
    /// a TLS port). No HTTP response is possible.
    case tlsFailed(TLSError)
    /// An unexpected errno on recv/send.
    case ioFailed(SocketError)
    /// Force-closed at the graceful-shutdown deadline (after `shutdownRequested`,
    /// where the HTTP layer could answer `Connection: close` / WebSocket 1001).
    case serverShutdown
}

/// The result of `Connection.write`.
package enum WriteResult: Sendable, Hashable {
    /// Queued; keep writing.
    case accepted
    /// Queued, but pending output is above the high watermark: stop producing until
    /// `didBecomeWritable`. Writing on anyway closes the connection at
    /// `maxPendingOutput`.
    case aboveHighWatermark
    /// Not queued: the connection is closed, closing, or its write side is shut.
    case closed
}

/// What the layer above (HTTP, WebSocket) implements to drive one connection.
///
/// SpinNet reports byte-level facts (bytes received, the peer's end, output drained
/// below the low watermark, the handler's deadline reached, shutdown) and knows nothing
/// of the protocol: the handler keeps its own cycle (requests, keep-alive, streams) and
/// arms its timeouts with `connection.setDeadline(_:)`: at an instant, after inactivity,
/// or after the output drained. A connection whose handler arms nothing has only the
/// write-stall and linger limits. When the deadline passes, `didReachDeadline` may write
/// a last word, then the connection closes (lingering only if something is to be
/// delivered).
///
/// Every method is called on the connection's event loop, never concurrently, in
/// this order: `didOpen` once; then any number of `didReceive`, `didBecomeWritable`,
/// `didReceiveEnd` (at most once), `didReachDeadline`, `didReachAlarm`, `shutdownRequested`; `didClose` once,
/// last. A handler may call any `Connection` method from inside a callback; calls
/// never re-enter the handler synchronously except `write`'s return value.
package protocol ConnectionHandler: AnyObject {
    /// The connection is registered and its sources armed. A TLS handshake may still be
    /// in progress: bytes written now are sent once it completes.
    func didOpen(_ connection: Connection)
    /// Application bytes arrived (plaintext after TLS). The array is the handler's.
    func didReceive(_ bytes: [UInt8], on connection: Connection)
    /// The peer shut its write side (FIN or TLS close_notify): no more bytes will come.
    /// Writing is still allowed (half-close). Default: `closeAfterFlush()`.
    func didReceiveEnd(on connection: Connection)
    /// Pending output fell to the low watermark after a write answered
    /// `.aboveHighWatermark`.
    func didBecomeWritable(_ connection: Connection)
    /// The deadline armed with `setDeadline` passed. The connection then closes after
    /// flushing what is queued, so a last word written here (408) still goes out.
    /// Default: nothing.
    func didReachDeadline(on connection: Connection)
    /// The alarm armed with `setAlarm` went off. Nothing closes; the handler may arm it
    /// again. Default: nothing.
    func didReachAlarm(on connection: Connection)
    /// The server is shutting down gracefully: finish the exchange in progress and
    /// close (HTTP: answer with `Connection: close`; WebSocket: close 1001). Default:
    /// `closeAfterFlush()`. Connections still open at the deadline are force-closed.
    func shutdownRequested(on connection: Connection)
    /// The connection is closed and its descriptor released; last callback.
    func didClose(_ connection: Connection, reason: CloseReason)
}

extension ConnectionHandler {
    package func didOpen(_ connection: Connection) {}
    package func didReceiveEnd(on connection: Connection) { connection.closeAfterFlush() }
    package func didBecomeWritable(_ connection: Connection) {}
    package func didReachDeadline(on connection: Connection) {}
    package func didReachAlarm(on connection: Connection) {}
    package func shutdownRequested(on connection: Connection) { connection.closeAfterFlush() }
    package func didClose(_ connection: Connection, reason: CloseReason) {}
}
