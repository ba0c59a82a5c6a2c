import Foundation
import SpinCore
import SpinWire
import SpinJSON
import SpinConcurrency

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
    /// configured Spin, its name in the path and its own schemas (`Spin.<name>.Event` for
    /// events, `Spin.<name>.State` for the state, both in `components.schemas`), so that
    /// the document says exactly which events each Spin takes, and a client (or a fuzzer)
    /// reading it sends each Spin events of its own; and once on the template path with
    /// its `{name}` parameter, for any other name (Spins made at run time).
    /// A configured kind as the document lists it: its instances' path (`door-{key}` for
    /// names `door-*`; `{name}` for any name), and their schemas.
    struct DocumentedKind {
        var name: String
        var names: SpinServerConfiguration.NamePattern?
        var schema: SpinSchema

        /// `{key}`: what the `*` of its `names` matches, as long as the name stays a name.
        var keyParameter: JSONValue {
            let longest = max(1, 64 - (names?.pattern.utf8.count ?? 1) + 1)
            return .members([
                "name": .string("key"), "in": .string("path"), "required": .bool(true),
                "description": .string("The Spin's key: what the * of the kind's names (\(names?.pattern ?? "")) stands for."),
                "schema": .members(["type": .string("string"), "pattern": .string("^[A-Za-z0-9._-]{1,\(longest)}$")]),
            ])
        }

        /// The `{name}` segment of its paths: the pattern with `{key}` for its `*`.
        var segment: String {
            guard let names else { return "{name}" }
            return names.pattern.replacingOccurrences(of: "*", with: "{key}")
        }
    }

    static func document(spins: [(name: String, schema: SpinSchema)], gears: [String],
                         kinds: [DocumentedKind] = []) -> JSONValue {
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
            guard route.isPerSpin else {
                append(route.template, [(method, route.openAPIOperation(gears: gears))])
                continue
            }
            for spin in spins {
                append(route.template.replacingOccurrences(of: "{name}", with: spin.name),
                       [(method, route.openAPIOperation(schemas: "Spin.\(spin.name)"))])
            }
            // The Spins a kind makes: one path per kind, with the kind's schemas.
            for kind in kinds {
                let path = route.template.replacingOccurrences(of: "{name}", with: kind.segment)
                let parameter: JSONValue = kind.names == nil ? .ref("SpinName", in: "parameters") : kind.keyParameter
                let parameters: [(key: String, value: JSONValue)] = kind.names?.hasWildcard == false ? [] : [("parameters", .array([parameter]))]
                append(path, parameters + [(method, route.openAPIOperation(schemas: "Kind.\(kind.name)", kind: kind.name))])
            }
            // Without either, the template stands for any Spin.
            if spins.isEmpty && kinds.isEmpty {
                append(route.template, [("parameters", .array([.ref("SpinName", in: "parameters")])),
                                        (method, route.openAPIOperation())])
            }
        }
        let spinSchemas = spins.flatMap { spin -> [(key: String, value: JSONValue)] in
            [("Spin.\(spin.name).Event", JSONValue(spin.schema.event.json)),
             ("Spin.\(spin.name).State", JSONValue(spin.schema.state.json))]
        } + kinds.flatMap { kind -> [(key: String, value: JSONValue)] in
            [("Kind.\(kind.name).Event", JSONValue(kind.schema.event.json)),
             ("Kind.\(kind.name).State", JSONValue(kind.schema.state.json))]
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
    static func render(spins: [any HostedSpin], gears: [String] = [], kinds: [DocumentedKind] = []) -> [UInt8] {
        document(spins: spins.map { ($0.name, $0.schema) }, gears: gears, kinds: kinds).bytes
    }

    /// The document of `host`, rendered once per set of configured Spins and Gears (they
    /// are fixed once the host starts) and then served from memory: building it is not free,
    /// and anyone may ask for `/openapi.json` as often as they like.
    final class Cache: Sendable {
        private let rendered = Protected<(spins: [String], gears: [String], bytes: [UInt8])?>(nil)

        init() {}

        /// The configured Spins (not those made at run time: they come and go, and the
        /// template paths describe them) and Gears (none when kinds make Gears per key: a
        /// Gear name is then any name).
        func document(of host: SpinHost) -> [UInt8] {
            let factory = host.factory
            let spins = factory.map { factory in host.spins.filter { factory.configured.contains($0.name) } } ?? host.spins
            let gears = factory?.makesGearsPerKey == true ? [] : host.gears.map(\.name)
            let names = spins.map(\.name)
            if let cached = rendered.withLock({ $0 }), cached.spins == names, cached.gears == gears { return cached.bytes }
            let bytes = OpenAPIDocument.render(spins: spins, gears: gears, kinds: factory?.documentedKinds ?? [])
            rendered.withLock { $0 = (names, gears, bytes) }
            return bytes
        }
    }

    /// Where a Spin's schemas are served (`GET /v1/spins/{name}` links it as `schema`).
    static func schemaPath(of name: String) -> String { "/v1/spins/\(name)/schema" }
}
