import SpinWire

/// Every route of the HTTP API, in one table: routing, the metrics' `route` label and
/// the OpenAPI document's paths all come from it (a test holds the document to it).
///
/// A path is matched once per request, on its UTF-8 bytes, without splitting it into
/// strings; the `{name}` segment comes back as a substring of the path.
package enum Route: CaseIterable, Sendable {
    case dashboard
    case healthz
    case readyz
    case openAPI
    case metrics
    case spins
    case spin
    /// `PUT` on a Spin's path: makes the Spin, of a configured kind.
    case spinCreate
    /// `DELETE` on a Spin's path: removes the Spin and its history.
    case spinDelete
    case spinEvents
    case spinResume
    case spinStream
    case spinSchema
    /// A Spin's history: entries with the event, the state after it, who sent it and when.
    case spinHistory
    /// Moves a Spin back to its state at a sequence of its history, as a new transition.
    case spinRestore
    /// Makes a new Spin of a Spin's kind in its state at a sequence of its history.
    case spinFork
    case gears
    case gearStream
    /// The nodes of the cluster and the Spins each owns.
    case cluster
    /// Only with `testing.echoEndpoint`; not in the OpenAPI document.
    case echo

    /// The path template, as metrics label requests and the OpenAPI document lists it
    /// (the routes of one path and different methods share it).
    package var template: String {
        switch self {
        case .dashboard: "/"
        case .healthz: "/healthz"
        case .readyz: "/readyz"
        case .openAPI: "/openapi.json"
        case .metrics: "/metrics"
        case .spins: "/v1/spins"
        case .spin, .spinCreate, .spinDelete: "/v1/spins/{name}"
        case .spinEvents: "/v1/spins/{name}/events"
        case .spinResume: "/v1/spins/{name}/resume"
        case .spinStream: "/v1/spins/{name}/stream"
        case .spinSchema: "/v1/spins/{name}/schema"
        case .spinHistory: "/v1/spins/{name}/history"
        case .spinRestore: "/v1/spins/{name}/restore"
        case .spinFork: "/v1/spins/{name}/fork"
        case .gears: "/v1/gears"
        case .gearStream: "/v1/gears/{name}/stream"
        case .cluster: "/v1/cluster"
        case .echo: "/v1/echo"
        }
    }

    /// The route of the same path answering `method`, when another one does (`PUT` and
    /// `DELETE` on a Spin's path); nil otherwise.
    package func answering(_ method: HTTPMethod) -> Route? {
        guard self == .spin || self == .spinCreate || self == .spinDelete else { return nil }
        switch method {
        case .put: return .spinCreate
        case .delete: return .spinDelete
        case .get, .head: return .spin
        default: return nil
        }
    }

    /// The one method the route answers (GET routes answer HEAD too, but streams).
    package var method: HTTPMethod {
        switch self {
        case .spinEvents, .spinResume, .spinRestore, .spinFork: .post
        case .spinCreate: .put
        case .spinDelete: .delete
        default: .get
        }
    }

    /// What a caller must be allowed, when authentication is configured.
    package enum Access: Sendable, Equatable {
        /// Anyone: the dashboard (a login page of sorts, its API calls carry the token)
        /// and the probes.
        case open
        /// A global scope: routes about every Spin at once (`/metrics`, `/v1/cluster`).
        case everywhere(Scope)
        /// A permission on the route's Spin (`{name}`).
        case spin(Scope)
        /// Reading the route's Gear (`{name}`).
        case gear
        /// Any authenticated caller; the answer lists only what it may read.
        case listing
    }

    /// What the route needs (docs: Identities and permissions).
    package var access: Access {
        switch self {
        case .dashboard, .healthz, .readyz, .openAPI: .open
        case .metrics, .cluster, .echo: .everywhere(.read)
        case .spins, .gears: .listing
        case .spin, .spinStream, .spinSchema, .spinHistory: .spin(.read)
        case .spinEvents: .spin(.write)
        case .spinResume, .spinCreate, .spinDelete, .spinRestore, .spinFork: .spin(.admin)
        case .gearStream: .gear
        }
    }

    /// Whether the route upgrades to a stream (WebSocket, or SSE): it takes no HEAD.
    package var streams: Bool {
        switch self {
        case .spinStream, .gearStream, .echo: true
        default: false
        }
    }

    /// Whether the route reads, makes, deletes or changes one Spin, so that in a cluster
    /// the node owning the Spin's partition serves it (a Spin made at run time is only
    /// found there, its schema included).
    package var concernsOneSpin: Bool {
        switch self {
        case .spin, .spinCreate, .spinDelete, .spinEvents, .spinResume, .spinStream, .spinSchema, .spinHistory, .spinRestore,
             .spinFork: true
        default: false
        }
    }

    /// The methods an `Allow` header lists for the route.
    package var allowedMethods: [HTTPMethod] {
        if answering(.get) != nil { return [.get, .head, .put, .delete] }
        return method == .get && !streams ? [.get, .head] : [method]
    }

    /// The route of `path` and its `{name}` segment (empty for routes without one); nil
    /// for a path no route has.
    package static func match(_ path: String) -> (route: Route, name: Substring)? {
        var path = path
        return path.withUTF8 { bytes -> (route: Route, name: Range<Int>)? in
            match(bytes)
        }.map { (route, range) in
            let start = path.utf8.index(path.utf8.startIndex, offsetBy: range.lowerBound)
            let end = path.utf8.index(path.utf8.startIndex, offsetBy: range.upperBound)
            return (route, path[start..<end])
        }
    }

    /// The metrics label of a matched path: its route's template, "other" for none.
    package static func label(_ matched: (route: Route, name: Substring)?) -> String {
        matched?.route.template ?? "other"
    }

    /// The routes without a name, compared whole.
    private static let fixed: [Route] = [.dashboard, .healthz, .readyz, .openAPI, .metrics, .spins, .gears, .cluster,
                                           .echo]

    /// The routes with a name: `prefix`, the name, then one of the suffixes.
    private static let named: [(prefix: StaticString, routes: [(suffix: StaticString, route: Route)])] = [
        ("/v1/spins/", [("", .spin), ("/events", .spinEvents), ("/resume", .spinResume), ("/stream", .spinStream),
                        ("/schema", .spinSchema), ("/history", .spinHistory), ("/restore", .spinRestore),
                        ("/fork", .spinFork)]),
        ("/v1/gears/", [("/stream", .gearStream)]),
    ]

    /// The route, with the byte range of the name.
    private static func match(_ path: UnsafeBufferPointer<UInt8>) -> (route: Route, name: Range<Int>)? {
        // Fixed paths first: one comparison each.
        for route in fixed where path.count == route.template.utf8.count && path.elementsEqual(route.template.utf8) {
            return (route, 0..<0)
        }
        for (prefix, routes) in named where hasPrefix(path, prefix) {
            let nameStart = prefix.utf8CodeUnitCount
            // The name runs to the next `/` or the end (an empty one names no Spin: 404).
            var nameEnd = nameStart
            while nameEnd < path.count, path[nameEnd] != UInt8(ascii: "/") { nameEnd += 1 }
            let rest = UnsafeBufferPointer(rebasing: path[nameEnd...])
            for (suffix, route) in routes where rest.elementsEqual(UnsafeBufferPointer(start: suffix.utf8Start,
                                                                                        count: suffix.utf8CodeUnitCount)) {
                return (route, nameStart..<nameEnd)
            }
            return nil
        }
        return nil
    }

    private static func hasPrefix(_ path: UnsafeBufferPointer<UInt8>, _ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        return path.count >= count
            && path.prefix(count).elementsEqual(UnsafeBufferPointer(start: prefix.utf8Start, count: count))
    }
}
