import Foundation
import SpinCore
import SpinExamples
@testable import SpinServer
import SpinWire
import Testing

/// The OpenAPI document is built from the route table and the hosted Spins: every route
/// has its operation, every Spin its schemas, every error status its answer, and a stream
/// route says what a plain HTTP request must carry.
struct OpenAPIDocumentTests {
    /// The document of the example host, parsed back from its bytes.
    static func exampleDocument() throws -> [String: Any] {
        let host = try makeExampleHost(start: false)
        let bytes = OpenAPIDocument.render(spins: host.spins, gears: host.gears.map(\.name))
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    static func operation(_ document: [String: Any], _ path: String, _ method: String) -> [String: Any]? {
        ((document["paths"] as? [String: Any])?[path] as? [String: Any])?[method] as? [String: Any]
    }

    @Test func everyDocumentedRoute_HasAnOperation_OncePerHostedSpinForTheRoutesOfOneSpin() throws {
        let document = try Self.exampleDocument()
        let spins = ["counter", "levels", "feature", "router"]
        var expected: Set<String> = []
        for route in Route.allCases where route.isDocumented {
            let paths = route.isPerSpin ? spins.map { route.template.replacingOccurrences(of: "{name}", with: $0) } : [route.template]
            for path in paths {
                expected.insert(path)
                let operation = Self.operation(document, path, "\(route.method)".lowercased())
                #expect(operation != nil, "no \(route.method) operation for \(path)")
                // The route's answers: its successes and each of its error statuses.
                let responses = Set((operation?["responses"] as? [String: Any] ?? [:]).keys)
                #expect(Set(route.errorStatuses.map(String.init)).isSubset(of: responses), "\(path)")
                #expect(responses.contains { $0.hasPrefix("1") || $0.hasPrefix("2") }, "\(path) has no success")
                // What the route needs: open routes need no token.
                #expect((operation?["security"] as? [Any])?.isEmpty == (route.access == .open ? true : nil), "\(path)")
            }
        }
        #expect(Set((document["paths"] as? [String: Any] ?? [:]).keys) == expected)
        #expect(!expected.contains(Route.echo.template))
    }

    @Test func everyHostedSpin_HasItsEventAndStateSchemas_AsItsSchemaRouteServesThem() throws {
        let host = try makeExampleHost(start: false)
        let document = try Self.exampleDocument()
        let schemas = (document["components"] as? [String: Any])?["schemas"] as? [String: Any] ?? [:]
        #expect(host.spins.count == 4)
        for spin in host.spins {
            for (name, schema) in [("Event", spin.schema.event), ("State", spin.schema.state)] {
                let expected = try JSONSerialization.jsonObject(with: Data(schema.json.text.utf8)) as? NSDictionary
                #expect(schemas["Spin.\(spin.name).\(name)"] as? NSDictionary == expected, "Spin.\(spin.name).\(name)")
            }
        }
    }

    @Test func everyReference_ResolvesWithinTheDocument() throws {
        let document = try Self.exampleDocument()
        var references: [String] = []
        func collect(_ value: Any) {
            if let object = value as? [String: Any] {
                if let reference = object["$ref"] as? String { references.append(reference) }
                object.values.forEach(collect)
            } else if let array = value as? [Any] {
                array.forEach(collect)
            }
        }
        collect(document)
        #expect(references.count > 50)
        for reference in Set(references) {
            let parts = reference.split(separator: "/").dropFirst().map(String.init)
            var node: Any? = document
            for part in parts { node = (node as? [String: Any])?[part] }
            #expect(node != nil, "\(reference) resolves to nothing")
        }
    }

    @Test func aStreamRoute_AnswersServerSentEvents_NamesTheWebSocketHandshake_AndDocuments406And426() throws {
        let document = try Self.exampleDocument()
        for path in ["/v1/spins/levels/stream", "/v1/gears/{name}/stream"] {
            let operation = try #require(Self.operation(document, path, "get"))
            // OpenAPI ignores a header parameter named Accept: the answers' media types say it.
            let parameters = operation["parameters"] as? [[String: Any]] ?? []
            #expect(!parameters.contains { $0["name"] as? String == "Accept" })
            #expect((operation["summary"] as? String ?? "").contains("Upgrade: websocket"))
            let responses = operation["responses"] as? [String: Any] ?? [:]
            #expect(Set(["101", "200", "400", "406", "426"]).isSubset(of: Set(responses.keys)))
            let sse = ((responses["200"] as? [String: Any])?["content"] as? [String: Any])?["text/event-stream"] as? [String: Any]
            #expect((sse?["schema"] as? [String: Any])?["$ref"] as? String == "#/components/schemas/StreamEvent")
        }
        // The Gear stream's name takes the hosted Gears.
        let gear = try #require(Self.operation(document, "/v1/gears/{name}/stream", "get"))
        let name = (gear["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "name" }
        #expect((name?["schema"] as? [String: Any])?["enum"] as? [String] == ["auth"])
    }

    @Test func eachErrorAnswer_NamesItsCodes_AndUsesTheErrorBody() throws {
        let document = try Self.exampleDocument()
        let responses = (document["components"] as? [String: Any])?["responses"] as? [String: Any] ?? [:]
        #expect(responses.count == OpenAPIComponents.errors.count)
        let notFound = responses["Error404"] as? [String: Any]
        let description = notFound?["description"] as? String ?? ""
        #expect(description.contains("spin_not_found") && description.contains("gear_not_found"))
        let schema = ((notFound?["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"] as? [String: Any]
        #expect(schema?["$ref"] as? String == "#/components/schemas/Error")
        let busy = responses["Error429"] as? [String: Any]
        #expect((busy?["headers"] as? [String: Any])?["Retry-After"] != nil)
    }

    /// The document cannot fall behind the error type: every code the server answers
    /// with is listed under the status it comes with.
    @Test func everyServerErrorCode_IsDocumentedUnderItsStatus() {
        for code in APIError.Code.allCases {
            let answer = OpenAPIComponents.errors.first { $0.status == code.status }
            #expect(answer?.codes.contains { $0.code == code.rawValue } == true, "\(code.rawValue) (\(code.status))")
        }
        // A refused WebSocket handshake keeps its code but has a status of its own.
        let version = APIError.badWebSocketHandshake(.unsupportedVersion)
        let answer = OpenAPIComponents.errors.first { $0.status == version.status }
        #expect(answer?.codes.contains { $0.code == version.code } == true, "\(version.code) (\(version.status))")
    }

    @Test func withoutSpins_TheRoutesOfOneSpin_AreListedAsTemplatesWithTheirNameParameter() throws {
        let bytes = OpenAPIDocument.render(spins: [])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let paths = document["paths"] as? [String: Any] ?? [:]
        for route in Route.allCases where route.isPerSpin {
            let item = try #require(paths[route.template] as? [String: Any], "\(route.template)")
            let parameter = (item["parameters"] as? [[String: Any]])?.first?["$ref"] as? String
            #expect(parameter == "#/components/parameters/SpinName")
        }
        let events = try #require(Self.operation(document, "/v1/spins/{name}/events", "post"))
        let body = String(decoding: try JSONSerialization.data(withJSONObject: events["requestBody"] ?? [:]), as: UTF8.self)
        #expect(body.contains(#"#\/components\/schemas\/Event""#))
    }

    @Test func aStreamRequest_WhoseAcceptTakesEventStreams_GetsThem_AndAnotherIs406() async throws {
        let router = makeRouter(try makeExampleHost())
        for accept in [nil, "*/*", "text/*;q=0.5, application/json", "text/event-stream"] {
            let request = makeRequest("GET", "/v1/spins/levels/stream", headers: accept.map { [("Accept", $0)] } ?? [])
            guard case .stream(.state, .sse, _) = await router.route(request) else {
                Issue.record("Accept: \(accept ?? "none") got no server-sent events")
                continue
            }
        }
        let json = await router.respond("GET", "/v1/spins/levels/stream", headers: [("Accept", "application/json")])
        #expect(json.status == 406)
        #expect(json.errorCode == "not_acceptable")
        #expect(await router.respond("GET", "/v1/gears/auth/stream", headers: [("Accept", "AAA")]).status == 406)
        // The most specific range decides: events refused by name, whatever */* says.
        let refused = await router.respond("GET", "/v1/spins/levels/stream", headers: [("Accept", "text/event-stream;q=0, */*")])
        #expect(refused.status == 406)
    }
}

/// A server with kinds documents each kind once, on a path with its names' pattern
/// (`/v1/spins/tally-{key}`), with the kind's schemas, not each Spin made of it.
@Suite struct OpenAPIKindsTests {
    @Test func eachKind_HasItsPaths_WithItsSchemas_AndMadeSpinsAreNotListed() async throws {
        var configuration = SpinServerConfiguration(port: 0)
        configuration.spins = [.init(name: "counter", kind: "counter")]
        configuration.kinds = [.init(name: "tally", kind: "counter", names: .init("tally-*"))]
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        let host = try kinds.makeHost(configuration)
        let bytes = OpenAPIDocument.Cache().document(of: host)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let paths = document["paths"] as? [String: [String: Any]] ?? [:]
        for suffix in ["", "/events", "/resume", "/schema", "/stream"] {
            #expect(paths["/v1/spins/tally-{key}\(suffix)"] != nil, "tally-{key}\(suffix)")
            #expect(paths["/v1/spins/counter\(suffix)"] != nil)
            #expect(paths["/v1/spins/{name}\(suffix)"] == nil)
        }
        let item = try #require(paths["/v1/spins/tally-{key}"])
        #expect(Set(item.keys) == ["parameters", "get", "put", "delete"])
        let events = try #require((paths["/v1/spins/tally-{key}/events"]?["post"] as? [String: Any])?["requestBody"])
        let text = String(decoding: try JSONSerialization.data(withJSONObject: events), as: UTF8.self)
        #expect(text.contains(#"Kind.tally.Event"#))
        let schemas = (document["components"] as? [String: Any])?["schemas"] as? [String: Any] ?? [:]
        #expect(schemas["Kind.tally.Event"] != nil && schemas["Kind.tally.State"] != nil)
        let put = try #require((item["put"] as? [String: Any])?["requestBody"])
        #expect(String(decoding: try JSONSerialization.data(withJSONObject: put), as: UTF8.self).contains(#""const":"tally""#))
    }
}
