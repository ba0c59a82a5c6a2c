/// A status code with its reason phrase (RFC 9110 §15).
package struct HTTPStatus: Sendable, Hashable, CustomStringConvertible {
    package var code: Int
    /// The reason phrase; clients ignore it (RFC 9112 §4), it is for people reading traces.
    package var reasonPhrase: String

    package init(code: Int, reasonPhrase: String? = nil) {
        self.code = code
        self.reasonPhrase = reasonPhrase ?? Self.standardReasonPhrase(code)
    }

    package var description: String { "\(code) \(reasonPhrase)" }

    /// RFC 9110 §15.1: 1xx, 204 and 304 responses never have content (and
    /// §8.6: no Content-Length in 1xx or 204).
    package var allowsContent: Bool { !(100..<200).contains(code) && code != 204 && code != 304 }

    package static let `continue` = HTTPStatus(code: 100)
    package static let switchingProtocols = HTTPStatus(code: 101)
    package static let ok = HTTPStatus(code: 200)
    package static let accepted = HTTPStatus(code: 202)
    package static let noContent = HTTPStatus(code: 204)
    package static let notModified = HTTPStatus(code: 304)
    package static let badRequest = HTTPStatus(code: 400)
    package static let notFound = HTTPStatus(code: 404)

    package static func standardReasonPhrase(_ code: Int) -> String {
        switch code {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: ""
        }
    }
}

/// The status and header fields of a response. `Content-Length`, `Transfer-Encoding`,
/// `Connection` and `Date` are written by `HTTPResponseWriter` from the framing it chooses;
/// any of them set here is replaced.
package struct HTTPResponseHead: Sendable, Equatable {
    package var status: HTTPStatus
    package var headers: HTTPHeaders

    package init(status: HTTPStatus, headers: HTTPHeaders = [:]) {
        self.status = status
        self.headers = headers
    }
}
