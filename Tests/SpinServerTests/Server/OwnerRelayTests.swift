import Foundation
import Glibc
import Logging
import SpinCore
@testable import SpinServer
import SpinWire
import Testing

/// Two live servers: A relays every Spin request to B (`RouteOutcome.proxy`), B serves
/// them. What a client of A sees must be B's answers.
// Serialized: the raw clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct OwnerRelayTests {
    /// A (relaying to B) and B, started on port 0.
    static func startPair() throws -> (a: LoopServer, portA: Int, b: LoopServer, portB: Int) {
        let (b, portB) = try LiveServerTests.start()
        let (a, portA) = try LiveServerTests.start()
        a.context.router.cluster.route { _, hops in
            hops > 0 ? .local : .proxy(node: "b", advertise: "http://127.0.0.1:\(portB)")
        }
        return (a, portA, b, portB)
    }

    static func get(_ port: Int, _ path: String) throws -> (status: Int, headers: [(name: String, value: String)], body: String)? {
        let client = try RawClient(port: port)
        client.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        return client.readResponse()
    }

    /// POSTs `body` to the levels Spin's events with `?wait=true` on `client`; its answer.
    static func postWaiting(_ client: RawClient, _ body: String, headers: String = "")
        -> (status: Int, headers: [(name: String, value: String)], body: String)? {
        client.send("POST /v1/spins/levels/events?wait=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        return client.readResponse()
    }

    static func header(_ name: String, in headers: [(name: String, value: String)]) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    @Test func eventsPostedToA_AdvanceB_AndLeaveAsOwnSpinAlone() async throws {
        let (a, portA, b, portB) = try Self.startPair()
        let before = try Self.get(portA, "/v1/spins/levels")   // relayed: B's
        let ownBefore = a.context.router.host.spin(named: "levels")?.snapshot().state
        let posted = try LiveServerTests.post(portA, "/v1/spins/levels/events", #"{"type":"set","left":42,"right":42}"#)
        #expect(posted.status == 202)
        // Accepted (202) before applied: B shows it soon.
        var atB = try Self.get(portB, "/v1/spins/levels")?.body.jsonObject
        let deadline = ContinuousClock.now + .seconds(5)
        while atB?["state"] as? [String: Int] != ["left": 42, "right": 42], ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            atB = try Self.get(portB, "/v1/spins/levels")?.body.jsonObject
        }
        #expect(atB?["state"] as? [String: Int] == ["left": 42, "right": 42])
        #expect((atB?["sequence"] as? Int ?? 0) > (before?.body.jsonObject["sequence"] as? Int ?? Int.max))
        let throughA = try Self.get(portA, "/v1/spins/levels")
        #expect(throughA?.status == 200)
        #expect(throughA?.body.jsonObject["state"] as? [String: Int] == ["left": 42, "right": 42])
        #expect(throughA?.body.jsonObject["sequence"] as? Int == atB?["sequence"] as? Int)
        #expect(a.context.router.host.spin(named: "levels")?.snapshot().state == ownBefore)
        let metrics = a.context.metrics.render(spins: [])
        #expect(metrics.contains(#"spin_proxied_requests_total{route="/v1/spins/{name}/events"} 1"#))
        #expect(metrics.contains(#"spin_http_requests_total{route="/v1/spins/{name}/events",status="202"} 1"#))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func waitTrue_RepliesThroughTheRelay_WithTheClientsRequestID() async throws {
        let (a, portA, b, _) = try Self.startPair()
        let client = try RawClient(port: portA)
        let response = Self.postWaiting(client, #"{"type":"set","left":1,"right":2}"#, headers: "X-Request-Id: relay-test-1\r\n")
        #expect(response?.status == 200)
        #expect(response?.body.jsonObject["state"] as? [String: Int] == ["left": 1, "right": 2])
        #expect(response?.body.jsonObject["replies"] != nil)
        #expect(Self.header("X-Request-Id", in: response?.headers ?? []) == "relay-test-1")
        await a.shutdown()
        await b.shutdown()
    }

    @Test func oneKeptAliveConnection_CarriesSeveralRelayedRequests() async throws {
        let (a, portA, b, _) = try Self.startPair()
        let client = try RawClient(port: portA)
        let first = Self.postWaiting(client, #"{"type":"set","left":3,"right":3}"#)
        #expect(first?.status == 200)
        #expect(Self.header("Connection", in: first?.headers ?? [])?.lowercased() != "close")
        client.send("GET /v1/spins/levels HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /v1/spins/nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let second = client.readResponse()
        #expect(second?.status == 200)
        #expect(second?.body.jsonObject["state"] as? [String: Int] == ["left": 3, "right": 3])
        #expect(client.readResponse()?.status == 404)   // relayed too: B does not know it either
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aBodyLargerThanTheOutputLimit_ReachesTheOwnerWhole() async throws {
        let (b, portB) = try LiveServerTests.start { $0.limits.maxBodyBytes = 16 << 20 }
        let (a, portA) = try LiveServerTests.start { $0.limits.maxBodyBytes = 16 << 20 }
        a.context.router.cluster.route { _, hops in
            hops > 0 ? .local : .proxy(node: "b", advertise: "http://127.0.0.1:\(portB)")
        }
        // 6 MiB, over a connection's 4 MiB of pending output: an empty batch B refuses
        // (422) only once it has read it all.
        let body = "[" + String(repeating: " ", count: 6 << 20) + "]"
        let response = try LiveServerTests.post(portA, "/v1/spins/levels/events", body)
        #expect(response.status == 422)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func relayedRequests_GoOnOneKeptAliveConnectionToTheOwner() async throws {
        let (a, portA, b, _) = try Self.startPair()
        let before = b.context.metrics.openConnections
        let client = try RawClient(port: portA)
        for level in 1...5 {
            #expect(Self.postWaiting(client, #"{"type":"set","left":\#(level),"right":\#(level)}"#)?.status == 200)
        }
        client.send("GET /v1/spins/levels HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(client.readResponse()?.body.jsonObject["state"] as? [String: Int] == ["left": 5, "right": 5])
        // Six requests, one connection from A to B, still open for the next one.
        #expect(b.context.metrics.openConnections == before + 1)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aKeptAliveConnectionTheOwnerClosed_IsNotUsed_ThePostGoesOnANewOne() async throws {
        // Each connection of the fake owner answers one request without `Connection:
        // close` (so A keeps it), then the owner closes it, as an owner that stops does.
        let answer = ["HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"]
        let owner = try FakeOwner(answers: [answer, answer])
        let (a, portA) = try Self.startRelaying(to: "http://127.0.0.1:\(owner.port)")
        let client = try RawClient(port: portA)
        for _ in 0..<2 {
            client.send("POST /v1/spins/levels/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n[]")
            #expect(client.readResponse()?.status == 202)
            try await Task.sleep(for: .milliseconds(100))   // the owner has closed the first one
        }
        #expect(owner.requests.count == 2)
        withExtendedLifetime(owner) {}   // its listener stays open until here
        await a.shutdown()
    }

    @Test func aWebSocketThroughA_GetsBsSnapshotAndStates_AndAcksItsEvents() async throws {
        let (a, portA, b, portB) = try Self.startPair()
        _ = try LiveServerTests.post(portB, "/v1/spins/levels/events", #"{"type":"set","left":11,"right":11}"#)
        let client = try RawClient(port: portA)
        #expect(client.upgrade("/v1/spins/levels/stream")?.status == 101)
        var session = WebSocketSession(role: .client)
        let snapshot = client.readMessages(&session, count: 1).messages.first?.jsonObject
        #expect(snapshot?["type"] as? String == "snapshot")
        #expect(snapshot?["state"] as? [String: Int] == ["left": 11, "right": 11])
        // Posted to B directly: the stream relayed from B shows it.
        #expect(try LiveServerTests.post(portB, "/v1/spins/levels/events", #"{"type":"set","left":21,"right":21}"#).status == 202)
        let received = client.readJSON(&session) { $0["state"] as? [String: Int] == ["left": 21, "right": 21] }
        #expect(received.contains { $0["state"] as? [String: Int] == ["left": 21, "right": 21] })
        client.sendText(#"{"type":"event","id":"w1","event":{"type":"increaseLeft"}}"#, on: &session)
        let replies = client.readJSON(&session) { $0["type"] as? String == "ack" }
        #expect(replies.contains { $0["type"] as? String == "ack" && $0["id"] as? String == "w1" })
        // The event sent over the relayed stream was applied by B.
        let sequenceAtSet = received.last { $0["state"] as? [String: Int] == ["left": 21, "right": 21] }?["sequence"] as? Int
        let atB = try Self.get(portB, "/v1/spins/levels")?.body.jsonObject
        #expect((atB?["sequence"] as? Int ?? 0) > (sequenceAtSet ?? Int.max))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func serverSentEventsThroughA_AreBsStream() async throws {
        let (a, portA, b, portB) = try Self.startPair()
        let client = try RawClient(port: portA)
        client.send("GET /v1/spins/levels/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        let head = client.readText(until: "\r\n\r\n")
        #expect(head?.hasPrefix("HTTP/1.1 200") == true)
        #expect(head?.contains("text/event-stream") == true)
        #expect(client.readText(until: "snapshot") != nil)
        #expect(try LiveServerTests.post(portB, "/v1/spins/levels/events", #"{"type":"set","left":31,"right":32}"#).status == 202)
        #expect(client.readText(until: #""left":31"#) != nil)
        await a.shutdown()
        await b.shutdown()
    }

    /// If the relay read from the owner faster than the client reads, it would buffer
    /// without bound (and A would drop the client at its output limit). It stops reading
    /// instead, so B's own back-pressure conflates the stream, as for a direct client.
    @Test func aRelayedStreamWhoseClientStopsReading_IsConflatedByTheOwner() async throws {
        let (b, portB) = try LiveServerTests.start { $0.limits.streamQueue = 8 }
        let (a, portA) = try LiveServerTests.start()
        a.context.router.cluster.route { _, hops in
            hops > 0 ? .local : .proxy(node: "b", advertise: "http://127.0.0.1:\(portB)")
        }
        let stuck = try RawClient(port: portA, receiveBuffer: 4096)
        #expect(stuck.upgrade("/v1/spins/levels/stream")?.status == 101)
        let last = try LiveServerTests.floodLevels(portB)
        LiveServerTests.expectConflated(stuck, endingAt: last)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func theOwnerDown_IsA503SpinUnavailable_Quickly() async throws {
        let (a, portA, b, _) = try Self.startPair()
        await b.shutdown()
        let started = ContinuousClock.now
        let response = try Self.get(portA, "/v1/spins/levels")
        #expect(response?.status == 503)
        #expect(response?.body.contains("spin_unavailable") == true)
        #expect(Self.header("Retry-After", in: response?.headers ?? []) == "1")
        #expect(ContinuousClock.now - started < .seconds(5))
        await a.shutdown()
    }

    @Test func anOwnerAdvertisedByName_IsResolved_AndAnUnknownNameIsA503() async throws {
        let (b, portB) = try LiveServerTests.start()
        let (a, portA) = try Self.startRelaying(to: "http://localhost:\(portB)")
        #expect(try Self.get(portA, "/v1/spins/levels")?.status == 200)
        a.context.router.cluster.route { _, _ in .proxy(node: "x", advertise: "http://no-such-node.invalid:\(portB)") }
        let started = ContinuousClock.now
        let unknown = try Self.get(portA, "/v1/spins/levels")
        #expect(unknown?.status == 503)
        #expect(unknown?.body.contains("spin_unavailable") == true)
        #expect(ContinuousClock.now - started < .seconds(5))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aRequest_IsForwardedAtMostMaxHopsTimes() async throws {
        // A and B each believe the other owns the Spin (views that differ for a moment),
        // and decide as the lease loop does: past `maxHops` a request is served or refused
        // (here refused, standing in for a wait that runs out).
        let (a, portA) = try LiveServerTests.start()
        let (b, portB) = try LiveServerTests.start()
        a.context.router.cluster.route { _, hops in
            hops >= ClusterRouting.maxHops ? .unavailable(retryAfterSeconds: 1) : .proxy(node: "b", advertise: "http://127.0.0.1:\(portB)")
        }
        b.context.router.cluster.route { _, hops in
            hops >= ClusterRouting.maxHops ? .unavailable(retryAfterSeconds: 1) : .proxy(node: "a", advertise: "http://127.0.0.1:\(portA)")
        }
        let response = try Self.get(portA, "/v1/spins/levels")
        #expect(response?.status == 503)
        #expect(response?.body.contains("spin_unavailable") == true)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func closingTheClient_ClosesTheRelayedStreamAtTheOwner() async throws {
        let (a, portA, b, _) = try Self.startPair()
        let idle = b.context.metrics.openConnections
        var client: RawClient? = try RawClient(port: portA)
        #expect(client?.upgrade("/v1/spins/levels/stream")?.status == 101)
        #expect(b.context.metrics.openConnections == idle + 1)
        client = nil   // closes the socket
        let deadline = ContinuousClock.now + .seconds(5)
        while b.context.metrics.openConnections > idle, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(b.context.metrics.openConnections == idle)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func shuttingDownTheRelayingNode_ClosesItsRelayedStreams() async throws {
        let (a, portA, b, _) = try Self.startPair()
        let client = try RawClient(port: portA)
        #expect(client.upgrade("/v1/spins/levels/stream")?.status == 101)
        var session = WebSocketSession(role: .client)
        #expect(client.readMessages(&session, count: 1).messages.count == 1)
        let stopping = Task { await a.shutdown() }
        let outcome = client.readMessages(&session, count: 100)
        #expect(outcome.closeCode == nil || outcome.closeCode == 1001)
        #expect(client.readsEnd())
        _ = await stopping.value
        await b.shutdown()
    }

    // MARK: Against a fake owner

    /// A (relaying everything to `owner`) on port 0.
    static func startRelaying(to owner: String) throws -> (LoopServer, Int) {
        let (a, portA) = try LiveServerTests.start()
        a.context.router.cluster.route { _, hops in hops > 0 ? .local : .proxy(node: "b", advertise: owner) }
        return (a, portA)
    }

    @Test func theOwnersAnswer_KeepsItsFields_LosesHopByHopOnes_AndTheClientStaysConnected() async throws {
        let answer = ["HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\n"
                      + "Keep-Alive: timeout=5\r\nX-Owner: b\r\nContent-Length: 11\r\n\r\n{\"a\":", "12345}"]
        let owner = try FakeOwner(answers: [["HTTP/1.1 100 Continue\r\n\r\n"] + answer, answer])
        let (a, portA) = try Self.startRelaying(to: "http://127.0.0.1:\(owner.port)")
        let client = try RawClient(port: portA)
        for _ in 0..<2 {
            client.send("POST /v1/spins/levels/events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: r-1\r\nContent-Length: 2\r\n\r\n[]")
            let response = client.readResponse()
            #expect(response?.status == 200)
            #expect(response?.body == #"{"a":12345}"#)
            #expect(Self.header("X-Owner", in: response?.headers ?? []) == "b")
            #expect(Self.header("X-Hop", in: response?.headers ?? []) == nil)
            #expect(Self.header("Keep-Alive", in: response?.headers ?? []) == nil)
            #expect(Self.header("Connection", in: response?.headers ?? [])?.lowercased() != "close")
        }
        let sent = owner.requests
        #expect(sent.count == 2)
        #expect(sent.first?.hasPrefix("POST /v1/spins/levels/events HTTP/1.1\r\n") == true)
        #expect(sent.first?.contains("X-Request-Id: r-1\r\n") == true)
        #expect(sent.first?.contains("X-Spin-Forwarded-By: ") == true)
        #expect(sent.first?.hasSuffix("\r\n\r\n[]") == true)
        withExtendedLifetime(owner) {}   // its listener stays open until here
        await a.shutdown()
    }

    @Test func anOversizedOrMalformedAnswer_IsA502() async throws {
        let owner = try FakeOwner(answers: [["HTTP/1.1 200 OK\r\nContent-Length: \(200 << 20)\r\n\r\n"], ["garbage\r\n\r\n"]])
        let (a, portA) = try Self.startRelaying(to: "http://127.0.0.1:\(owner.port)")
        let large = try Self.get(portA, "/v1/spins/levels")
        #expect(large?.status == 502)
        #expect(large?.body.contains("proxy_response_too_large") == true)
        let malformed = try Self.get(portA, "/v1/spins/levels")
        #expect(malformed?.status == 502)
        #expect(malformed?.body.contains("proxy_bad_response") == true)
        withExtendedLifetime(owner) {}   // its listener stays open until here
        await a.shutdown()
    }

    @Test func anOwnerThatClosesMidBody_ClosesTheClientsConnection() async throws {
        let owner = try FakeOwner(answers: [["HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part"]])
        let (a, portA) = try Self.startRelaying(to: "http://127.0.0.1:\(owner.port)")
        let client = try RawClient(port: portA)
        client.send("GET /v1/spins/levels HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(client.readText(until: "only part") != nil)
        #expect(client.readResponse() == nil)   // never complete: the connection ended
        withExtendedLifetime(owner) {}   // its listener stays open until here
        await a.shutdown()
    }

    @Test func aPostTheOwnerGotButDidNotAnswer_IsA502OutcomeUnknown_AndAGetA503() async throws {
        // The owner reads the request and closes without a word (it died after applying
        // it, perhaps): a 503 would promise nothing was applied, so a POST gets a 502
        // that says the outcome is unknown; a read is simply unavailable.
        let owner = try FakeOwner(answers: [[], []])
        let (a, portA) = try Self.startRelaying(to: "http://127.0.0.1:\(owner.port)")
        let client = try RawClient(port: portA)
        let posted = Self.postWaiting(client, #"{"type":"set","level":1}"#)
        #expect(posted?.status == 502)
        #expect(posted?.body.contains("proxy_outcome_unknown") == true)
        #expect(posted?.body.contains("may or may not have been applied") == true)
        let read = try Self.get(portA, "/v1/spins/levels")
        #expect(read?.status == 503)
        #expect(read?.body.contains("spin_unavailable") == true)
        #expect(owner.requests.count == 2)
        await a.shutdown()
    }

    @Test func anOwnerThatNeverAccepts_IsA503AfterTheConnectTimeout() async throws {
        // A listener that never accepts, its backlog full: the kernel drops further SYNs.
        let owner = try FakeOwner(answers: [], backlog: 0)
        let port = owner.port
        let fillers = (0..<2).compactMap { _ in try? RawClient(port: port, timeoutSeconds: 1) }
        #expect(fillers.count >= 1)
        let (a, portA) = try Self.startRelaying(to: "http://127.0.0.1:\(port)")
        let started = ContinuousClock.now
        let response = try Self.get(portA, "/v1/spins/levels")
        let waited = ContinuousClock.now - started
        #expect(response?.status == 503)
        #expect(response?.body.contains("spin_unavailable") == true)
        #expect(waited >= .milliseconds(1900) && waited < .seconds(5))
        withExtendedLifetime(owner) {}   // its listener stays open until here
        await a.shutdown()
    }

    @Test func anHTTPSOwner_IsRefusedWith502_ForNow() async throws {
        let (a, portA) = try Self.startRelaying(to: "https://127.0.0.1:1")
        let response = try Self.get(portA, "/v1/spins/levels")
        #expect(response?.status == 502)
        #expect(response?.body.contains("proxy_tls_unsupported") == true)
        await a.shutdown()
    }
}
