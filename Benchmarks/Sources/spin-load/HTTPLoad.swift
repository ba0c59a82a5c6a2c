import Histogram
import NIOCore
import NIOPosix

/// One keep-alive HTTP/1.1 connection that sends a prebuilt request, waits for its
/// response, and sends the next one: at once (`closedLoop`, as wrk does) or on a fixed
/// schedule (`interval`). Responses are read with a byte scanner (status, head end,
/// `Content-Length`), not a general HTTP parser, so the client stays cheap.
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
        var closed = false
        var latencies = makeLatencyHistogram()
        /// `(sequence, send time)` pairs, flattened, when sequences are recorded.
        var posted: [UInt64] = []
    }

    private let request: ByteBuffer
    private let pacing: Pacing
    private let recordSequences: Bool
    private var context: ChannelHandlerContext?
    private var pending: ByteBuffer?
    private var running = false
    private var sentAt: UInt64 = 0
    private var nextSendAt: UInt64 = 0
    private var stats = Stats()

    init(request: ByteBuffer, pacing: Pacing, recordSequences: Bool) {
        self.request = request
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
        if running { stats.closed = true }
        running = false
        context.fireChannelInactive()
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

/// Opens `count` HTTP connections, each with an `HTTPLoadHandler`.
func connectHTTP(
    group: any EventLoopGroup, host: String, port: Int, count: Int,
    request: ByteBuffer, pacing: HTTPLoadHandler.Pacing, recordSequences: Bool
) async throws -> [any Channel] {
    let bootstrap = ClientBootstrap(group: group)
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .connectTimeout(.seconds(10))
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    HTTPLoadHandler(request: request, pacing: pacing, recordSequences: recordSequences))
            }
        }
    var channels: [any Channel] = []
    for _ in 0..<count {
        channels.append(try await bootstrap.connect(host: host, port: port).get())
    }
    return channels
}

/// Runs `body` on the `HTTPLoadHandler` of each channel, on its event loop.
func withHTTPHandlers<T: Sendable>(_ channels: [any Channel], _ body: @escaping @Sendable (HTTPLoadHandler) -> T) async throws -> [T] {
    var results: [T] = []
    for channel in channels {
        results.append(try await channel.eventLoop.submit {
            body(try channel.pipeline.syncOperations.handler(type: HTTPLoadHandler.self))
        }.get())
    }
    return results
}
