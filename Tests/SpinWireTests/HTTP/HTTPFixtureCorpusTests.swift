import Foundation
import Testing
@testable import SpinWire

/// Realistic requests captured in the shape curl, browsers and Python clients send them,
/// stored as raw bytes in `Fixtures/HTTP/`. Each is parsed whole, byte by byte and in
/// random splits, alone and pipelined after all the others.
struct HTTPFixtureCorpusTests {
    typealias T = HTTPTestSupport

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/HTTP")

    static func fixture(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static let names = [
        "curl-get-state.http", "curl-post-event.http", "curl-post-expect-continue.http",
        "curl-chunked-upload.http", "browser-get-dashboard.http", "browser-eventsource.http",
        "python-requests-post.http", "browser-websocket-upgrade.http", "python-urllib-http10.http",
    ]

    func request(_ name: String) throws -> HTTPRequest {
        let outcomes = T.parse(try Self.fixture(name))
        return try #require(T.requests(outcomes).first, "\(name): \(outcomes)")
    }

    @Test func curlGet() throws {
        let request = try request("curl-get-state.http")
        #expect(request.target.pathSegments == ["v1", "spins", "counter"])
        #expect(request.headers["user-agent"] == "curl/8.5.0")
        #expect(request.keepAlive)
    }

    @Test func curlPostJSON() throws {
        let request = try request("curl-post-event.http")
        #expect(request.method == .post)
        #expect(request.target.queryValue("wait") == "true")
        #expect(request.headers["authorization"] == "Bearer s3cr3t-token")
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"type":"increase"}"#)
    }

    @Test func curlPostWithExpectContinue() throws {
        let outcomes = T.parse(try Self.fixture("curl-post-expect-continue.http"))
        #expect(outcomes.first == .action(.sendContinue))
        let request = try #require(T.requests(outcomes).first)
        #expect(request.expectsContinue)
        #expect(request.body.count == 41)
    }

    @Test func curlChunkedUpload() throws {
        #expect(String(decoding: try request("curl-chunked-upload.http").body, as: UTF8.self) == #"{"type":"increase"}"#)
    }

    @Test func browserNavigation() throws {
        let request = try request("browser-get-dashboard.http")
        #expect(request.headers.count == 15)
        #expect(request.headers["sec-ch-ua"]?.hasPrefix("\"Chromium\"") == true)
        #expect(request.headers.containsToken("br", in: "accept-encoding"))
        #expect(!request.isUpgradeCandidate)
    }

    @Test func browserEventSource() throws {
        let request = try request("browser-eventsource.http")
        #expect(request.headers["accept"] == "text/event-stream")
        #expect(request.headers["last-event-id"] == "42")
    }

    @Test func browserWebSocket() throws {
        let request = try request("browser-websocket-upgrade.http")
        #expect(request.isUpgradeCandidate)
        #expect(request.headers["sec-websocket-key"] == "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(request.headers["origin"] == "http://localhost:8080")
    }

    @Test func pythonRequestsPost() throws {
        let request = try request("python-requests-post.http")
        #expect(request.body.count == 52)
        #expect(request.keepAlive)
    }

    @Test func pythonUrllibHTTP10() throws {
        let request = try request("python-urllib-http10.http")
        #expect(request.version == .http1_0)
        #expect(!request.keepAlive)
    }

    @Test func wholeCorpus_Pipelined_GivesEveryRequestInOrder() throws {
        // The upgrade and HTTP/1.0 fixtures end a connection, so they go last.
        let input = try Self.names.flatMap { try Self.fixture($0) }
        let outcomes = T.parse(input)
        let requests = T.requests(outcomes)
        #expect(requests.count == 8)
        #expect(requests.last?.isUpgradeCandidate == true)
        #expect(outcomes.last == .handedOver(try Self.fixture("python-urllib-http10.http")))
    }
}
