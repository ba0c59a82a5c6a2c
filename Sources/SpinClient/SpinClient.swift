import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client for a Spin server: typed event POSTs, state reads and a state stream that
/// reconnects by itself.
///
/// ```swift
/// let client = SpinClient(baseURL: URL(string: "http://127.0.0.1:8080")!)
/// let applied = try await client.post([Levels.Event.set(left: 1, right: 1)], to: "levels",
///                                     waitingFor: Levels.State.self)
/// for try await update in client.states(of: "levels", as: Levels.State.self) {
///     print(update.sequence, update.state)
/// }
/// ```
///
/// Requests go through `URLSession` (http and https). The state stream is a WebSocket on
/// the package's own codec over a plain TCP socket, because FoundationNetworking's
/// WebSocket task needs a libcurl built with WebSocket support, which Linux distributions
/// do not ship: it supports `http://` base URLs (streams over `ws://`), not `https://`.
public struct SpinClient: Sendable {
    /// The server's root, such as `http://127.0.0.1:8080`; API paths are appended to it.
    public let baseURL: URL
    /// The bearer token sent with every request and stream, if it was given as a fixed
    /// one (`init(baseURL:token:...)`); nil with a token provider.
    public let token: String?
    /// Where tokens come from when they expire (JWTs): called for every request and
    /// connection, and by an open stream shortly before its token expires.
    let tokenProvider: (@Sendable () async throws -> String)?
    /// How state streams connect, time out and reconnect.
    public var streamOptions: StreamOptions
    let session: URLSession

    /// A client for the server at `baseURL` (`http`, or `https` for requests only),
    /// sending `token` as `Authorization: Bearer` when set.
    public init(baseURL: URL, token: String? = nil, streamOptions: StreamOptions = StreamOptions(),
                session: URLSession = .shared) {
        self.baseURL = baseURL
        self.token = token
        self.tokenProvider = nil
        self.streamOptions = streamOptions
        self.session = session
    }

    /// A client whose credentials expire (JWTs): `tokenProvider` gives the token to send
    /// and is asked again for every request and every stream connection; an open state
    /// stream asks it for a new token shortly before the one it runs on expires (the
    /// token's `exp`) and hands it to the server in-band (`{"type":"refresh",..}`), so the
    /// stream is not closed (4001). If that fails, or the server closes the stream anyway,
    /// the stream reconnects with a new token and resumes where it was. The provider
    /// caches as it sees fit: it is called often.
    public init(baseURL: URL, tokenProvider: @escaping @Sendable () async throws -> String,
                streamOptions: StreamOptions = StreamOptions(), session: URLSession = .shared) {
        self.baseURL = baseURL
        self.token = nil
        self.tokenProvider = tokenProvider
        self.streamOptions = streamOptions
        self.session = session
    }

    /// The token to send now: the fixed one, or the provider's.
    func currentToken() async throws -> String? {
        guard let tokenProvider else { return token }
        do {
            return try await tokenProvider()
        } catch {
            throw SpinClientError.connectionFailed("the token provider failed: \(error)")
        }
    }

    /// Posts `events` to the Spin named `spin`; they are applied in order, all or none.
    /// Returns once they are applied and durable (202).
    public func post<Event: Encodable>(_ events: [Event], to spin: String) async throws -> Accepted {
        try await send(events, to: spin, wait: false, expecting: 202)
    }

    /// Posts `events` to the Spin named `spin` and waits for the state they lead to
    /// (`?wait=true`, 200), decoded as `State`.
    public func post<Event: Encodable, State: Decodable>(
        _ events: [Event], to spin: String, waitingFor stateType: State.Type
    ) async throws -> Applied<State> {
        try await send(events, to: spin, wait: true, expecting: 200)
    }

    /// The Spin named `spin` now: its sequence, status and state decoded as `State`.
    public func state<State: Decodable>(of spin: String, as stateType: State.Type) async throws -> SpinSnapshot<State> {
        let request = try await makeRequest(path: ["v1", "spins", spin], query: [])
        return try await perform(request, expecting: 200)
    }

    /// The Spin named `spin`'s state right after sequence `sequence` (`GET
    /// /v1/spins/{name}?at=N`), decoded as `State`. Throws `SpinClientError.server` with
    /// `history_not_retained` (410) for a sequence older than the history the server keeps
    /// (`storage.history`; the message names the first one held), `sequence_not_found`
    /// (404) for one beyond the Spin's sequence.
    public func state<State: Decodable>(of spin: String, at sequence: UInt64, as stateType: State.Type) async throws -> SpinStateAt<State> {
        let request = try await makeRequest(path: ["v1", "spins", spin], query: [URLQueryItem(name: "at", value: String(sequence))])
        return try await perform(request, expecting: 200)
    }

    /// A page of the Spin named `spin`'s history, oldest first (`GET
    /// /v1/spins/{name}/history`): from sequence `from` (nil: the oldest the server
    /// keeps), at most `limit` entries (1 to 1000; the server's default, 100, when nil),
    /// each state decoded as `State`. Ask for the next page `from` its `next`.
    ///
    /// ```swift
    /// var from: UInt64?
    /// repeat {
    ///     let page = try await client.history(of: "door-7", from: from, as: Door.State.self)
    ///     for entry in page.entries { print(entry.sequence, entry.at ?? "-", entry.sub ?? "-", entry.state) }
    ///     from = page.next
    /// } while from != nil
    /// ```
    public func history<State: Decodable>(of spin: String, from: UInt64? = nil, limit: Int? = nil,
                                          as stateType: State.Type) async throws -> HistoryPage<State> {
        var query: [URLQueryItem] = []
        if let from { query.append(URLQueryItem(name: "from", value: String(from))) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        let request = try await makeRequest(path: ["v1", "spins", spin, "history"], query: query)
        return try HistoryPage<State>.decode(Array(try await exchange(request, expecting: [200]).data))
    }

    /// Moves the Spin named `spin` back to its state right after sequence `at` (`POST
    /// /v1/spins/{name}/restore`, `admin`): recorded as a new event of its history,
    /// `{"type":"spin.restored","at":N}`, whose sequence the answer holds; its streams get
    /// a snapshot of a new epoch. Answered once durable. Throws `SpinClientError.server`
    /// with `spin_suspended` (409) for a suspended Spin, `history_not_retained` (410) or
    /// `sequence_not_found` (404) for an `at` outside its history, `state_not_restorable`
    /// (409) for a state of another version of its definition.
    ///
    /// ```swift
    /// let restored = try await client.restore("door-7", at: 41, as: Door.State.self)
    /// print(restored.sequence, restored.state)   // the restore's own sequence, the state of 41
    /// ```
    public func restore<State: Decodable>(_ spin: String, at sequence: UInt64, as stateType: State.Type) async throws -> SpinRestored<State> {
        try await postBody(["at": .number(sequence)], to: ["v1", "spins", spin, "restore"], expecting: 200)
    }

    /// Makes Spin `name`, of the same kind as the Spin named `spin`, in that Spin's state
    /// right after sequence `at` (`POST /v1/spins/{name}/fork`, `admin` on both names): its
    /// history begins at sequence 1 with `{"type":"spin.forked","from":..,"at":N}`. Answered
    /// once durable. Throws `spin_exists` (409) for a name in use, `state_not_restorable`
    /// (409) when the kind is not made at run time or `name` is not one of its names.
    ///
    /// ```swift
    /// let fork = try await client.fork("door-7", at: 41, as: "door-7-what-if")
    /// print(fork.name, fork.sequence)   // door-7-what-if 1
    /// ```
    public func fork(_ spin: String, at sequence: UInt64, as name: String) async throws -> SpinForked {
        try await postBody(["at": .number(sequence), "name": .text(name)], to: ["v1", "spins", spin, "fork"], expecting: 201)
    }

    /// A member of a restore's or a fork's body.
    private enum BodyValue: Encodable {
        case number(UInt64)
        case text(String)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .number(let value): try container.encode(value)
            case .text(let value): try container.encode(value)
            }
        }
    }

    private func postBody<Answer: Decodable>(_ body: [String: BodyValue], to path: [String], expecting status: Int) async throws -> Answer {
        var request = try await makeRequest(path: path, query: [])
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONEncoder().encode(body)
        return try await perform(request, expecting: status)
    }

    /// A page of the Spins the token may read, in name order (UTF-8 bytes): those whose
    /// names start with `prefix` and sort after `after` (the `next` of the page before),
    /// at most `limit` (1 to 1000; the server's default, 100, when nil).
    ///
    /// ```swift
    /// var after: String?
    /// repeat {
    ///     let page = try await client.spins(prefix: "door-", after: after)
    ///     for spin in page.spins { print(spin.name, spin.status) }
    ///     after = page.next
    /// } while after != nil
    /// ```
    public func spins(prefix: String = "", after: String? = nil, limit: Int? = nil) async throws -> SpinPage {
        var query: [URLQueryItem] = []
        if !prefix.isEmpty { query.append(URLQueryItem(name: "prefix", value: prefix)) }
        if let after { query.append(URLQueryItem(name: "after", value: after)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        let request = try await makeRequest(path: ["v1", "spins"], query: query)
        return try await perform(request, expecting: 200)
    }

    /// Makes the Spin named `spin` of the configured kind `kind` (`PUT /v1/spins/{name}`,
    /// `admin` on the name): `.created` the first time, `.existed` when it exists with that
    /// kind already; throws `SpinClientError.server` with `spin_exists` when it exists with
    /// another kind (or is configured), `kind_not_found` for a kind the server does not have.
    ///
    /// ```swift
    /// let made = try await client.create("feature-42", kind: "feature")
    /// print(made.outcome, made.sequence)   // created 0
    /// ```
    public func create(_ spin: String, kind: String) async throws -> SpinMade {
        var request = try await makeRequest(path: ["v1", "spins", spin], query: [])
        request.httpMethod = "PUT"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONEncoder().encode(["kind": kind])
        let (data, status) = try await exchange(request, expecting: [201, 200])
        var made: SpinMade = try decode(data)
        made.outcome = status == 201 ? .created : .existed
        return made
    }

    /// Deletes the Spin named `spin`, made at run time, with its history (`DELETE
    /// /v1/spins/{name}`, `admin`): its streams close with 4004. Returns the sequence it
    /// had. Throws `spin_not_found` when there is none, `spin_exists` for a configured Spin.
    @discardableResult
    public func delete(_ spin: String) async throws -> SpinMade {
        var request = try await makeRequest(path: ["v1", "spins", spin], query: [])
        request.httpMethod = "DELETE"
        var deleted: SpinMade = try await perform(request, expecting: 200)
        deleted.outcome = .deleted
        return deleted
    }

    private func send<Event: Encodable, Answer: Decodable>(
        _ events: [Event], to spin: String, wait: Bool, expecting status: Int
    ) async throws -> Answer {
        var request = try await makeRequest(path: ["v1", "spins", spin, "events"],
                                            query: wait ? [URLQueryItem(name: "wait", value: "true")] : [])
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        do {
            request.httpBody = try JSONEncoder().encode(events)
        } catch {
            throw SpinClientError.undecodable("the events do not encode as JSON: \(error)")
        }
        return try await perform(request, expecting: status)
    }

    /// `baseURL` + the path segments (each percent-encoded) + the query.
    func makeURL(path: [String], query: [URLQueryItem]) -> URL {
        var url = baseURL
        for segment in path { url.appendPathComponent(segment) }
        guard !query.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.queryItems = query
        return components.url ?? url
    }

    private func makeRequest(path: [String], query: [URLQueryItem]) async throws -> URLRequest {
        var request = URLRequest(url: makeURL(path: path, query: query))
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let token = try await currentToken() { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    private func perform<Answer: Decodable>(_ request: URLRequest, expecting expected: Int) async throws -> Answer {
        try decode(try await exchange(request, expecting: [expected]).data)
    }

    /// The body of the answer to `request`, when its status is one of `expected`.
    private func exchange(_ request: URLRequest, expecting expected: Set<Int>) async throws -> (data: Data, status: Int) {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw SpinClientError.connectionFailed("\(request.url?.absoluteString ?? ""): \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw SpinClientError.unexpectedResponse(status: 0, detail: "not an HTTP response")
        }
        guard expected.contains(http.statusCode) else {
            throw SpinClientError.from(status: http.statusCode, body: Array(data),
                                       retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
        }
        return (data, http.statusCode)
    }

    private func decode<Answer: Decodable>(_ data: Data) throws -> Answer {
        do {
            return try JSONDecoder().decode(Answer.self, from: data)
        } catch {
            throw SpinClientError.undecodable("\(Answer.self) from \(String(decoding: data.prefix(512), as: UTF8.self)): \(error)")
        }
    }
}
