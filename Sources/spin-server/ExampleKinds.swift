import SpinCore
import SpinExamples
import SpinServer

extension SpinKindRegistry {
    /// The kinds `spin-server` hosts, by the `kind` of a config entry (machines, kind
    /// `machine`, need no registration):
    ///
    /// | kind | makes | Gear |
    /// |---|---|---|
    /// | `counter` | `Counter.spin()` | none |
    /// | `levels` | `Levels.spin()` | none |
    /// | `feature` | `Feature.spin(session:gear:)` | required |
    /// | `router` | `Router.spin(session:gear:)` | required |
    ///
    /// Spins that name the same Gear share one `Gear<AuthRouting.GearEvent>` and one
    /// `SessionService`, which is what makes `feature` and `router` one example. The
    /// session is in memory, or, when the Spins are kept in PostgreSQL, in the database
    /// (`DatabaseSession`), where every node of a cluster sees it: `feature` and `router`
    /// may run on different nodes. The registration lives here, not in SpinServer,
    /// because SpinExamples knows nothing of the server and the server nothing of the
    /// examples.
    static var examples: SpinKindRegistry {
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        kinds.register("levels") { context in try context.host(Levels.spin()) }
        kinds.register("feature", gear: .required) { context in
            try context.host(Feature.spin(session: context.exampleSession(),
                                          gear: context.gear(of: AuthRouting.GearEvent.self)))
        }
        kinds.register("router", gear: .required) { context in
            try context.host(Router.spin(session: context.exampleSession(),
                                         gear: context.gear(of: AuthRouting.GearEvent.self)))
        }
        return kinds
    }
}

extension SpinKindContext {
    /// The session service of the Spins on this entry's Gear: in the database when the
    /// Spins are kept in PostgreSQL (one session per Gear name, as in memory), else in
    /// memory.
    func exampleSession() -> SessionService {
        shared {
            guard storage.persists, storage.backend == .postgres, let url = storage.url else { return SessionService() }
            return SessionService(store: DatabaseSession(url: url, name: entry.gear ?? ""))
        }
    }
}
