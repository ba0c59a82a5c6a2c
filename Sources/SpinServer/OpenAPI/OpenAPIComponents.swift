import SpinCore
import SpinWire
import SpinJSON

/// The parts of the OpenAPI document that do not depend on the hosted Spins: the shared
/// schemas of the answers, the parameters, the error answers by status with the codes
/// each carries, and the bearer scheme. Values, encoded with the rest of the document.
enum OpenAPIComponents {
    /// One error status: the codes its body may carry and when, as `components.responses`
    /// lists it (`Error<status>`), with the headers the server sends with it.
    struct ErrorAnswer: Sendable {
        let status: Int
        let codes: [(code: String, when: String)]
        var headers: [(name: String, description: String)] = []

        /// The name of its entry in `components.responses`.
        var name: String { "Error\(status)" }

        var response: JSONValue {
            var members: [(key: String, value: JSONValue)] = [
                ("description", .string(codes.map { "\($0.code): \($0.when)" }.joined(separator: " "))),
            ]
            if !headers.isEmpty {
                members.append(("headers", .object(headers.map { header in
                    (header.name, .members(["description": .string(header.description), "required": .bool(false),
                                            "schema": .members(["type": .string("string")])]))
                })))
            }
            members.append(("content", .members(["application/json": .members(["schema": .ref("Error")])])))
            return .object(members)
        }
    }

    /// Every error status the API answers with, and its codes: the error body schema
    /// (`Error`) is the same for all of them.
    static let errors: [ErrorAnswer] = [
        ErrorAnswer(status: 400, codes: [
            ("malformed_json", "the body is not JSON, or repeats a key within one object."),
            ("bad_request", "a query parameter or header has a value the route does not take (wait, since, delta, Last-Event-ID, prefix, after, limit, from, at)."),
            ("bad_websocket_handshake", "a stream request that asks for a WebSocket with a handshake RFC 6455 refuses."),
            ("invalid_request_line", "and the HTTP parser's other codes: the request is not valid HTTP/1.1 (the connection closes)."),
        ]),
        ErrorAnswer(status: 401, codes: [("unauthorized", "no bearer token, or one that is unknown, expired or refused (the reason is in the message).")],
                    headers: [("WWW-Authenticate", "Bearer, with the error when a token was refused.")]),
        ErrorAnswer(status: 403, codes: [("forbidden", "the caller's token lacks the scope or the Spin or Gear the route needs (the message names it), or a WebSocket's Origin is not allowed.")]),
        ErrorAnswer(status: 404, codes: [("spin_not_found", "no Spin of that name is hosted."), ("gear_not_found", "no Gear of that name is hosted."),
                                         ("kind_not_found", "PUT names a kind the config does not list."),
                                         ("sequence_not_found", "at=N names a sequence the Spin has not reached."),
                                         ("not_found", "no route has this path.")]),
        ErrorAnswer(status: 405, codes: [("method_not_allowed", "the path takes other methods (listed in Allow).")],
                    headers: [("Allow", "The methods the path takes.")]),
        ErrorAnswer(status: 406, codes: [("not_acceptable", "a stream request that asks for no WebSocket and whose Accept takes no text/event-stream (not even as text/* or */*).")]),
        ErrorAnswer(status: 408, codes: [("request_timeout", "the request's head or body arrived too slowly (the connection closes).")]),
        ErrorAnswer(status: 409, codes: [("spin_suspended", "the Spin is suspended by its runaway guard (limits.feedbackBudget); nothing changed."),
                                         ("spin_exists", "PUT for a Spin that exists with another kind or is configured, DELETE of a configured Spin, or a fork onto a name in use; nothing changed."),
                                         ("too_many_spins", "PUT when the server hosts limits.maxSpins Spins; nothing changed."),
                                         ("state_not_restorable", "a restore or fork cannot put that state in place (of another version of the definition, a kind not made at run time, a new name another cluster node serves); the message says why; nothing changed.")]),
        ErrorAnswer(status: 410, codes: [("history_not_retained", "a history page's from, or at, is older than the history storage.history keeps; the message names the first sequence held.")]),
        ErrorAnswer(status: 413, codes: [("body_too_large", "the body is over limits.maxBodyBytes."),
                                         ("batch_too_large", "a batch holds more events than limits.inbox."),
                                         ("state_too_large", "the state an event would make is over limits.maxStateBytes; nothing was applied.")]),
        ErrorAnswer(status: 415, codes: [("unsupported_media_type", "an event body that is not application/json.")]),
        ErrorAnswer(status: 421, codes: [("misdirected_request", "no tokens are configured and the Host is not the listen address, a loopback name or in listen.allowedHosts (DNS rebinding).")]),
        ErrorAnswer(status: 422, codes: [("invalid_event", "JSON, but not an event of that Spin; the message gives the path.")]),
        ErrorAnswer(status: 426, codes: [("bad_websocket_handshake", "a WebSocket handshake of a version other than 13 (Sec-WebSocket-Version names the one the server speaks)."),
                                         ("upgrade_required", "the WebSocket-only echo route asked for without Upgrade: websocket.")],
                    headers: [("Sec-WebSocket-Version", "13, on a handshake of another version."),
                              ("Upgrade", "websocket, when the route is a WebSocket only.")]),
        ErrorAnswer(status: 429, codes: [("inbox_full", "the Spin's inbox holds limits.inbox events, or four times that many wait for the disk.")],
                    headers: [("Retry-After", "Seconds to wait.")]),
        ErrorAnswer(status: 500, codes: [("encoding_failed", "an event decoded but does not encode again; nothing was applied."),
                                         ("internal", "a fault of the server.")]),
        ErrorAnswer(status: 502, codes: [("proxy_tls_unsupported", "in a cluster, the Spin's owner advertises https://, which this node cannot relay to."),
                                         ("proxy_outcome_unknown", "in a cluster, the owner got the request and gave no answer: it may have been applied."),
                                         ("proxy_bad_response", "in a cluster, the owner's answer is malformed."),
                                         ("proxy_response_too_large", "in a cluster, the owner's answer is too large to relay.")]),
        ErrorAnswer(status: 503, codes: [("storage_unavailable", "the Spin's storage fails; nothing was applied."),
                                         ("spin_unrecoverable", "the Spin's stored history could not be replayed at start-up (storage.onCorruption isolate)."),
                                         ("spin_unavailable", "in a cluster, the node owning the Spin cannot be reached or the Spin is moving."),
                                         ("not_ready", "the Spins are not all recovered and running."), ("unavailable", "the server is shutting down.")],
                    headers: [("Retry-After", "Seconds to wait.")]),
    ]

    /// The reference to the error answer of `status` (one of `errors`).
    static func errorResponse(_ status: Int) -> JSONValue {
        precondition(errors.contains { $0.status == status }, "no error answer \(status) in OpenAPIComponents.errors")
        return .ref("Error\(status)", in: "responses")
    }

    /// `components`: the bearer scheme, the parameters, the error answers and the schemas
    /// (the shared ones, then `spinSchemas`, each hosted Spin's).
    static func components(spinSchemas: [(key: String, value: JSONValue)]) -> JSONValue {
        .members([
            "securitySchemes": .members(["bearer": .members([
                "type": .string("http"), "scheme": .string("bearer"),
                "description": .string("A static token (auth.tokens, SPIN_TOKENS) or, with auth.jwt configured, a JWT signed with HS256, RS256, ES256 or EdDSA; a refused JWT is 401 with the reason."),
            ])]),
            "parameters": .members(["SpinName": spinName, "Wait": wait]),
            "responses": .object(errors.map { ($0.name, $0.response) }),
            "schemas": .object(schemas + spinSchemas),
        ])
    }

    /// `{name}` of a Spin route when no Spin is hosted (each hosted Spin has paths of its own).
    static let spinName: JSONValue = .members([
        "name": .string("name"), "in": .string("path"), "required": .bool(true),
        "schema": .members(["type": .string("string"), "pattern": .string("^[A-Za-z0-9._-]{1,64}$")]),
    ])

    static let wait: JSONValue = .members([
        "name": .string("wait"), "in": .string("query"), "required": .bool(false),
        "description": .string("Answer 200 with the state after the last event instead of 202: true (or 1, or wait alone), false (or 0, as without it)."),
        "schema": .members(["type": .string("string"), "enum": .array(["true", "false", "1", "0", ""].map(JSONValue.string))]),
    ])

    private static let sequence: JSONValue = .members(["type": .string("integer"), "minimum": .number("0")])
    private static let text: JSONValue = .members(["type": .string("string")])
    /// A machine Spin's version of its file (docs/MACHINES.md, "Versions and migrations").
    private static let version: JSONValue = .members([
        "type": .string("integer"), "minimum": .number("1"),
        "description": .string("Spins of a versioned definition only: the version of its machine file it runs (\"version\" in the file, 1 when it has none), or of its Swift kind when registered with one."),
    ])

    /// The shared schemas of the answers, by name.
    static let schemas: [(key: String, value: JSONValue)] = [
        ("Status", .members(["type": .string("object"), "required": .strings(["status"]), "properties": .members(["status": text])])),
        ("Error", .members([
            "type": .string("object"), "required": .strings(["error"]),
            "properties": .members(["error": .members([
                "type": .string("object"), "required": .strings(["code", "message"]),
                "properties": .members([
                    "code": .members(["type": .string("string"),
                                      "description": .string("What is wrong, for programs: the codes of each status are in its answer's description.")]),
                    "message": .members(["type": .string("string"), "description": .string("What is wrong, for people.")]),
                    "requestId": .members(["type": .string("string"),
                                           "description": .string("The request's X-Request-Id (the client's, or one the server made).")]),
                ]),
            ])]),
        ])),
        ("Event", .members([
            "type": .string("object"), "required": .strings(["type"]), "properties": .members(["type": text]),
            "additionalProperties": .bool(true),
            "description": .string("Any Spin's event; each hosted Spin's own is Spin.<name>.Event (its paths use it)."),
        ])),
        ("SpinSchemas", .members([
            "type": .string("object"), "required": .strings(["event", "state"]),
            "properties": .members([
                "event": .members(["type": .string("object"), "description": .string("JSON Schema (2020-12) of one event.")]),
                "state": .members(["type": .string("object"), "description": .string("JSON Schema (2020-12) of the state.")]),
            ]),
        ])),
        ("SpinList", .members([
            "type": .string("object"), "required": .strings(["spins", "next"]),
            "properties": .members([
                "spins": .members(["type": .string("array"), "items": .members([
                    "type": .string("object"), "required": .strings(["name", "status", "kind"]),
                    "properties": .members(["name": text, "sequence": sequence, "kind": text, "version": version,
                                            "status": .members(["anyOf": .array([.ref("SpinStatus"), .members([
                                                "const": .string("remote"),
                                                "description": .string("Another cluster node runs it (node); ask GET /v1/spins/{name} through any node for its sequence."),
                                            ])])]),
                                            "node": .members(["type": .array([.string("string"), .string("null")]),
                                                              "description": .string("remote: the node that runs it.")])]),
                ])]),
                "next": .members(["type": .array([.string("string"), .string("null")]),
                                  "description": .string("The last name of this page when more follow (give it as after), null on the last page.")]),
            ]),
        ])),
        ("SpinStatus", .members([
            "type": .string("string"), "enum": .strings(["running", "suspended", "done", "unrecoverable", "asleep"]),
            "description": .string("suspended: the runaway guard (limits.feedbackBudget) stopped the Spin's feedbacks (or a machine's event set off more microsteps than it allows); its state stays readable and streamed, events get 409 until POST /v1/spins/{name}/resume. done: a declarative machine reached a top-level final state; each later event is answered {\"applied\":false,\"reason\":\"done\"} and not journaled. unrecoverable: its stored history could not be replayed at start-up and storage.onCorruption is isolate; state is null, unrecoverable says where and why, events and streams get 503 spin_unrecoverable. asleep (in the list only): a Spin made at run time, idle for limits.idleSpinSeconds, with its sequence; any request about it wakes it."),
        ])),
        ("SpinStateAt", .members([
            "type": .string("object"), "required": .strings(["name", "sequence", "state"]),
            "description": .string("GET /v1/spins/{name}?at=N: the Spin's state right after sequence N."),
            "properties": .members(["name": text, "sequence": sequence, "state": .members([:])]),
        ])),
        ("HistoryPage", .members([
            "type": .string("object"), "required": .strings(["entries", "next"]),
            "properties": .members([
                "entries": .members(["type": .string("array"), "items": .members([
                    "type": .string("object"), "required": .strings(["sequence", "event", "at"]),
                    "description": .string("One applied event, oldest first: the state after it (with delta=json-patch, an entry right after the one before it may carry patch instead, an RFC 6902 JSON Patch from that one's state), who sent it (sub, when a caller's identity did) and when it was applied (at, RFC 3339 in UTC; null for events journaled before the server recorded times)."),
                    "properties": .members([
                        "sequence": sequence, "event": .members([:]), "state": .members([:]),
                        "patch": .members(["type": .string("array")]), "sub": text,
                        "at": .members(["type": .array([.string("string"), .string("null")]), "format": .string("date-time")]),
                    ]),
                ])]),
                "next": .members(["type": .array([.string("integer"), .string("null")]), "minimum": .number("0"),
                                  "description": .string("The from of the next page; null when this page reaches the Spin's newest durable sequence.")]),
            ]),
        ])),
        ("SpinState", .members([
            "type": .string("object"), "required": .strings(["name", "sequence", "status", "state", "schema"]),
            "properties": .members([
                "name": text, "sequence": sequence, "status": .ref("SpinStatus"), "state": .members([:]),
                "unrecoverable": .members([
                    "type": .string("object"), "required": .strings(["journal", "error"]),
                    "description": .string("Only for an unrecoverable Spin: the journal at fault, the record's sequence and the byte offset where known, and the error."),
                    "properties": .members([
                        "journal": text, "sequence": .members(["type": .string("integer"), "minimum": .number("1")]),
                        "offset": sequence, "error": text,
                    ]),
                ]),
                "schema": .members(["type": .string("string"),
                                    "description": .string("The path of the Spin's event and state schemas: /v1/spins/{name}/schema.")]),
                "machine": .members(["type": .string("object"),
                                     "description": .string("Declarative machine Spins only: the machine's JSON definition as its file writes it (states, on, after, final...).")]),
                "version": version,
            ]),
        ])),
        ("SpinCreation", .members([
            "type": .string("object"), "required": .strings(["kind"]), "additionalProperties": .bool(false),
            "properties": .members(["kind": .members(["type": .string("string"), "description": .string("One of the config's kinds.")])]),
        ])),
        ("Restoration", .members([
            "type": .string("object"), "required": .strings(["at"]), "additionalProperties": .bool(false),
            "properties": .members(["at": .members(["type": .string("integer"), "minimum": .number("0"),
                                                    "description": .string("The sequence whose state the Spin goes back to.")])]),
        ])),
        ("Fork", .members([
            "type": .string("object"), "required": .strings(["at", "name"]), "additionalProperties": .bool(false),
            "properties": .members([
                "at": .members(["type": .string("integer"), "minimum": .number("0"),
                                "description": .string("The sequence whose state the new Spin starts in.")]),
                "name": .members(["type": .string("string"), "pattern": .string("^[A-Za-z0-9._-]{1,64}$"),
                                  "description": .string("The new Spin's name, not in use.")]),
            ]),
        ])),
        ("Restored", .members([
            "type": .string("object"), "required": .strings(["name", "sequence", "at", "state"]),
            "description": .string("The Spin after POST /v1/spins/{name}/restore: sequence is the restore's own (its event {\"type\":\"spin.restored\",\"at\":N}), state the state it put back."),
            "properties": .members(["name": text, "sequence": sequence, "at": sequence, "state": .members([:])]),
        ])),
        ("Forked", .members([
            "type": .string("object"), "required": .strings(["name", "kind", "sequence", "from", "at"]),
            "description": .string("The Spin POST /v1/spins/{name}/fork made: its history begins at sequence 1 with {\"type\":\"spin.forked\",\"from\":<the Spin forked>,\"at\":N}, in the state that Spin had at N."),
            "properties": .members(["name": text, "kind": text, "sequence": sequence, "from": text, "at": sequence]),
        ])),
        ("SpinCreated", .members([
            "type": .string("object"), "required": .strings(["name", "kind", "sequence", "status"]),
            "properties": .members(["name": text, "kind": text, "sequence": sequence, "status": text]),
        ])),
        ("Resumed", .members([
            "type": .string("object"), "required": .strings(["name", "status"]),
            "properties": .members(["name": text, "status": .ref("SpinStatus")]),
        ])),
        ("Accepted", .members([
            "type": .string("object"), "required": .strings(["accepted", "sequence"]),
            "properties": .members([
                "accepted": .members(["type": .string("integer"), "minimum": .number("1")]), "sequence": sequence,
                "ignored": .members(["type": .string("integer"), "minimum": .number("1")]),
            ]),
        ])),
        ("Applied", .members([
            "type": .string("object"), "required": .strings(["sequence", "state", "replies"]),
            "properties": .members(["sequence": sequence, "state": .members([:]),
                                    "replies": .members(["type": .string("array"), "items": .ref("Reply")])]),
        ])),
        ("Reply", .members(["oneOf": .array([
            .members(["type": .string("object"), "required": .strings(["applied"]),
                      "properties": .members(["applied": .members(["const": .bool(true)])])]),
            .members(["type": .string("object"), "required": .strings(["applied", "reason"]),
                      "properties": .members(["applied": .members(["const": .bool(false)]),
                                              "reason": .members(["enum": .strings(["no_transition", "done"])])])]),
        ])])),
        ("GearList", .members([
            "type": .string("object"), "required": .strings(["gears"]),
            "properties": .members(["gears": .members(["type": .string("array"), "items": .members([
                "type": .string("object"), "required": .strings(["name", "attached"]),
                "properties": .members([
                    "name": text, "attached": .members(["type": .string("array"), "items": text]),
                    "pending": .members([
                        "type": .string("object"), "additionalProperties": .members(["type": .string("integer"), "minimum": .number("0")]),
                        "description": .string("Per catching Spin served here: the Gear's events it has not consumed durably yet."),
                    ]),
                    "lagging": .members([
                        "type": .string("array"),
                        "description": .string("Catching Spins that no longer get a sender's oldest events (limits.gearBacklog)."),
                        "items": .members([
                            "type": .string("object"), "required": .strings(["spin", "from", "reason"]),
                            "properties": .members(["spin": text, "from": text, "reason": text]),
                        ]),
                    ]),
                ]),
            ])])]),
        ])),
        ("Cluster", .members([
            "type": .string("object"), "required": .strings(["nodes", "self"]),
            "properties": .members([
                "nodes": .members(["type": .string("array"), "items": .members([
                    "type": .string("object"), "required": .strings(["node", "advertise", "live", "spins"]),
                    "properties": .members([
                        "node": text,
                        "advertise": .members(["type": .string("string"), "description": .string("The node's cluster.advertise URL.")]),
                        "live": .members(["type": .string("boolean"), "description": .string("A heartbeat within cluster.leaseSeconds.")]),
                        "spins": .members(["type": .string("array"), "items": text,
                                           "description": .string("The Spins whose lease the node holds.")]),
                    ]),
                ])]),
                "self": .members(["type": .string("string"), "description": .string("The cluster.node of the node that answered.")]),
            ]),
        ])),
        ("StreamEvent", .members([
            "type": .string("object"), "required": .strings(["data"]),
            "description": .string("One server-sent event (OpenAPI 3.1: the schema of each event of the stream): data is one JSON message of the stream (a snapshot, state, gear or skipped message); a state message has id: its sequence."),
            "properties": .members([
                "event": text,
                "id": .members(["type": .string("string"), "pattern": .string("^[0-9]+$")]),
                "data": .members(["type": .string("string"), "contentMediaType": .string("application/json")]),
            ]),
        ])),
    ]
}

extension JSONValue {
    /// An object of `members`, in order.
    static func members(_ members: KeyValuePairs<String, JSONValue>) -> JSONValue {
        .object(members.map { (key: $0.key, value: $0.value) })
    }

    /// An array of strings.
    static func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }

    /// `{"$ref": "#/components/<section>/<name>"}`.
    static func ref(_ name: String, in section: String = "schemas") -> JSONValue {
        .members(["$ref": .string("#/components/\(section)/\(name)")])
    }
}
