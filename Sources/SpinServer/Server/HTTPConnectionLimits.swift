import SpinWire

/// The limits of the HTTP request cycle on one connection (`HTTPConnectionStateMachine`).
/// Every default says why; `init(_:)` builds them from the server's config keys.
struct HTTPConnectionLimits: Sendable, Equatable {
    /// Time from accept (including the TLS handshake) to the end of the first request
    /// head, and from the first byte of each later head to its end
    /// (`limits.headerTimeoutSeconds`). 10 s: a real client sends a head in one packet
    /// soon after connecting; this stops slowloris and silent connections that would
    /// hold a slot (a connection that never sends a byte holds it no longer).
    var headTimeout: Duration
    /// Time between a response (once it has left) and the next request on a kept-alive
    /// connection. 15 s (nginx uses 75 s; shorter frees descriptors sooner, browsers
    /// reconnect cheaply).
    var keepAliveTimeout: Duration
    /// Minimum average request body rate in bytes/s once the grace period is over; 0
    /// disables. 240 B/s with a 5 s grace period, as Kestrel: stops slow-body attacks,
    /// never a real upload.
    var minimumBodyRate: Int
    /// See `minimumBodyRate`.
    var bodyRateGracePeriod: Duration
    /// Requests served on one connection; the last is answered with `Connection: close`
    /// (RFC 9112 §9.6). 1000, as nginx's keepalive_requests: bounds per-connection state
    /// growth.
    var maxRequestsPerConnection: Int
    /// Time without a byte in either direction on a stream (WebSocket, SSE). 120 s by
    /// default; from the config, `limits.idleTimeoutSeconds` but at least three ping
    /// intervals, so a stream pinged as configured is never idle.
    var streamIdleTimeout: Duration
    /// Pipelined input buffered behind a request being answered beyond which reading
    /// pauses (the kernel's buffers then push back): one full request's worth, the
    /// largest head plus the largest body.
    var maxBufferedInput: Int
    /// The parser's own limits (head and body sizes).
    var parser: HTTPRequestParser.Limits

    init(
        headTimeout: Duration = .seconds(10),
        keepAliveTimeout: Duration = .seconds(15),
        minimumBodyRate: Int = 240,
        bodyRateGracePeriod: Duration = .seconds(5),
        maxRequestsPerConnection: Int = 1000,
        streamIdleTimeout: Duration = .seconds(120),
        parser: HTTPRequestParser.Limits = .default
    ) {
        self.headTimeout = headTimeout
        self.keepAliveTimeout = keepAliveTimeout
        self.minimumBodyRate = minimumBodyRate
        self.bodyRateGracePeriod = bodyRateGracePeriod
        self.maxRequestsPerConnection = maxRequestsPerConnection
        self.streamIdleTimeout = streamIdleTimeout
        self.parser = parser
        self.maxBufferedInput = parser.maxHeaderBytes + parser.maxBodySize
    }

    /// The limits the config asks for.
    init(_ limits: SpinServerConfiguration.Limits) {
        self.init(
            headTimeout: .seconds(limits.headerTimeoutSeconds),
            streamIdleTimeout: .seconds(max(limits.idleTimeoutSeconds, limits.pingIntervalSeconds * 3)),
            parser: HTTPRequestParser.Limits(maxHeaderBytes: limits.maxHeaderBytes, maxBodySize: limits.maxBodyBytes))
    }
}
