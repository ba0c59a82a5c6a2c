import Histogram
import NIOCore
import NIOPosix

/// One keep-alive HTTP/1.1 client that sends a prebuilt request, waits for its
/// response, and sends the next one: at once (`closedLoop`, as wrk does) or on a fixed
/// schedule (`interval`). Responses are read with a byte scanner (status, head end,
/// `Content-Length`), not a general HTTP parser, so the client stays cheap.
///
/// When the server closes the connection (spin-server answers the 1000th request of a
/// connection with `Connection: close`), the handler reconnects on the same event loop
/// and goes on, as wrk does; its figures survive the reconnection.
final class HTTPLoadHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// When the next request goes out.
    enum Pacing: Sendable {
        /// As soon as the previous response arrived.
        case closedLoop
        /// Every `nanoseconds` (later if the previous response is late).
        case interval(nanoseconds: UInt64)
    }

    /// What the connection measured.
    struct Stats: Sendable {
        var completed = 0
        var failures = 0
        /// Connections the server closed during the run (each reconnected).
        var reconnects = 0
        /// A reconnection failed: the client stopped.
        var closed = false
        var latencies = makeLatencyHistogram()
        /// `(sequence, send time)` pairs, flattened, when sequences are recorded.
        var posted: [UInt64] = []
    }

    private let request: ByteBuffer
    private let host: String
    private let port: Int
    private let pacing: Pacing
    private let recordSequences: Bool
    private var context: ChannelHandlerContext?
    private var pending: ByteBuffer?
    private var running = false
    private var sentAt: UInt64 = 0
    private var nextSendAt: UInt64 = 0
    private var stats = Stats()

    init(request: ByteBuffer, host: String, port: Int, pacing: Pacing, recordSequences: Bool) {
        self.request = request
        self.host = host
        self.port = port
        self.pacing = pacing
        self.recordSequences = recordSequences
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Starts sending, the first request after `delay` nanoseconds (on the channel's event loop).
    func start(after delay: UInt64 = 0) {
        running = true
        nextSendAt = nowNanoseconds() + delay
        if delay == 0 {
            send()
        } else if let context {
            context.eventLoop.assumeIsolated().scheduleTask(deadline: .uptimeNanoseconds(nextSendAt)) {
                self.send()
            }
        }
    }

    /// Stops sending and returns what was measured (on the channel's event loop).
    func stop() -> Stats {
        running = false
        return stats
    }

    /// Closes the current connection (on the channel's event loop).
    func close() {
        running = false
        context?.close(promise: nil)
    }

    private func send() {
        guard running, let context else { return }
        sentAt = nowNanoseconds()
        context.writeAndFlush(wrapOutboundOut(request), promise: nil)
    }

    private func scheduleNext() {
        switch pacing {
        case .closedLoop:
            send()
        case .interval(let nanoseconds):
            nextSendAt += nanoseconds
            let now = nowNanoseconds()
            if nextSendAt <= now {
                nextSendAt = now
                send()
            } else if let context {
                context.eventLoop.assumeIsolated().scheduleTask(deadline: .uptimeNanoseconds(nextSendAt)) {
                    self.send()
                }
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if var buffer = pending {
            buffer.writeBuffer(&incoming)
            pending = nil
            readResponses(from: &buffer)
        } else {
            readResponses(from: &incoming)
        }
    }

    /// Consumes every complete response in `buffer`; keeps the rest for the next read.
    private func readResponses(from buffer: inout ByteBuffer) {
        while true {
            let parsed: (status: Int, length: Int, sequence: UInt64?)? = buffer.withUnsafeReadableBytes { bytes in
                guard let headEnd = Scan.firstIndex(of: "\r\n\r\n", in: bytes), headEnd >= 12 else { return nil }
                let head = UnsafeRawBufferPointer(rebasing: bytes[0..<headEnd])
                let status = Int(head[9] &- 48) * 100 + Int(head[10] &- 48) * 10 + Int(head[11] &- 48)
                let bodyLength = Int(Scan.integer(after: "\ncontent-length:", in: head)
                    ?? Scan.integer(after: "\nContent-Length:", in: head) ?? 0)
                let total = headEnd + 4 + bodyLength
                guard bytes.count >= total else { return nil }
                var sequence: UInt64?
                if recordSequences {
                    sequence = Scan.integer(after: "\"sequence\":", in: UnsafeRawBufferPointer(rebasing: bytes[(headEnd + 4)..<total]))
                }
                return (status, total, sequence)
            }
            guard let parsed else { break }
            buffer.moveReaderIndex(forwardBy: parsed.length)
            guard running else { continue }
            let now = nowNanoseconds()
            stats.completed += 1
            stats.latencies.record(now &- sentAt)
            if !(200..<300).contains(parsed.status) {
                stats.failures += 1
            } else if let sequence = parsed.sequence {
                stats.posted.append(sequence)
                stats.posted.append(sentAt)
            }
            scheduleNext()
        }
        if buffer.readableBytes > 0 {
            pending = buffer
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        context.fireChannelInactive()
        pending = nil
        guard running else { return }
        // The same handler goes on on a new connection from the same event loop.
        stats.reconnects += 1
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(handler.value)
                }
            }
            .connect(host: host, port: port)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success:
                    handler.value.send()
                case .failure:
                    handler.value.stats.closed = true
                    handler.value.running = false
                }
            }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// A request as bytes: `POST path` with a JSON body, keep-alive.
func makePostRequest(host: String, port: Int, path: String, body: String) -> ByteBuffer {
    var text = "POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
    text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
    return ByteBuffer(string: text)
}

/// Opens `count` HTTP clients, each an `HTTPLoadHandler` bound to its event loop.
func connectHTTP(
    group: any EventLoopGroup, host: String, port: Int, count: Int,
    request: ByteBuffer, pacing: HTTPLoadHandler.Pacing, recordSequences: Bool
) async throws -> [NIOLoopBound<HTTPLoadHandler>] {
    var handlers: [NIOLoopBound<HTTPLoadHandler>] = []
    for _ in 0..<count {
        let eventLoop = group.next()
        let handler = try await eventLoop.submit {
            NIOLoopBound(HTTPLoadHandler(request: request, host: host, port: port, pacing: pacing,
                                         recordSequences: recordSequences), eventLoop: eventLoop)
        }.get()
        _ = try await ClientBootstrap(group: eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(handler.value)
                }
            }
            .connect(host: host, port: port).get()
        handlers.append(handler)
    }
    return handlers
}

/// Runs `body` on each handler, on its event loop.
func withHTTPHandlers<T: Sendable>(
    _ handlers: [NIOLoopBound<HTTPLoadHandler>], _ body: @escaping @Sendable (HTTPLoadHandler) -> T
) async throws -> [T] {
    var results: [T] = []
    for handler in handlers {
        results.append(try await handler.eventLoop.submit { body(handler.value) }.get())
    }
    return results
}
