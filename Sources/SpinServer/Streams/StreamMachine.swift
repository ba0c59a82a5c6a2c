import SpinWire
import SpinJSON

/// One open stream (WebSocket or SSE) as a value: messages and bytes in, actions out, no
/// socket, queue or timer. `StreamSession` drives it on the connection's event loop.
///
/// It holds what a stream keeps between events: the WebSocket session (or the SSE body
/// encoder), the outbox of messages a slow client has not taken yet, the history still
/// to replay to a resuming client, and whether it has finished. Rules it keeps
/// (docs/PROTOCOL.md, The stream protocol):
/// - a state stream sends its snapshot (or resumed history) first; acks and errors for
///   early client messages wait behind it;
/// - messages wait in the outbox while the connection is above its high watermark; a
///   slow consumer's queued state messages are conflated into one snapshot, control
///   messages (acks, errors, Gear traffic) are never dropped (too many: 1008);
/// - the echo endpoint sends every message back and stops reading while the client
///   does not read;
/// - 1001 on shutdown; 1002/1007/1009 (and the other codes of `WebSocketError`) when
///   the client breaks the protocol; 1003 for a binary message on a JSON stream.
///
/// Held as a stored property of its driver and only changed in place: the WebSocket
/// session lives in an optional changed with `webSocket?.…`, never taken out of an enum,
/// so its buffers are never copied (a copy per frame made Autobahn 9.3.1, a 4 MiB message
/// in 65 537 frames, take 21 s).
struct StreamMachine: Sendable {
    /// What the stream carries, as plain data.
    enum Kind: Sendable, Equatable {
        /// A Spin's states; the client may send events when `clientMayWrite`.
        case state(clientMayWrite: Bool)
        /// A Gear's traffic; the client sends nothing.
        case gear
        /// Every client message sent back (`testing.echoEndpoint`).
        case echo
    }

    enum Transport {
        case webSocket(WebSocketSession)
        case sse(HTTPBodyEncoder)
    }

    /// What reaches a stream from elsewhere (through its `StreamMailbox`).
    enum Message: Sendable {
        /// The subscription started: a snapshot or the history after the client's sequence.
        case started(SpinFeed.Start, epoch: String)
        /// A durable transition with its state message, as the feed wrote it once for
        /// every subscriber, and for a stream with deltas its patch message (nil: the
        /// whole state goes). A replacement's message is a snapshot of its new epoch.
        case state(HostedTransition, message: [UInt8], patch: [UInt8]? = nil)
        /// An ack, an error or a Gear message: never dropped.
        case control([UInt8])
    }

    /// What the driver does, in order. Consecutive writes of one call come as one `.write`.
    enum Action: Sendable, Equatable {
        case write([UInt8])
        case pauseReading
        case resumeReading
        /// A client's event to apply: answer with `.control` (ack or error) through the
        /// mailbox. The machine handles no further frame until `receiveMore` is called, so
        /// that an answer given at once keeps its place.
        case submit(id: JSONValue, event: [UInt8])
        /// A client's new credentials (`{"type":"refresh","token":..}`): check them, then
        /// `permit` and answer `refreshed` (or an error) through the mailbox. Frames wait
        /// for `receiveMore`, as after `.submit`.
        case refresh(id: JSONValue, token: String)
        case log(Log)
        /// The stream is done: cancel the subscription and the pings (once).
        case stop
        /// Close the connection once what was written is sent.
        case closeAfterFlush
    }

    enum Log: Sendable, Equatable {
        case conflated(dropped: Int)
        case peerClosed(code: WebSocketCloseCode?)
        case failed(WebSocketError)
    }

    private(set) var kind: Kind
    /// The client asked for patches (`?delta=json-patch`): a state message carries the
    /// patch from the previous message's state when there is one to patch.
    let deltas: Bool
    /// The sequence of the state that the stream's newest state-kind message (written or
    /// queued) carries, nil before the first: a patch goes out only when it is from that
    /// state, so that after a conflation, a resume or any gap the client gets a whole
    /// state, never a patch of a state it does not have.
    private(set) var carried: UInt64?
    /// The WebSocket session (nil for SSE), always changed in place (see above).
    private var webSocket: WebSocketSession?
    /// The SSE body encoder (nil for a WebSocket).
    private let sse: HTTPBodyEncoder?
    private var outbox: StreamOutbox
    /// The connection is above its high watermark: queue in the outbox until `writable`.
    private(set) var blocked = false
    /// A state stream sends nothing before its snapshot (or resumed history); acks or
    /// errors for early client messages wait in the outbox.
    private var awaitingSnapshot: Bool
    /// A resumed stream's history still to send, oldest first, from `replayIndex`; live
    /// messages wait in the outbox behind it.
    private var replay: [HostedTransition] = []
    private var replayIndex = 0
    private(set) var finished = false
    /// Bytes the connection takes in this call before it is above its high watermark.
    private var room = Int.max
    /// A `.submit` ended this call's frame handling.
    private var submitted = false
    private var actions: [Action] = []
    /// Bytes written since the last action other than a write.
    private var pending: [UInt8] = []

    /// - Parameters:
    ///   - outboxLimit: `limits.streamQueue`.
    ///   - deltas: the client asked for `?delta=json-patch`.
    init(kind: Kind, transport: Transport, outboxLimit: Int, deltas: Bool = false) {
        self.kind = kind
        self.deltas = deltas
        switch transport {
        case .webSocket(let session): (webSocket, sse) = (session, nil)
        case .sse(let encoder): (webSocket, sse) = (nil, encoder)
        }
        outbox = StreamOutbox(limit: outboxLimit)
        if case .state = kind { awaitingSnapshot = true } else { awaitingSnapshot = false }
    }

    // MARK: Events

    /// Messages that arrived for the stream, in order. `room`: the connection's
    /// `writeRoom`.
    mutating func deliver(_ messages: [Message], room: Int) -> [Action] {
        begin(room: room)
        for message in messages {
            switch message {
            case .started(let start, let epoch): started(start, epoch: epoch)
            case .state(let transition, let bytes, let patch): live(transition, message: bytes, patch: patch)
            case .control(let bytes): control(bytes)
            }
        }
        return end()
    }

    /// Bytes read from the connection. Frames are handled one at a time, so that what a
    /// message makes us send at once (an echo) goes out before a later frame in the same
    /// read can fail the connection; after a `.submit`, the rest waits for `receiveMore`.
    mutating func received(_ bytes: [UInt8], room: Int) -> [Action] {
        webSocket?.append(bytes)
        return receiveMore(room: room)
    }

    /// Handles the frames still buffered (after a `.submit` was answered).
    mutating func receiveMore(room: Int) -> [Action] {
        begin(room: room)
        while !submitted, let frameActions = webSocket?.nextActions() {
            perform(frameActions)
        }
        return end()
    }

    /// The connection can take more: send what waited.
    mutating func writable(room: Int) -> [Action] {
        begin(room: room)
        if blocked, kind == .echo { emit(.resumeReading) }
        blocked = false
        flush()
        return end()
    }

    /// A write went above the high watermark where the machine did not expect it (the
    /// connection was written to meanwhile): wait for `writable`.
    mutating func writeBlocked() -> [Action] {
        begin(room: 0)
        if !blocked, kind == .echo { emit(.pauseReading) }
        blocked = true
        return end()
    }

    /// The ping interval passed: a WebSocket Ping, or an SSE comment line.
    mutating func pingTick(room: Int) -> [Action] {
        begin(room: room)
        if !finished {
            if webSocket != nil {
                if let frameActions = webSocket?.ping() { perform(frameActions) }
            } else if let sse {
                // Ignored by clients, keeps proxies and NATs awake.
                send(sse.encode(Array(": ping\n\n".utf8)))
            }
        }
        return end()
    }

    /// The client refreshed its credentials: whether it may now send events.
    mutating func permit(clientMayWrite: Bool) {
        if case .state = kind { kind = .state(clientMayWrite: clientMayWrite) }
    }

    /// Closes the stream with a WebSocket close code (SSE: ends the body).
    mutating func fail(_ code: WebSocketCloseCode, reason: String) -> [Action] {
        begin(room: .max)
        close(code, reason: reason)
        return end()
    }

    /// The server is shutting down: WebSocket 1001, SSE end of body.
    mutating func shutdown() -> [Action] {
        fail(.goingAway, reason: "server shutting down")
    }

    /// Stops the stream without a word (the connection is closing anyway).
    mutating func finish() -> [Action] {
        begin(room: .max)
        stop()
        return end()
    }

    /// The TCP connection closed.
    mutating func connectionClosed() -> [Action] {
        webSocket?.connectionClosed()
        return finish()
    }

    // MARK: Outgoing

    /// Whether a message must wait in the outbox instead of being written now.
    private var mustQueue: Bool { awaitingSnapshot || blocked || replayIndex < replay.count || !outbox.isEmpty }

    private mutating func live(_ transition: HostedTransition, message full: [UInt8], patch: [UInt8]?) {
        guard !finished else { return }
        // A replacement (a restore) comes as a snapshot of a new epoch: what follows carries it.
        if let replacement = transition.replacement, !replacement.epoch.isEmpty { outbox.epoch = replacement.epoch }
        let message = deltas && carried.map({ $0 &+ 1 == transition.sequence }) == true ? patch ?? full : full
        carried = transition.sequence
        if mustQueue {
            if case .conflated(let dropped) = outbox.push(transition, message: message) {
                emit(.log(.conflated(dropped: dropped)))
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
    private mutating func started(_ start: SpinFeed.Start, epoch: String) {
        guard !finished else { return }
        awaitingSnapshot = false
        outbox.epoch = epoch
        switch start {
        case .snapshot(let sequence, let state):
            outbox.pushFront(state: StreamMessage.snapshot(sequence: sequence, epoch: epoch, state: state), sequence: sequence)
            carried = sequence
        case .replay(let history):
            replay = history
            replayIndex = 0
            // The first message replayed carries the whole state: the client's state at
            // `since` is nothing this stream sent.
            carried = history.last?.sequence
        }
        flush()
    }

    /// An ack, error or Gear message: never dropped.
    private mutating func control(_ message: [UInt8]) {
        guard !finished else { return }
        if mustQueue {
            if outbox.push(control: message) == .overflow {
                close(.policyViolation, reason: "too many unread messages")
            }
            return
        }
        write(message)
    }

    /// Writes one message; over SSE a state message carries its sequence as `id:`, so a
    /// reconnecting `EventSource` resumes with `Last-Event-ID`.
    private mutating func write(_ text: [UInt8], sequence: UInt64? = nil) {
        if webSocket != nil {
            if let frameActions = webSocket?.sendText(utf8: text) { perform(frameActions) }
        } else if let sse {
            var event: [UInt8] = []
            event.reserveCapacity(text.count + 32)
            if let sequence { event += "id: \(sequence)\n".utf8 }
            event += "data: ".utf8
            event += text
            event += "\n\n".utf8
            send(sse.encode(event))
        }
    }

    /// Sends a client's message back. Above the high watermark reading pauses until
    /// the client reads again, so a client that only writes cannot grow our memory.
    private mutating func echo(_ message: WebSocketMessage) {
        guard let frameActions = webSocket?.send(message) else { return }
        perform(frameActions)
        if blocked { emit(.pauseReading) }
    }

    private mutating func flush() {
        guard !awaitingSnapshot else { return }
        while !blocked, !finished, replayIndex < replay.count {
            let transition = replay[replayIndex]
            let previous = replayIndex > 0 ? replay[replayIndex - 1] : nil
            replayIndex += 1
            let patch = deltas
                ? StatePatcher.message(for: transition, after: previous.map { ($0.sequence, $0.state) }, epoch: outbox.epoch)
                : nil
            write(patch ?? StreamMessage.state(transition, epoch: outbox.epoch), sequence: transition.sequence)
        }
        if replayIndex >= replay.count, !replay.isEmpty {
            replay = []
            replayIndex = 0
        }
        while !blocked, !finished, replay.isEmpty, let item = outbox.pop() {
            write(item.message, sequence: item.sequence)
        }
    }

    // MARK: Incoming

    private mutating func perform(_ frameActions: [WebSocketSession.Action]) {
        for action in frameActions {
            switch action {
            case .send(let bytes): send(bytes)
            case .message(let message) where kind == .echo: echo(message)
            case .message(.text(let text)): clientMessage(Array(text.utf8))
            case .message(.binary): close(.unsupportedData, reason: "this stream takes JSON text messages")
            case .pongReceived: break
            case .peerClosed(let code, _): emit(.log(.peerClosed(code: code)))
            case .failed(let error): emit(.log(.failed(error)))
            case .closeConnection:
                stop()
                emit(.closeAfterFlush)
            }
        }
    }

    /// `{"type":"event","id":..,"event":{..}}` → `.submit` (the driver answers with an
    /// ack or an error), `{"type":"refresh","token":..}` → `.refresh`, or an error now.
    private mutating func clientMessage(_ text: [UInt8]) {
        switch StreamMessage.parseClientMessage(text) {
        case .failure(let refusal):
            control(StreamMessage.error(id: refusal.id, refusal.error).bytes)
        case .success(.refresh(let id, let token)):
            emit(.refresh(id: id, token: token))
            submitted = true
        case .success(.event(let id, _)) where kind == .gear:
            control(StreamMessage.error(id: id, .badRequest("the Gear stream takes no events (only \"refresh\")")).bytes)
        case .success(.event(let id, _)) where kind == .state(clientMayWrite: false):
            control(StreamMessage.error(id: id, .forbidden("sending events needs the write permission on this Spin")).bytes)
        case .success(.event(let id, let event)):
            emit(.submit(id: id, event: event))
            submitted = true
        }
    }

    // MARK: Ending

    private mutating func close(_ code: WebSocketCloseCode, reason: String) {
        guard !finished else { return }
        if webSocket != nil {
            guard let frameActions = webSocket?.close(code: code, reason: reason) else { return }
            stop()
            for case .send(let bytes) in frameActions { pending += bytes }
            // Close after the frame is flushed; the connection's lingering close drains
            // the peer's answer without passing it on.
            emit(.closeAfterFlush)
        } else if let sse {
            stop()
            pending += sse.end()
            emit(.closeAfterFlush)
        }
    }

    private mutating func stop() {
        guard !finished else { return }
        finished = true
        emit(.stop)
    }

    // MARK: Actions

    private mutating func begin(room: Int) {
        self.room = room
        submitted = false
    }

    /// Bytes for the connection: the connection is above its high watermark once they
    /// pass `room`, as a write of them one at a time would have said.
    private mutating func send(_ bytes: [UInt8]) {
        if pending.isEmpty { pending = bytes } else { pending += bytes }
        room -= bytes.count
        if room < 0 { blocked = true }
    }

    private mutating func emit(_ action: Action) {
        if !pending.isEmpty {
            actions.append(.write(pending))
            pending = []
        }
        actions.append(action)
    }

    private mutating func end() -> [Action] {
        if !pending.isEmpty {
            actions.append(.write(pending))
            pending = []
        }
        defer { actions = [] }
        return actions
    }
}
