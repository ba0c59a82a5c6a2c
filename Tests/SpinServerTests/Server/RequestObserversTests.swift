import Logging
@testable import SpinServer
import SpinConcurrency
import SpinWire
import Testing

/// What a request passes through besides its route, without a connection: its ID, its
/// count, its log line, and the ID its answer carries back.
@Suite struct RequestObserversTests {
    static func observers(_ capture: LogCapture, metrics: Metrics = Metrics()) -> RequestObservers {
        RequestObservers(metrics: metrics, tracer: nil, log: AccessLog(logger: capture.jsonLogger(), remote: nil))
    }

    static let admitted = Admission(label: "/v1/spins/{name}/events", subject: "ops", verdict: .failure(.spinNotFound("x")))

    @Test func aClientsRequestID_IsKept_AndStampedOnTheAnswer_ErrorBodiesIncluded() {
        var observers = Self.observers(LogCapture())
        let request = makeRequest("POST", "/v1/spins/x/events", headers: [("X-Request-Id", "client-7")])
        #expect(observers.begin(request, Self.admitted, readable: Monotonic.nanoseconds, started: Monotonic.nanoseconds) == nil)   // no tracer, no spans
        // The answer as the HTTP driver writes it: the ID's field after the response's own.
        let response = APIResponse.error(.spinNotFound("x"))
        var writer = HTTPResponseWriter()
        let written = String(decoding: writer.response(
            HTTPResponseHead(status: HTTPStatus(code: response.status), headers: response.headers),
            body: observers.body(of: response),
            context: HTTPResponseContext(requestMethod: .post, requestVersion: .http1_1, keepAlive: true),
            secondsSince1970: 0, lastField: observers.idField), as: UTF8.self)
        #expect(written.contains("\r\nContent-Type: application/json\r\nX-Request-Id: client-7\r\nContent-Length: "))
        #expect(written.hasSuffix(#","requestId":"client-7"}}"#))
        #expect(observers.stamped(["Upgrade": "websocket"]).map(\.name) == ["Upgrade", "X-Request-Id"])
    }

    @Test func anInvalidID_OrARefusedRequest_GetsANewOne() {
        var observers = Self.observers(LogCapture())
        _ = observers.begin(makeRequest("GET", "/healthz", headers: [("X-Request-Id", "has space")]), Self.admitted,
                            readable: Monotonic.nanoseconds, started: Monotonic.nanoseconds)
        let made = observers.current.id
        #expect(made.utf8.count == 16 && made != "has space")
        observers.refuse(status: 408, connection: 1)
        #expect(observers.current.id != made && observers.current.id.utf8.count == 16)
    }

    @Test func theEnd_CountsTheRoute_AndLogsOneLineNamingTheSubject() throws {
        let capture = LogCapture()
        let metrics = Metrics()
        var observers = Self.observers(capture, metrics: metrics)
        let request = makeRequest("POST", "/v1/spins/x/events", headers: [("X-Request-Id", "r1")])
        _ = observers.begin(request, Self.admitted, readable: Monotonic.nanoseconds, started: Monotonic.nanoseconds)
        observers.end(request, status: 404, bytes: 120)
        #expect(metrics.render(spins: []).contains(#"spin_http_requests_total{route="/v1/spins/{name}/events",status="404"} 1"#))
        let line = try capture.object()
        #expect(line["message"] as? String == "POST /v1/spins/x/events 404")
        #expect(line["sub"] as? String == "ops" && line["request_id"] as? String == "r1" && line["bytes"] as? Int == 120)
    }
}
