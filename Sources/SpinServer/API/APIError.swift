import SpinWire

/// An error answered to a client: `{"error":{"code":..,"message":..}}` with `status`
/// (docs/PROTOCOL.md, HTTP API: the table of errors). Each case of the server's failures maps to one of these.
///
/// One case per failure, with what its message names as associated values, so that a
/// caller can `switch` on what went wrong; the code (``Code``), the HTTP status, the
/// message and the headers are derived here, in one place, from the case.
///
/// A request answered with an error changes nothing: no Spin's state, no stored event.
package enum APIError: Error, Equatable, Sendable {
    // MARK: 400 and 4xx: the request
    /// 400 `malformed_json`: the body (or a stream message) is not valid JSON.
    case malformedJSON(String)
    /// 400 `bad_request`: a query parameter or header is wrong (the message names it).
    case badRequest(String)
    /// The HTTP parser refused the request: its code and status. `limit`: the configured
    /// limit it exceeded (`limits.maxBodyBytes`, `limits.maxHeaderBytes`), named in the message.
    case malformedRequest(HTTPParserError, limit: Int? = nil)
    /// 408 `request_timeout`: the head (`inBody` false) or the body arrived too slowly.
    case requestTimeout(inBody: Bool)
    /// 401 `unauthorized` with `WWW-Authenticate`: missing or invalid credentials.
    case unauthorized(String)
    /// 403 `forbidden`, for a reason the message states.
    case forbidden(String)
    /// 403 `forbidden`: the caller lacks `needed` on Spin `spin`.
    case forbiddenOnSpin(Scope, spin: String)
    /// 403 `forbidden`: the caller may not read Gear `gear`'s stream.
    case forbiddenGear(String)
    /// 403 `forbidden`: a route about every Spin (`what`) needs a global scope.
    case forbiddenEverywhere(Scope, what: String)
    /// 403 `forbidden`: a WebSocket from a page whose `Origin` is not allowed.
    case originNotAllowed(String?)
    /// 421 `misdirected_request` (RFC 9110 §15.5.20): this server does not answer for that authority.
    case misdirectedRequest(host: String)
    /// 404 `spin_not_found`.
    case spinNotFound(String)
    /// 404 `gear_not_found`.
    case gearNotFound(String)
    /// 404 `not_found`: no route has this path.
    case routeNotFound(String)
    /// 405 `method_not_allowed` with `Allow`.
    case methodNotAllowed(String, allowed: [String])
    /// 409 `spin_suspended`: the runaway guard suspended the Spin.
    case spinSuspended(String)
    /// 413 `batch_too_large`: a batch larger than the inbox.
    case batchTooLarge(count: Int, limit: Int)
    /// 413 `state_too_large`: the state an event made encodes larger than
    /// `limits.maxStateBytes`; the Spin went back to its last durable state, nothing of
    /// the event (nor of what was applied after it) was kept.
    case stateTooLarge(spin: String, bytes: Int, limit: Int)
    /// 415 `unsupported_media_type`: events not sent as JSON (the `Content-Type` given).
    case unsupportedMediaType(String?)
    /// 422 `invalid_event`: not an event of the Spin.
    case invalidEvent(spin: String, String)
    /// 406 `not_acceptable`: a stream route whose server-sent events the request's
    /// `Accept` (given) rules out.
    case notAcceptable(accept: String)
    /// 426 `upgrade_required`: a WebSocket-only route asked for without `Upgrade: websocket`.
    case upgradeRequired
    /// `bad_websocket_handshake`, with the handshake error's status and headers.
    case badWebSocketHandshake(WebSocketHandshakeError)
    /// 429 `inbox_full` with `Retry-After`.
    case inboxFull(spin: String, retryAfter: Int)
    /// 409 `spin_exists`: `PUT /v1/spins/{name}` for a Spin that exists with another kind
    /// (`kind`), or is a configured one (`kind` nil); `DELETE` of a configured Spin.
    case spinExists(String, kind: String?, deleting: Bool = false)
    /// 404 `kind_not_found`: no configured kind has this name.
    case kindNotFound(String, known: [String])
    /// 409 `too_many_spins`: the server hosts `limits.maxSpins` Spins already.
    case tooManySpins(limit: Int)
    /// 410-like end of a Spin that was deleted while a request waited for it (404
    /// `spin_not_found` to the client; streams close with 4004).
    case spinDeleted(String)
    /// 410 `history_not_retained`: `GET /v1/spins/{name}/history` or `?at=N` asked for
    /// sequence `asked`, older than the history `storage.history` keeps, which starts at
    /// `first` (nil: no event of the Spin is held).
    case historyNotRetained(spin: String, asked: UInt64, first: UInt64?)
    /// 404 `sequence_not_found`: `?at=N` for a sequence the Spin has not reached (its
    /// newest durable one is `newest`).
    case sequenceNotFound(spin: String, asked: UInt64, newest: UInt64)
    /// 409 `state_not_restorable`: a restore or fork cannot put Spin `spin`'s state at
    /// sequence `at` in place, for `reason` (it is of another version of the definition,
    /// it no longer decodes, its kind is not made at run time...).
    case stateNotRestorable(spin: String, at: UInt64, reason: String)

    // MARK: 5xx: the server
    /// 500 `encoding_failed`: the Spin's event or state does not encode as JSON (a bug in
    /// its type's `encode(to:)`, or a value its schema refuses): nothing was applied or stored.
    case encodingFailed(spin: String, String)
    /// 500 `internal`.
    case `internal`(String)
    /// 502 `proxy_tls_unsupported`: the Spin's owner advertises https://.
    case proxyTLSUnsupported(spin: String)
    /// 502 `proxy_outcome_unknown`: the owner got the request and gave no answer; it may
    /// have applied it (not a 503, which promises nothing was applied).
    case proxyOutcomeUnknown(spin: String)
    /// 502 `proxy_bad_response`: the owner's answer is malformed, or switched protocols unasked.
    case proxyBadResponse(spin: String, switchedProtocols: Bool)
    /// 502 `proxy_response_too_large`: the owner's answer is larger than `limit` bytes.
    case proxyResponseTooLarge(spin: String, limit: Int)
    /// 503 `unavailable` with `Retry-After`.
    case unavailable(String, retryAfter: Int = 1)
    /// 503 `unavailable`: the Spin stopped before applying the events (`applying`: while
    /// they waited; else it was stopping when they came): the server shuts down, or in a
    /// cluster the Spin moves to another node, which then takes them (``reroutable``).
    case spinStopped(String, applying: Bool)
    /// 503 `spin_unavailable` with `Retry-After`: no live node holds the Spin's lease now
    /// (its owner crashed, or a move took longer than a request may wait); nothing was applied.
    case spinUnavailable(String, retryAfter: Int)
    /// 503 `spin_unavailable`: the node that owns the Spin gave no answer (before it got the request).
    case ownerUnavailable(spin: String)
    /// 503 `storage_unavailable`: the Spin's storage cannot write; nothing was applied.
    case storageUnavailable(spin: String, String, retryAfter: Int = 1)
    /// 503 `storage_unavailable` (`/readyz`): the storage of these Spins is failing.
    case storageFailing([String])
    /// 503 `not_ready` (`/readyz`): the Spins are not all recovered and running, or
    /// (`clusterProblem`) this cluster node cannot do its part.
    case notReady(clusterProblem: String?)
    /// 503 `spin_unrecoverable`: a Spin whose stored history could not be replayed at
    /// start-up, isolated (`storage.onCorruption: "isolate"`): an operator has to act.
    case spinUnrecoverable(String, Unrecoverable)

    /// The codes of the server's own errors (the HTTP parser's are its own,
    /// `HTTPParserError.code`), each with its one HTTP status.
    package enum Code: String, Sendable, CaseIterable {
        case malformedJSON = "malformed_json"
        case badRequest = "bad_request"
        case requestTimeout = "request_timeout"
        case unauthorized
        case forbidden
        case misdirectedRequest = "misdirected_request"
        case spinNotFound = "spin_not_found"
        case gearNotFound = "gear_not_found"
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
        case spinSuspended = "spin_suspended"
        case batchTooLarge = "batch_too_large"
        case stateTooLarge = "state_too_large"
        case unsupportedMediaType = "unsupported_media_type"
        case invalidEvent = "invalid_event"
        case notAcceptable = "not_acceptable"
        case upgradeRequired = "upgrade_required"
        case badWebSocketHandshake = "bad_websocket_handshake"
        case inboxFull = "inbox_full"
        case encodingFailed = "encoding_failed"
        case `internal`
        case proxyTLSUnsupported = "proxy_tls_unsupported"
        case proxyOutcomeUnknown = "proxy_outcome_unknown"
        case proxyBadResponse = "proxy_bad_response"
        case proxyResponseTooLarge = "proxy_response_too_large"
        case unavailable
        case spinUnavailable = "spin_unavailable"
        case storageUnavailable = "storage_unavailable"
        case notReady = "not_ready"
        case spinUnrecoverable = "spin_unrecoverable"
        case spinExists = "spin_exists"
        case kindNotFound = "kind_not_found"
        case tooManySpins = "too_many_spins"
        case historyNotRetained = "history_not_retained"
        case sequenceNotFound = "sequence_not_found"
        case stateNotRestorable = "state_not_restorable"

        /// The HTTP status every error of this code is answered with (a WebSocket
        /// handshake's has its own: ``APIError/status``).
        package var status: Int {
            switch self {
            case .malformedJSON, .badRequest, .badWebSocketHandshake: 400
            case .unauthorized: 401
            case .forbidden: 403
            case .spinNotFound, .gearNotFound, .notFound, .kindNotFound, .sequenceNotFound: 404
            case .methodNotAllowed: 405
            case .notAcceptable: 406
            case .requestTimeout: 408
            case .historyNotRetained: 410
            case .spinSuspended, .spinExists, .tooManySpins, .stateNotRestorable: 409
            case .batchTooLarge, .stateTooLarge: 413
            case .unsupportedMediaType: 415
            case .misdirectedRequest: 421
            case .invalidEvent: 422
            case .upgradeRequired: 426
            case .inboxFull: 429
            case .encodingFailed, .internal: 500
            case .proxyTLSUnsupported, .proxyOutcomeUnknown, .proxyBadResponse, .proxyResponseTooLarge: 502
            case .unavailable, .spinUnavailable, .storageUnavailable, .notReady, .spinUnrecoverable: 503
            }
        }
    }

    /// The server's code of this error; nil for the HTTP parser's (`malformedRequest`).
    package var serverCode: Code? {
        switch self {
        case .malformedJSON: .malformedJSON
        case .badRequest: .badRequest
        case .malformedRequest: nil
        case .requestTimeout: .requestTimeout
        case .unauthorized: .unauthorized
        case .forbidden, .forbiddenOnSpin, .forbiddenGear, .forbiddenEverywhere, .originNotAllowed: .forbidden
        case .misdirectedRequest: .misdirectedRequest
        case .spinNotFound, .spinDeleted: .spinNotFound
        case .spinExists: .spinExists
        case .kindNotFound: .kindNotFound
        case .tooManySpins: .tooManySpins
        case .historyNotRetained: .historyNotRetained
        case .sequenceNotFound: .sequenceNotFound
        case .stateNotRestorable: .stateNotRestorable
        case .gearNotFound: .gearNotFound
        case .routeNotFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .spinSuspended: .spinSuspended
        case .batchTooLarge: .batchTooLarge
        case .stateTooLarge: .stateTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .invalidEvent: .invalidEvent
        case .notAcceptable: .notAcceptable
        case .upgradeRequired: .upgradeRequired
        case .badWebSocketHandshake: .badWebSocketHandshake
        case .inboxFull: .inboxFull
        case .encodingFailed: .encodingFailed
        case .internal: .internal
        case .proxyTLSUnsupported: .proxyTLSUnsupported
        case .proxyOutcomeUnknown: .proxyOutcomeUnknown
        case .proxyBadResponse: .proxyBadResponse
        case .proxyResponseTooLarge: .proxyResponseTooLarge
        case .unavailable, .spinStopped: .unavailable
        case .spinUnavailable, .ownerUnavailable: .spinUnavailable
        case .storageUnavailable, .storageFailing: .storageUnavailable
        case .notReady: .notReady
        case .spinUnrecoverable: .spinUnrecoverable
        }
    }

    /// A stable machine-readable code (`spin_not_found`, `invalid_event`, ...).
    package var code: String {
        if case .malformedRequest(let error, _) = self { return error.code }
        return serverCode?.rawValue ?? Code.internal.rawValue
    }

    /// The HTTP status: the code's, but for the parser's and a WebSocket handshake's own.
    package var status: Int {
        switch self {
        case .malformedRequest(let error, _): error.status
        case .badWebSocketHandshake(let error): error.httpStatus
        default: serverCode?.status ?? 500
        }
    }

    /// What is wrong, naming the field, header or limit.
    package var message: String {
        switch self {
        case .malformedJSON(let detail): "the body is not valid JSON: \(detail)"
        case .badRequest(let message), .unauthorized(let message), .forbidden(let message), .internal(let message),
             .unavailable(let message, _):
            message
        case .malformedRequest(let error, let limit):
            switch (error, limit) {
            case (.bodyTooLarge, let limit?): "the request body is larger than the limit of \(limit) bytes (limits.maxBodyBytes)"
            case (.headerSectionTooLarge, let limit?):
                "the request head is larger than the limit of \(limit) bytes (limits.maxHeaderBytes)"
            default: error.message
            }
        case .requestTimeout(let inBody): inBody ? "the request body arrived too slowly" : "the request head took too long"
        case .forbiddenOnSpin(let needed, let spin):
            "the credentials may not \(Self.action(needed)) Spin \"\(spin)\": that needs the \(needed.rawValue) permission on it"
        case .forbiddenGear(let gear): "the credentials may not read Gear \"\(gear)\": that needs the read permission on it"
        case .forbiddenEverywhere(let needed, let what):
            "the credentials may not read \(what): that needs the \(needed.rawValue) scope on every Spin (a global scope), not grants on some"
        case .originNotAllowed(let origin): "WebSocket connections from origin \(origin ?? "") are not allowed"
        case .misdirectedRequest(let host):
            "this server does not answer for Host \"\(host)\": without tokens it serves only its listen address, localhost and the names in listen.allowedHosts"
        case .spinNotFound(let name): "no Spin named \"\(name)\" is hosted here"
        case .spinDeleted(let name): "Spin \"\(name)\" was deleted"
        case .spinExists(let name, let kind?, _): "Spin \"\(name)\" exists already, of kind \"\(kind)\"; nothing changed"
        case .spinExists(let name, nil, let deleting):
            deleting ? "Spin \"\(name)\" is listed in the config's spins, and only Spins made at run time can be deleted; nothing changed"
                : "Spin \"\(name)\" is listed in the config's spins; nothing changed"
        case .kindNotFound(let kind, let known):
            "no kind named \"\(kind)\" is configured (kinds: \(known.isEmpty ? "none; add them to the config's \"kinds\"" : known.joined(separator: ", ")))"
        case .tooManySpins(let limit):
            "the server hosts \(limit) Spins, limits.maxSpins; delete some or raise the limit; nothing changed"
        case .historyNotRetained(let spin, let asked, let first?):
            "sequence \(asked) of Spin \"\(spin)\" is no longer retained: its history is kept from sequence \(first) on (storage.history)"
        case .historyNotRetained(let spin, let asked, nil):
            "sequence \(asked) of Spin \"\(spin)\" is not retained: no event of its history is kept (storage.history)"
        case .sequenceNotFound(let spin, let asked, let newest):
            "Spin \"\(spin)\" is at sequence \(newest): there is no state at sequence \(asked) (yet)"
        case .stateNotRestorable(let spin, let at, let reason):
            "the state of Spin \"\(spin)\" at sequence \(at) cannot be put back: \(reason); nothing changed"
        case .gearNotFound(let name): "no Gear named \"\(name)\" is hosted here"
        case .routeNotFound(let path): "no route for \(path)"
        case .methodNotAllowed(let method, let allowed):
            "\(method) is not allowed here; use \(allowed.joined(separator: " or "))"
        case .spinSuspended(let name):
            "Spin \"\(name)\" is suspended by its runaway guard (limits.feedbackBudget); nothing changed. POST /v1/spins/\(name)/resume runs it again"
        case .batchTooLarge(let count, let limit):
            "a batch of \(count) events is larger than the inbox of \(limit) (limits.inbox); send it in parts"
        case .stateTooLarge(let spin, let bytes, let limit):
            "the state of Spin \"\(spin)\" after this event would be \(bytes) bytes of JSON, over limits.maxStateBytes (\(limit)); nothing was applied"
        case .unsupportedMediaType(let contentType):
            "events must be sent as application/json, not \(contentType.map { "\"\($0)\"" } ?? "a body without Content-Type")"
        case .invalidEvent(let spin, let detail): "not an event of Spin \"\(spin)\": \(detail)"
        case .notAcceptable(let accept):
            "this route streams text/event-stream (or a WebSocket: Upgrade: websocket), which Accept: \(accept) does not take"
        case .upgradeRequired: "this route is a WebSocket: open it with Upgrade: websocket"
        case .badWebSocketHandshake(let error): "the WebSocket handshake is invalid: \(error)"
        case .inboxFull(let spin, let retryAfter): "the inbox of Spin \"\(spin)\" is full; retry in \(retryAfter) s"
        case .encodingFailed(let spin, let detail): "Spin \"\(spin)\" cannot encode \(detail); nothing was applied"
        case .proxyTLSUnsupported(let spin):
            "the node that owns Spin \"\(spin)\" advertises https://, and this node cannot relay over TLS yet"
        case .proxyOutcomeUnknown(let spin):
            "the node that owns Spin \"\(spin)\" gave no answer after it got the request: it may or may not have been applied; read the Spin's state before sending it again"
        case .proxyBadResponse(let spin, let switchedProtocols):
            switchedProtocols
                ? "the node that owns Spin \"\(spin)\" switched protocols unasked"
                : "the node that owns Spin \"\(spin)\" answered with a malformed response"
        case .proxyResponseTooLarge(let spin, let limit):
            "the answer of the node that owns Spin \"\(spin)\" is larger than \(limit) bytes"
        case .spinStopped(let spin, let applying):
            applying ? "Spin \"\(spin)\" stopped before applying the events" : "Spin \"\(spin)\" is stopping"
        case .spinUnavailable(let spin, let retryAfter):
            "no node serves Spin \"\(spin)\" right now (its owner is changing); nothing was applied; retry in \(retryAfter) s"
        case .ownerUnavailable(let spin): "the node that owns Spin \"\(spin)\" gave no answer; retry in 1 s"
        case .storageUnavailable(let spin, let detail, let retryAfter):
            "the storage of Spin \"\(spin)\" is failing (\(detail)); nothing was applied; retry in \(retryAfter) s"
        case .storageFailing(let spins): "the storage of \(spins.joined(separator: ", ")) is failing"
        case .notReady(let problem?): "this cluster node cannot do its part: \(problem)"
        case .notReady(nil): "the Spins are not all recovered and running"
        case .spinUnrecoverable(let name, let unrecoverable):
            "Spin \"\(name)\" could not be recovered from its storage and is not running: \(unrecoverable); nothing was applied. GET /v1/spins/\(name) shows the details"
        }
    }

    /// Extra response headers (`Retry-After`, `Allow`, `WWW-Authenticate`, `Upgrade`).
    package var headers: HTTPHeaders {
        switch self {
        case .unauthorized: ["WWW-Authenticate": #"Bearer realm="spin-server""#]
        case .methodNotAllowed(_, let allowed): ["Allow": allowed.joined(separator: ", ")]
        case .upgradeRequired: ["Upgrade": "websocket", "Connection": "Upgrade"]
        case .badWebSocketHandshake(let error): error.responseHeaders
        case .inboxFull(_, let retryAfter), .unavailable(_, let retryAfter), .spinUnavailable(_, let retryAfter),
             .storageUnavailable(_, _, let retryAfter):
            ["Retry-After": String(retryAfter)]
        case .spinStopped, .ownerUnavailable, .storageFailing, .notReady: ["Retry-After": "1"]
        default: [:]
        }
    }

    /// The events were not applied because their Spin stopped here (`spinStopped`): a
    /// cluster node sends them on to where the Spin runs next instead of answering this.
    /// Not part of what a client sees.
    package var reroutable: Bool {
        if case .spinStopped = self { return true }
        return false
    }

    private static func action(_ needed: Scope) -> String {
        switch needed {
        case .read: "read"
        case .write: "send events to"
        case .admin: "resume, create or delete"
        }
    }
}

extension APIError {
    /// 400 `bad_request` for a Spin name that is not one (a `PUT`, a fork's new name).
    static func invalidSpinName(_ name: String) -> APIError {
        .badRequest("\"\(name)\" is not a valid Spin name: use 1 to 64 letters, digits, '-', '_' or '.'")
    }
}
