import SpinCore

/// The mediator example of Spin.Swift's README: Spin `feature` loads data from a backend
/// and, when the backend answers unauthorized, pushes `authorizationIssueHappened` into
/// Gear `auth`; Spin `router` catches it, emits `checkAuthorization` and routes to
/// `home` or `login` depending on what the session service says.
///
/// The two Spins agree through the one `SessionService` they share: in memory when both
/// run in one process, in a `SessionStore` every server sees when they may run on
/// different servers of a cluster (spin-server then keeps it in the Spins' PostgreSQL
/// database), so a logout through `router` makes `feature`'s next load unauthorized on
/// one server and on many.
public struct AuthRouting: Sendable {
    /// The events Gear `auth` carries. JSON: `{"type":"authorizationIssueHappened"}`.
    public enum GearEvent: String, TypeTaggedEvent, CaseIterable, Equatable, Sendable {
        case authorizationIssueHappened
    }

    public let gear: Gear<GearEvent>
    public let session: SessionService
    public let feature: Spin<Feature.State, Feature.Event>
    public let router: Spin<Router.State, Router.Event>

    /// Wires both Spins to one Gear and one session service.
    public init(session: SessionService = SessionService(), gear: Gear<GearEvent> = Gear()) {
        self.gear = gear
        self.session = session
        self.feature = Feature.spin(session: session, gear: gear)
        self.router = Router.spin(session: session, gear: gear)
    }
}

/// The `feature` Spin: `load` → `loading`, a feedback asks the backend, which answers
/// `loaded` while the session is valid and `unauthorizedResponse` otherwise; in
/// `unauthorized` it propagates `authorizationIssueHappened` on Gear `auth`.
public enum Feature {
    public enum Status: String, Codable, CaseIterable, Equatable, Sendable {
        case idle, loading, loaded, unauthorized
    }

    /// State JSON: `{"status":s,"items":n}`.
    public struct State: Codable, Equatable, Sendable {
        public var status: Status
        public var items: Int

        public init(status: Status, items: Int) {
            self.status = status
            self.items = items
        }

        public static let initial = State(status: .idle, items: 0)
    }

    /// Event JSON: `{"type":"load"}`, `{"type":"loaded","items":n}` (n >= 0: a negative
    /// count is refused when decoded, and when encoded), `{"type":"unauthorizedResponse"}`.
    public enum Event: TypeTaggedEvent, Equatable, Sendable {
        case load
        case loaded(items: Int)
        case unauthorizedResponse

        public static let eventTypes: EventTypes<Event> = [
            .type(.load),
            .type("loaded", Event.loaded, .field("items", .integer(minimum: 0))) {
                if case .loaded(let items) = $0 { items } else { nil }
            },
            .type(.unauthorizedResponse),
        ]
    }

    /// `items` is never negative (a negative count made in Swift counts as 0); no
    /// arithmetic, so nothing can overflow.
    public static func reduce(state: State, event: Event) -> State {
        switch event {
        case .load: State(status: .loading, items: state.items)
        case .loaded(let items): State(status: .loaded, items: max(items, 0))
        case .unauthorizedResponse: State(status: .unauthorized, items: 0)
        }
    }

    /// The backend call, made while loading.
    public static func load(session: SessionService, state: State) async -> Event? {
        guard state.status == .loading else { return nil }
        if let items = await session.fetchItems() {
            return .loaded(items: items)
        }
        return .unauthorizedResponse
    }

    public static func spin(session: SessionService, gear: Gear<AuthRouting.GearEvent>,
                            initialState: State = .initial) -> Spin<State, Event> {
        Spin(initialState: initialState) {
            Feedback(effect: load, dep1: session)
            Feedback(attachedTo: gear, propagating: { (state: State) -> AuthRouting.GearEvent? in
                state.status == .unauthorized ? .authorizationIssueHappened : nil
            })
            Reducer(reduce)
        }
    }
}

/// The `router` Spin: starts `launching` and checks at once; `checkAuthorization` →
/// `checkingAuthorization` (one more check), and a feedback asks the session service →
/// `home` or `login`; `logout` ends the session (→ `login`), `login` starts one
/// (→ `home`); catches `authorizationIssueHappened` on Gear `auth` and emits
/// `checkAuthorization`.
public enum Router {
    public enum Route: String, Codable, CaseIterable, Equatable, Sendable {
        case launching, checkingAuthorization, home, login
    }

    /// State JSON: `{"route":r,"authorizationChecks":n}`.
    public struct State: Codable, Equatable, Sendable {
        public var route: Route
        public var authorizationChecks: Int

        public init(route: Route, authorizationChecks: Int) {
            self.route = route
            self.authorizationChecks = authorizationChecks
        }

        public static let initial = State(route: .launching, authorizationChecks: 0)
    }

    /// Event JSON: `{"type":"checkAuthorization"}`, `authorized`, `unauthorized`,
    /// `login`, `logout`.
    public enum Event: String, TypeTaggedEvent, CaseIterable, Equatable, Sendable {
        case checkAuthorization, authorized, unauthorized, login, logout
    }

    /// `authorizationChecks` saturates at `Int.max` (no event traps).
    public static func reduce(state: State, event: Event) -> State {
        switch event {
        case .checkAuthorization:
            State(route: .checkingAuthorization, authorizationChecks: state.authorizationChecks.addingSaturated(1))
        case .authorized, .login:
            State(route: .home, authorizationChecks: state.authorizationChecks)
        case .unauthorized, .logout:
            State(route: .login, authorizationChecks: state.authorizationChecks)
        }
    }

    /// Checks at launch.
    public static func launch(state: State) -> Event? {
        state.route == .launching ? .checkAuthorization : nil
    }

    /// Asks the session service while checking.
    public static func check(session: SessionService, state: State) async -> Event? {
        guard state.route == .checkingAuthorization else { return nil }
        return await session.checkAuthorization() ? .authorized : .unauthorized
    }

    /// Keeps the session in line with the route: `home` has a session, `login` has none
    /// (this is where `login` and `logout` reach the session service). Synchronous and in
    /// the order of the routes: a session in memory changes at once; one in a
    /// `SessionStore` has its write queued (`SessionService.start()`), never waited for.
    public static func syncSession(session: SessionService, route: Route) -> Event? {
        switch route {
        case .home: session.start()
        case .login: session.end()
        case .launching, .checkingAuthorization: break
        }
        return nil
    }

    public static func spin(session: SessionService, gear: Gear<AuthRouting.GearEvent>,
                            initialState: State = .initial) -> Spin<State, Event> {
        Spin(initialState: initialState) {
            Feedback(effect: launch)
            Feedback(effect: check, dep1: session)
            Feedback(effect: { (route: Route) -> Event? in syncSession(session: session, route: route) },
                     lensingOn: \State.route)
            Feedback(attachedTo: gear, catching: AuthRouting.GearEvent.authorizationIssueHappened,
                     emitting: Event.checkAuthorization)
            Reducer(reduce)
        }
    }
}

extension Feature.State: JSONSchemaDescribable {
    /// `{"status":s,"items":n}`, s one of `Feature.Status`.
    public static var jsonSchema: JSONSchema {
        .object(["status": .oneOf(strings: Feature.Status.allCases.map(\.rawValue)), "items": .integer(minimum: 0)])
    }
}

extension Router.State: JSONSchemaDescribable {
    /// `{"route":r,"authorizationChecks":n}`, r one of `Router.Route`.
    public static var jsonSchema: JSONSchema {
        .object(["route": .oneOf(strings: Router.Route.allCases.map(\.rawValue)),
                 "authorizationChecks": .integer(minimum: 0)])
    }
}
