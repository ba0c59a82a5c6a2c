import SpinWire

extension APIRouter {
    /// Whether the request may reach any route at all, in the order a refusal is found:
    /// its `Host` (421), its route (404) and method (405), its credentials (401), and
    /// what they allow (403). The route, its `{name}` and the caller when it passes.
    /// `identity`: the caller, when the HTTP layer identified it already (`identify`).
    func admit(_ request: HTTPRequest, matched: (route: Route, name: Substring)?,
               identity: Result<Identity, APIError>?) -> Result<(route: Route, name: Substring, caller: Identity), APIError> {
        if let misdirected = misdirection(of: request) { return .failure(misdirected) }
        let route: Route, name: Substring
        switch resolve(request, matched: matched) {
        case .success(let resolved): (route, name) = resolved
        case .failure(let error): return .failure(error)
        }
        return authorize(request, route: route, name: name, identity: identity).map { (route, name, $0) }
    }

    /// The host policy (DNS rebinding): 421 when this server does not answer for the
    /// request's `Host`. Every route, streams and the dashboard included: a rebound page
    /// must get nothing. (The host is an absolute-form target's authority when there is one.)
    func misdirection(of request: HTTPRequest) -> APIError? {
        let hostHeader: String? = request.target.authority != nil ? request.host : request.headers["Host"]
        return hosts.allows(host: hostHeader) ? nil : .misdirectedRequest(host: hostHeader ?? "")
    }

    /// The route of a matched path and its method: 404 without one (and for `/v1/echo`
    /// unless `echoEndpoint`), 405 with `Allow` for a method the route does not answer.
    /// GET routes answer HEAD too, but streams.
    func resolve(_ request: HTTPRequest, matched: (route: Route, name: Substring)?)
        -> Result<(route: Route, name: Substring), APIError> {
        guard let matched, matched.route != .echo || echoEndpoint else {
            return .failure(.routeNotFound(request.target.path))
        }
        var route = matched.route
        let name = matched.name
        if let answering = route.answering(request.method) { route = answering }
        let method = request.method == .head && !route.streams ? .get : request.method
        guard method == route.method else {
            return .failure(.methodNotAllowed(request.method.rawValue, allowed: route.allowedMethods.map(\.rawValue)))
        }
        return .success((route, name))
    }

    /// Authentication, then authorization: the caller (`identity`, or who the request's
    /// credentials name: 401 when they do not hold), refused 403 when its permissions do
    /// not allow `route` about `name`.
    func authorize(_ request: HTTPRequest, route: Route, name: Substring,
                   identity: Result<Identity, APIError>?) -> Result<Identity, APIError> {
        (identity ?? identify(request, route: route)).flatMap { caller in
            Self.refusal(of: caller.permissions, route, name).map { .failure($0) } ?? .success(caller)
        }
    }

    /// Who `request` comes from: its credentials checked (401 when they do not hold);
    /// anyone for an open route and on a server without authentication.
    package func identify(_ request: HTTPRequest, route: Route?) -> Result<Identity, APIError> {
        guard let route, route.access != .open, access.isEnabled else { return .success(.anyone) }
        return access.authenticate(authorization: Self.authorization(of: request, route: route))
    }

    /// Why `permissions` do not allow `route` about `name`: 403 naming the Spin or Gear
    /// and the missing permission; nil when they do. Checked before the name is looked
    /// up, so a caller learns nothing of Spins it may not read (403 either way).
    static func refusal(of permissions: Permissions, _ route: Route, _ name: Substring) -> APIError? {
        switch route.access {
        case .open, .listing:
            return nil
        case .everywhere(let needed):
            return permissions.allowsEverywhere(needed) ? nil : .forbiddenEverywhere(needed, what: route.template)
        case .spin(let needed):
            return permissions.allows(needed, spin: name) ? nil : .forbiddenOnSpin(needed, spin: String(name))
        case .gear:
            return permissions.allowsReading(gear: name) ? nil : .forbiddenGear(String(name))
        }
    }

    /// The request's credentials: its `Authorization` header, or on a stream route the
    /// `access_token` query parameter (browsers cannot set headers on a WebSocket; other
    /// routes can always be given a header, so only streams take it).
    private static func authorization(of request: HTTPRequest, route: Route) -> String? {
        if let header = request.headers["Authorization"] { return header }
        guard route.streams, let token = request.target.queryValue("access_token") else { return nil }
        return "Bearer \(token)"
    }
}
