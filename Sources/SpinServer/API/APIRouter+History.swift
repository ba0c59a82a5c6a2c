import SpinWire
import SpinJSON

/// The history routes: `GET /v1/spins/{name}/history` and `GET /v1/spins/{name}?at=N`
/// (`SpinHistory`). Both read on `SpinHistory.readers`, off the network threads and below
/// their priority: a page from kept segments replays up to a few thousand events, which
/// must hold neither a thread's other connections nor the Spins' events.
extension APIRouter {
    /// `GET /v1/spins/{name}/history?from=N&limit=K&delta=json-patch`:
    /// `{"entries":[..],"next":N|null}`.
    func spinHistory(_ call: RouteCall) {
        readHistory(call, { () throws(APIError) in try HistoryQuery(call.request.target) }) { history, spin, feed, query throws(APIError) in
            let (entries, next) = try history.page(of: spin, feed: feed, from: query.from, limit: query.limit)
            return .json(200, HistoryEntries.page(entries, next: next, deltas: query.deltas))
        }
    }

    /// `GET /v1/spins/{name}?at=N`: `{"name","sequence":N,"state"}`, the state right after
    /// sequence N.
    func spinState(_ call: RouteCall, at text: String) {
        readHistory(call, { () throws(APIError) in try HistoryQuery.sequence(text, named: "at") }) { history, spin, feed, sequence throws(APIError) in
            let state = try history.state(of: spin, feed: feed, at: sequence)
            return .json(200, .object([("name", .string(spin.name)), ("sequence", .number(String(sequence))), ("state", state)]))
        }
    }

    /// What both routes do: the Spin (404, or 503 when unrecoverable), the request's
    /// parameters (`parse`, 400), then `read` on `SpinHistory.readers`.
    private func readHistory<Query: Sendable>(
        _ call: RouteCall, _ parse: () throws(APIError) -> Query,
        _ read: @escaping @Sendable (SpinHistory, any HostedSpin, SpinFeed, Query) throws(APIError) -> APIResponse
    ) {
        guard let spin = host.spin(named: String(call.name)) else { return call.fail(.spinNotFound(String(call.name))) }
        if let problem = spin.unrecoverable { return call.fail(.spinUnrecoverable(spin.name, problem)) }
        let query: Query
        do { query = try parse() } catch { return call.fail(error) }
        let feed = feeds.feed(spin.name)
        let history = self.history
        SpinHistory.readers.run {
            do throws(APIError) {
                call.reply(try read(history, spin, feed, query))
            } catch {
                call.fail(error)
            }
        }
    }
}
