import CoreMetrics
import Foundation
import InMemoryTracing
import Logging
import Metrics
import Prometheus
import SpinCore
@testable import SpinServer
import Testing
import Tracing

/// Request IDs, tracing spans and the metrics registry, on a real socket.
///
/// `InstrumentationSystem` and `MetricsSystem` can each be bootstrapped once per process:
/// `Observability.tracer` and `Observability.registry` do it the first time they are read,
/// and tests find their own spans by request ID.
enum Observability {
    static let tracer: InMemoryTracer = {
        let tracer = InMemoryTracer()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()

    static let registry = LoopServer.bootstrapMetricsSystem()
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct ObservabilityTests {
    /// A server on port 0 logging JSON into `capture`.
    static func start(_ capture: LogCapture = LogCapture(),
                      registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) throws -> (LoopServer, Int) {
        let server = LoopServer(configuration: SpinServerConfiguration(port: 0), host: try makeExampleHost(start: false),
                                logger: capture.jsonLogger(), metricsRegistry: registry)
        return (server, try server.start())
    }

    static func get(_ port: Int, _ path: String, headers: String = "")
        -> (status: Int, headers: [(name: String, value: String)], body: String)? {
        let client = try? RawClient(port: port)
        client?.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)\r\n")
        return client?.readResponse()
    }

    static func requestID(_ response: (status: Int, headers: [(name: String, value: String)], body: String)?) -> String? {
        response?.headers.first { $0.name.lowercased() == "x-request-id" }?.value
    }

    static func json(_ body: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    }

    static func isGenerated(_ id: String?) -> Bool {
        guard let id else { return false }
        return id.utf8.count == 16 && id.allSatisfy(\.isHexDigit)
    }

    @Test func aClientsRequestID_IsEchoed_AndLoggedWithNumbersAsNumbers() async throws {
        let capture = LogCapture()
        let (server, port) = try Self.start(capture)
        let response = Self.get(port, "/healthz", headers: "X-Request-Id: client-7f/abc\r\n")
        #expect(Self.requestID(response) == "client-7f/abc")
        await server.shutdown()
        let line = try #require(capture.written.first { $0.contains(#""message":"GET /healthz 200""#) })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["request_id"] as? String == "client-7f/abc")
        #expect(object["status"] as? Int == 200)
        #expect(object["bytes"] as? Int ?? 0 > 0)
        #expect(object["duration_ms"] is NSNumber)
    }

    @Test func withoutARequestID_OneIsGenerated_PerRequest() async throws {
        let (server, port) = try Self.start()
        let first = Self.requestID(Self.get(port, "/healthz"))
        let second = Self.requestID(Self.get(port, "/healthz"))
        #expect(Self.isGenerated(first))
        #expect(Self.isGenerated(second))
        #expect(first != second)
        await server.shutdown()
    }

    @Test func anInvalidRequestID_IsReplaced() async throws {
        let (server, port) = try Self.start()
        let long = String(repeating: "a", count: 129)
        #expect(Self.isGenerated(Self.requestID(Self.get(port, "/healthz", headers: "X-Request-Id: \(long)\r\n"))))
        #expect(Self.isGenerated(Self.requestID(Self.get(port, "/healthz", headers: "X-Request-Id: two words\r\n"))))
        let longest = String(repeating: "b", count: 128)
        #expect(Self.requestID(Self.get(port, "/healthz", headers: "X-Request-Id: \(longest)\r\n")) == longest)
        await server.shutdown()
    }

    @Test func anErrorBody_CarriesTheRequestID_BesideCodeAndMessage() async throws {
        let (server, port) = try Self.start()
        let response = try #require(Self.get(port, "/v1/spins/nope", headers: "X-Request-Id: err-1\r\n"))
        #expect(response.status == 404)
        let error = try #require(Self.json(response.body)["error"] as? [String: Any])
        #expect(error["code"] as? String == "spin_not_found")
        #expect(error["message"] as? String == #"no Spin named "nope" is hosted here"#)
        #expect(error["requestId"] as? String == "err-1")
        #expect(Self.requestID(response) == "err-1")
        await server.shutdown()
    }

    @Test func aRequestTheParserRejects_GetsAGeneratedIDInHeaderAndBody() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        client.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.status == 400)
        let id = Self.requestID(response)
        #expect(Self.isGenerated(id))
        #expect((Self.json(response.body)["error"] as? [String: Any])?["requestId"] as? String == id)
        await server.shutdown()
    }

    @Test func aWebSocketUpgrade_EchoesTheRequestIDOnThe101() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        let response = try #require(client.upgrade("/v1/spins/counter/stream", extraHeaders: "X-Request-Id: ws-1\r\n"))
        #expect(response.status == 101)
        #expect(response.headers.first { $0.name.lowercased() == "x-request-id" }?.value == "ws-1")
        await server.shutdown()
    }

    @Test func aPost_IsTracedAsRequestWithApplyDurableAndAcknowledge() async throws {
        let tracer = Observability.tracer
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        let body = #"{"type":"increase"}"#
        client.send("POST /v1/spins/counter/events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: trace-1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(client.readResponse()?.status == 202)
        // The request span ends right after the answer is written: wait for it.
        var request: FinishedInMemorySpan?
        for _ in 0..<200 where request == nil {
            request = tracer.finishedSpans.first {
                $0.operationName == "request" && $0.attributes.get(RequestTrace.Attribute.requestID) == .string("trace-1")
            }
            if request == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let span = try #require(request)
        #expect(span.attributes.get(RequestTrace.Attribute.method) == .string("POST"))
        #expect(span.attributes.get(RequestTrace.Attribute.route) == .string("/v1/spins/{name}/events"))
        #expect(span.attributes.get(RequestTrace.Attribute.status) == .int64(202))
        let children = tracer.finishedSpans.filter { $0.parentSpanID == span.spanID }
        #expect(children.map(\.operationName).sorted() == ["acknowledge", "apply", "durable"])
        #expect(children.allSatisfy { $0.traceID == span.traceID })
        #expect(children.allSatisfy { $0.attributes.get(RequestTrace.Attribute.spin) == .string("counter") })
        await server.shutdown()
    }

    @Test func anAcceptedPost_IsTimedInFiveStages_AndOtherRequestsAreNot() async throws {
        let (server, port) = try Self.start()
        let client = try RawClient(port: port)
        let body = #"{"type":"increase"}"#
        for _ in 0..<3 {
            client.send("POST /v1/spins/counter/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(client.readResponse()?.status == 202)
        }
        // Refused (422): no stages.
        client.send("POST /v1/spins/counter/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        #expect(client.readResponse()?.status == 422)
        let text = try #require(Self.get(port, "/metrics")?.body)
        #expect(text.contains("# TYPE spin_event_stage_seconds histogram"))
        for stage in EventStageHistogram.stages {
            #expect(text.contains(#"spin_event_stage_seconds_count{stage="\#(stage)"} 3"#), "\(stage)")
            #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="\#(stage)",le="+Inf"} 3"#), "\(stage)")
        }
        await server.shutdown()
    }

    @Test func theStageHistogram_CountsEachStageInItsBucket_Cumulatively() {
        let histogram = EventStageHistogram()
        // parse 3 µs, admit 15 µs, apply 1.5 ms, journal 30 s (past every bound), ack 0.
        let readable: UInt64 = 1_000_000_000
        let handed = readable + 3_000
        let stages = EventStages(accepted: handed + 15_000, applied: handed + 15_000 + 1_500_000,
                                 durable: handed + 15_000 + 1_500_000 + 30_000_000_000)
        histogram.observe(readable: readable, handed: handed, stages, answered: stages.durable)
        // Readings from different threads may run backwards: counted as 0, never negative
        // (parse 0, admit 18 µs).
        histogram.observe(readable: handed, handed: readable, stages, answered: stages.durable)
        var text = ""
        histogram.render(into: &text)
        #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="parse",le="5e-06"} 2"#))
        #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="admit",le="1e-05"} 0"#))
        #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="admit",le="2e-05"} 2"#))
        #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="apply",le="0.001"} 0"#))
        #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="apply",le="0.002"} 2"#))
        #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="journal",le="10.0"} 0"#))
        #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="journal",le="+Inf"} 2"#))
        #expect(text.contains(#"spin_event_stage_seconds_bucket{stage="ack",le="5e-06"} 2"#))
        #expect(text.contains(#"spin_event_stage_seconds_sum{stage="journal"} 60.0"#))
        #expect(text.contains(#"spin_event_stage_seconds_sum{stage="parse"} 3e-06"#))
        #expect(text.contains(#"spin_event_stage_seconds_sum{stage="admit"} 3.3e-05"#))
        #expect(text.contains(#"spin_event_stage_seconds_count{stage="ack"} 2"#))
    }

    @Test func aConnectionsRequestCounting_CountsEachRouteAndStatusApart() {
        let metrics = Metrics()
        var counting = RequestCounting()
        for (route, status) in [("/healthz", 200), ("/healthz", 200), ("/metrics", 200), ("/healthz", 503), ("/healthz", 200)] {
            counting.count(route: route, status: status, in: metrics)
        }
        let text = metrics.render(spins: [])
        #expect(text.contains(#"spin_http_requests_total{route="/healthz",status="200"} 3"#))
        #expect(text.contains(#"spin_http_requests_total{route="/healthz",status="503"} 1"#))
        #expect(text.contains(#"spin_http_requests_total{route="/metrics",status="200"} 1"#))
    }

    @Test func withTheNoOpTracer_NoRequestIsTraced() throws {
        let host = try makeExampleHost(start: false)
        let router = APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics())
        let context = ServerContext(configuration: SpinServerConfiguration(port: 0), router: router,
                                    logger: Logger(label: "test"), tracer: NoOpTracer())
        #expect(context.tracer == nil)
    }

    @Test func anAuthorsSwiftMetrics_AppearOnMetrics_BesideTheServers() async throws {
        let registry = Observability.registry
        let (server, port) = try Self.start(registry: registry)
        Counter(label: "orders_placed_total", dimensions: [("spin", "orders")]).increment(by: 3)
        CoreMetrics.Timer(label: "pricing_seconds").recordMilliseconds(20)
        let text = try #require(Self.get(port, "/metrics")?.body)
        #expect(text.contains(#"orders_placed_total{spin="orders"} 3"#))
        #expect(text.contains("pricing_seconds_count 1"))
        #expect(text.contains(#"spin_sequence{spin="counter"}"#))
        #expect(server.metricsRegistry === registry)
        await server.shutdown()
    }
}
