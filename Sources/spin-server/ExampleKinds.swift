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
    /// registration lives here, not in SpinServer, because SpinExamples knows nothing of
    /// the server and the server nothing of the examples.
    static var examples: SpinKindRegistry {
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        kinds.register("levels") { context in try context.host(Levels.spin()) }
        kinds.register("feature", gear: .required) { context in
            try context.host(Feature.spin(session: context.shared { SessionService() },
                                          gear: context.gear(of: AuthRouting.GearEvent.self)))
        }
        kinds.register("router", gear: .required) { context in
            try context.host(Router.spin(session: context.shared { SessionService() },
                                         gear: context.gear(of: AuthRouting.GearEvent.self)))
        }
        return kinds
    }
}
