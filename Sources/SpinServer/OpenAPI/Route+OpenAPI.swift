import SpinWire
import SpinJSON

/// What the OpenAPI document says of each route: its summary, parameters, request body
/// and answers. The method, the path and what the route needs (`access`, `streams`,
/// `concernsOneSpin`) come from the route table itself, so a route added there is
/// documented by the switch below or the build fails.
extension Route {
    /// Whether the document lists the route: every one but the test-only echo.
    var isDocumented: Bool { self != .echo }

    /// Whether the route's path names a Spin: the document lists it once per hosted Spin.
    var isPerSpin: Bool { template.hasPrefix("/v1/spins/{name}") }

    /// The operation of the route for the Spins whose schemas are `schemas` in
    /// `components.schemas` (`Spin.counter` for a configured Spin: `Spin.counter.Event`,
    /// `Spin.counter.State`; `Kind.door` for a kind's; nil: any Spin's); `kind`: the kind
    /// a `PUT` on the path makes; `gears`: the names a Gear route's `{name}` takes.
    func openAPIOperation(schemas: String? = nil, kind: String? = nil, gears: [String] = []) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("summary", .string(summary))]
        if access == .open { members.append(("security", .array([]))) }
        let parameters = openAPIParameters(gears: gears)
        if !parameters.isEmpty { members.append(("parameters", .array(parameters))) }
        if let body = requestBody(spin: schemas, kind: kind) { members.append(("requestBody", body)) }
        var responses = successes(spin: schemas)
        responses += errorStatuses.map { (String($0), OpenAPIComponents.errorResponse($0)) }
        members.append(("responses", .object(responses)))
        return .object(members)
    }

    /// One line on what the route does.
    private var summary: String {
        switch self {
        case .dashboard: "The dashboard: live state of every Spin, a form to send events, transitions and Gear traffic"
        case .healthz: "Liveness"
        case .readyz: "Readiness: every Spin recovered and running"
        case .openAPI: "This document"
        case .metrics: "Prometheus metrics"
        case .spins: "A page of the hosted Spins the caller may read, sorted by name (UTF-8 byte order); ask for the next page with after=<next>"
        case .spin: "A Spin's sequence and state, the path of its schemas (and a machine Spin's definition); with at=N, its state right after sequence N"
        case .spinCreate: "Make a Spin of a configured kind (admin): 201 when made, 200 when it exists with that kind"
        case .spinDelete: "Delete a Spin made at run time, with its history (admin); its streams close with 4004"
        case .spinEvents: "Send one event or an array of events (applied in order, all or none)"
        case .spinResume: "Run a Spin suspended by its runaway guard (limits.feedbackBudget) again; admin scope. A running Spin stays running"
        case .spinStream: "State stream: server-sent events, or a WebSocket (" + Self.webSocketHandshake + ")"
        case .spinHistory: "A page of a Spin's history, oldest first: each applied event with the state after it, its sender and its time, as far back as storage.history keeps"
        case .spinRestore: "Move a Spin back to its state right after sequence at (admin): recorded as a new event {\"type\":\"spin.restored\",\"at\":N}, so its history only grows; its streams get a snapshot of a new epoch. Answered once durable"
        case .spinFork: "Make a new Spin of the same kind and version in this Spin's state right after sequence at (admin): its history begins with {\"type\":\"spin.forked\",\"from\":..,\"at\":N}. Answered once durable"
        case .spinSchema: "The JSON Schemas of a Spin's events and state (each hosted Spin's are also in components.schemas as Spin.<name>.Event and Spin.<name>.State)"
        case .gears: "List the hosted Gears and the Spins attached to them"
        case .gearStream: "Every event crossing the Gear: server-sent events, or a WebSocket (" + Self.webSocketHandshake + ")"
        case .cluster: "List the nodes of the cluster and the Spins each owns (one node, this one, owning every Spin unless the storage is shared)"
        case .echo: "A WebSocket that sends every message back (testing.echoEndpoint only)"
        }
    }

    /// What a WebSocket client sends to a stream route instead of a plain request. Not
    /// parameters of the operation: OpenAPI cannot make these headers or none required, and
    /// the document describes the route's HTTP answers (an HTTP client cannot follow the
    /// switch of protocols).
    private static let webSocketHandshake = "the RFC 6455 handshake: Upgrade: websocket, Connection: Upgrade, Sec-WebSocket-Key, Sec-WebSocket-Version: 13; answered 101"

    /// The error statuses the route answers with (each one of `OpenAPIComponents.errors`),
    /// in order. Every route may answer 421 to a `Host` it does not serve.
    var errorStatuses: [Int] {
        var statuses: Set<Int> = [421]
        if access != .open { statuses.formUnion([401, 403]) }
        if template.contains("{name}") { statuses.insert(404) }
        if concernsOneSpin { statuses.insert(503) }
        switch self {
        case .readyz: statuses.insert(503)
        case .spinEvents, .spinResume: statuses.formUnion([400, 409, 413, 415, 422, 429, 500, 503])
        case .spins: statuses.insert(400)
        case .spin, .spinHistory: statuses.formUnion([400, 410])
        case .spinRestore, .spinFork: statuses.formUnion([400, 409, 410, 415, 503])
        case .spinCreate: statuses.formUnion([400, 409, 415, 503])
        case .spinDelete: statuses.formUnion([409, 503])
        case .spinStream: statuses.formUnion([400, 406, 426, 503])
        case .gearStream: statuses.formUnion([400, 406, 426])
        case .echo: statuses.formUnion([400, 426])
        default: break
        }
        return statuses.sorted()
    }

    /// A sequence as a parameter takes it (`since`, `at`, `from`): what `UInt64(sequenceText:)` reads.
    private static let sequenceSchema: JSONValue = .members(["type": .string("integer"), "minimum": .number("0"),
                                                             "maximum": .number(String(UInt64.max))])

    /// The operation's own parameters (a template path's `{name}` is the path's).
    private func openAPIParameters(gears: [String]) -> [JSONValue] {
        switch self {
        case .spinEvents:
            return [.ref("Wait", in: "parameters")]
        case .spinStream:
            return [
                .members(["name": .string("since"), "in": .string("query"), "required": .bool(false),
                          "description": .string("Resume after this sequence: within the retained history of the same epoch, every state message after it and no snapshot; otherwise a snapshot first. SSE clients may send Last-Event-ID instead."),
                          "schema": Self.sequenceSchema]),
                .members(["name": .string("epoch"), "in": .string("query"), "required": .bool(false),
                          "description": .string("The epoch the client last saw (every snapshot and state message carries it); another epoch means a snapshot."),
                          "schema": .members(["type": .string("string")])]),
                .members(["name": .string("delta"), "in": .string("query"), "required": .bool(false),
                          "description": .string("json-patch: after the snapshot (or the first message of a resume), each state message carries exactly one of state (the whole state) or patch (an RFC 6902 JSON Patch from the previous message's state); a whole state comes every 1000th sequence, when the patch would not be smaller, and after any gap. Any other value is 400."),
                          "schema": .members(["type": .string("string"), "enum": .strings(["json-patch"])])]),
                .members(["name": .string("Last-Event-ID"), "in": .string("header"), "required": .bool(false),
                          "description": .string("SSE resume: the id (sequence) of the last message received; since wins when both are given, but a malformed header is refused (400) all the same."),
                          "schema": .members(["type": .string("string"), "pattern": .string("^[0-9]{1,19}$")])]),
            ]
        case .spin:
            return [.members(["name": .string("at"), "in": .string("query"), "required": .bool(false),
                              "description": .string("The state right after this sequence instead of the newest (from the history storage.history keeps: 410 history_not_retained before it; 404 sequence_not_found beyond the Spin's sequence)."),
                              "schema": Self.sequenceSchema])]
        case .spinHistory:
            return [
                .members(["name": .string("from"), "in": .string("query"), "required": .bool(false),
                          "description": .string("The first sequence of the page (default: the oldest held; 410 history_not_retained when older)."),
                          "schema": Self.sequenceSchema]),
                .members(["name": .string("limit"), "in": .string("query"), "required": .bool(false),
                          "description": .string("At most this many entries (default \(HistoryQuery.defaultLimit))."),
                          "schema": .members(["type": .string("integer"), "minimum": .number("1"),
                                              "maximum": .number(String(HistoryQuery.maximumLimit)),
                                              "default": .number(String(HistoryQuery.defaultLimit))])]),
                .members(["name": .string("delta"), "in": .string("query"), "required": .bool(false),
                          "description": .string("json-patch: an entry right after the one before it carries patch (an RFC 6902 JSON Patch from that one's state) instead of state when smaller. Any other value is 400."),
                          "schema": .members(["type": .string("string"), "enum": .strings(["json-patch"])])]),
            ]
        case .spins:
            let name: JSONValue = .members(["type": .string("string"), "pattern": .string("^[A-Za-z0-9._-]{0,64}$")])
            return [
                .members(["name": .string("prefix"), "in": .string("query"), "required": .bool(false),
                          "description": .string("Only the Spins whose names start with it."), "schema": name]),
                .members(["name": .string("after"), "in": .string("query"), "required": .bool(false),
                          "description": .string("Only the Spins whose names sort after it: the next of the page before (empty: from the first)."),
                          "schema": name]),
                .members(["name": .string("limit"), "in": .string("query"), "required": .bool(false),
                          "description": .string("At most this many Spins (default \(SpinListQuery.defaultLimit))."),
                          "schema": .members(["type": .string("integer"), "minimum": .number("1"),
                                              "maximum": .number(String(SpinListQuery.maximumLimit)),
                                              "default": .number(String(SpinListQuery.defaultLimit))])]),
            ]
        case .gearStream:
            var name: [(key: String, value: JSONValue)] = [("type", .string("string"))]
            if !gears.isEmpty { name.append(("enum", .strings(gears))) }
            return [.members(["name": .string("name"), "in": .string("path"), "required": .bool(true),
                              "description": .string("A hosted Gear."), "schema": .object(name)])]
        default:
            return []
        }
    }

    /// The body of the routes that take events: one event of the Spin (any Spin's, for the
    /// template) or an array of them.
    private func requestBody(spin: String?, kind: String?) -> JSONValue? {
        let event: JSONValue = .ref(spin.map { "\($0).Event" } ?? "Event")
        let events: JSONValue = .members(["schema": .members(["oneOf": .array([
            event, .members(["type": .string("array"), "minItems": .number("1"), "items": event]),
        ])])])
        switch self {
        case .spinEvents:
            return .members(["required": .bool(true), "content": .members(["application/json": events])])
        case .spinCreate:
            let schema: JSONValue = kind.map { kind in
                .members(["type": .string("object"), "required": .strings(["kind"]), "additionalProperties": .bool(false),
                          "properties": .members(["kind": .members(["const": .string(kind)])])])
            } ?? .ref("SpinCreation")
            return .members(["required": .bool(true), "content": .members(["application/json": .members(["schema": schema])])])
        case .spinRestore, .spinFork:
            return .members(["required": .bool(true), "content": .members(["application/json": .members([
                "schema": .ref(self == .spinRestore ? "Restoration" : "Fork")])])])
        case .spinResume:
            return .members([
                "required": .bool(false),
                "description": .string("Events to apply first, before the feedbacks run again (the correction of the runaway); answered once they are applied and durable."),
                "content": .members(["application/json": events]),
            ])
        default:
            return nil
        }
    }

    /// The route's successful answers, by status.
    private func successes(spin: String?) -> [(key: String, value: JSONValue)] {
        func answer(_ description: String, _ schema: JSONValue, _ mediaType: String = "application/json") -> JSONValue {
            .members(["description": .string(description), "content": .object([(mediaType, .members(["schema": schema]))])])
        }
        /// `base` with the Spin's own state schema for its `state` member.
        func withState(_ base: String) -> JSONValue {
            guard let spin else { return .ref(base) }
            return .members(["allOf": .array([.ref(base), .members(["properties": .members(["state": .ref("\(spin).State")])])])])
        }
        let eventStream = answer("Server-sent events, to a request whose Accept takes text/event-stream (or that has none): each event's data is one message of the stream, as a WebSocket text frame carries it.",
                                 .ref("StreamEvent"), "text/event-stream")
        switch self {
        case .dashboard: return [("200", answer("A self-contained HTML page.", .members(["type": .string("string")]), "text/html"))]
        case .healthz: return [("200", answer("The process serves.", .ref("Status")))]
        case .readyz: return [("200", answer("Ready.", .ref("Status")))]
        case .openAPI: return [("200", answer("OpenAPI 3.1.", .members(["type": .string("object")])))]
        case .metrics: return [("200", answer("Prometheus text format 0.0.4.", .members(["type": .string("string")]), "text/plain"))]
        case .spins: return [("200", answer("The Spins.", .ref("SpinList")))]
        case .spin: return [("200", answer("The Spin; with at=N, its state then.",
                                          .members(["anyOf": .array([withState("SpinState"), .ref("SpinStateAt")])])))]
        case .spinCreate:
            return [("201", answer("Made: sequence 0, running.", .ref("SpinCreated"))),
                    ("200", answer("It exists with that kind already: its current sequence and status.", .ref("SpinCreated")))]
        case .spinDelete: return [("200", answer("Deleted, with its history.", .ref("SpinCreated")))]
        case .spinEvents:
            return [
                ("200", answer("With wait=true: applied and durable; one reply per event, in order. An event the Spin has no transition for from the state it met is ignored: not journaled, sequence not advanced.",
                               withState("Applied"))),
                ("202", answer("Accepted, applied and durable. accepted counts every event of the batch, ignored ones included; ignored (present only when positive) counts those the Spin had no transition for.",
                               .ref("Accepted"))),
            ]
        case .spinResume: return [("200", answer("Running.", .ref("Resumed")))]
        case .spinSchema: return [("200", answer("The schemas.", .ref("SpinSchemas")))]
        case .spinHistory: return [("200", answer("The page.", .ref("HistoryPage")))]
        case .spinRestore: return [("200", answer("Restored and durable.", withState("Restored")))]
        case .spinFork: return [("201", answer("Made, in that state, durable.", .ref("Forked")))]
        case .spinStream:
            return [
                ("101", .members(["description": .string("WebSocket: text frames, a snapshot (or, resuming, the state messages after since) then one state message per applied and durable event, each with the Spin's epoch; client events answered by ack or error.")])),
                ("200", eventStream),
            ]
        case .gears: return [("200", answer("The Gears.", .ref("GearList")))]
        case .gearStream:
            return [("101", .members(["description": .string("WebSocket: text frames {\"type\":\"gear\",\"gear\":..,\"from\":..,\"event\":..}.")])),
                    ("200", eventStream)]
        case .cluster: return [("200", answer("The nodes, and the node that answered.", .ref("Cluster")))]
        case .echo: return [("101", .members(["description": .string("WebSocket: every message sent back.")]))]
        }
    }
}
