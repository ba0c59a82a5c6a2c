/// An error answered to a client: `{"error":{"code":..,"message":..}}` with `status`
/// (docs/PROTOCOL.md, Errors). Each case of the server's failures maps to one of these.
///
/// A request answered with an error changes nothing: no Spin's state, no stored event.
package struct APIError: Error, Equatable, Sendable {
    package let status: Int
    /// A stable machine-readable code (`spin_not_found`, `invalid_event`, ...).
    package let code: String
    /// What is wrong, naming the field, header or limit.
    package let message: String
    /// Extra response headers (`Retry-After`, `Allow`, `WWW-Authenticate`).
    package var headers: [(String, String)] = []
    /// The events were not applied because their Spin stopped here (`spinStopped`): a
    /// cluster node sends them on to where the Spin runs next instead of answering this.
    /// Not part of what a client sees, nor of `==`.
    package var reroutable = false

    package init(status: Int, code: String, message: String, headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    package static func == (lhs: APIError, rhs: APIError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message
            && lhs.headers.elementsEqual(rhs.headers, by: ==)
    }

    package static func malformedJSON(_ detail: String) -> APIError {
        APIError(status: 400, code: "malformed_json", message: "the body is not valid JSON: \(detail)")
    }

    package static func badRequest(_ message: String) -> APIError {
        APIError(status: 400, code: "bad_request", message: message)
    }

    package static func unauthorized(_ message: String) -> APIError {
        APIError(status: 401, code: "unauthorized", message: message,
                 headers: [("WWW-Authenticate", #"Bearer realm="spin-server""#)])
    }

    package static func forbidden(_ message: String) -> APIError {
        APIError(status: 403, code: "forbidden", message: message)
    }

    /// RFC 9110 §15.5.20: this server does not answer for that authority.
    /// 403 `forbidden`: the caller lacks `needed` on Spin `spin`.
    package static func forbidden(_ needed: Scope, spin: String) -> APIError {
        let action = switch needed {
        case .read: "read"
        case .write: "send events to"
        case .admin: "resume"
        }
        return .forbidden("the credentials may not \(action) Spin \"\(spin)\": that needs the \(needed.rawValue) permission on it")
    }

    /// 403 `forbidden`: the caller may not read Gear `gear`'s stream.
    package static func forbidden(gear: String) -> APIError {
        .forbidden("the credentials may not read Gear \"\(gear)\": that needs the read permission on it")
    }

    /// 403 `forbidden`: a route about every Spin (`what`) needs a global scope.
    package static func forbidden(everywhere needed: Scope, _ what: String) -> APIError {
        .forbidden("the credentials may not read \(what): that needs the \(needed.rawValue) scope on every Spin (a global scope), not grants on some")
    }

    package static func misdirectedRequest(host: String) -> APIError {
        APIError(status: 421, code: "misdirected_request",
                 message: "this server does not answer for Host \"\(host)\": without tokens it serves only its listen address, localhost and the names in listen.allowedHosts")
    }

    package static func spinNotFound(_ name: String) -> APIError {
        APIError(status: 404, code: "spin_not_found", message: "no Spin named \"\(name)\" is hosted here")
    }

    package static func gearNotFound(_ name: String) -> APIError {
        APIError(status: 404, code: "gear_not_found", message: "no Gear named \"\(name)\" is hosted here")
    }

    package static func routeNotFound(_ path: String) -> APIError {
        APIError(status: 404, code: "not_found", message: "no route for \(path)")
    }

    package static func methodNotAllowed(_ method: String, allowed: [String]) -> APIError {
        APIError(status: 405, code: "method_not_allowed",
                 message: "\(method) is not allowed here; use \(allowed.joined(separator: " or "))",
                 headers: [("Allow", allowed.joined(separator: ", "))])
    }

    package static func batchTooLarge(count: Int, limit: Int) -> APIError {
        APIError(status: 413, code: "batch_too_large",
                 message: "a batch of \(count) events is larger than the inbox of \(limit) (limits.inbox); send it in parts")
    }

    package static func unsupportedMediaType(_ contentType: String?) -> APIError {
        APIError(status: 415, code: "unsupported_media_type",
                 message: "events must be sent as application/json, not \(contentType.map { "\"\($0)\"" } ?? "a body without Content-Type")")
    }

    package static func spinSuspended(_ name: String) -> APIError {
        APIError(status: 409, code: "spin_suspended",
                 message: "Spin \"\(name)\" is suspended by its runaway guard (limits.feedbackBudget); nothing changed. POST /v1/spins/\(name)/resume runs it again")
    }

    package static func invalidEvent(spin: String, _ detail: String) -> APIError {
        APIError(status: 422, code: "invalid_event", message: "not an event of Spin \"\(spin)\": \(detail)")
    }

    package static func inboxFull(spin: String, retryAfter: Int) -> APIError {
        APIError(status: 429, code: "inbox_full",
                 message: "the inbox of Spin \"\(spin)\" is full; retry in \(retryAfter) s",
                 headers: [("Retry-After", String(retryAfter))])
    }

    /// 503 `unavailable`: the Spin stopped before applying the events (the server shuts
    /// down, or in a cluster the Spin moves to another node, which then takes them).
    package static func spinStopped(_ message: String) -> APIError {
        var error = unavailable(message)
        error.reroutable = true
        return error
    }

    package static func unavailable(_ message: String, retryAfter: Int = 1) -> APIError {
        APIError(status: 503, code: "unavailable", message: message, headers: [("Retry-After", String(retryAfter))])
    }

    /// The Spin's storage cannot write: nothing was applied; retry once it works again.
    package static func storageUnavailable(spin: String, _ detail: String, retryAfter: Int = 1) -> APIError {
        APIError(status: 503, code: "storage_unavailable",
                 message: "the storage of Spin \"\(spin)\" is failing (\(detail)); nothing was applied; retry in \(retryAfter) s",
                 headers: [("Retry-After", String(retryAfter))])
    }

    /// The Spin's event or state does not encode as JSON (a bug in its type's `encode(to:)`,
    /// or a value its schema refuses): nothing was applied or stored.
    package static func encodingFailed(spin: String, _ detail: String) -> APIError {
        APIError(status: 500, code: "encoding_failed",
                 message: "Spin \"\(spin)\" cannot encode \(detail); nothing was applied")
    }

    /// A Spin whose stored history could not be replayed at start-up, isolated
    /// (`storage.onCorruption: "isolate"`): an operator has to act; retrying does not help.
    package static func spinUnrecoverable(_ name: String, _ unrecoverable: Unrecoverable) -> APIError {
        APIError(status: 503, code: "spin_unrecoverable",
                 message: "Spin \"\(name)\" could not be recovered from its storage and is not running: \(unrecoverable); nothing was applied. GET /v1/spins/\(name) shows the details")
    }

    package static func `internal`(_ message: String) -> APIError {
        APIError(status: 500, code: "internal", message: message)
    }
}
