/// Per-connection limits: output buffering and the byte-level timeouts (write stall,
/// closing linger). Every default says why. Protocol timeouts (a request head, a
/// keep-alive wait, an idle stream) are the handler's: it arms them with
/// `Connection.setDeadline`. The layer above builds one from its config keys; tests
/// shrink them.
package struct ConnectionLimits: Sendable, Hashable {
    /// Bytes read per `recv` (one buffer per event loop, not per connection). 64 KiB
    /// drains a full loopback socket buffer in few calls.
    package var readBufferSize: Int
    /// Pending output above which `write` answers `.aboveHighWatermark`: the producer
    /// should stop until `didBecomeWritable`. 256 KiB: a few TLS records' worth of
    /// responses, small enough that 10 000 connections stay under 2.5 GiB worst case.
    package var highWatermark: Int
    /// Pending output at or below which a producer that was told to stop hears
    /// `didBecomeWritable`. 64 KiB: hysteresis so the callback does not flap.
    package var lowWatermark: Int
    /// Pending output beyond which the connection is closed at once
    /// (`CloseReason.outputLimitExceeded`): the producer ignored the high watermark.
    /// 4 MiB.
    package var maxPendingOutput: Int
    /// Time pending output may sit without any byte leaving before the connection is
    /// closed. 30 s (nginx send_timeout is 60 s).
    package var writeStallTimeout: Duration
    /// Time a closing connection gets to flush, exchange FIN/close_notify and drain the
    /// peer's last bytes (lingering close, so a reset does not destroy the response
    /// the peer has not read yet). 2 s.
    package var lingerTimeout: Duration

    package init(
        readBufferSize: Int = 64 * 1024,
        highWatermark: Int = 256 * 1024,
        lowWatermark: Int = 64 * 1024,
        maxPendingOutput: Int = 4 * 1024 * 1024,
        writeStallTimeout: Duration = .seconds(30),
        lingerTimeout: Duration = .seconds(2)
    ) {
        self.readBufferSize = readBufferSize
        self.highWatermark = highWatermark
        self.lowWatermark = min(lowWatermark, highWatermark)
        self.maxPendingOutput = max(maxPendingOutput, highWatermark)
        self.writeStallTimeout = writeStallTimeout
        self.lingerTimeout = lingerTimeout
    }
}

/// One server's `ConnectionLimits`, which its connections refer to instead of each
/// keeping a copy.
final class SharedConnectionLimits: Sendable {
    let value: ConnectionLimits

    init(_ value: ConnectionLimits) {
        self.value = value
    }
}
