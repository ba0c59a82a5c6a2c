import SpinWire

/// What admission made of a request (`APIRouter.admit`): the route it may reach, its
/// `{name}` and its caller, or why it may not; and what the request's log line and
/// metrics name it by, whether it was admitted or not.
package struct Admission: Sendable {
    /// The route's template, as metrics label the request ("other" when no route matched).
    package let label: String
    /// The subject the request's credentials name, when they hold (its log line's `sub`:
    /// accepted and refused requests alike).
    package let subject: String?
    /// The route, its `{name}` and the caller when the request passes; else its refusal.
    let verdict: Result<(route: Route, name: Substring, caller: Identity), APIError>
}

extension APIRouter {
    /// The one admission of a request, before any route runs: its path matched once, its
    /// caller identified once, and whether it may reach any route at all, in the order a
    /// refusal is found: its `Host` (421), its route (404) and method (405), its
    /// credentials (401), and what they allow (403).
    package func admit(_ request: HTTPRequest) -> Admission {
        let matched = Route.match(request.target.path)
        // Identified even when the request is refused before its credentials count, so
        // that its log line names who sent it. (`identify` takes the same credentials on
        // every route of one path.)
        let identity = identify(request, route: matched?.route)
        let verdict: Result<(route: Route, name: Substring, caller: Identity), APIError>
        if let misdirected = misdirection(of: request) {
            verdict = .failure(misdirected)
        } else {
            verdict = resolve(request, matched: matched).flatMap { route, name in
                authorize(identity, route: route, name: name).map { (route, name, $0) }
            }
        }
        return Admission(label: Route.label(matched), subject: try? identity.get().subject, verdict: verdict)
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

    /// Authorization: the caller `identity` names (a 401 stays one), refused 403 when its
    /// permissions do not allow `route` about `name`.
    func authorize(_ identity: Result<Identity, APIError>, route: Route, name: Substring) -> Result<Identity, APIError> {
        identity.flatMap { caller in
            Self.refusal(of: caller.permissions, route, name).map { .failure($0) } ?? .success(caller)
        }
    }

    /// Who `request` comes from: its credentials checked (401 when they do not hold);
    /// anyone for an open route and on a server without authentication.
    func identify(_ request: HTTPRequest, route: Route?) -> Result<Identity, APIError> {
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
