import Foundation
import Dispatch
import Logging
import SpinCore
import SpinNet
import SpinWire
import SpinJSON

/// What a stream carries.
package enum StreamSource: Sendable {
    /// A Spin's durable states from its feed: a snapshot (or, resuming, the messages
    /// after the client's sequence), then one message per durable event; the client may
    /// send events (with the `write` permission on the Spin). With `deltas`
    /// (`?delta=json-patch`), state messages carry a JSON Patch from the previous
    /// message's state when they can.
    case state(any HostedSpin, SpinFeed, resume: StreamResume?, deltas: Bool = false)
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

    /// Whether the client asked for patches.
    var deltas: Bool {
        if case .state(_, _, _, let deltas) = self { return deltas }
        return false
    }

    /// The machine's view of it for a client with `identity`: plain data.
    func machineKind(for identity: Identity) -> StreamMachine.Kind {
        switch self {
        case .state(let spin, _, _, _): .state(clientMayWrite: identity.permissions.allows(.write, spin: spin.name))
        case .gear: .gear
        case .echo: .echo
        }
    }

    /// Whether `identity` may go on reading the stream (after a refresh).
    func allowsReading(_ identity: Identity) -> Bool {
        switch self {
        case .state(let spin, _, _, _): identity.permissions.allows(.read, spin: spin.name)
        case .gear(let gear): identity.permissions.allowsReading(gear: gear.name)
        case .echo: identity.permissions.allowsEverywhere(.read)
        }
    }
}

/// Drives one open stream (WebSocket or SSE) on one connection: subscribes to its
/// source, pings on the connection's alarm, feeds every event to its `StreamMachine` and performs
/// the actions it returns on the connection.
///
/// Messages from the feed, the Gear and the Spin (acks) arrive on other threads: they go
/// into the stream's `StreamMailbox`, and one hop to the connection's event loop hands all
/// that arrived to the machine, whose frames leave in one `connection.write`.
///
/// `@unchecked Sendable`: every mutable property is only touched on the connection's
/// event loop; callbacks from Spins and Gears only post to the mailbox (and schedule a hop).
final class StreamSession: @unchecked Sendable {
    typealias Transport = StreamMachine.Transport

    private let connection: Connection
    private let source: StreamSource
    let context: ServerContext
    /// Changed in place only (`machine.…`), never copied out: see `StreamMachine`.
    private var machine: StreamMachine
    private let mailbox = StreamMailbox()
    private var subscription: SpinSubscription?
    let kind: String
    /// Who the client is: its permissions, and when its credentials expire (the stream
    /// then closes, 4001, unless a `refresh` message brought new ones).
    private var identity: Identity
    /// A client event, and whether it was sent once already (it came back from a Spin
    /// that stopped to sleep).
    typealias WaitingEvent = (event: [UInt8], id: JSONValue, retried: Bool)
    /// Events waiting for the stream's Spin to wake, in the order they came (nil: no wake
    /// under way). On the connection's event loop.
    private var waitingForWake: [WaitingEvent]?
    /// When the next ping is due (the connection's one alarm also serves the expiry).
    private var nextPing: ContinuousClock.Instant = .now

    init(connection: Connection, source: StreamSource, transport: Transport, context: ServerContext, identity: Identity) {
        self.connection = connection
        self.source = source
        self.context = context
        self.identity = identity
        machine = StreamMachine(kind: source.machineKind(for: identity), transport: transport,
                                outboxLimit: context.configuration.limits.streamQueue, deltas: source.deltas)
        switch (source, transport) {
        case (.gear, _): kind = "gear"
        case (.echo, _): kind = "echo"
        case (_, .webSocket): kind = "websocket"
        case (_, .sse): kind = "sse"
        }
    }

    /// Subscribes and starts pinging. On the connection's event loop.
    func start() {
        context.metrics.streamOpened(kind: kind)
        switch source {
        case .state(_, let feed, let resume, let deltas):
            // The feed calls both under its lock: they only post. The drain is an
            // explicit hop (`executeLater`), never run at once: `start` is called on the
            // connection's event loop, where `execute` would write under the feed's lock.
            subscription = feed.subscribe(since: resume?.since, epoch: resume?.epoch, deltas: deltas, start: { [self] start, epoch in
                post(.started(start, epoch: epoch), hop: true)
            }, live: { [self] transition, message, patch in
                post(.state(transition, message: message, patch: patch), hop: true)
            }, ended: { [self] in
                // The Spin was deleted: 4004. Else this node stopped serving it: close as
                // a restarting server does (1001), so that the client reconnects to the
                // node serving it now.
                if case .deleted? = feed.endedBy {
                    return connection.executeLater { self.fail(.spinDeleted, reason: "spin deleted") }
                }
                connection.executeLater { self.shutdown() }
            })
        case .gear(let gear):
            subscription = gear.observe { [self] traffic in
                post(.control(StreamMessage.gear(traffic).bytes), hop: true)
            }
        case .echo:
            break
        }
        armPing()
    }

    /// The next ping tick, one interval from now, on the connection's alarm (one timer
    /// per connection serves its deadlines and the pings).
    private func armPing() {
        nextPing = .now + .seconds(context.configuration.limits.pingIntervalSeconds)
        armAlarm()
    }

    /// The connection's alarm at the next ping or the expiry of the credentials,
    /// whichever comes first.
    private func armAlarm() {
        connection.setAlarm(at: expiry.map { min(nextPing, $0) } ?? nextPing)
    }

    /// When the credentials stop being accepted, on the connection's clock.
    private var expiry: ContinuousClock.Instant? {
        identity.validUntil.map { until in
            // At most a year ahead: a later expiry is checked again when the alarm rings,
            // and no date, however far, overflows the arithmetic.
            let seconds = min(max(until - Date().timeIntervalSince1970, 0), 366 * 86_400)
            return .now + .milliseconds(Int64((seconds * 1000).rounded(.up)))
        }
    }

    /// The connection's alarm: the credentials expired (close, 4001), or a ping tick.
    func alarm() {
        guard !machine.finished else { return }
        if let validUntil = identity.validUntil, Date().timeIntervalSince1970 >= validUntil {
            context.logger.info("stream closed: credentials expired", metadata: [
                "connection": "\(connection.id)", "sub": "\(identity.subject ?? "")"])
            run(machine.fail(.credentialsExpired, reason: "token expired"))
            return
        }
        if ContinuousClock.now >= nextPing {
            run(machine.pingTick(room: connection.writeRoom))
            if !machine.finished { armPing() }
        } else {
            armAlarm()
        }
    }

    // MARK: Mailbox

    /// Posts `message`, scheduling a drain when none is pending. `hop`: always through
    /// the event loop (callers under a lock); otherwise at once when already on it (an answer
    /// to a client's event keeps its place before the frames after it).
    private func post(_ message: StreamMachine.Message, hop: Bool) {
        guard mailbox.post(message) else { return }
        if hop {
            connection.executeLater { self.drain() }
        } else {
            connection.execute { self.drain() }
        }
    }

    /// Hands everything the mailbox holds to the machine.
    private func drain() {
        let messages = mailbox.take()
        guard !messages.isEmpty else { return }
        run(machine.deliver(messages, room: connection.writeRoom))
    }

    // MARK: Connection events

    /// Bytes read from the connection.
    func receive(_ bytes: [UInt8]) {
        var submitted = run(machine.received(bytes, room: connection.writeRoom))
        while submitted {
            submitted = run(machine.receiveMore(room: connection.writeRoom))
        }
    }

    /// The connection can take more: flush what waited.
    func writable() {
        run(machine.writable(room: connection.writeRoom))
    }

    /// Closes the stream with a WebSocket close code (SSE: ends the body).
    func fail(_ code: WebSocketCloseCode, reason: String) {
        run(machine.fail(code, reason: reason))
    }

    /// The server is shutting down: WebSocket 1001, SSE end of body.
    func shutdown() {
        run(machine.shutdown())
    }

    /// Stops the subscription and the pings. Idempotent.
    func finish() {
        run(machine.finish())
    }

    /// The TCP connection closed.
    func connectionClosed() {
        run(machine.connectionClosed())
    }

    // MARK: Actions

    /// Performs `actions`; true when one was a `.submit` (the machine then waits for
    /// `receiveMore`).
    @discardableResult
    private func run(_ actions: [StreamMachine.Action]) -> Bool {
        var submitted = false
        var wentAbove = false
        for action in actions {
            switch action {
            case .write(let bytes):
                if connection.write(bytes) == .aboveHighWatermark { wentAbove = true }
            case .pauseReading:
                connection.pauseReading()
            case .resumeReading:
                connection.resumeReading()
            case .submit(let id, let event):
                submitted = true
                submit(event, id: id)
            case .refresh(let id, let token):
                submitted = true
                refresh(token, id: id)
            case .log(let log):
                self.log(log)
            case .stop:
                subscription?.cancel()
                subscription = nil
                connection.setAlarm(at: nil)
                context.metrics.streamClosed(kind: kind)
            case .closeAfterFlush:
                connection.closeAfterFlush()
            }
        }
        // The machine counts the room it was given; the connection may have been written
        // to meanwhile (an answer given at once). Agree with what the connection said.
        if wentAbove, !machine.blocked, !machine.finished {
            run(machine.writeBlocked())
        }
        return submitted
    }

    /// A client's event: decoded for its Spin and submitted; the ack or error comes back
    /// through the mailbox, behind the state message of the event.
    /// The Spin is looked up by name for each event: one made at run time may have slept
    /// and woken since the stream opened. A sleeping one is woken first; the stream's later
    /// events wait behind the wake, so they are submitted in the order they came.
    private func submit(_ event: [UInt8], id: JSONValue) {
        guard case .state(let opened, _, _, _) = source else { return }
        if waitingForWake != nil {
            waitingForWake?.append((event, id, false))
            return
        }
        let router = context.router
        let current = router.runtimeSpins == nil ? opened : router.host.spin(named: opened.name) ?? opened
        guard current is SleepingSpin, let runtimeSpins = router.runtimeSpins else {
            return submit(event, id: id, to: current)
        }
        wakeThenSubmit([(event, id, false)], runtimeSpins)
    }

    /// Wakes the stream's Spin, then submits `events` and what came meanwhile, in order.
    private func wakeThenSubmit(_ events: [WaitingEvent], _ runtimeSpins: RuntimeSpins) {
        guard case .state(let opened, _, _, _) = source else { return }
        waitingForWake = events
        runtimeSpins.wake(opened.name) { [self] woke in
            // Back on the connection's event loop, where the stream's state lives.
            connection.executeLater { [self] in
                let waiting = waitingForWake ?? []
                waitingForWake = nil
                for (event, id, retried) in waiting {
                    if case .failure(let error) = woke {
                        post(.control(StreamMessage.error(id: id, error).bytes), hop: false)
                        continue
                    }
                    submit(event, id: id, to: context.router.host.spin(named: opened.name) ?? opened, retried: retried)
                }
            }
        }
    }

    private func submit(_ event: [UInt8], id: JSONValue, to spin: any HostedSpin, retried: Bool = false) {
        var batch: EventBatch
        do {
            batch = try spin.decodeEvents(json: event)
        } catch {
            return post(.control(StreamMessage.error(id: id, error).bytes), hop: false)
        }
        batch.origin = identity.subject
        context.router.acknowledgement.submit(batch, to: spin) { [self] result in
            switch result {
            case .success(let applied): post(.control(StreamMessage.ack(id: id, applied).bytes), hop: false)
            case .failure(let error) where error.reroutable && context.router.runtimeSpins?.isMade(spin.name) == true && !retried:
                // It stopped to sleep as the event came: sent again once it is awake.
                connection.executeLater { [self] in
                    guard let runtimeSpins = context.router.runtimeSpins else { return }
                    if waitingForWake != nil {
                        waitingForWake?.insert((event, id, true), at: 0)
                        return
                    }
                    wakeThenSubmit([(event, id, true)], runtimeSpins)
                }
            case .failure(let error): post(.control(StreamMessage.error(id: id, error).bytes), hop: false)
            }
        }
    }

    /// A client's new credentials: checked as a request's would be; they must name the
    /// same subject (a stream is not handed to somebody else) and still allow reading the
    /// stream. Accepted, they replace the old ones (permissions and expiry) and the
    /// client gets `refreshed`; refused, the old ones stay, and so does their expiry.
    private func refresh(_ token: String, id: JSONValue) {
        let answer: JSONValue
        switch context.router.access.authenticate(token: token) {
        case .failure(let error):
            answer = StreamMessage.error(id: id, error)
        case .success(let renewed) where context.router.access.isEnabled && (renewed.subject == nil || identity.subject == nil):
            // Credentials that name nobody cannot show they are the same holder's.
            answer = StreamMessage.error(id: id, .forbidden("credentials without a subject cannot be refreshed: open a new stream"))
        case .success(let renewed) where renewed.subject != identity.subject:
            answer = StreamMessage.error(id: id, .forbidden(
                "the new token is for subject \"\(renewed.subject ?? "")\", this stream for \"\(identity.subject ?? "")\""))
        case .success(let renewed) where !source.allowsReading(renewed):
            answer = StreamMessage.error(id: id, .forbidden("the new token does not allow reading this stream"))
        case .success(let renewed):
            identity = renewed
            machine.permit(clientMayWrite: source.machineKind(for: renewed) == .state(clientMayWrite: true))
            armAlarm()
            answer = StreamMessage.refreshed(id: id, expiresAt: renewed.expiresAt)
        }
        post(.control(answer.bytes), hop: false)
    }

    private func log(_ log: StreamMachine.Log) {
        let connection = "\(connection.id)"
        switch log {
        case .conflated(let dropped):
            context.logger.debug("stream conflated", metadata: ["connection": "\(connection)", "dropped": .stringConvertible(dropped)])
        case .peerClosed(let code):
            context.logger.debug("stream closed by peer", metadata: ["connection": "\(connection)",
                                                                       "code": "\(code.map { "\($0.rawValue)" } ?? "none")"])
        case .failed(let error):
            context.logger.info("stream failed", metadata: ["connection": "\(connection)", "error": "\(error)"])
        }
    }
}
