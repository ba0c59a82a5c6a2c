import SpinWire

/// The head of an HTTP/1.1 response, as far as the WebSocket upgrade needs it: the status
/// and the header fields (read by SpinWire's `HTTPReceivedResponseHead`).
struct ResponseHead {
    /// The status code.
    var status: Int
    /// The header fields, in order, names as sent.
    var headers: HTTPHeaders

    /// The largest head accepted: the server's are a few hundred bytes.
    static let maxLength = 16 << 10

    /// The head at the start of `bytes` and its length (with the blank line), or nil when
    /// it has not all arrived. Throws when it is not a response head or is too long.
    static func parse(_ bytes: [UInt8]) throws(SpinClientError) -> (head: ResponseHead, length: Int)? {
        do {
            guard let (head, length) = try HTTPReceivedResponseHead.parse(bytes, limit: maxLength) else { return nil }
            return (ResponseHead(status: head.status, headers: head.fields), length)
        } catch {
            throw .unexpectedResponse(status: error.status, detail: error.detail)
        }
    }
}
