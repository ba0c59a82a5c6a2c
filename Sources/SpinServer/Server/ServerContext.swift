import Logging
import SpinWire
import Tracing

/// What every connection of a `LoopServer` shares: immutable configuration and the
/// thread-safe router and metrics.
final class ServerContext: Sendable {
    let configuration: SpinServerConfiguration
    let router: APIRouter
    let metrics: Metrics
    let logger: Logger
    /// The request cycle's limits, for every connection's `HTTPConnectionStateMachine`.
    let httpLimits: HTTPConnectionLimits
    let webSocketLimits: WebSocketLimits
    /// The tracer requests are traced with; nil when the process bootstrapped none (the
    /// no-op tracer), checked once here so that untraced requests make no span at all.
    let tracer: (any Tracer)?

    init(configuration: SpinServerConfiguration, router: APIRouter, logger: Logger,
         tracer: any Tracer = InstrumentationSystem.tracer) {
        self.configuration = configuration
        self.router = router
        self.metrics = router.metrics
        self.logger = logger
        let limits = configuration.limits
        httpLimits = HTTPConnectionLimits(limits)
        webSocketLimits = WebSocketLimits(limits)
        self.tracer = tracer is NoOpTracer ? nil : tracer
    }
}

extension WebSocketLimits {
    /// A stream's WebSocket limits from the server's: every size is
    /// `maxWebSocketMessageBytes`. Fragments follow the message size: 256-byte fragments
    /// on average (4096 at the 1 MiB default), so a raised limit does not refuse a large
    /// message sent in small fragments (Autobahn 9.3.1: 4 MiB in 65537 frames of 64 bytes,
    /// the last empty).
    init(_ limits: SpinServerConfiguration.Limits) {
        self.init(maxFrameSize: limits.maxWebSocketMessageBytes,
                  maxMessageSize: limits.maxWebSocketMessageBytes,
                  maxFragmentCount: max(4096, limits.maxWebSocketMessageBytes / 256),
                  maxDecompressedMessageSize: limits.maxWebSocketMessageBytes)
    }
}
