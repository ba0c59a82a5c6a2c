import Dispatch
import Logging
import SpinCore
import SpinNet
import SpinWire

/// What a stream carries.
package enum StreamSource: Sendable {
    /// A Spin's durable states from its feed: a snapshot (or, resuming, the messages
    /// after the client's sequence), then one message per durable event; the client may
    /// send events (with the `write` scope).
    case state(any HostedSpin, SpinFeed, resume: StreamResume?, clientMayWrite: Bool)
    /// Every event crossing a Gear.
    case gear(any HostedGear)
    /// Every message the client sends, sent back: text as text, binary as binary
    /// (`testing.echoEndpoint`, for WebSocket conformance suites).
    case echo

    var isEcho: Bool {
        if case .echo = self { return true }
        return false
    }

    /// Whether the route streams over server-sent events too (the echo needs a client
    /// that sends, so it is WebSocket only).
    var offersSSE: Bool { !isEcho }
}

/// One open stream (WebSocket or SSE) on one connection: subscribes to its source,
/// writes messages with backpressure, conflates what a slow client cannot take, answers
/// client events and pings.
///
/// `@unchecked Sendable`: every mutable property is only touched on the connection's
/// queue; callbacks from Spins and Gears hop there with `connection.execute`.
final class StreamSession: @unchecked Sendable {
    enum Transport {
        case webSocket(WebSocketSession)
        case sse(HTTPBodyEncoder)
    }

    private let connection: Connection
    private let source: StreamSource
    private let context: ServerContext
    /// The WebSocket session (nil for SSE), always changed in place (`webSocket?.…`): a
    /// copy taken out of an enum shares the session's buffers, so every change copied
    /// them whole, once per frame of a message arriving in fragments (Autobahn 9.3.1: a
    /// 4 MiB message in 65 537 frames took 21 s).
    private var webSocket: WebSocketSession?
    /// The SSE body encoder (nil for a WebSocket).
    private let sse: HTTPBodyEncoder?
    private var outbox: StreamOutbox
    /// A write answered `.aboveHighWatermark`: queue in the outbox until writable.
    private var blocked = false
    /// A state stream sends nothing before its snapshot (or resumed history); acks or
    /// errors for early client messages wait in the outbox.
    private var awaitingSnapshot: Bool
    /// A resumed stream's history still to send, oldest first, from `replayIndex`; live
    /// messages wait in the outbox behind it.
    private var replay: [HostedTransition] = []
    private var replayIndex = 0
    private var subscription: SpinSubscription?
    private var pingTimer: DispatchSourceTimer?
    private var finished = false
    let kind: String

    init(connection: Connection, source: StreamSource, transport: Transport, context: ServerContext) {
        self.connection = connection
        self.source = source
        switch transport {
        case .webSocket(let session): (webSocket, sse) = (session, nil)
        case .sse(let encoder): (webSocket, sse) = (nil, encoder)
        }
        self.context = context
        self.outbox = StreamOutbox(limit: context.configuration.limits.streamQueue)
        if case .state = source { awaitingSnapshot = true } else { awaitingSnapshot = false }
        switch (source, transport) {
        case (.gear, _): kind = "gear"
        case (.echo, _): kind = "echo"
        case (_, .webSocket): kind = "websocket"
        case (_, .sse): kind = "sse"
        }
    }

    /// Subscribes and starts pinging. On the connection's queue.
    func start() {
        context.metrics.streamOpened(kind: kind)
        let connection = self.connection
        switch source {
        case .state(_, let feed, let resume, _):
            // The feed calls both under its lock. We are on the connection's queue now, where
            // `execute` would run `begin` at once, writing the replay under the feed's lock:
            // an explicit hop instead, queued before any live transition.
            let queue = connection.queue
            subscription = feed.subscribe(since: resume?.since, epoch: resume?.epoch, start: { [self] start, epoch in
                queue.async { self.begin(start, epoch: epoch) }
            }, live: { [self] transition, message in
                connection.execute { self.deliver(transition, message: message) }
            })
        case .gear(let gear):
            subscription = gear.observe { [self] traffic in
                connection.execute { self.deliverControl(StreamMessage.gear(traffic).bytes) }
            }
        case .echo:
            break
        }
        let interval = context.configuration.limits.pingIntervalSeconds
        let timer = DispatchSource.makeTimerSource(queue: connection.queue)
        timer.schedule(deadline: .now() + .seconds(interval), repeating: .seconds(interval))
        timer.setEventHandler { [weak self] in self?.ping() }
        timer.resume()
        pingTimer = timer
    }

    // MARK: Outgoing

    /// Whether a message must wait in the outbox instead of being written now.
    private var mustQueue: Bool { awaitingSnapshot || blocked || replayIndex < replay.count || !outbox.isEmpty }

    private func deliver(_ transition: HostedTransition, message: [UInt8]) {
        guard !finished else { return }
        if mustQueue {
            if case .conflated(let dropped) = outbox.push(transition, message: message) {
                context.logger.debug("stream conflated", metadata: ["connection": "\(connection.id)", "dropped": "\(dropped)"])
                // The snapshot queued now is newer than any history still to resume.
                replay = []
                replayIndex = 0
            }
            return
        }
        write(message, sequence: transition.sequence)
    }

    /// The start of a state stream: a snapshot ahead of anything queued meanwhile, or
    /// the history after the client's sequence.
    private func begin(_ start: SpinFeed.Start, epoch: String) {
        guard !finished else { return }
        awaitingSnapshot = false
        outbox.epoch = epoch
        switch start {
        case .snapshot(let sequence, let state):
            outbox.pushFront(state: StreamMessage.snapshot(sequence: sequence, epoch: epoch, state: state), sequence: sequence)
        case .replay(let history):
            replay = history
            replayIndex = 0
        }
        flush()
    }

    /// An ack, error or Gear message: never dropped.
    private func deliverControl(_ message: [UInt8]) {
        guard !finished else { return }
        if mustQueue {
            if outbox.push(control: message) == .overflow {
                fail(.policyViolation, reason: "too many unread messages")
            }
            return
        }
        write(message)
    }

    /// Writes one message; over SSE a state message carries its sequence as `id:`, so a
    /// reconnecting `EventSource` resumes with `Last-Event-ID`.
    private func write(_ text: [UInt8], sequence: UInt64? = nil) {
        if let actions = webSocket?.sendText(utf8: text) {
            perform(actions)
        } else if let sse {
            var event: [UInt8] = []
            if let sequence { event += Array("id: \(sequence)\n".utf8) }
            event += Array("data: ".utf8)
            event += text
            event += Array("\n\n".utf8)
            send(sse.encode(event))
        }
    }

    private func send(_ bytes: [UInt8]) {
        if connection.write(bytes) == .aboveHighWatermark { blocked = true }
    }

    /// The connection can take more: flush what waited.
    func writable() {
        if blocked, source.isEcho { connection.resumeReading() }
        blocked = false
        flush()
    }

    /// Sends a client's message back. Above the high watermark reading pauses until
    /// the client reads again, so a client that only writes cannot grow our memory.
    private func echo(_ message: WebSocketMessage) {
        guard let actions = webSocket?.send(message) else { return }
        perform(actions)
        if blocked { connection.pauseReading() }
    }

    private func flush() {
        guard !awaitingSnapshot else { return }
        while !blocked, !finished, replayIndex < replay.count {
            let transition = replay[replayIndex]
            replayIndex += 1
            write(StreamMessage.state(transition, epoch: outbox.epoch), sequence: transition.sequence)
        }
        if replayIndex >= replay.count, !replay.isEmpty {
            replay = []
            replayIndex = 0
        }
        while !blocked, !finished, replay.isEmpty, let item = outbox.pop() {
            write(item.message, sequence: item.sequence)
        }
    }

    private func ping() {
        guard !finished else { return }
        if let actions = webSocket?.ping() {
            perform(actions)
        } else if let sse {
            // An SSE comment line: ignored by clients, keeps proxies and NATs awake.
            send(sse.encode(Array(": ping\n\n".utf8)))
        }
    }

    // MARK: Incoming

    /// One frame at a time, so that what a message makes us send at once (an echo) goes
    /// out before a later frame in the same read can fail the connection.
    func receive(_ bytes: [UInt8]) {
        webSocket?.append(bytes)
        while let actions = webSocket?.nextActions() {
            perform(actions)
        }
    }

    private func perform(_ actions: [WebSocketSession.Action]) {
        for action in actions {
            switch action {
            case .send(let bytes): send(bytes)
            case .message(let message) where source.isEcho: echo(message)
            case .message(.text(let text)): clientMessage(Array(text.utf8))
            case .message(.binary):
                fail(.unsupportedData, reason: "this stream takes JSON text messages")
            case .pongReceived: break
            case .peerClosed(let code, _):
                context.logger.debug("stream closed by peer", metadata: ["connection": "\(connection.id)",
                                                                           "code": "\(code.map { "\($0.rawValue)" } ?? "none")"])
            case .failed(let error):
                context.logger.info("stream failed", metadata: ["connection": "\(connection.id)", "error": "\(error)"])
            case .closeConnection:
                finish()
                connection.closeAfterFlush()
            }
        }
    }

    /// `{"type":"event","id":..,"event":{..}}` → ack once applied, or error.
    private func clientMessage(_ text: [UInt8]) {
        guard case .state(let spin, _, _, let clientMayWrite) = source else {
            return deliverControl(StreamMessage.error(id: .null, .badRequest("the Gear stream takes no messages")).bytes)
        }
        let id: JSONValue
        let event: [UInt8]
        switch StreamMessage.parseClientEvent(text) {
        case .failure(let refusal): return deliverControl(StreamMessage.error(id: refusal.id, refusal.error).bytes)
        case .success(let message): (id, event) = message
        }
        guard clientMayWrite else {
            return deliverControl(StreamMessage.error(id: id, .forbidden("sending events needs a token with the write scope")).bytes)
        }
        let batch: EventBatch
        do {
            batch = try spin.decodeEvents(json: event)
        } catch {
            return deliverControl(StreamMessage.error(id: id, error).bytes)
        }
        let connection = self.connection
        context.router.submit(batch, to: spin) { [self] result in
            connection.execute {
                switch result {
                case .success(let applied): self.deliverControl(StreamMessage.ack(id: id, sequence: applied.sequence).bytes)
                case .failure(let error): self.deliverControl(StreamMessage.error(id: id, error).bytes)
                }
            }
        }
    }

    // MARK: Ending

    /// Closes the stream with a WebSocket close code (SSE: ends the body).
    func fail(_ code: WebSocketCloseCode, reason: String) {
        guard !finished else { return }
        if let actions = webSocket?.close(code: code, reason: reason) {
            finish()
            for case .send(let bytes) in actions { _ = connection.write(bytes) }
            // Close after the frame is flushed; the connection's lingering close drains
            // the peer's answer without passing it on.
            connection.closeAfterFlush()
        } else if let sse {
            finish()
            _ = connection.write(sse.end())
            connection.closeAfterFlush()
        }
    }

    /// The server is shutting down: WebSocket 1001, SSE end of body.
    func shutdown() {
        fail(.goingAway, reason: "server shutting down")
    }

    /// Stops the subscription and the pings. Idempotent.
    func finish() {
        guard !finished else { return }
        finished = true
        subscription?.cancel()
        subscription = nil
        pingTimer?.cancel()
        pingTimer = nil
        context.metrics.streamClosed(kind: kind)
    }

    /// The TCP connection closed.
    func connectionClosed() {
        webSocket?.connectionClosed()
        finish()
    }
}
