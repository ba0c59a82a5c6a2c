import SpinWire

/// The Gear routes.
extension APIRouter {
    /// `GET /v1/gears`: the Gears the caller may read, each with the Spins it is attached to.
    func gearList(for permissions: Permissions) -> APIResponse {
        let list = host.gears.filter { permissions.allowsReading(gear: $0.name) }.map { gear -> JSONValue in
            .object([("name", .string(gear.name)), ("attached", .array(gear.attached.map(JSONValue.string)))])
        }
        return .json(200, .object([("gears", .array(list))]))
    }

    /// `GET /v1/gears/{name}/stream`: the Gear's messages, as a WebSocket or server-sent events.
    func gearStream(_ call: RouteCall) -> RouteOutcome {
        guard let gear = host.gear(named: String(call.name)) else { return .respond(.error(.gearNotFound(String(call.name)))) }
        return openStream(call.request, .gear(gear), identity: call.caller)
    }
}
