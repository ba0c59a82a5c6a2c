import Testing
@testable import SpinServer

@Suite struct HostPolicyTests {
    private let loopback = HostPolicy(listenHost: "127.0.0.1", allowedHosts: ["spin.example.com"], tokensConfigured: false)

    @Test(arguments: [
        "127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:1", "localhost.", "app.localhost:3000",
        "[::1]", "[::1]:8080", "127.1.2.3:80", "spin.example.com", "Spin.Example.COM:443",
    ])
    func loopbackNames_ListenAddress_AndAllowedNames_AreServed_OnAnyPort(host: String) {
        #expect(loopback.allows(host: host))
    }

    @Test(arguments: [
        "evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example", "spin.example.com.evil",
        "10.0.0.1", "[::2]", "0.0.0.0", "127.0.0.256", "localhost:80x", "[::1", "", ":8080",
    ])
    func otherNames_AndMalformedHosts_AreNot(host: String) {
        #expect(!loopback.allows(host: host))
    }

    /// ASCII values are read as bytes; the names are those the Unicode reading gives.
    @Test func anASCIIHost_IsNamedAsItsUnicodeReadingNamesIt() {
        let values = ["127.0.0.1", "127.0.0.1:8080", "LOCALHOST:1", "localhost.", "[::1]", "[::1]:8080", "[::1", "[::1]x",
                      "[]", "[]:1", "Spin.Example.COM:443", "a.:", "a:", ":", ":8080", "", ".", "..", "a..", "x:1:2",
                      "x:+1", "x: 1", "ABC-def_GHI.example", "host:0080"]
        for value in values {
            #expect(HostPolicy.hostName(of: value) == HostPolicy.unicodeHostName(of: value), "\(value)")
        }
        #expect(HostPolicy.hostName(of: "ÉTÉ.example:1") == "été.example")
    }

    @Test func noHostHeader_Passes_BrowsersAlwaysSendOne() {
        #expect(loopback.allows(host: nil))
    }

    @Test func withTokens_EveryHostIsServed() {
        let policy = HostPolicy(listenHost: "127.0.0.1", allowedHosts: [], tokensConfigured: true)
        #expect(policy.allows(host: "evil.example"))
    }

    @Test func star_TurnsTheCheckOff() {
        let policy = HostPolicy(listenHost: "127.0.0.1", allowedHosts: ["*"], tokensConfigured: false)
        #expect(policy.allows(host: "anything.example"))
    }

    @Test func listeningOnAllInterfaces_ServesLoopbackAndAllowedNamesOnly() {
        for listen in ["0.0.0.0", "::"] {
            let policy = HostPolicy(listenHost: listen, allowedHosts: ["box.lan"], tokensConfigured: false)
            #expect(policy.allows(host: "localhost:8080"))
            #expect(policy.allows(host: "box.lan:8080"))
            #expect(!policy.allows(host: "0.0.0.0:8080"))
            #expect(!policy.allows(host: "192.168.1.9:8080"))
        }
    }

    @Test func ipv6ListenAddress_IsMatchedInItsBracketedForm() {
        let policy = HostPolicy(listenHost: "fd00::5", allowedHosts: ["[fd00::6]"], tokensConfigured: false)
        #expect(policy.allows(host: "[fd00::5]:8080"))
        #expect(policy.allows(host: "[FD00::6]"))
        #expect(!policy.allows(host: "[fd00::7]"))
    }

    @Test func router_AnswersAForeignHost421_OnEveryRoute() async throws {
        let host = try makeExampleHost()
        defer { host.stop() }
        let router = APIRouter(host: host, access: AccessControl(tokens: []), hosts: loopback, metrics: Metrics())
        for (method, path) in [("GET", "/"), ("GET", "/healthz"), ("GET", "/v1/spins/levels"),
                               ("POST", "/v1/spins/levels/events"), ("GET", "/v1/spins/levels/stream"),
                               ("GET", "/v1/gears/auth/stream"), ("GET", "/metrics"), ("GET", "/nowhere")] {
            let response = await router.respond(method, path, headers: [("Host", "evil.example:8080")])
            #expect(response.status == 421, "\(method) \(path)")
            let error = response.object["error"] as? [String: Any]
            #expect(error?["code"] as? String == "misdirected_request")
            #expect((error?["message"] as? String)?.contains("\"evil.example:8080\"") == true)
        }
        #expect(await router.respond("GET", "/healthz", headers: [("Host", "localhost:8080")]).status == 200)
    }
}
