import SpinWire
import SpinJSON

/// The Gear routes.
extension APIRouter {
    /// `GET /v1/gears`: the Gears the caller may read, each with the Spins it is attached
    /// to, and, for the catching Spins served here, how many of its events each has not
    /// consumed durably yet (`pending`) and which lag (`lagging`: no longer given a
    /// sender's oldest events, with why).
    func gearList(for permissions: Permissions) -> APIResponse {
        let reading = gears?.reading
        let list = host.gears.filter { permissions.allowsReading(gear: $0.name) }.map { gear -> JSONValue in
            var members: [(String, JSONValue)] = [("name", .string(gear.name)),
                                                  ("attached", .array(gear.attached.map(JSONValue.string)))]
            if let pending = reading?.pending[gear.name], !pending.isEmpty {
                members.append(("pending", .numbers(pending)))
            }
            let lagging = gear.attached.flatMap { spin in
                (reading?.lagging[spin] ?? [:]).sorted { $0.key < $1.key }.map { sender, reason in
                    JSONValue.object([("spin", .string(spin)), ("from", .string(sender)), ("reason", .string(reason))])
                }
            }
            if !lagging.isEmpty { members.append(("lagging", .array(lagging))) }
            return .object(members)
        }
        return .json(200, .object([("gears", .array(list))]))
    }

    /// `GET /v1/gears/{name}/stream`: the Gear's messages, as a WebSocket or server-sent events.
    func gearStream(_ call: RouteCall) -> RouteOutcome {
        guard let gear = host.gear(named: String(call.name)) else { return .respond(.error(.gearNotFound(String(call.name)))) }
        return openStream(call.request, .gear(gear), identity: call.caller)
    }
}
