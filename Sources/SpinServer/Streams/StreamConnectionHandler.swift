import SpinNet
import SpinWire

/// Drives a connection once it carries a stream (WebSocket, SSE) served here: after the
/// upgrade the `HTTPConnectionHandler` hands the connection over to this one and is
/// released, so an open stream keeps only what a stream needs (its HTTP parser, request
/// state and response writer are a kilobyte that idle streams by the thousand would
/// otherwise keep). What the HTTP cycle did for a stream is here: its bytes go to the
/// stream, the idle deadline the HTTP handler armed ends it (1001 "idle"), the peer's end
/// finishes it, a server shutdown closes it (1001).
///
/// `@unchecked Sendable`: called only on the connection's event loop.
final class StreamConnectionHandler: ConnectionHandler, @unchecked Sendable {
    private let stream: StreamSession
    private let context: ServerContext

    init(stream: StreamSession, context: ServerContext) {
        self.stream = stream
        self.context = context
    }

    /// Never called: the connection is handed over open.
    func didOpen(_ connection: Connection) {}

    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        stream.receive(bytes)
    }

    func didReceiveEnd(on connection: Connection) {
        stream.finish()
        connection.closeAfterFlush()
    }

    func didBecomeWritable(_ connection: Connection) {
        stream.writable()
    }

    func didReachDeadline(on connection: Connection) {
        stream.fail(.goingAway, reason: "idle")
    }

    func didReachAlarm(on connection: Connection) {
        stream.alarm()
    }

    func shutdownRequested(on connection: Connection) {
        stream.shutdown()
    }

    func didClose(_ connection: Connection, reason: CloseReason) {
        stream.connectionClosed()
        context.metrics.connectionClosed()
    }
}
