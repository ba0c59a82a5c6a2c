import SpinWire
import Testing
@testable import SpinServer

/// `AdvertiseURL` and `ProxiedRequest`: what a non-owner sends to a Spin's owner.
@Suite struct ProxiedRequestTests {
    static let owner = AdvertiseURL("http://node-b.internal:8081")!

    static func forwarded(_ request: HTTPRequest, to owner: AdvertiseURL = owner) -> String {
        String(decoding: ProxiedRequest(request, to: owner, from: "node-a").bytes, as: UTF8.self)
    }

    @Test(arguments: [
        ("http://b:8081", false, "b", 8081, "b:8081"),
        ("https://b.example", true, "b.example", 443, "b.example"),
        ("http://b.example/", false, "b.example", 80, "b.example"),
        ("https://[fd00::1]:8443", true, "[fd00::1]", 8443, "[fd00::1]:8443"),
    ])
    func advertiseURL_TakesApartSchemeHostAndPort(text: String, tls: Bool, host: String, port: Int, hostHeader: String) throws {
        let url = try #require(AdvertiseURL(text))
        #expect(url.tls == tls && url.host == host && url.port == port)
        #expect(url.hostHeader == hostHeader)
    }

    @Test(arguments: ["b:8081", "ftp://b", "http://", "http://b:0", "http://b:x", "http://b/path", "http://a@b",
                      "http://[fd00::1", "http://a:1:2"])
    func advertiseURL_RefusesWhatIsNotANodeURL(text: String) {
        #expect(AdvertiseURL(text) == nil)
    }

    @Test func aPost_KeepsMethodTargetHeadersAndBody_DropsHopByHop_AndSaysWhoForwarded_OnAKeptAliveConnection() {
        let request = makeRequest("POST", "/v1/spins/counter/events?wait=true", headers: [
            ("Host", "node-a:8080"), ("Content-Type", "application/json"), ("Authorization", "Bearer t"),
            ("Connection", "keep-alive, X-Secret"), ("X-Secret", "hop"), ("Keep-Alive", "timeout=5"),
            ("X-Request-Id", "r1"),
        ], body: Array(#"{"type":"increase"}"#.utf8))
        #expect(Self.forwarded(request) == "POST /v1/spins/counter/events?wait=true HTTP/1.1\r\n"
            + "Host: node-a:8080\r\nContent-Type: application/json\r\nAuthorization: Bearer t\r\n"
            + "X-Request-Id: r1\r\nVia: 1.1 node-a\r\nX-Spin-Forwarded-By: node-a\r\n"
            + "Content-Length: 19\r\n\r\n" + #"{"type":"increase"}"#)
    }

    @Test func aWebSocketStream_KeepsItsUpgrade() {
        let request = makeRequest("GET", "/v1/spins/counter/stream?since=4", headers: [
            ("Host", "node-a:8080"), ("Connection", "Upgrade"), ("Upgrade", "websocket"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13"), ("Origin", "http://node-a:8080"),
        ])
        #expect(Self.forwarded(request) == "GET /v1/spins/counter/stream?since=4 HTTP/1.1\r\nHost: node-a:8080\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://node-a:8080\r\n"
            + "Via: 1.1 node-a\r\nX-Spin-Forwarded-By: node-a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
    }

    @Test func theForwardersAndVia_AreExtendedByEachNode_AndCountTheHops() {
        let request = makeRequest("GET", "/v1/spins/counter", headers: [
            ("X-Spin-Forwarded-By", "node-x"), ("Via", "1.1 edge"),
        ])
        #expect(ProxiedRequest.hops(of: request) == 1)
        let text = Self.forwarded(request)
        // No Host from the client: the owner's.
        #expect(text.contains("Host: node-b.internal:8081\r\n"))
        #expect(text.contains("X-Spin-Forwarded-By: node-x, node-a\r\n"))
        #expect(text.contains("Via: 1.1 edge, 1.1 node-a\r\n"))
        #expect(ProxiedRequest.hops(of: makeRequest("GET", "/v1/spins/counter")) == 0)
        #expect(ProxiedRequest.hops(of: makeRequest("GET", "/v1/spins/counter", headers: [
            ("X-Spin-Forwarded-By", "a, b")])) == 2)
        // Present but empty still says it was forwarded once.
        #expect(ProxiedRequest.hops(of: makeRequest("GET", "/v1/spins/counter", headers: [
            ("X-Spin-Forwarded-By", "")])) == 1)
    }
}
