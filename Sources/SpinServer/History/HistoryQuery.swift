import SpinWire

/// The query of `GET /v1/spins/{name}/history`: `from` (the first sequence wanted; nil:
/// the oldest held), `limit` (1...1000, default 100) and `delta=json-patch`. Refuses
/// anything else it is given, naming it (400 `bad_request`). Pure: tested without sockets.
package struct HistoryQuery: Equatable, Sendable {
    package var from: UInt64?
    package var limit: Int
    package var deltas: Bool

    /// The most entries a page holds.
    package static let maximumLimit = 1000
    package static let defaultLimit = 100

    package init(from: UInt64? = nil, limit: Int = HistoryQuery.defaultLimit, deltas: Bool = false) {
        self.from = from
        self.limit = limit
        self.deltas = deltas
    }

    package init(_ target: HTTPRequestTarget) throws(APIError) {
        self.init()
        for item in target.queryItems {
            switch item.name {
            case "from": from = try Self.sequence(item.value, named: "from")
            case "limit":
                let text = item.value ?? ""
                guard let count = Int(text), count >= 1, count <= Self.maximumLimit else {
                    throw .badRequest("limit must be a whole number from 1 to \(Self.maximumLimit), not \"\(text)\"")
                }
                limit = count
            case "delta":
                guard item.value == "json-patch" else {
                    throw .badRequest("delta must be \"json-patch\" (the one delta format offered), not \"\(item.value ?? "")\"")
                }
                deltas = true
            case "access_token": continue
            default: throw .badRequest("unknown query parameter \"\(item.name)\" (use from, limit and delta)")
            }
        }
    }

    /// A sequence given as `name`: a whole number from 0.
    package static func sequence(_ value: String?, named name: String) throws(APIError) -> UInt64 {
        let text = value ?? ""
        guard let sequence = UInt64(sequenceText: text) else {
            throw .badRequest("\(name) must be a sequence, a whole number from 0, not \"\(text)\"")
        }
        return sequence
    }
}
