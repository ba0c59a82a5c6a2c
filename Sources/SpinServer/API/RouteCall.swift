import SpinWire

/// A request admitted to its route (`APIRouter.admit`): what a route's handler needs,
/// and where its outcome goes (`respond`, called exactly once).
struct RouteCall: Sendable {
    let request: HTTPRequest
    let route: Route
    /// The route's `{name}` segment (empty for routes without one).
    let name: Substring
    /// Who the request comes from, its permissions checked for the route.
    let caller: Identity
    /// The request's spans, when it is traced.
    let trace: RequestTrace?
    /// Until when the request may wait for its Spin to move (`APIRouter.awaitMove`), once it waited.
    let moveDeadline: ContinuousClock.Instant?
    let respond: @Sendable (RouteOutcome) -> Void

    func reply(_ response: APIResponse) { respond(.respond(response)) }

    func fail(_ error: APIError) { respond(.respond(.error(error))) }

    /// Replies with the response, or with the error.
    func answer(_ result: Result<APIResponse, APIError>) {
        switch result {
        case .success(let response): reply(response)
        case .failure(let error): fail(error)
        }
    }
}
