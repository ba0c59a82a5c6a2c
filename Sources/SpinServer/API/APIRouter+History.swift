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
        guard let spin = host.spin(named: String(call.name)) else { return call.fail(.spinNotFound(String(call.name))) }
        if let problem = spin.unrecoverable { return call.fail(.spinUnrecoverable(spin.name, problem)) }
        let query: HistoryQuery
        do { query = try HistoryQuery(call.request.target) } catch { return call.fail(error) }
        let feed = feeds.feed(spin.name)
        let history = self.history
        SpinHistory.readers.run {
            do throws(APIError) {
                let (entries, next) = try history.page(of: spin, feed: feed, from: query.from, limit: query.limit)
                call.reply(.json(200, HistoryEntries.page(entries, next: next, deltas: query.deltas)))
            } catch {
                call.fail(error)
            }
        }
    }

    /// `GET /v1/spins/{name}?at=N`: `{"name","sequence":N,"state"}`, the state right after
    /// sequence N.
    func spinState(_ call: RouteCall, at text: String) {
        guard let spin = host.spin(named: String(call.name)) else { return call.fail(.spinNotFound(String(call.name))) }
        if let problem = spin.unrecoverable { return call.fail(.spinUnrecoverable(spin.name, problem)) }
        let sequence: UInt64
        do { sequence = try HistoryQuery.sequence(text, named: "at") } catch { return call.fail(error) }
        let feed = feeds.feed(spin.name)
        let history = self.history
        SpinHistory.readers.run {
            do throws(APIError) {
                let state = try history.state(of: spin, feed: feed, at: sequence)
                call.reply(.json(200, .object([("name", .string(spin.name)), ("sequence", .number(String(sequence))),
                                               ("state", state)])))
            } catch {
                call.fail(error)
            }
        }
    }
}
