import Histogram
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// One WebSocket connection to a Spin's stream, on SwiftNIO's WebSocket codec
/// (`NIOWebSocketClientUpgrader`, `WebSocketFrameDecoder`/`Encoder`), not spin-server's.
///
/// It reads the messages by scanning for `"type":"..."` and `"sequence":N` (both
/// spin-server and the peer send them), and plays one of two roles:
/// - a subscriber notes the first snapshot's sequence, counts the state messages (and
///   stamps their receipt when asked), and counts later snapshots (spin-server sends one
///   when a slow client's queue is conflated);
/// - an event sender sends `{"type":"event","id":..,"event":{"type":"increase"}}`, keeps
///   `inFlight` of them unacknowledged (sending the next one on each ack), and records
///   each send-to-ack latency (acks come in the order of the events: one stream's events
///   go to one Spin, which applies them in order).
final class WebSocketLoadHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// What the connection does once the snapshot arrived.
    enum Role: Sendable {
        case subscriber(recordReceipts: Bool)
        case eventSender(message: ByteBuffer, inFlight: Int = 1)
    }

    /// What the connection measured.
    struct Stats: Sendable {
        var snapshotSequence: UInt64?
        var laterSnapshots = 0
        var stateMessages = 0
        var lastSequence: UInt64 = 0
        /// `(sequence, receipt time)` pairs, flattened, when receipts are recorded.
        var receipts: [UInt64] = []
        var acks = 0
        var errors = 0
        var closed = false
        var latencies = makeLatencyHistogram()
    }

    private let role: Role
    private let ready: EventLoopPromise<Void>
    private var context: ChannelHandlerContext?
    private var fragments: ByteBuffer?
    private var running = false
    /// Send times of the events not yet acknowledged, oldest first.
    private var sentAt = CircularBuffer<UInt64>()
    private var stats = Stats()

    /// - Parameter ready: succeeded when the snapshot arrived, failed if the connection closes first.
    init(role: Role, ready: EventLoopPromise<Void>) {
        self.role = role
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Starts sending events (event senders only; on the channel's event loop).
    func start() {
        running = true
        guard case .eventSender(_, let inFlight) = role else { return }
        for _ in 0..<max(inFlight, 1) { sendEvent(flush: false) }
        context?.flush()
    }

    /// Stops sending and returns what was measured (on the channel's event loop).
    func stop() -> Stats {
        running = false
        return stats
    }

    /// What was measured so far (on the channel's event loop).
    var current: Stats { stats }

    private func sendEvent(flush: Bool = true) {
        guard running, case .eventSender(let message, _) = role, let context else { return }
        sentAt.append(nowNanoseconds())
        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: message)
        context.write(wrapOutboundOut(frame), promise: nil)
        if flush { context.flush() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .continuation:
            if frame.fin, fragments == nil {
                handleMessage(frame.unmaskedData)
            } else {
                var data = frame.unmaskedData
                if fragments == nil { fragments = context.channel.allocator.buffer(capacity: data.readableBytes * 2) }
                fragments!.writeBuffer(&data)
                if frame.fin, let message = fragments {
                    fragments = nil
                    handleMessage(message)
                }
            }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            stats.closed = running || stats.snapshotSequence != nil
            context.close(promise: nil)
        default:
            break
        }
    }

    private func handleMessage(_ message: ByteBuffer) {
        enum Kind { case state, snapshot, ack, error, other }
        let (kind, sequence): (Kind, UInt64?) = message.withUnsafeReadableBytes { bytes in
            let sequence = Scan.integer(after: "\"sequence\":", in: bytes)
            if Scan.contains("\"type\":\"state\"", in: bytes) { return (.state, sequence) }
            if Scan.contains("\"type\":\"ack\"", in: bytes) { return (.ack, sequence) }
            if Scan.contains("\"type\":\"snapshot\"", in: bytes) { return (.snapshot, sequence) }
            if Scan.contains("\"type\":\"error\"", in: bytes) { return (.error, sequence) }
            return (.other, sequence)
        }
        switch kind {
        case .state:
            stats.stateMessages += 1
            if let sequence {
                stats.lastSequence = sequence
                if case .subscriber(recordReceipts: true) = role {
                    stats.receipts.append(sequence)
                    stats.receipts.append(nowNanoseconds())
                }
            }
        case .snapshot:
            if stats.snapshotSequence == nil {
                stats.snapshotSequence = sequence ?? 0
                stats.lastSequence = sequence ?? 0
                ready.succeed()
            } else {
                stats.laterSnapshots += 1
                if let sequence { stats.lastSequence = sequence }
            }
        case .ack, .error:
            guard running else { return }
            let sent = sentAt.popFirst()
            if kind == .ack {
                stats.acks += 1
                if let sent { stats.latencies.record(nowNanoseconds() &- sent) }
            } else {
                stats.errors += 1
            }
            sendEvent()
        case .other:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if running { stats.closed = true }
        running = false
        ready.fail(LoadError(description: "the stream closed before its snapshot"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.close(promise: nil)
    }
}

/// Sends the upgrade request (the upgrader adds the WebSocket headers) and reports a
/// refused upgrade.
private final class UpgradeRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let host: String
    private let path: String
    private let ready: EventLoopPromise<Void>

    init(host: String, path: String, ready: EventLoopPromise<Void>) {
        self.host = host
        self.path = path
        self.ready = ready
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Only a refused upgrade's response gets here.
        if case .head(let head) = unwrapInboundIn(data) {
            ready.fail(LoadError(description: "the upgrade was refused: \(head.status.code)"))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.close(promise: nil)
    }
}

/// Opens one WebSocket stream and waits for its snapshot (at most `timeout`).
func connectWebSocket(
    group: any EventLoopGroup, host: String, port: Int, path: String,
    role: WebSocketLoadHandler.Role, timeout: TimeAmount = .seconds(30)
) async throws -> any Channel {
    let eventLoop = group.next()
    let ready = eventLoop.makePromise(of: Void.self)
    let bootstrap = ClientBootstrap(group: eventLoop)
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .connectTimeout(.seconds(10))
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let requestHandler = UpgradeRequestHandler(host: "\(host):\(port)", path: path, ready: ready)
                let loadHandler = NIOLoopBound(WebSocketLoadHandler(role: role, ready: ready), eventLoop: channel.eventLoop)
                let boundRequestHandler = NIOLoopBound(requestHandler, eventLoop: channel.eventLoop)
                let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: 1 << 20) { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(loadHandler.value)
                    }
                }
                // The snapshot may arrive in the same read as the 101: forward those bytes.
                try channel.pipeline.syncOperations.addHTTPClientHandlers(
                    leftOverBytesStrategy: .forwardBytes,
                    withClientUpgrade: (upgraders: [upgrader], completionHandler: { context in
                        context.pipeline.syncOperations.removeHandler(boundRequestHandler.value, promise: nil)
                    }))
                try channel.pipeline.syncOperations.addHandler(requestHandler)
            }
        }
    let channel = try await bootstrap.connect(host: host, port: port).get()
    let timer = eventLoop.scheduleTask(in: timeout) {
        ready.fail(LoadError(description: "no snapshot within \(timeout.nanoseconds / 1_000_000_000) s"))
    }
    do {
        try await ready.futureResult.get()
        timer.cancel()
    } catch {
        timer.cancel()
        channel.close(promise: nil)
        throw error
    }
    return channel
}

/// Opens `count` streams, at most `concurrency` connecting at a time; stream `index` goes
/// to `path(index)`.
func connectWebSockets(
    count: Int, concurrency: Int = 128, group: any EventLoopGroup, host: String, port: Int,
    path: @escaping @Sendable (Int) -> String, role: @escaping @Sendable (Int) -> WebSocketLoadHandler.Role
) async throws -> [any Channel] {
    try await withThrowingTaskGroup(of: (any Channel).self) { tasks in
        var channels: [any Channel] = []
        channels.reserveCapacity(count)
        for index in 0..<count {
            if index >= concurrency, let channel = try await tasks.next() {
                channels.append(channel)
            }
            tasks.addTask {
                try await connectWebSocket(group: group, host: host, port: port, path: path(index), role: role(index))
            }
        }
        for try await channel in tasks {
            channels.append(channel)
        }
        return channels
    }
}

/// Runs `body` on the `WebSocketLoadHandler` of each channel, on its event loop.
func withWebSocketHandlers<T: Sendable>(
    _ channels: [any Channel], _ body: @escaping @Sendable (WebSocketLoadHandler) -> T
) async throws -> [T] {
    var results: [T?] = []
    results.reserveCapacity(channels.count)
    for channel in channels {
        results.append(try await channel.eventLoop.submit {
            // A channel that closed has lost its handler: it is skipped (and counted by the caller).
            (try? channel.pipeline.syncOperations.handler(type: WebSocketLoadHandler.self)).map(body)
        }.get())
    }
    return results.compactMap { $0 }
}

/// Closes `channels` and waits for them to close.
func closeAll(_ channels: [any Channel]) async {
    for channel in channels {
        channel.close(promise: nil)
    }
    for channel in channels {
        try? await channel.closeFuture.get()
    }
}
