import Histogram
import NIOCore
import NIOPosix

/// One keep-alive HTTP/1.1 client that sends a prebuilt request, waits for its
/// response, and sends the next one: at once (`closedLoop`, as wrk does) or on a fixed
/// schedule (`interval`). Responses are read with a byte scanner (status, head end,
/// `Content-Length`), not a general HTTP parser, so the client stays cheap.
///
/// On a schedule the client is open loop, corrected for coordinated omission (as wrk2
/// is): request k is due at `start + k × interval` whatever happened before, a late
/// answer does not move the schedule (the next request, already due, goes out at once),
/// and every latency counts from the request's due time, not from when the client could
/// send it. So a server that stalls for 100 ms is charged for every request that fell
/// due during the stall, not for the one that waited.
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
        /// Request k is due `k × nanoseconds` after the start; its latency counts from
        /// then even when the previous response came too late to send it on time.
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
        /// Requests that fell due (on a schedule) but had no answer when the run stopped,
        /// the one in flight included: not in `latencies`, whose tail they would lengthen.
        var unanswered = 0
        /// `(sequence, due time)` pairs, flattened, when sequences are recorded.
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
    /// When the request in flight was due: its send time in a closed loop, its place in
    /// the schedule on one.
    private var dueAt: UInt64 = 0
    /// When the next request is due (on a schedule; it only moves forward by the interval).
    private var nextSendAt: UInt64 = 0
    /// A request is in flight (sent, not yet answered).
    private var awaiting = false
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
        sendWhenDue()
    }

    /// Stops sending and returns what was measured (on the channel's event loop).
    func stop() -> Stats {
        running = false
        if case .interval(let nanoseconds) = pacing {
            let now = nowNanoseconds()
            // The request in flight is the one due at `nextSendAt` (it moves on at the answer).
            stats.unanswered = nextSendAt <= now ? Int((now - nextSendAt) / max(nanoseconds, 1)) + 1 : 0
        }
        return stats
    }

    /// Closes the current connection (on the channel's event loop).
    func close() {
        running = false
        context?.close(promise: nil)
    }

    private func send() {
        guard running, !awaiting, let context else { return }
        let now = nowNanoseconds()
        if case .closedLoop = pacing { nextSendAt = now }
        dueAt = nextSendAt
        awaiting = true
        context.writeAndFlush(wrapOutboundOut(request), promise: nil)
    }

    /// Sends the next request now if it is due (or in a closed loop), else at its due time.
    private func sendWhenDue() {
        guard case .interval = pacing, nextSendAt > nowNanoseconds(), let context else {
            send()
            return
        }
        // A timer set before a reconnection may fire as well: only the one for the
        // request still due sends it.
        let due = nextSendAt
        context.eventLoop.assumeIsolated().scheduleTask(deadline: .uptimeNanoseconds(due)) {
            if self.nextSendAt == due { self.send() }
        }
    }

    private func scheduleNext() {
        if case .interval(let nanoseconds) = pacing {
            nextSendAt += nanoseconds
        }
        sendWhenDue()
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
            awaiting = false
            guard running else { continue }
            let now = nowNanoseconds()
            stats.completed += 1
            stats.latencies.record(now &- dueAt)
            if !(200..<300).contains(parsed.status) {
                stats.failures += 1
            } else if let sequence = parsed.sequence {
                stats.posted.append(sequence)
                stats.posted.append(dueAt)
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
        // A request sent on the closed connection is sent again on the next one, still
        // counted from its due time.
        awaiting = false
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
                    handler.value.sendWhenDue()
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
