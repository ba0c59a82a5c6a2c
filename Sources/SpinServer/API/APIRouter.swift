import Foundation
import SpinCore
import SpinWire
import Tracing

/// What the router made of a request.
package enum RouteOutcome: Sendable {
    /// Send this response.
    case respond(APIResponse)
    /// Open a stream of `source`: switch to the WebSocket protocol with the handshake's
    /// answer, or answer 200 with an event stream. The caller's identity goes with it:
    /// it decides whether the client may send events, and when the stream expires.
    case stream(StreamSource, StreamUpgrade, Identity)
    /// The Spin is served by another node of the cluster: send the request on to it and
    /// relay its answer (and, for a stream, the bytes both ways) to the client.
    case proxy(ProxiedRequest)
}

/// How an accepted stream is carried.
package enum StreamUpgrade: Sendable {
    /// `101 Switching Protocols` with these headers, then WebSocket frames.
    case webSocket(WebSocketHandshake.Accepted)
    /// `200` with `text/event-stream`: server-sent events.
    case sse
}

/// Where a state stream starts: after `since` (`?since=N`, or SSE's `Last-Event-ID`),
/// of `epoch` when the client names one (`?epoch=E`).
package struct StreamResume: Sendable, Equatable {
    package var since: UInt64
    package var epoch: String?

    package init(since: UInt64, epoch: String? = nil) {
        self.since = since
        self.epoch = epoch
    }

    /// Nil when the request does not resume; throws 400 on a `since` or a `Last-Event-ID`
    /// that is not a sequence number (the header is checked even when `since`, which
    /// wins, is given: a malformed request is refused whole).
    init?(_ request: HTTPRequest) throws(APIError) {
        func sequence(_ text: String) throws(APIError) -> UInt64 {
            guard let since = UInt64(sequenceText: text) else {
                throw .badRequest("since (or Last-Event-ID) must be a sequence number, not \"\(text)\"")
            }
            return since
        }
        let lastEventID = try request.headers["Last-Event-ID"].map { (header) throws(APIError) in
            try sequence(header.trimmingCharacters(in: .whitespaces))
        }
        guard let since = try request.target.queryParameter("since").map(sequence) ?? lastEventID else { return nil }
        self.since = since
        self.epoch = request.target.queryParameter("epoch").flatMap { $0.isEmpty ? nil : $0 }
    }
}

extension UInt64 {
    /// A sequence as a request writes it (`since`, `Last-Event-ID`, a history's `from` and
    /// `at`): decimal digits only (no sign, no space, no exponent), within `UInt64`.
    init?(sequenceText text: String) {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = UInt64(text) else { return nil }
        self = value
    }
}

/// The HTTP API of docs/PROTOCOL.md, without sockets: a request in, an outcome out.
///
/// `admit` decides whether a request may reach a route; `handle` routes what it
/// admitted. Reads and errors are answered at once; events once they are applied and
/// durable (`EventAcknowledgement`), without blocking the caller: `respond` is then
/// called later, from another thread. A class: every closure of a request's way
/// captures the router, which then costs one reference, not a copy of its members.
package final class APIRouter: Sendable {
    package struct Limits: Sendable {
        /// Events that may wait in one Spin's inbox; beyond it POST answers 429 (and so it
        /// does when four times as many applied events wait for the disk), and a
        /// single batch larger than it answers 413. 1024 absorbs bursts of a few hundred
        /// clients without letting one hot Spin hold unbounded memory. (The batch the Spin
        /// is applying at that moment is not counted, so up to about twice this may be held.)
        package var inbox = 1024
        /// Seconds a client is told to wait (`Retry-After`) when an inbox is full.
        package var retryAfterSeconds = 1

        package init() {}
    }

    package let host: SpinHost
    package let access: AccessControl
    /// Which `Host` values are served (DNS rebinding); checked before any route.
    package let hosts: HostPolicy
    package let metrics: Metrics
    package let limits: Limits
    /// Where acknowledgements wait for the journal and streams subscribe.
    package let feeds: SpinFeeds
    /// Events in and acknowledgements out: `POST .../events`, `.../resume` and a stream's
    /// client events go through it (made of the router's own metrics, feeds and limits).
    package let acknowledgement: EventAcknowledgement
    /// Whether `/v1/echo` exists (`testing.echoEndpoint`); off it is a 404 like any
    /// unknown route.
    package let echoEndpoint: Bool
    /// Which browser pages may open WebSocket streams.
    package let origins: OriginPolicy
    /// The dashboard's `frame-ancestors`: itself and `auth.allowedOrigins`.
    var frameAncestors: String {
        origins.allowed.contains("*") ? "*" : (["'self'"] + origins.allowed).joined(separator: " ")
    }
    /// `GET /openapi.json`'s answer, rendered once.
    let openAPI = OpenAPIDocument.Cache()
    /// This server as a cluster node (`GET /v1/cluster`).
    package let cluster: ClusterNode
    /// The Gear router (`GET /v1/gears` shows which catching Spins lag; `/metrics` its
    /// figures); nil for a router without one.
    package let gears: GearRouter?
    /// Makes and deletes Spins while the server runs; nil for a router without (every
    /// `PUT` and `DELETE` on a Spin is then 404 `kind_not_found` or 409).
    package let runtimeSpins: RuntimeSpins?
    /// Reads Spins' history (`GET /v1/spins/{name}/history`, `?at=N`).
    package let history: SpinHistory

    package init(host: SpinHost, access: AccessControl, hosts: HostPolicy = .any, origins: OriginPolicy = OriginPolicy(allowed: []),
                 metrics: Metrics, limits: Limits = Limits(), feeds: SpinFeeds = SpinFeeds(retain: 0, immediate: true),
                 echoEndpoint: Bool = false, cluster: ClusterNode = ClusterNode(node: "localhost", advertise: ""),
                 gears: GearRouter? = nil, runtimeSpins: RuntimeSpins? = nil,
                 history: SpinHistory = SpinHistory(store: nil, segmentEvents: 1000)) {
        self.history = history
        self.gears = gears
        self.runtimeSpins = runtimeSpins
        self.host = host
        self.access = access
        self.hosts = hosts
        self.origins = origins
        self.metrics = metrics
        self.limits = limits
        self.feeds = feeds
        self.echoEndpoint = echoEndpoint
        self.cluster = cluster
        self.acknowledgement = EventAcknowledgement(metrics: metrics, feeds: feeds, limits: limits)
    }

    /// Routes a request `admit` made of what the parser read; `respond` is called exactly
    /// once, at once or later. `trace`: the request's spans when it is traced (events get
    /// `apply`, `durable`, `acknowledge`). `moveDeadline`: the request waited for its Spin
    /// to move already (`awaitMove`) and may wait until then.
    ///
    /// In three steps after admission (`admit`: host policy, route and method,
    /// credentials and permissions): a refusal is answered; a request about a Spin another
    /// cluster node serves is forwarded (`forwarding`: to the Spin's owner, or a wait for
    /// its move); else the route's handler runs (`dispatch`).
    package func handle(_ request: HTTPRequest, admission: Admission, trace: RequestTrace? = nil,
                        moveDeadline: ContinuousClock.Instant? = nil, respond: @escaping @Sendable (RouteOutcome) -> Void) {
        let admitted: (route: Route, name: Substring, caller: Identity)
        switch admission.verdict {
        case .success(let verdict): admitted = verdict
        case .failure(let error): return respond(.respond(.error(error)))
        }
        let call = RouteCall(request: request, route: admitted.route, name: admitted.name, caller: admitted.caller,
                             trace: trace, moveDeadline: moveDeadline, respond: respond)
        if let forwarding = forwarding(request, route: call.route, name: call.name) { return forward(call, forwarding) }
        dispatch(call)
    }

    /// Routes `call`'s request again from the start (admitted again: its Spin may be
    /// served elsewhere now), keeping its trace and the move deadline it waits until.
    func reroute(_ call: RouteCall, moveDeadline: ContinuousClock.Instant) {
        handle(call.request, admission: admit(call.request), trace: call.trace, moveDeadline: moveDeadline,
               respond: call.respond)
    }

    /// Every route's handler: what a request admitted to it gets.
    private func dispatch(_ call: RouteCall) {
        switch call.route {
        case .dashboard: call.reply(dashboard())
        case .healthz: call.reply(health())
        case .readyz: call.answer(readiness())
        case .openAPI: call.reply(openAPIDocument())
        case .metrics: call.reply(metricsPage())
        case .cluster: call.reply(clusterStatus())
        case .spins: spinList(call)
        case .spin: ready(call) { call in
            guard let at = call.request.target.queryParameter("at") else { return call.answer(self.spinDetail(call.name)) }
            self.spinState(call, at: at)
        }
        case .spinCreate: createSpin(call)
        case .spinDelete: deleteSpin(call)
        case .spinSchema: ready(call) { $0.answer(self.spinSchema($0.name)) }
        case .spinHistory: ready(call) { self.spinHistory($0) }
        case .spinRestore: ready(call) { self.restoreSpin($0) }
        case .spinFork: ready(call) { self.forkSpin($0) }
        case .spinEvents: ready(call, makes: true) { self.postEvents($0) }
        case .spinResume: ready(call) { self.resumeSpin($0) }
        case .spinStream: ready(call, makes: true) { $0.respond(self.spinStream($0)) }
        case .gears: call.reply(gearList(for: call.caller.permissions))
        case .gearStream: call.respond(gearStream(call))
        case .echo: call.respond(openStream(call.request, .echo, identity: call.caller))
        }
    }
}
