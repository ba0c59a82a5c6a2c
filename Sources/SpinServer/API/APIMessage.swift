import SpinWire

/// A request as the API layer sees it: what the HTTP layer parsed, nothing of sockets.
package struct APIRequest: Sendable {
    package var method: String
    /// The path as the client sent it (Spin and Gear names need no percent-encoding).
    package var path: String
    /// Query items in order (`wait=true`).
    package var query: [(name: String, value: String)]
    /// Header fields in order; names compared case-insensitively.
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(method: String, path: String, query: [(name: String, value: String)] = [],
                 headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name` (case-insensitive).
    package func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    package func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}

/// A response as the API layer makes it; the HTTP layer adds `Date`, `Content-Length`
/// and `Connection`.
package struct APIResponse: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body (members in the order given).
    package static func json(_ status: Int, _ value: JSONValue, headers: [(name: String, value: String)] = []) -> APIResponse {
        APIResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: value.bytes)
    }

    package static func error(_ error: APIError) -> APIResponse {
        .json(error.status, .object([("error", .object([
            ("code", .string(error.code)),
            ("message", .string(error.message)),
        ]))]), headers: error.headers.map { (name: $0.0, value: $0.1) })
    }

    package func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }
}

extension String {
    /// ASCII case-insensitive comparison, as HTTP field names and tokens compare.
    package func caseInsensitiveEquals(_ other: String) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A)
        }
    }
}
