import Dispatch
import Foundation
import SpinCore
import SpinExamples
@testable import SpinServer
import SpinWire
import Testing
@testable import SpinConcurrency

@Suite(.timeLimit(.minutes(1)))
struct APIRouterTests {
    @Test func healthz_IsOK_ReadyzFollowsTheHost() async throws {
        let host = try makeExampleHost(start: false)
        let router = makeRouter(host)
        #expect(await router.respond("GET", "/healthz").text == #"{"status":"ok"}"#)
        let notReady = await router.respond("GET", "/readyz")
        #expect(notReady.status == 503)
        #expect(notReady.headers["Retry-After"] == "1")
        host.start()
        #expect(await router.respond("GET", "/readyz").status == 200)
        host.stop()
        #expect(await router.respond("GET", "/readyz").status == 503)
    }

    @Test func spins_AreListedInNameOrderWithSequenceAndKind() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        _ = await waitForState(router, "counter") { $0["value"] as? Int == 10 }
        let list = await router.respond("GET", "/v1/spins")
        let spins = list.object["spins"] as? [[String: Any]] ?? []
        #expect(spins.map { $0["name"] as? String } == ["counter", "feature", "levels", "router"])
        #expect(spins.map { $0["kind"] as? String } == ["counter", "feature", "levels", "router"])
        #expect(spins.first?["sequence"] as? Int == 10)
        #expect(list.object["next"] is NSNull)
        host.stop()
    }

    @Test func spins_AreListedAPageAtATime_ByPrefixAndAfter() async throws {
        let host = SpinHost()
        // Hosted out of order, and names that sort by their bytes: "B" before "a", "a-" before "a0".
        let names = (0..<250).map { "door-" + String(1000 + $0).dropFirst() } + ["a0", "B", "a-", "doors", "door"]
        for name in names.shuffled() {
            try host.host(Spin(initialState: 0, feedbacks: [], reducer: Reducer { (state: Int, _: Int) in state }), named: name)
        }
        host.start()
        defer { host.stop() }
        let router = makeRouter(host)
        func page(_ query: String) async -> (names: [String], next: String?) {
            let object = await router.respond("GET", "/v1/spins" + query).object
            return ((object["spins"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }, object["next"] as? String)
        }
        let sorted = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(sorted.prefix(4) == ["B", "a-", "a0", "door"])
        // The default page is 100; walking `next` lists every Spin once, in order.
        var walked: [String] = []
        var query = ""
        var pages = 0
        while true {
            let (names, next) = await page(query)
            walked += names
            pages += 1
            #expect(names.count <= 100)
            guard let next else { break }
            #expect(next == names.last)
            query = "?after=" + next
        }
        #expect(walked == sorted)
        #expect(pages == 3)
        #expect(await page("?prefix=door-&limit=1000").names.count == 250)
        #expect(await page("?prefix=door-&limit=2") == (["door-000", "door-001"], "door-001"))
        #expect(await page("?prefix=door-&after=door-248&limit=2") == (["door-249"], nil))
        #expect(await page("?prefix=door&limit=3").names == ["door", "door-000", "door-001"])
        #expect(await page("?after=door-249&limit=1000").names == ["doors"])
        #expect(await page("?after=zzz").names == [])
        #expect(await page("?prefix=nothing").names == [])
        #expect(await page("?prefix=&after=&limit=2") == (["B", "a-"], "a-"), "empty: none")
        // An `after` that names no Spin starts after where it would be.
        #expect(await page("?after=door-0995&prefix=door-&limit=2").names == ["door-100", "door-101"])
        for bad in ["?limit=0", "?limit=1001", "?limit=ten", "?limit=-1", "?limit=", "?after=a%2Fb",
                    "?prefix=%20", "?prefix=" + String(repeating: "a", count: 65)] {
            let response = await router.respond("GET", "/v1/spins" + bad)
            #expect(response.status == 400, "\(bad)")
            #expect(response.errorCode == "bad_request")
            let message = response.errorMessage
            #expect(["limit", "after", "prefix"].contains { message.contains("query parameter \($0)") }, "\(message)")
        }
    }

    @Test func aSpin_IsReadWithItsSequenceAndStateJSON() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        _ = await waitForState(router, "counter") { $0["value"] as? Int == 10 }
        #expect(await router.respond("GET", "/v1/spins/counter").text == #"{"name":"counter","sequence":10,"status":"running","state":{"value":10},"schema":"/v1/spins/counter/schema"}"#)
        let missing = await router.respond("GET", "/v1/spins/nope")
        #expect(missing.status == 404)
        #expect(missing.errorCode == "spin_not_found")
        #expect(missing.errorMessage.contains("nope"))
        host.stop()
    }

    @Test func postingAnEvent_Answers202WithTheSequence_AndTheSpinReactsToIt() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        _ = await waitForState(router, "counter") { $0["value"] as? Int == 10 }
        let response = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#)
        #expect(response.status == 202)
        #expect(response.text == #"{"accepted":1,"sequence":11}"#)
        // The reset lets the feedback count to 10 again.
        let final = await waitForState(router, "counter") { $0["value"] as? Int == 10 }
        #expect(final["sequence"] as? Int == 21)
        host.stop()
    }

    @Test func waitTrue_AnswersWithTheStateAfterTheLastEvent() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        let response = await router.post("/v1/spins/levels/events", #"[{"type":"set","left":3,"right":5},{"type":"increaseLeft"}]"#,
                                         query: [("wait", "true")])
        #expect(response.status == 200)
        let state = response.object["state"] as? [String: Int]
        #expect(state == ["left": 4, "right": 5])
        host.stop()
    }

    @Test func malformedJSON_Is400_AndChangesNothing() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        let before = await waitForState(router, "counter") { $0["value"] as? Int == 10 }
        let response = await router.post("/v1/spins/counter/events", #"{"type":"reset""#)
        #expect(response.status == 400)
        #expect(response.errorCode == "malformed_json")
        #expect(await router.respond("GET", "/v1/spins/counter").object["sequence"] as? Int == before["sequence"] as? Int)
        host.stop()
    }

    @Test func repeatedKey_Is400MalformedJSON_NamingKeyAndPath_AndChangesNothing() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        let before = await waitForState(router, "counter") { $0["value"] as? Int == 10 }
        for (body, path) in [(#"{"type":"reset","type":"increase"}"#, "type"),
                             (#"[{"type":"reset"},{"type":"increase","extra":{"a":1,"a":2}}]"#, "[1].extra.a")] {
            let response = await router.post("/v1/spins/counter/events", body)
            #expect(response.status == 400)
            #expect(response.errorCode == "malformed_json")
            let message = (response.object["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("at \(path)"), "\(message)")
        }
        #expect(await router.respond("GET", "/v1/spins/counter").object["sequence"] as? Int == before["sequence"] as? Int)
        host.stop()
    }

    @Test func streamMessage_WithARepeatedKey_IsRefusedWithItsPath() {
        let text = Array(#"{"type":"event","id":"c1","event":{"type":"set","left":1,"right":2,"left":3}}"#.utf8)
        guard case .failure(let refusal) = StreamMessage.parseClientMessage(text) else {
            Issue.record("a repeated key was accepted")
            return
        }
        #expect(refusal.id == .string("c1"))
        #expect(refusal.error.code == "malformed_json")
        #expect(refusal.error.message.contains("\"left\"") && refusal.error.message.contains("event.left"))
    }

    @Test func streamMessage_IsReadOnce_WithItsIDAndEventBytes_EscapesIncluded() throws {
        let text = Array(#" {"id" : 7, "type":"\u0065vent", "event":{"type":"increase"}} "#.utf8)
        #expect(try StreamMessage.parseClientMessage(text).get() == .event(id: .number("7"), event: Array(#"{"type":"increase"}"#.utf8)))
        let refresh = Array(#"{"type":"refresh","token":"t\u0031"}"#.utf8)
        #expect(try StreamMessage.parseClientMessage(refresh).get() == .refresh(id: .null, token: "t1"))
        for (message, code) in [(#"{"type":"ping","id":"a"}"#, "bad_request"), (#"{"id":"a","event":{}}"#, "bad_request"),
                                (#"{"type":"event","event":3}"#, "bad_request"), ("[1]", "malformed_json"),
                                (#"{"type":"event""#, "malformed_json"), (#"{"type":"refresh"}"#, "bad_request"),
                                (#"{"type":"refresh","token":7}"#, "bad_request"), (#"{"type":"refresh","token":""}"#, "bad_request")] {
            guard case .failure(let refusal) = StreamMessage.parseClientMessage(Array(message.utf8)) else {
                Issue.record("\(message) was accepted")
                continue
            }
            #expect(refusal.error.code == code, "\(message)")
        }
    }

    @Test func aWrongContentType_Is415() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        let response = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#, contentType: "text/plain")
        #expect(response.status == 415)
        #expect(response.errorCode == "unsupported_media_type")
        let missing = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#, contentType: nil)
        #expect(missing.status == 415)
        let withCharset = await router.post("/v1/spins/levels/events", #"{"type":"increaseLeft"}"#,
                                            contentType: "Application/JSON; charset=utf-8")
        #expect(withCharset.status == 202)
        let spaced = await router.post("/v1/spins/levels/events", #"{"type":"increaseLeft"}"#,
                                       contentType: "\tapplication/json ;charset=utf-8")
        #expect(spaced.status == 202)
        let jsonish = await router.post("/v1/spins/levels/events", #"{"type":"increaseLeft"}"#,
                                        contentType: "application/jsonx")
        #expect(jsonish.status == 415)
        let cut = await router.post("/v1/spins/levels/events", #"{"type":"increaseLeft"}"#, contentType: "application/js")
        #expect(cut.status == 415)
        host.stop()
    }

    @Test func anEventOfAnotherShape_Is422NamingTheField_AndNothingOfTheBatchIsApplied() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        let before = await waitForSettledState(router, "levels") { $0["left"] as? Int == $0["right"] as? Int }
        let unknown = await router.post("/v1/spins/levels/events", #"{"type":"jump"}"#)
        #expect(unknown.status == 422)
        #expect(unknown.errorCode == "invalid_event")
        #expect(unknown.errorMessage.contains("type"))
        #expect(unknown.errorMessage.contains("jump"))
        let batch = await router.post("/v1/spins/levels/events", #"[{"type":"increaseLeft"},{"type":"set","left":1}]"#)
        #expect(batch.status == 422)
        #expect(batch.errorMessage.contains("[1].right"))
        let wrongType = await router.post("/v1/spins/levels/events", #"{"type":"set","left":"one","right":2}"#)
        #expect(wrongType.errorMessage.contains(#"left: "set" needs field "left" to be an integer"#))
        let scalar = await router.post("/v1/spins/levels/events", "42")
        #expect(scalar.status == 422)
        let empty = await router.post("/v1/spins/levels/events", "[]")
        #expect(empty.status == 422)
        let after = await router.respond("GET", "/v1/spins/levels").object
        #expect(after["sequence"] as? Int == before["sequence"] as? Int)
        host.stop()
    }

    @Test func aFullInbox_Is429WithRetryAfter_AndNothingIsHalfApplied() async throws {
        let queue = DispatchQueue(label: "test.counter")
        let host = try makeExampleHost(counterQueue: queue)
        let router = makeRouter(host, inbox: 2)
        _ = await waitForState(router, "counter") { $0["value"] as? Int == 10 }
        queue.suspend()
        // Accepted, but acknowledged only once applied: after the queue resumes.
        let first = Task { await router.post("/v1/spins/counter/events", #"{"type":"decrease"}"#) }
        while host.spin(named: "counter")?.pendingEvents != 1 { await Task.yield() }
        let full = await router.post("/v1/spins/counter/events", #"[{"type":"decrease"},{"type":"decrease"}]"#)
        #expect(full.status == 429)
        #expect(full.headers["Retry-After"] == "1")
        #expect(full.errorCode == "inbox_full")
        queue.resume()
        #expect(await first.value.status == 202)
        // Only the first event was applied: 10 - 1, then the feedback counts back to 10.
        let final = await waitForState(router, "counter") { $0["value"] as? Int == 10 }
        #expect(final["sequence"] as? Int == 12)
        host.stop()
    }

    @Test func aWrongMethod_Is405WithAllow() async throws {
        let router = makeRouter(try makeExampleHost())
        let response = await router.respond("PATCH", "/v1/spins/counter")
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET, HEAD, PUT, DELETE")
        let get = await router.respond("GET", "/v1/spins/counter/events")
        #expect(get.status == 405)
        #expect(get.headers["Allow"] == "POST")
        #expect(await router.respond("GET", "/nowhere").status == 404)
    }

    @Test func aBatchLargerThanTheInbox_Is413NamingTheLimit_NotAnEndless429() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host, inbox: 10)
        let batch = "[" + Array(repeating: #"{"type":"increaseLeft"}"#, count: 11).joined(separator: ",") + "]"
        let response = await router.post("/v1/spins/levels/events", batch)
        #expect(response.status == 413)
        #expect(response.errorCode == "batch_too_large")
        #expect(response.errorMessage.contains("10"))
        host.stop()
    }

    @Test func headOnAStream_Is405() async throws {
        let router = makeRouter(try makeExampleHost())
        let response = await router.respond("HEAD", "/v1/spins/counter/stream")
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET")
    }

    @Test func waitMustBeABoolean() async throws {
        let router = makeRouter(try makeExampleHost())
        let response = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#, query: [("wait", "soon")])
        #expect(response.status == 400)
        #expect(response.errorMessage.contains("wait"))
    }

    @Test func aBareWait_Waits_AndABareSince_IsRefused() async throws {
        let router = makeRouter(try makeExampleHost())
        let json: [(name: String, value: String)] = [("Content-Type", "application/json")]
        // `?wait` asks as `?wait=` and `?wait=true` do: 200 with the state.
        guard case .respond(let waited) = await router.route(
            makeRequest("POST", "/v1/spins/counter/events?wait", headers: json, body: Array(#"{"type":"reset"}"#.utf8))) else {
            Issue.record("no response")
            return
        }
        #expect(waited.status == 200)
        #expect(waited.object["state"] != nil)
        guard case .respond(let since) = await router.route(
            makeRequest("GET", "/v1/spins/counter/stream?since", headers: acceptsEvents)) else {
            Issue.record("a bare since was not refused")
            return
        }
        #expect(since.status == 400)
    }

    @Test func tokens_GateRoutesByScope() async throws {
        let router = makeRouter(try makeExampleHost(), tokens: [
            AccessToken(token: "reader", scopes: [.read]),
            AccessToken(token: "writer", scopes: [.write]),
        ])
        let anonymous = await router.respond("GET", "/v1/spins")
        #expect(anonymous.status == 401)
        #expect(anonymous.headers["WWW-Authenticate"] != nil)
        #expect(await router.respond("GET", "/v1/spins", headers: [("Authorization", "Bearer wrong")]).status == 401)
        #expect(await router.respond("GET", "/v1/spins", headers: [("Authorization", "Basic reader")]).status == 401)
        #expect(await router.respond("GET", "/v1/spins", headers: [("Authorization", "Bearer reader")]).status == 200)
        let readerPost = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#, token: "reader")
        #expect(readerPost.status == 403)
        #expect(readerPost.errorCode == "forbidden")
        #expect(await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#, token: "writer").status == 202)
        // Health and the API description stay open.
        #expect(await router.respond("GET", "/healthz").status == 200)
        #expect(await router.respond("GET", "/openapi.json").status == 200)
    }

    @Test func gears_AreListedWithTheirSpins_AndStreamsAreRouted() async throws {
        let router = makeRouter(try makeExampleHost())
        #expect(await router.respond("GET", "/v1/gears").text == #"{"gears":[{"name":"auth","attached":["feature","router"]}]}"#)
        guard case .stream(.gear(let gear), .sse, _) = await router.route(makeRequest("GET", "/v1/gears/auth/stream", headers: acceptsEvents)) else {
            Issue.record("the gear stream was not routed")
            return
        }
        #expect(gear.name == "auth")
        guard case .stream(.state(let spin, _, let resume, let deltas), .sse, _) = await router.route(makeRequest("GET", "/v1/spins/router/stream", headers: acceptsEvents)) else {
            Issue.record("the state stream was not routed")
            return
        }
        #expect(spin.name == "router")
        #expect(resume == nil)
        #expect(!deltas)
        let patched = makeRequest("GET", "/v1/spins/router/stream", query: [("delta", "json-patch")], headers: acceptsEvents)
        guard case .stream(.state(_, _, _, true), .sse, _) = await router.route(patched) else {
            Issue.record("the stream with deltas was not routed with deltas")
            return
        }
        let unknown = await router.respond("GET", "/v1/spins/router/stream", query: [(name: "delta", value: "gzip")])
        #expect(unknown.status == 400)
        #expect(unknown.text.contains("json-patch"))
        let resuming = makeRequest("GET", "/v1/spins/router/stream", query: [("since", "12"), ("epoch", "x")], headers: acceptsEvents)
        guard case .stream(.state(_, _, let since, _), _, _) = await router.route(resuming) else {
            Issue.record("the resumed stream was not routed")
            return
        }
        #expect(since == StreamResume(since: 12, epoch: "x"))
        let lastEventID = makeRequest("GET", "/v1/spins/router/stream", headers: acceptsEvents + [("Last-Event-ID", "7")])
        guard case .stream(.state(_, _, let fromHeader, _), _, _) = await router.route(lastEventID) else {
            Issue.record("the SSE resume was not routed")
            return
        }
        #expect(fromHeader == StreamResume(since: 7))
        let bad = await router.respond("GET", "/v1/spins/router/stream", query: [(name: "since", value: "-1")])
        #expect(bad.status == 400)
        // Neither a WebSocket nor server-sent events: 406 names both.
        let plain = await router.respond("GET", "/v1/spins/router/stream", headers: [("Accept", "application/json")])
        #expect(plain.status == 406)
        #expect(plain.errorMessage.contains("Upgrade: websocket"))
        #expect(await router.respond("GET", "/v1/gears/nope/stream").errorCode == "gear_not_found")
    }

    @Test func echo_IsA404WhenOff_AndAWebSocketRouteWhenOn() async throws {
        let host = try makeExampleHost()
        let off = makeRouter(host)
        #expect(await off.respond("GET", "/v1/echo").status == 404)
        #expect(await off.respond("GET", "/v1/echo").errorCode == "not_found")
        let on = APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics(), echoEndpoint: true)
        let handshake: [(name: String, value: String)] = [("Host", "localhost"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                                         ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                                                         ("Sec-WebSocket-Version", "13")]
        guard case .stream(.echo, .webSocket, _) = await on.route(makeRequest("GET", "/v1/echo", headers: handshake)) else {
            Issue.record("the echo was not routed")
            return
        }
        // The echo is WebSocket only: no server-sent events.
        #expect(await on.respond("GET", "/v1/echo", headers: acceptsEvents).status == 426)
        let foreign = await on.respond("GET", "/v1/echo", headers: handshake + [("Origin", "https://elsewhere.example")])
        #expect(foreign.status == 403)
        #expect(foreign.closesConnection)
        #expect(await on.respond("POST", "/v1/echo").status == 405)
        #expect(await on.respond("HEAD", "/v1/echo").status == 405)
        host.stop()
    }

    @Test func metrics_CountEventsRequestsAndLatency() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        _ = await router.post("/v1/spins/levels/events", #"{"type":"set","left":1,"right":1}"#, query: [("wait", "true")])
        router.metrics.requestAnswered(route: "/v1/spins/{name}/events", status: 200)
        let text = await router.respond("GET", "/metrics").text
        #expect(text.contains("# TYPE spin_events_applied_total counter"))
        #expect(text.contains(#"spin_http_requests_total{route="/v1/spins/{name}/events",status="200"} 1"#))
        #expect(text.contains("spin_event_apply_seconds_count 1"))
        #expect(text.contains(#"spin_sequence{spin="levels"}"#))
        host.stop()
    }

    @Test func openAPI_IsAnOpenAPI31DocumentListingEveryRoute() async throws {
        let document = await makeRouter(try makeExampleHost()).respond("GET", "/openapi.json").object
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = Set((document["paths"] as? [String: Any] ?? [:]).keys)
        let spins = ["counter", "levels", "feature", "router"]
        let perSpin = ["", "/events", "/resume", "/schema", "/stream", "/history", "/restore", "/fork"]
        #expect(paths == Set(["/", "/healthz", "/readyz", "/metrics", "/openapi.json", "/v1/spins", "/v1/gears",
                              "/v1/gears/{name}/stream", "/v1/cluster"]
                             + spins.flatMap { spin in perSpin.map { "/v1/spins/\(spin)\($0)" } }))
        // The route table and the document agree: every route but the test-only echo,
        // with the route's method (GET routes that do not stream list HEAD too); a route
        // of one Spin is listed once per hosted Spin.
        let documented = document["paths"] as? [String: [String: Any]] ?? [:]
        for route in Route.allCases where route != .echo {
            let listed = route.isPerSpin
                ? spins.map { route.template.replacingOccurrences(of: "{name}", with: $0) } : [route.template]
            for path in listed {
                let methods = Set((documented[path] ?? [:]).keys.filter { ["get", "head", "post", "put", "delete"].contains($0) })
                #expect(methods.contains(route.method.rawValue.lowercased()), "\(path)")
            }
        }
    }

    @Test func openAPI_GivesEachSpinItsOwnEventAndStateSchemas() async throws {
        let document = await makeRouter(try makeExampleHost()).respond("GET", "/openapi.json").object
        let schemas = (document["components"] as? [String: Any])?["schemas"] as? [String: Any] ?? [:]
        let counterEvent = schemas["Spin.counter.Event"] as? [String: Any]
        let types = (counterEvent?["oneOf"] as? [[String: Any]])?.compactMap {
            (($0["properties"] as? [String: Any])?["type"] as? [String: Any])?["const"] as? String
        }
        #expect(types == ["increase", "decrease", "reset"])
        #expect(schemas["Spin.levels.State"] != nil)
        // The events path of a Spin takes that Spin's events, alone or in an array.
        let paths = document["paths"] as? [String: Any] ?? [:]
        let post = (paths["/v1/spins/levels/events"] as? [String: Any])?["post"] as? [String: Any]
        let body = String(decoding: try JSONSerialization.data(withJSONObject: post?["requestBody"] ?? [:], options: .withoutEscapingSlashes), as: UTF8.self)
        #expect(body.contains("#/components/schemas/Spin.levels.Event"))
        #expect(!body.contains("#/components/schemas/Event\""))
        // A concrete path has no {name} parameter.
        #expect((paths["/v1/spins/levels"] as? [String: Any])?["parameters"] == nil)
    }

    @Test func aSpin_LinksItsSchemas_WhichDescribeItsEventsAndState() async throws {
        let router = makeRouter(try makeExampleHost())
        #expect(await router.respond("GET", "/v1/spins/levels").object["schema"] as? String == "/v1/spins/levels/schema")
        let schemas = await router.respond("GET", "/v1/spins/levels/schema")
        #expect(schemas.status == 200)
        let event = schemas.object["event"] as? [String: Any]
        let set = (event?["oneOf"] as? [[String: Any]])?.last
        #expect(set?["required"] as? [String] == ["type", "left", "right"])
        let state = schemas.object["state"] as? [String: Any]
        #expect(state?["required"] as? [String] == ["left", "right"])
        #expect(await router.respond("GET", "/v1/spins/nope/schema").status == 404)
    }

    @Test func aSpinOfTypesThatDoNotDescribeThemselves_GetsAPermissiveSchema() async throws {
        struct Plain: Codable, Sendable { var type: String }
        let host = SpinHost()
        try host.host(Spin(initialState: 0, feedbacks: [], reducer: Reducer { (state: Int, _: Plain) in state }), named: "plain")
        host.start()
        defer { host.stop() }
        let schemas = await makeRouter(host).respond("GET", "/v1/spins/plain/schema").object
        let event = schemas["event"] as? [String: Any]
        let type = (event?["properties"] as? [String: Any])?["type"] as? [String: Any]
        #expect(event?["required"] as? [String] == ["type"])
        #expect(type?["minLength"] as? Int == 1)
        #expect((schemas["state"] as? [String: Any])?.isEmpty == true)
    }

    @Test func theDashboard_IsServedOpenAsHTML() async throws {
        let router = makeRouter(try makeExampleHost(), tokens: [AccessToken(token: "t", scopes: [.admin])])
        let page = await router.respond("GET", "/")
        #expect(page.status == 200)
        #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(page.text.hasPrefix("<!DOCTYPE html>") || page.text.hasPrefix("<!doctype html>"))
        #expect(await router.respond("POST", "/").status == 405)
    }

    @Test func routeTemplates_NameTheRoute() {
        #expect(Route.label(Route.match("/v1/spins/counter/events")) == "/v1/spins/{name}/events")
        #expect(Route.label(Route.match("/v1/spins/counter")) == "/v1/spins/{name}")
        #expect(Route.label(Route.match("/healthz")) == "/healthz")
        #expect(Route.label(Route.match("/../etc/passwd")) == "other")
    }

    @Test(arguments: [
        ("/", Route.dashboard, ""), ("/v1/spins", .spins, ""), ("/v1/spins/counter", .spin, "counter"),
        ("/v1/spins/a-b_c/events", .spinEvents, "a-b_c"), ("/v1/spins/x/resume", .spinResume, "x"),
        ("/v1/spins/x/stream", .spinStream, "x"), ("/v1/spins/x/schema", .spinSchema, "x"),
        ("/v1/gears/auth/stream", .gearStream, "auth"), ("/v1/echo", .echo, ""),
        ("/v1/spins//events", .spinEvents, ""), ("/v1/spins/", .spin, ""),
    ])
    func routeMatch_FindsTheRouteAndTheName(path: String, route: Route, name: String) throws {
        let matched = try #require(Route.match(path))
        #expect(matched.route == route)
        #expect(matched.name == name)
    }

    @Test(arguments: ["", "/v1", "/v1/spins/x/y", "/v1/spins/x/events/", "/v1/gears/x", "/healthz/",
                      "/v1/spinsx", "/V1/spins", "/v1/gears/x/events"])
    func routeMatch_KnowsNoOtherPath(path: String) {
        #expect(Route.match(path) == nil)
    }
}

