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
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let since = UInt64(text) else {
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

/// The HTTP API of docs/PROTOCOL.md, without sockets: a request in, an outcome out.
///
/// `handle` answers at once for reads and errors; for events it answers once they are
/// applied (the place where a durable journal step will sit before the acknowledgement),
/// without blocking the caller: `respond` is called from the Spin's executor.
package struct APIRouter: Sendable {
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
    /// Whether `/v1/echo` exists (`testing.echoEndpoint`); off it is a 404 like any
    /// unknown route.
    package let echoEndpoint: Bool
    /// Which browser pages may open WebSocket streams.
    package let origins: OriginPolicy
    /// The dashboard's `frame-ancestors`: itself and `auth.allowedOrigins`.
    private var frameAncestors: String {
        origins.allowed.contains("*") ? "*" : (["'self'"] + origins.allowed).joined(separator: " ")
    }
    /// `GET /openapi.json`'s answer, rendered once.
    private let openAPI = OpenAPIDocument.Cache()
    /// This server as a cluster node (`GET /v1/cluster`).
    package let cluster: ClusterNode

    package init(host: SpinHost, access: AccessControl, hosts: HostPolicy = .any, origins: OriginPolicy = OriginPolicy(allowed: []),
                 metrics: Metrics, limits: Limits = Limits(), feeds: SpinFeeds = SpinFeeds(retain: 0, immediate: true),
                 echoEndpoint: Bool = false, cluster: ClusterNode = ClusterNode(node: "localhost", advertise: "")) {
        self.host = host
        self.access = access
        self.hosts = hosts
        self.origins = origins
        self.metrics = metrics
        self.limits = limits
        self.feeds = feeds
        self.echoEndpoint = echoEndpoint
        self.cluster = cluster
    }

    /// The route template of a path, as metrics label it ("other" for no route).
    package static func template(of path: String) -> String {
        Route.label(Route.match(path))
    }

    /// Routes `request`; `respond` is called exactly once, at once or later.
    package func handle(_ request: HTTPRequest, respond: @escaping @Sendable (RouteOutcome) -> Void) {
        handle(request, matched: Route.match(request.target.path), respond: respond)
    }

    /// Routes the request as the parser made it, whose path the caller already matched
    /// (`Route.match`), so that the path is matched once per request. `trace`: the
    /// request's spans when it is traced (events get `apply`, `durable`, `acknowledge`).
    /// `moveDeadline`: the request waited for its Spin to move already (`awaitMove`) and
    /// may wait until then. `identity`: who the request comes from, when the caller
    /// checked its credentials already (`identify`, so that its log line can name the
    /// subject); checked here otherwise.
    package func handle(_ request: HTTPRequest, matched: (route: Route, name: Substring)?, trace: RequestTrace? = nil,
                        moveDeadline: ContinuousClock.Instant? = nil, identity: Result<Identity, APIError>? = nil,
                        respond: @escaping @Sendable (RouteOutcome) -> Void) {
        func reply(_ response: APIResponse) { respond(.respond(response)) }
        func fail(_ error: APIError) { respond(.respond(.error(error))) }
        // Every route, streams and the dashboard included: a rebound page must get nothing.
        // (The host is an absolute-form target's authority when there is one.)
        let hostHeader: String? = request.target.authority != nil ? request.host : request.headers["Host"]
        guard hosts.allows(host: hostHeader) else { return fail(.misdirectedRequest(host: hostHeader ?? "")) }
        guard let (route, name) = matched, route != .echo || echoEndpoint else {
            return fail(.routeNotFound(request.target.path))
        }
        // GET routes answer HEAD too, but streams; then the scope, when tokens are set.
        let method = request.method == .head && !route.streams ? "GET" : request.method.rawValue
        guard method == route.method else {
            return fail(.methodNotAllowed(request.method.rawValue, allowed: route.allowedMethods))
        }
        let caller: Identity
        switch identity ?? identify(request, route: route) {
        case .success(let identity): caller = identity
        case .failure(let error): return fail(error)
        }
        if let refusal = Self.refusal(of: caller.permissions, route, name) { return fail(refusal) }

        // In a cluster, a request about one Spin is served by the node that owns it.
        if route.concernsOneSpin, !name.isEmpty {
            let spin = String(name)
            let hops = ProxiedRequest.hops(of: request)
            switch cluster.routing(of: spin, hops: hops) {
            case .local:
                break
            case .proxy(_, let advertise):
                guard let owner = AdvertiseURL(advertise) else {
                    return fail(.spinUnavailable(spin, retryAfter: 1))
                }
                return respond(.proxy(ProxiedRequest(request, to: owner, from: cluster.node)))
            case .pending:
                return awaitMove(of: spin, request, matched: matched, trace: trace, deadline: moveDeadline, respond: respond)
            case .unavailable(let retryAfter):
                return fail(.spinUnavailable(spin, retryAfter: retryAfter))
            }
        }

        switch route {
        case .dashboard:
            // The dashboard: open, like a login page; its API calls carry the token.
            reply(APIResponse(status: 200, headers: [
                ("Content-Type", "text/html; charset=utf-8"),
                ("Cache-Control", "no-cache"),
                // Framed only by itself and the allowed origins: a page of those may hand the
                // dashboard tokens (postMessage), no other may frame it at all.
                ("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors \(frameAncestors)"),
                ("X-Content-Type-Options", "nosniff"),
            ], body: Array(Dashboard.html.utf8)))

        case .healthz:
            reply(.json(200, .object([("status", .string("ok"))])))

        case .readyz:
            let failing = feeds.failing
            if !failing.isEmpty {
                fail(APIError(status: 503, code: "storage_unavailable",
                              message: "the storage of \(failing.joined(separator: ", ")) is failing",
                              headers: [("Retry-After", "1")]))
            } else if let problem = cluster.problem {
                fail(APIError(status: 503, code: "not_ready", message: "this cluster node cannot do its part: \(problem)",
                              headers: [("Retry-After", "1")]))
            } else if host.isReady {
                reply(.json(200, .object([("status", .string("ready"))])))
            } else {
                fail(APIError(status: 503, code: "not_ready", message: "the Spins are not all recovered and running",
                              headers: [("Retry-After", "1")]))
            }

        case .openAPI:
            reply(APIResponse(status: 200, headers: [("Content-Type", "application/json")],
                              body: openAPI.document(of: host)))

        case .metrics:
            // A cluster node reports the Spins it serves (each Spin's figures come from its owner).
            let spins = host.spins.filter(\.isPrepared).map { spin in
                let feed = feeds.feed(spin.name)
                let failing = feed.isFailing
                return Metrics.SpinReading(name: spin.name, sequence: spin.snapshot().sequence, pending: spin.pendingEvents,
                                           suspended: spin.status == .suspended && !failing,
                                           durable: feed.snapshot.sequence, storageFailing: failing,
                                           unrecoverable: spin.unrecoverable != nil)
            }
            let owned = cluster.status(hostedSpins: host.spins.map(\.name)).spins(of: cluster.node).count
            reply(APIResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                              body: Array(metrics.render(spins: spins, ownedSpins: owned).utf8)))

        case .spins:
            let owners = cluster.status(hostedSpins: host.spins.map(\.name)).owners
            let readable = host.spins.filter { caller.permissions.allows(.read, spin: $0.name) }
            let list = readable.map { spin -> JSONValue in
                guard spin.isPrepared else {
                    // A cluster node does not run this Spin: its owner has the sequence
                    // (`GET /v1/spins/{name}` through any node asks it).
                    return .object([("name", .string(spin.name)),
                                    ("status", .string("remote")), ("kind", .string(spin.kind)),
                                    ("node", owners[spin.name].map(JSONValue.string) ?? .null)])
                }
                return .object([("name", .string(spin.name)),
                         ("sequence", .number(String(spin.snapshot().sequence))),
                         ("status", .string(spin.status.rawValue)),
                         ("kind", .string(spin.kind))])
            }
            reply(.json(200, .object([("spins", .array(list))])))

        case .spin:
            guard let spin = host.spin(named: String(name)) else { return fail(.spinNotFound(String(name))) }
            let (sequence, state) = spin.snapshot()
            var fields: [(String, JSONValue)] = [("name", .string(spin.name)),
                                                 ("sequence", .number(String(sequence))),
                                                 ("status", .string(spin.status.rawValue)),
                                                 ("state", state)]
            // A declarative machine's Spin also shows its definition (the dashboard's chart).
            if let machine = spin.machineDefinition { fields.append(("machine", machine)) }
            if let problem = spin.unrecoverable { fields.append(("unrecoverable", problem.json)) }
            fields.append(("schema", .string(OpenAPIDocument.schemaPath(of: spin.name))))
            reply(.json(200, .object(fields)))

        case .spinSchema:
            guard let spin = host.spin(named: String(name)) else { return fail(.spinNotFound(String(name))) }
            reply(.json(200, .object([("event", JSONValue(spin.schema.event.json)),
                                      ("state", JSONValue(spin.schema.state.json))])))

        case .spinEvents:
            guard let spin = host.spin(named: String(name)) else { return fail(.spinNotFound(String(name))) }
            postEvents(request, to: spin, from: caller.subject, trace: trace) { [self] response in
                followMove(of: spin.name, response, request, matched: matched, trace: trace, deadline: moveDeadline,
                           respond: respond)
            }

        case .spinResume:
            guard let spin = host.spin(named: String(name)) else { return fail(.spinNotFound(String(name))) }
            if let problem = spin.unrecoverable { return fail(.spinUnrecoverable(spin.name, problem)) }
            // A Spin held because its storage fails goes on by itself once it works.
            if let refusal = Self.refusal(of: feeds.feed(spin.name), spin.name, retryAfter: limits.retryAfterSeconds) {
                return fail(refusal)
            }
            resume(request, spin, from: caller.subject) { [self] response in
                followMove(of: spin.name, response, request, matched: matched, trace: trace, deadline: moveDeadline,
                           respond: respond)
            }

        case .spinStream:
            guard let spin = host.spin(named: String(name)) else { return fail(.spinNotFound(String(name))) }
            if let problem = spin.unrecoverable { return fail(.spinUnrecoverable(spin.name, problem)) }
            let resume: StreamResume?
            let deltas: Bool
            do {
                resume = try StreamResume(request)
                deltas = try Self.wantsDeltas(request)
            } catch {
                return fail(error)
            }
            respond(openStream(request, .state(spin, feeds.feed(spin.name), resume: resume, deltas: deltas), identity: caller))

        case .gears:
            let list = host.gears.filter { caller.permissions.allowsReading(gear: $0.name) }.map { gear -> JSONValue in
                .object([("name", .string(gear.name)), ("attached", .array(gear.attached.map(JSONValue.string)))])
            }
            reply(.json(200, .object([("gears", .array(list))])))

        case .gearStream:
            guard let gear = host.gear(named: String(name)) else { return fail(.gearNotFound(String(name))) }
            respond(openStream(request, .gear(gear), identity: caller))

        case .cluster:
            reply(.json(200, cluster.status(hostedSpins: host.spins.map(\.name)).json))

        case .echo:
            respond(openStream(request, .echo, identity: caller))
        }
    }

    /// Who `request` comes from: its credentials checked (401 when they do not hold);
    /// anyone for an open route and on a server without authentication.
    package func identify(_ request: HTTPRequest, route: Route?) -> Result<Identity, APIError> {
        guard let route, route.access != .open, access.isEnabled else { return .success(.anyone) }
        return access.authenticate(authorization: Self.authorization(of: request, route: route))
    }

    /// Why `permissions` do not allow `route` about `name`: 403 naming the Spin or Gear
    /// and the missing permission; nil when they do. Checked before the name is looked
    /// up, so a caller learns nothing of Spins it may not read (403 either way).
    static func refusal(of permissions: Permissions, _ route: Route, _ name: Substring) -> APIError? {
        switch route.access {
        case .open, .listing:
            return nil
        case .everywhere(let needed):
            return permissions.allowsEverywhere(needed) ? nil : .forbidden(everywhere: needed, route.template)
        case .spin(let needed):
            return permissions.allows(needed, spin: name) ? nil : .forbidden(needed, spin: String(name))
        case .gear:
            return permissions.allowsReading(gear: name) ? nil : .forbidden(gear: String(name))
        }
    }

    /// The request's credentials: its `Authorization` header, or on a stream route the
    /// `access_token` query parameter (browsers cannot set headers on a WebSocket; other
    /// routes can always be given a header, so only streams take it).
    private static func authorization(of request: HTTPRequest, route: Route) -> String? {
        if let header = request.headers["Authorization"] { return header }
        guard route.streams, let token = request.target.queryValue("access_token") else { return nil }
        return "Bearer \(token)"
    }

    /// How a stream route's request is carried: a WebSocket when it asks to upgrade (its
    /// `Origin` allowed and its handshake valid), server-sent events when it accepts them
    /// (RFC 9110: an `Accept` that takes them, or none) and the source offers them, 406 when
    /// its `Accept` rules them out; a WebSocket-only source answers 426.
    private func openStream(_ request: HTTPRequest, _ source: StreamSource, identity: Identity) -> RouteOutcome {
        let wantsWebSocket = request.isUpgradeCandidate && request.headers.containsToken("websocket", in: "Upgrade")
        if wantsWebSocket {
            guard origins.allows(origin: request.headers["Origin"], host: request.headers["Host"]) else {
                return .respond(APIResponse.error(.forbidden("WebSocket connections from origin \(request.headers["Origin"] ?? "") are not allowed"))
                    .closingConnection())
            }
            do {
                let accepted = try WebSocketHandshake.accept(
                    method: request.method.rawValue,
                    httpVersion: (request.version.major, request.version.minor),
                    headers: request.headers.map { (name: $0.name, value: $0.value) })
                return .stream(source, .webSocket(accepted), identity)
            } catch {
                return .respond(APIResponse.error(APIError(status: error.httpStatus, code: "bad_websocket_handshake",
                                                           message: "the WebSocket handshake is invalid: \(error)",
                                                           headers: error.responseHeaders.map { ($0.name, $0.value) }))
                    .closingConnection())
            }
        }
        if source.offersSSE {
            // Server-sent events are the route's one HTTP answer: sent to a client whose Accept
            // takes them, refused (406) to one whose Accept rules them out.
            guard let accept = request.headers["Accept"], !Self.takesEventStream(accept) else {
                return .stream(source, .sse, identity)
            }
            return .respond(.error(APIError(status: 406, code: "not_acceptable",
                                            message: "this route streams text/event-stream (or a WebSocket: Upgrade: websocket), which Accept: \(accept) does not take")))
        }
        return .respond(.error(APIError(status: 426, code: "upgrade_required",
                                        message: "this route is a WebSocket: open it with Upgrade: websocket",
                                        headers: [("Upgrade", "websocket"), ("Connection", "Upgrade")])))
    }

    /// Whether an `Accept` value takes `text/event-stream`: names it, `text/*` or `*/*`
    /// (RFC 9110 §12.5.1; no `Accept` at all takes any type too).
    private static func takesEventStream(_ accept: String) -> Bool {
        accept.split(separator: ",").contains { range in
            let mediaRange = range.split(separator: ";").first.map { $0.trimmingWhitespace().lowercased() } ?? ""
            return mediaRange == "text/event-stream" || mediaRange == "text/*" || mediaRange == "*/*"
        }
    }

    /// `POST /v1/spins/{name}/events`: accept, apply, then acknowledge.
    /// `origin`: the caller's subject, journaled with the events.
    private func postEvents(_ request: HTTPRequest, to spin: any HostedSpin, from origin: String?, trace: RequestTrace?,
                            respond: @escaping @Sendable (APIResponse) -> Void) {
        let wait: Bool
        switch request.target.queryParameter("wait") {
        case nil, "false", "0": wait = false
        case "true", "1", "": wait = true
        case let other?:
            return respond(.error(.badRequest("query parameter wait must be true or false, not \"\(other)\"")))
        }
        var batch: EventBatch
        do {
            batch = try Self.decodeEvents(request, for: spin)
        } catch {
            return respond(.error(error))
        }
        batch.origin = origin
        let count = batch.count
        submit(batch, to: spin, withState: wait, trace: trace) { result in
            switch result {
            case .success(let applied): Self.acknowledge(applied, count: count, wait: wait, respond: respond)
            case .failure(let error): respond(.error(error))
            }
        }
    }

    /// The request's events, as `spin` decodes them: 415 unless JSON, 400/422 as
    /// `decodeEvents` says.
    private static func decodeEvents(_ request: HTTPRequest, for spin: any HostedSpin) throws(APIError) -> EventBatch {
        let contentType = request.headers["Content-Type"]
        guard isJSON(contentType) else { throw .unsupportedMediaType(contentType) }
        return try spin.decodeEvents(json: request.body)
    }

    /// `POST /v1/spins/{name}/resume`: runs a suspended Spin again. A body (one event or
    /// an array, as for `.../events`) is applied first, before the feedbacks run again, so
    /// that the correction of a runaway cannot lose the race against it; the answer then
    /// waits until those events are applied and durable. A running Spin stays running
    /// (and takes the body's events as a POST of them would).
    private func resume(_ request: HTTPRequest, _ spin: any HostedSpin, from origin: String?,
                        respond: @escaping @Sendable (APIResponse) -> Void) {
        let resumed: @Sendable () -> APIResponse = {
            .json(200, .object([("name", .string(spin.name)), ("status", .string(spin.status.rawValue))]))
        }
        guard !request.body.isEmpty else {
            spin.resume(applying: nil) { _ in }
            return respond(resumed())
        }
        var batch: EventBatch
        do {
            batch = try Self.decodeEvents(request, for: spin)
        } catch {
            return respond(.error(error))
        }
        batch.origin = origin
        guard batch.count <= limits.inbox else {
            return respond(.error(.batchTooLarge(count: batch.count, limit: limits.inbox)))
        }
        let done: @Sendable (Result<AppliedEvent, APIError>) -> Void = { result in
            switch result {
            case .success: respond(resumed())
            case .failure(let error): respond(.error(error))
            }
        }
        if !spin.resume(applying: batch, onApplied: whenApplied(spin, feeds.feed(spin.name), done: done)) {
            submit(batch, to: spin, done: done)
        }
    }

    /// Enqueues a decoded batch, all or nothing, and calls `done` once its last event is
    /// applied and durable, or with the reason it was refused. Used by `POST .../events`
    /// and by client events on a stream; `trace` gets the `apply` and `durable` spans and
    /// starts `acknowledge`.
    package func submit(_ batch: EventBatch, to spin: any HostedSpin, withState: Bool = false, trace: RequestTrace? = nil,
                        done: @escaping @Sendable (Result<AppliedEvent, APIError>) -> Void) {
        guard batch.count <= limits.inbox else {
            return done(.failure(.batchTooLarge(count: batch.count, limit: limits.inbox)))
        }
        let feed = feeds.feed(spin.name)
        if let refusal = Self.refusal(of: feed, spin.name, retryAfter: limits.retryAfterSeconds) {
            return done(.failure(refusal))
        }
        // Applied events wait in the feed until the disk has them. A disk that stalls
        // must not let clients that do not wait for acknowledgements (a WebSocket sending
        // event after event) pile them up without bound: past four inboxes' worth, wait.
        guard feed.pendingCount + batch.count <= limits.inbox * 4 else {
            return done(.failure(.inboxFull(spin: spin.name, retryAfter: limits.retryAfterSeconds)))
        }
        let apply = trace?.child("apply", spin: spin.name)
        let outcome = spin.submit(batch, inboxLimit: limits.inbox, withState: withState,
                                  onApplied: whenApplied(spin, feed, trace: trace, apply: apply, done: done))
        if outcome != .accepted { apply?.end() }
        switch outcome {
        case .accepted: break
        case .inboxFull: done(.failure(.inboxFull(spin: spin.name, retryAfter: limits.retryAfterSeconds)))
        case .stopped: done(.failure(.spinStopped("Spin \"\(spin.name)\" is stopping")))
        case .suspended: done(.failure(.spinSuspended(spin.name)))
        }
    }

    /// Why a failing feed refuses events: its storage fails (503 `storage_unavailable`),
    /// or its Spin goes back from a transition that did not encode (500
    /// `encoding_failed`); nil while it does not fail.
    private static func refusal(of feed: SpinFeed, _ spin: String, retryAfter: Int) -> APIError? {
        guard let failure = feed.failure else { return nil }
        return failure.code == "encoding_failed" ? failure : .storageUnavailable(spin: spin, "writes fail", retryAfter: retryAfter)
    }

    /// What happens once a batch's last event is applied (or not): the apply latency is
    /// observed, and `done` is called once the event is durable, or with why it was not
    /// applied (the Spin suspended or stopped first).
    private func whenApplied(_ spin: any HostedSpin, _ feed: SpinFeed, trace: RequestTrace? = nil,
                             apply: (any Span)? = nil,
                             done: @escaping @Sendable (Result<AppliedEvent, APIError>) -> Void)
        -> @Sendable (AppliedEvent?) -> Void {
        let accepted = ContinuousClock.now
        let metrics = self.metrics
        return { transition in
            apply?.end()
            guard let transition else {
                if let refusal = Self.refusal(of: feed, spin.name, retryAfter: 1) { return done(.failure(refusal)) }
                if spin.status == .suspended { return done(.failure(.spinSuspended(spin.name))) }
                return done(.failure(.spinStopped("Spin \"\(spin.name)\" stopped before applying the events")))
            }
            metrics.observeApplyLatency(seconds: (ContinuousClock.now - accepted).seconds)
            let durable = trace?.child("durable", spin: spin.name)
            durable?.attributes[RequestTrace.Attribute.sequence] = Int(clamping: transition.sequence)
            feed.whenDurable(transition.sequence) { error in
                durable?.end()
                if error == nil { trace?.acknowledging(spin: spin.name) }
                done(error.map { .failure($0) } ?? .success(transition))
            }
        }
    }

    /// 202 `{"accepted":k,"sequence":N}` (k counts every event of the batch, ignored ones
    /// too, and `"ignored":m` is added when the reducer declined m > 0 of them), or with
    /// `?wait=true` 200 `{"sequence":N,"state":..,"replies":[..]}`, one reply per event.
    private static func acknowledge(_ applied: AppliedEvent, count: Int, wait: Bool,
                                    respond: @Sendable (APIResponse) -> Void) {
        if wait {
            respond(.json(200, .object([("sequence", .number(String(applied.sequence))), ("state", applied.state ?? .null),
                                        ("replies", applied.replies)])))
        } else {
            // Written as text: every POST answers it, and a `JSONValue` tree boxes each value.
            var body = Array(#"{"accepted":"#.utf8)
            body += String(count).utf8
            body += #","sequence":"#.utf8
            body += String(applied.sequence).utf8
            if !applied.ignored.isEmpty {
                body += #","ignored":"#.utf8
                body += String(applied.ignored.count).utf8
            }
            body.append(UInt8(ascii: "}"))
            respond(.json(202, .raw(body)))
        }
    }

    /// `application/json`, with or without parameters (`; charset=utf-8`).
    /// Read as bytes: every POST asks, and no string is made for it.
    static func isJSON(_ contentType: String?) -> Bool {
        guard var mediaType = contentType?.utf8[...] else { return false }
        // The media type is what precedes any `;`, without the spaces or tabs around it.
        if let end = mediaType.firstIndex(of: UInt8(ascii: ";")) { mediaType = mediaType[..<end] }
        func isWhitespace(_ byte: UInt8?) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while isWhitespace(mediaType.first) { mediaType.removeFirst() }
        while isWhitespace(mediaType.last) { mediaType.removeLast() }
        let json = "application/json".utf8
        guard mediaType.count == json.count else { return false }
        // ASCII letters in any case; every other byte as it is.
        return zip(mediaType, json).allSatisfy { byte, lower in
            byte == lower || (byte | 0x20 == lower && lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z"))
        }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
