import SpinWire
import SpinJSON

/// The query of `GET /v1/spins`: `prefix` (names that start with it), `after` (names
/// after it, the `next` of the page before) and `limit` (1 to `maximumLimit`,
/// `defaultLimit` when absent). Each is optional (empty `prefix` or `after`: none); a value that is not one a Spin name
/// could hold, or a limit out of range, is a 400 naming the parameter.
struct SpinListQuery: Equatable {
    static let defaultLimit = 100
    static let maximumLimit = 1000

    var prefix = ""
    var after: String?
    var limit = defaultLimit

    init(prefix: String = "", after: String? = nil, limit: Int = defaultLimit) {
        self.prefix = prefix
        self.after = after
        self.limit = limit
    }

    init(_ target: HTTPRequestTarget) throws(APIError) {
        if let prefix = target.queryParameter("prefix") {
            guard prefix.isEmpty || SpinHost.isNameText(prefix) else {
                throw .badRequest("query parameter prefix: \(Self.quoted(prefix)) cannot start a Spin name (1 to 64 letters, digits, '-', '_' or '.')")
            }
            self.prefix = prefix
        }
        // An empty `after` is none: the first page.
        if let after = target.queryParameter("after"), !after.isEmpty {
            guard SpinHost.isNameText(after) else {
                throw .badRequest("query parameter after: \(Self.quoted(after)) is not a Spin name (1 to 64 letters, digits, '-', '_' or '.'): give the \"next\" of the page before")
            }
            self.after = after
        }
        if let text = target.queryParameter("limit") {
            guard text.utf8.count <= 4, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let limit = Int(text),
                  (1...Self.maximumLimit).contains(limit) else {
                throw .badRequest("query parameter limit: \(Self.quoted(text)) is not a whole number from 1 to \(Self.maximumLimit)")
            }
            self.limit = limit
        }
    }

    /// The value as a JSON string, cut to 80 characters, for a message.
    private static func quoted(_ text: String) -> String {
        let cut = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return JSONValue.string(cut).text
    }
}
