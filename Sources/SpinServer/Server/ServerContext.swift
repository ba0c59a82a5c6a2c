import Logging
import SpinWire

/// What every connection of a `LoopServer` shares: immutable configuration and the
/// thread-safe router and metrics.
final class ServerContext: Sendable {
    let configuration: SpinServerConfiguration
    let router: APIRouter
    let metrics: Metrics
    let logger: Logger
    let parserLimits: HTTPRequestParser.Limits
    let webSocketLimits: WebSocketLimits
    let origins: OriginPolicy

    init(configuration: SpinServerConfiguration, router: APIRouter, logger: Logger) {
        self.configuration = configuration
        self.router = router
        self.metrics = router.metrics
        self.logger = logger
        let limits = configuration.limits
        parserLimits = HTTPRequestParser.Limits(maxHeaderBytes: limits.maxHeaderBytes, maxBodySize: limits.maxBodyBytes)
        webSocketLimits = WebSocketLimits(maxFrameSize: limits.maxWebSocketMessageBytes,
                                          maxMessageSize: limits.maxWebSocketMessageBytes,
                                          maxDecompressedMessageSize: limits.maxWebSocketMessageBytes)
        origins = OriginPolicy(allowed: configuration.allowedOrigins)
    }
}
