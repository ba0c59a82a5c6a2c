import Foundation
import SpinCore
import SpinWire

/// The OpenAPI 3.1 description of the HTTP API, served at `GET /openapi.json`.
///
/// Built as a value from the route table (`Route`: method, path template, what each route
/// needs, and `Route+OpenAPI.swift`: its summary, parameters and answers), the hosted
/// Spins' schemas and Gears, and the error answers (`OpenAPIComponents`), then encoded
/// once per set of hosted Spins. The end-to-end suite validates it with
/// openapi-spec-validator, checks that every path it lists answers as it says, and runs
/// schemathesis against it.
enum OpenAPIDocument {
    /// The document for a server hosting `spins` (name and schemas, in order) and the
    /// Gears `gears`. Each route of one Spin (`/v1/spins/{name}...`) is listed once per
    /// hosted Spin, its name in the path and its own schemas (`Spin.<name>.Event` for
    /// events, `Spin.<name>.State` for the state, both in `components.schemas`), so that
    /// the document says exactly which events each Spin takes, and a client (or a fuzzer)
    /// reading it sends each Spin events of its own. Without Spins, the template path with
    /// its `{name}` parameter stands for them.
    static func document(spins: [(name: String, schema: SpinSchema)], gears: [String]) -> JSONValue {
        var paths: [(key: String, value: JSONValue)] = []
        /// The routes of one path and several methods share its path item.
        func append(_ path: String, _ members: [(key: String, value: JSONValue)]) {
            guard let index = paths.firstIndex(where: { $0.key == path }), case .object(let existing) = paths[index].value else {
                return paths.append((path, .object(members)))
            }
            paths[index].value = .object(existing + members.filter { member in !existing.contains { $0.key == member.key } })
        }
        for route in Route.allCases where route.isDocumented {
            let method = route.method.rawValue.lowercased()
            if route.isPerSpin, !spins.isEmpty {
                for spin in spins {
                    append(route.template.replacingOccurrences(of: "{name}", with: spin.name),
                           [(method, route.openAPIOperation(spin: spin.name))])
                }
            } else if route.template.contains("/v1/spins/{name}") {
                append(route.template, [("parameters", .array([.ref("SpinName", in: "parameters")])),
                                        (method, route.openAPIOperation())])
            } else {
                append(route.template, [(method, route.openAPIOperation(gears: gears))])
            }
        }
        let spinSchemas = spins.flatMap { spin -> [(key: String, value: JSONValue)] in
            [("Spin.\(spin.name).Event", JSONValue(spin.schema.event.json)),
             ("Spin.\(spin.name).State", JSONValue(spin.schema.state.json))]
        }
        return .members([
            "openapi": .string("3.1.0"),
            "info": .members([
                "title": .string("Spin server"), "version": .string("1.0.0"),
                "description": .string("Hosts named feedback loops (Spins): POST events, read and stream state, watch Gear traffic between Spins. State streams are WebSocket (or SSE with Accept: text/event-stream) and send {\"type\":\"snapshot\"} first, then one {\"type\":\"state\"} message per applied event. Without tokens, every route answers 421 (misdirected_request) to a Host that is not the listen address, a loopback name or in listen.allowedHosts. Errors are {\"error\":{\"code\":..,\"message\":..,\"requestId\":..}}; each error answer lists its codes."),
            ]),
            "servers": .array([.members(["url": .string("/")])]),
            "security": .array([.members(["bearer": .array([])]), .members([:])]),
            "paths": .object(paths),
            "components": OpenAPIComponents.components(spinSchemas: spinSchemas),
        ])
    }

    /// The document's bytes for a server hosting `spins` and `gears`.
    static func render(spins: [any HostedSpin], gears: [String] = []) -> [UInt8] {
        document(spins: spins.map { ($0.name, $0.schema) }, gears: gears).bytes
    }

    /// The document of `host`, rendered once per set of hosted Spins and Gears (they are
    /// fixed once the host starts) and then served from memory: building it is not free,
    /// and anyone may ask for `/openapi.json` as often as they like.
    final class Cache: Sendable {
        private let rendered = Protected<(spins: [String], gears: [String], bytes: [UInt8])?>(nil)

        init() {}

        func document(of host: SpinHost) -> [UInt8] {
            let spins = host.spins
            let gears = host.gears.map(\.name)
            let names = spins.map(\.name)
            if let cached = rendered.withLock({ $0 }), cached.spins == names, cached.gears == gears { return cached.bytes }
            let bytes = OpenAPIDocument.render(spins: spins, gears: gears)
            rendered.withLock { $0 = (names, gears, bytes) }
            return bytes
        }
    }

    /// Where a Spin's schemas are served (`GET /v1/spins/{name}` links it as `schema`).
    static func schemaPath(of name: String) -> String { "/v1/spins/\(name)/schema" }
}

extension JSONValue {
    /// The JSON of a schema (a non-finite number, which JSON cannot write, as null).
    init(_ json: JSONSchema.JSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .integer(let value): self = .number(String(value))
        case .double(let value): self = value.isFinite ? .number("\(value)") : .null
        case .string(let value): self = .string(value)
        case .array(let items): self = .array(items.map(JSONValue.init))
        case .object(let members): self = .object(members.map { ($0.key, JSONValue($0.value)) })
        }
    }
}
