import SpinNet

/// A stream served here drives its connection itself once it opened: the
/// `HTTPConnectionHandler` hands the connection over (`Connection.replaceHandler`) and is
/// released, so an open stream keeps only what a stream needs (its HTTP parser, request
/// state and response writer are a kilobyte that idle streams by the thousand would
/// otherwise keep). What the HTTP cycle did for a stream is here: its bytes go to the
/// stream, the idle deadline the HTTP handler armed ends it (1001 "idle"), the peer's end
/// finishes it, a server shutdown closes it (1001). Called on the connection's event loop.
extension StreamSession: ConnectionHandler {
    /// Never called: the connection is handed over open.
    func didOpen(_ connection: Connection) {}

    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        receive(bytes)
    }

    func didReceiveEnd(on connection: Connection) {
        finish()
        connection.closeAfterFlush()
    }

    func didBecomeWritable(_ connection: Connection) {
        writable()
    }

    func didReachDeadline(on connection: Connection) {
        fail(.goingAway, reason: "idle")
    }

    func didReachAlarm(on connection: Connection) {
        alarm()
    }

    func shutdownRequested(on connection: Connection) {
        shutdown()
    }

    func didClose(_ connection: Connection, reason: CloseReason) {
        connectionClosed()
        context.metrics.connectionClosed()
    }
}
