import SpinCore
import SpinServer

/// The kinds this application hosts, by the `kind` of its config entries: `todo` (a
/// `TodoList`) and `stats`, both on the Gear their entry names.
public func todoKinds(archiveAfter: Int = 3) -> SpinKindRegistry {
    var kinds = SpinKindRegistry()
    kinds.register("todo", gear: .required) { context in
        try context.host(TodoList.spin(archiveAfter: archiveAfter, gear: context.gear(of: TodoGearEvent.self)))
    }
    kinds.register("stats", gear: .required) { context in
        try context.host(Stats.spin(gear: context.gear(of: TodoGearEvent.self)))
    }
    return kinds
}
