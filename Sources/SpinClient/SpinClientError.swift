import Foundation

/// Why a `SpinClient` call failed.
///
/// `rejected` carries what the server said (`{"error":{"code":..,"message":..}}`), so a
/// caller can match on the code (`spin_not_found`, `invalid_event`, `inbox_full`, ...)
/// and honour `Retry-After` on 429 and 503.
public enum SpinClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server answered with an error status and its error body. `retryAfter` is the
    /// `Retry-After` header in seconds, when the server sent one.
    case rejected(status: Int, code: String, message: String, retryAfter: Int?)
    /// An answer the API does not give: an unexpected status or a body that is not the
    /// documented JSON.
    case unexpectedResponse(status: Int, detail: String)
    /// The base URL cannot be used by this client (see `SpinClient.init`).
    case unsupportedURL(String)
    /// The server could not be reached, or the connection broke.
    case connectionFailed(String)
    /// A body or stream message did not decode as the type asked for.
    case undecodable(String)
    /// The server refused an event sent over a state stream
    /// (`{"type":"error","error":{"code":..,"message":..}}`); nothing changed.
    case eventRefused(code: String, message: String)

    /// The HTTP status, when the server answered.
    public var status: Int? {
        switch self {
        case .rejected(let status, _, _, _), .unexpectedResponse(let status, _): status
        default: nil
        }
    }

    /// The server's error code (`spin_not_found`, `invalid_event`, ...), when it sent one.
    public var code: String? {
        switch self {
        case .rejected(_, let code, _, _), .eventRefused(let code, _): code
        default: nil
        }
    }

    /// Seconds the server asked the client to wait (`Retry-After`), when it did.
    public var retryAfter: Int? {
        if case .rejected(_, _, _, let seconds) = self { seconds } else { nil }
    }

    /// True when trying again later may succeed: a broken connection, 408, 429 and 5xx
    /// (and their stream counterparts `inbox_full`, `storage_unavailable`, `unavailable`).
    /// A state stream reconnects on these and ends (throwing) on the others, such as
    /// 401, 403 and 404, which no retry changes.
    public var isRetryable: Bool {
        switch self {
        case .connectionFailed: true
        case .rejected(let status, _, _, _), .unexpectedResponse(let status, _):
            status == 408 || status == 429 || status >= 500
        case .eventRefused(let code, _): ["inbox_full", "storage_unavailable", "unavailable"].contains(code)
        case .unsupportedURL, .undecodable: false
        }
    }

    /// One line: status, code and message, or what failed.
    public var description: String {
        switch self {
        case .rejected(let status, let code, let message, let retryAfter):
            "\(status) \(code): \(message)" + (retryAfter.map { " (retry after \($0) s)" } ?? "")
        case .unexpectedResponse(let status, let detail): "unexpected response \(status): \(detail)"
        case .unsupportedURL(let text): "unsupported URL: \(text)"
        case .connectionFailed(let text): "connection failed: \(text)"
        case .undecodable(let text): "cannot decode: \(text)"
        case .eventRefused(let code, let message): "event refused, \(code): \(message)"
        }
    }
}

extension SpinClientError {
    /// The error for a non-success answer: the server's error body when it has one.
    static func from(status: Int, body: [UInt8], retryAfter: String?) -> SpinClientError {
        struct Envelope: Decodable {
            struct Detail: Decodable {
                var code: String
                var message: String
            }
            var error: Detail
        }
        let seconds = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        if let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(body)) {
            return .rejected(status: status, code: envelope.error.code, message: envelope.error.message,
                             retryAfter: seconds)
        }
        return .unexpectedResponse(status: status, detail: String(decoding: body.prefix(512), as: UTF8.self))
    }
}
