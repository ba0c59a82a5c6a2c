/// Per-connection limits: output buffering and timeouts. Every default says why.
/// The HTTP layer builds one from its own config keys; tests shrink them.
package struct ConnectionLimits: Sendable, Hashable {
    /// Bytes read per `recv` (one buffer per event queue, not per connection). 64 KiB
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
    /// Time between a response and the next request on a kept-alive connection. 15 s
    /// (nginx uses 75 s; shorter frees descriptors sooner, browsers reconnect cheaply).
    package var keepAliveTimeout: Duration
    /// Time from accept (including the TLS handshake) to the end of the first request
    /// head, and from the first byte of each later head to its end. 10 s: a real
    /// client sends a head in one packet soon after connecting; this stops slowloris
    /// and silent connections that would hold a slot.
    package var requestHeadTimeout: Duration
    /// Minimum average request body rate in bytes/s once the grace period is over; 0
    /// disables. 240 B/s with a 5 s grace period, as Kestrel: stops slow-body attacks,
    /// never a real upload.
    package var minimumBodyRate: Int
    /// See `minimumBodyRate`.
    package var bodyRateGracePeriod: Duration
    /// Requests served on one connection before the HTTP layer is told to close it.
    /// 1000, as nginx's keepalive_requests: bounds per-connection state growth.
    package var maxRequestsPerConnection: Int
    /// Time pending output may sit without any byte leaving before the connection is
    /// closed. 30 s (nginx send_timeout is 60 s).
    package var writeStallTimeout: Duration
    /// Time without traffic in either direction in streaming mode. 120 s: a WebSocket
    /// layer pinging every 30 s keeps a healthy stream well inside it.
    package var streamIdleTimeout: Duration
    /// Time a closing connection gets to flush, exchange FIN/close_notify and drain the
    /// peer's last bytes (lingering close, so a reset does not destroy the response
    /// the peer has not read yet). 2 s.
    package var lingerTimeout: Duration

    package init(
        readBufferSize: Int = 64 * 1024,
        highWatermark: Int = 256 * 1024,
        lowWatermark: Int = 64 * 1024,
        maxPendingOutput: Int = 4 * 1024 * 1024,
        keepAliveTimeout: Duration = .seconds(15),
        requestHeadTimeout: Duration = .seconds(10),
        minimumBodyRate: Int = 240,
        bodyRateGracePeriod: Duration = .seconds(5),
        maxRequestsPerConnection: Int = 1000,
        writeStallTimeout: Duration = .seconds(30),
        streamIdleTimeout: Duration = .seconds(120),
        lingerTimeout: Duration = .seconds(2)
    ) {
        self.readBufferSize = readBufferSize
        self.highWatermark = highWatermark
        self.lowWatermark = min(lowWatermark, highWatermark)
        self.maxPendingOutput = max(maxPendingOutput, highWatermark)
        self.keepAliveTimeout = keepAliveTimeout
        self.requestHeadTimeout = requestHeadTimeout
        self.minimumBodyRate = minimumBodyRate
        self.bodyRateGracePeriod = bodyRateGracePeriod
        self.maxRequestsPerConnection = maxRequestsPerConnection
        self.writeStallTimeout = writeStallTimeout
        self.streamIdleTimeout = streamIdleTimeout
        self.lingerTimeout = lingerTimeout
    }
}
