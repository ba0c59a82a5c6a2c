import Foundation
import Logging
import SpinCore
@testable import SpinServer
import SpinWire
import Testing

/// The server on a real socket (port 0), driven by raw clients. The end-to-end suite in
/// Tests/e2e does the same with curl, Python requests and websockets.
// Serialized: the raw clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct LiveServerTests {
    static func start(_ configure: (inout SpinServerConfiguration) -> Void = { _ in }) throws -> (LoopServer, Int) {
        var configuration = SpinServerConfiguration(port: 0)
        configure(&configuration)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = LoopServer(configuration: configuration, host: try makeExampleHost(start: false), logger: logger)
        return (server, try server.start())
    }

    static func post(_ port: Int, _ path: String, _ body: String) throws -> (status: Int, body: String) {
        let client = try RawClient(port: port)
        client.send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let response = client.readResponse()
        return (response?.status ?? 0, response?.body ?? "")
    }

    @Test func portZero_IsReported_AndPipelinedRequestsAreAnsweredInOrder() async throws {
        let (server, port) = try Self.start()
        #expect(port > 0)
        let client = try RawClient(port: port)
        client.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /v1/spins/nope HTTP/1.1\r\nHost: localhost\r\n\r\nGET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(client.readResponse()?.status == 200)
        #expect(client.readResponse()?.status == 404)
        #expect(client.readResponse()?.body == #"{"status":"ready"}"#)
        await server.shutdown()
    }

    @Test func hundredsOfPipelinedRequests_AreAnsweredWithoutRecursion() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        client.send(String(repeating: "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 900))
        shutdown(client.fd, Int32(SHUT_WR))
        var answered = 0
        while let response = client.readResponse(), response.status == 200 { answered += 1 }
        #expect(answered == 900)
        await server.shutdown()
    }

    @Test func aHalfClose_StillGetsEveryPipelinedRequestAnswered() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        let body = #"{"type":"reset"}"#
        client.send("POST /v1/spins/counter/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        shutdown(client.fd, Int32(SHUT_WR))
        #expect(client.readResponse()?.status == 202)
        #expect(client.readResponse()?.status == 200)
        #expect(!client.fill())
        await server.shutdown()
    }

    @Test func theSnapshotComesFirst_EvenBeforeAnErrorForAnEarlyMessage() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        // The upgrade and a bad client message in one write.
        var session = WebSocketSession(role: .client)
        var frame: [UInt8] = []
        for case .send(let bytes) in session.sendText("not json") { frame = bytes }
        let handshake = WebSocketClientHandshake()
        var request = "GET /v1/spins/router/stream HTTP/1.1\r\n"
        for header in handshake.requestHeaders(host: "127.0.0.1") { request += "\(header.name): \(header.value)\r\n" }
        client.send(Array((request + "\r\n").utf8) + frame)
        #expect(client.readResponse()?.status == 101)
        let messages = client.readMessages(&session, count: 2).messages.map(\.jsonObject)
        #expect(messages.first?["type"] as? String == "snapshot")
        #expect(messages.dropFirst().first?["type"] as? String == "error")
        await server.shutdown()
    }

    @Test func theEchoEndpoint_SendsTextBackAsText_AndBinaryAsBinary() async throws {
        let (server, port) = try Self.start { $0.testing.echoEndpoint = true }
        let client = try RawClient(port: port)
        #expect(client.upgrade("/v1/echo")?.status == 101)
        var session = WebSocketSession(role: .client)
        for action in session.sendText("héllo") + session.sendBinary([0, 1, 255]) {
            if case .send(let bytes) = action { client.send(bytes) }
        }
        #expect(client.readWebSocketMessages(&session, count: 2).messages == [.text("héllo"), .binary([0, 1, 255])])
        let plain = try RawClient(port: port)
        plain.send("GET /v1/echo HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n")
        #expect(plain.readResponse()?.status == 426)
        await server.shutdown()
    }

    /// The stream changes its WebSocket session in place (`StreamMachine`). It used to
    /// take a copy out of an enum per frame, and the copy shared the buffers of the
    /// message being assembled, so each fragment copied the whole message so far:
    /// quadratic, 21 s for Autobahn 9.3.1 (4 MiB in 65 537 fragments). This one took
    /// over 10 s that way.
    @Test func aMessageIn16384Fragments_IsEchoedInLinearTime() async throws {
        let (server, port) = try Self.start {
            $0.testing.echoEndpoint = true
            $0.limits.maxWebSocketMessageBytes = 8 << 20
        }
        let client = try RawClient(port: port)
        #expect(client.upgrade("/v1/echo")?.status == 101)
        let fragment = [UInt8](repeating: 0x61, count: 256)
        var frames: [UInt8] = []
        for index in 0..<16384 {
            frames += WebSocketFrameEncoder.encode(opcode: index == 0 ? .binary : .continuation, payload: fragment,
                                                   fin: index == 16383, maskingKey: 0x1234_5678)
        }
        let started = ContinuousClock.now
        client.send(frames)
        var session = WebSocketSession(role: .client, limits: WebSocketLimits(maxFrameSize: 8 << 20, maxMessageSize: 8 << 20))
        let echoed = client.readWebSocketMessages(&session, count: 1).messages.first
        #expect(echoed == .binary([UInt8](repeating: 0x61, count: 4 << 20)))
        #expect(ContinuousClock.now - started < .seconds(5))
        await server.shutdown()
    }

    @Test func withoutTheEchoEndpoint_v1echo_Is404() async throws {
        let (server, port) = try Self.start()
        #expect(try RawClient(port: port).upgrade("/v1/echo")?.status == 404)
        await server.shutdown()
    }

    @Test func streams_TakeTheTokenAsAQueryParameter() async throws {
        let (server, port) = try Self.start { $0.tokens = [AccessToken(token: "s3cret", scopes: [.read])] }
        #expect(try RawClient(port: port).upgrade("/v1/spins/counter/stream")?.status == 401)
        #expect(try RawClient(port: port).upgrade("/v1/spins/counter/stream?access_token=s3cret")?.status == 101)
        let plain = try RawClient(port: port)
        plain.send("GET /v1/spins?access_token=s3cret HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(plain.readResponse()?.status == 401)
        await server.shutdown()
    }

    @Test func aMalformedRequest_Is400WithTheErrorBody_AndTheConnectionCloses() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        client.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
        let response = client.readResponse()
        #expect(response?.status == 400)
        #expect(response?.body.jsonObject["error"] != nil)
        #expect(!client.fill())   // closed
        await server.shutdown()
    }

    @Test func aWebSocket_GetsTheSnapshot_ThenEveryState_AndAcksItsOwnEvents() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        let upgrade = client.upgrade("/v1/spins/levels/stream")
        #expect(upgrade?.status == 101)
        var session = WebSocketSession(role: .client)
        let first = client.readMessages(&session, count: 1).messages.first?.jsonObject
        #expect(first?["type"] as? String == "snapshot")
        let sequence = first?["sequence"] as? Int ?? -1
        #expect(try Self.post(port, "/v1/spins/levels/events", #"{"type":"set","left":7,"right":7}"#).status == 202)
        // The first states may still be the convergence from start-up.
        var received: [[String: Any]] = []
        while !received.contains(where: { ($0["event"] as? [String: Any])?["type"] as? String == "set" }) {
            let batch = client.readMessages(&session, count: 1).messages.map(\.jsonObject)
            guard !batch.isEmpty else { break }
            received += batch
        }
        let set = received.last
        #expect(set?["type"] as? String == "state")
        #expect((set?["sequence"] as? Int ?? 0) > sequence)
        #expect(set?["state"] as? [String: Int] == ["left": 7, "right": 7])
        client.sendText(#"{"type":"event","id":"c1","event":{"type":"increaseLeft"}}"#, on: &session)
        // State messages (from events still queued at start-up) may come first.
        let replies = client.readJSON(&session) { $0["type"] as? String == "ack" }
        #expect(replies.contains { $0["type"] as? String == "ack" && $0["id"] as? String == "c1" })
        await server.shutdown()
    }

    @Test func anUnmaskedClientFrame_IsClosedWith1002_AndChangesNothing() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        #expect(client.upgrade("/v1/spins/counter/stream")?.status == 101)
        var session = WebSocketSession(role: .client)
        _ = client.readMessages(&session, count: 1)
        let payload = Array(#"{"type":"event","id":"x","event":{"type":"reset"}}"#.utf8)
        client.send([0x81, UInt8(payload.count)] + payload)   // FIN text, no mask bit
        let outcome = client.readMessages(&session, count: 10)
        #expect(outcome.closeCode == 1002)
        #expect(try Self.post(port, "/v1/spins/counter/events", "[]").status == 422)
        await server.shutdown()
    }

    @Test func aClientThatStopsReading_IsConflated_AndNeverSlowsOthers() async throws {
        let (server, port) = try Self.start { $0.limits.streamQueue = 8 }
        let stuck = try RawClient(port: port, receiveBuffer: 4096)
        #expect(stuck.upgrade("/v1/spins/levels/stream")?.status == 101)
        // Thousands of state messages while the stuck client reads nothing.
        // Converged levels: each event is one state message and no feedback event.
        let last = try Self.floodLevels(port)
        // Now read: the stream skipped states (conflated into snapshots), and ends at the newest.
        Self.expectConflated(stuck, endingAt: last)
        await server.shutdown()
    }

    /// Posts 100 000 `set` events to the levels Spin at `port` (converged levels: each
    /// is one state message and no feedback event); returns its sequence after them.
    static func floodLevels(_ port: Int) throws -> Int {
        let batch = "[" + Array(repeating: #"{"type":"set","left":5,"right":5}"#, count: 1000).joined(separator: ",") + "]"
        for _ in 0..<100 {
            #expect(try Self.post(port, "/v1/spins/levels/events", batch).status == 202)
        }
        let health = try RawClient(port: port, timeoutSeconds: 2)
        health.send("GET /v1/spins/levels HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let last = health.readResponse()?.body.jsonObject["sequence"] as? Int ?? 0
        #expect(last >= 100_000)
        return last
    }

    /// Reads `client`'s levels stream up to `last`: it must end at the newest state and
    /// have skipped states (conflated into snapshots).
    static func expectConflated(_ client: RawClient, endingAt last: Int) {
        var session = WebSocketSession(role: .client)
        var messages: [[String: Any]] = []
        while messages.last?["sequence"] as? Int != last {
            let more = client.readMessages(&session, count: 1).messages.map(\.jsonObject)
            guard !more.isEmpty else { break }
            messages += more
        }
        #expect(messages.last?["sequence"] as? Int == last)
        #expect(messages.count < 100_000)
        #expect(messages.dropFirst().contains { $0["type"] as? String == "snapshot" })
    }

    @Test func shutdown_ClosesStreamsWith1001() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        #expect(client.upgrade("/v1/spins/router/stream")?.status == 101)
        var session = WebSocketSession(role: .client)
        _ = client.readMessages(&session, count: 1)
        let stopping = Task { await server.shutdown() }
        #expect(client.readMessages(&session, count: 100).closeCode == 1001)
        _ = await stopping.value
    }

    @Test func aForeignOrigin_IsRefused_SameOriginIsNot() async throws {
        let (server, port) = try Self.start { $0.allowedOrigins = ["https://dash.example"] }
        let foreign = try RawClient(port: port)
        #expect(foreign.upgrade("/v1/spins/counter/stream", extraHeaders: "Origin: https://evil.example\r\n")?.status == 403)
        let listed = try RawClient(port: port)
        #expect(listed.upgrade("/v1/spins/counter/stream", extraHeaders: "Origin: https://dash.example\r\n")?.status == 101)
        let same = try RawClient(port: port)
        #expect(same.upgrade("/v1/spins/counter/stream", extraHeaders: "Origin: http://127.0.0.1\r\n")?.status == 101)
        await server.shutdown()
    }

    @Test func aPortInUse_FailsStartWithAClearReason() async throws {
        let (server, port) = try Self.start()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let second = LoopServer(configuration: SpinServerConfiguration(port: port), host: try makeExampleHost(start: false),
                                logger: logger)
        do {
            _ = try second.start()
            Issue.record("a second server bound the same port")
        } catch {
            #expect("\(error)".contains("\(port)"))
            #expect(!second.host.isReady)
        }
        await server.shutdown()
    }
}
