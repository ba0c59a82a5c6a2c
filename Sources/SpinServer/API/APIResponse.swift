import SpinWire
import SpinJSON

/// A response as the API layer makes it; the HTTP layer adds `Date`, `Content-Length`
/// and `Connection`.
package struct APIResponse: Sendable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: [UInt8]
    /// The connection closes after this answer (a refused WebSocket handshake: what the
    /// client sends next would be frames, not a request).
    package var closesConnection = false
    /// The error this response answers, when it is one: the HTTP layer writes its body
    /// again with the request's ID (`RequestObservers.body(of:)`).
    package var error: APIError?
    /// When an accepted event request passed its stages (`EventStageHistogram`); nil for
    /// every other answer.
    package var stages: EventStages?

    package init(status: Int, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// This answer, closing the connection after it.
    package func closingConnection() -> APIResponse {
        var response = self
        response.closesConnection = true
        return response
    }

    /// A JSON body (members in the order given), with `Content-Type` first and room for
    /// the `X-Request-Id` the HTTP layer adds.
    package static func json(_ status: Int, _ value: JSONValue, headers: HTTPHeaders = [:]) -> APIResponse {
        var fields = HTTPHeaders(minimumCapacity: headers.count + 2)
        fields.append(name: "Content-Type", value: "application/json")
        fields.append(contentsOf: headers)
        return APIResponse(status: status, headers: fields, body: value.bytes)
    }

    /// `{"error":{"code":..,"message":..}}`, with `"requestId"` after them when given.
    package static func error(_ error: APIError, requestID: String? = nil) -> APIResponse {
        var members: [(String, JSONValue)] = [("code", .string(error.code)), ("message", .string(error.message))]
        if let requestID { members.append(("requestId", .string(requestID))) }
        var response = APIResponse.json(error.status, .object([("error", .object(members))]), headers: error.headers)
        response.error = error
        return response
    }
}
