@testable import SpinServer
import Testing

/// The request cycle's behaviour as a client sees it, each body run twice: against the
/// machine in memory (a manual clock: no waiting) and against a live server on port 0.
// Serialized: the live clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct HTTPConnectionCycleTests {
    private static func closes(_ response: (status: Int, headers: [(name: String, value: String)], body: String)?) -> Bool {
        response?.headers.contains { $0.name.lowercased() == "connection" && $0.value.lowercased() == "close" } ?? false
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func keepAlive_ServesRequestAfterRequest_OnOneConnection(transport: HTTPTestTransport) async throws {
        try await withHTTPTestClient(transport) { client in
            for _ in 0..<3 {
                client.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let response = client.readResponse()
                #expect(response?.status == 200)
                #expect(!Self.closes(response))
            }
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func pipelinedRequests_AreAnsweredInOrder(transport: HTTPTestTransport) async throws {
        try await withHTTPTestClient(transport) { client in
            client.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /v1/spins/nope HTTP/1.1\r\nHost: localhost\r\n\r\nGET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(client.readResponse()?.status == 200)
            #expect(client.readResponse()?.status == 404)
            #expect(client.readResponse()?.status == 200)
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func slowRequestHead_Is408_ThenTheConnectionCloses(transport: HTTPTestTransport) async throws {
        try await withHTTPTestClient(transport, { $0.limits.headerTimeoutSeconds = 1 }) { client in
            client.send("GET /healthz HTTP/1.1\r\nHost: slow")
            client.pass(.milliseconds(999))
            client.pass(.milliseconds(1))
            let response = client.readResponse()
            #expect(response?.status == 408)
            #expect(response?.body.contains("request_timeout") ?? false)
            #expect(client.readsEnd())
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func halfClose_EveryCompleteRequestIsAnswered_ThenTheConnectionCloses(transport: HTTPTestTransport) async throws {
        try await withHTTPTestClient(transport) { client in
            client.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /heal")
            client.shutdownWrite()
            #expect(client.readResponse()?.status == 200)
            #expect(client.readResponse()?.status == 200)
            #expect(client.readsEnd())
        }
    }

    @Test(arguments: HTTPTestTransport.allCases)
    func lastAllowedRequest_IsAnsweredWithConnectionClose_ThenTheConnectionCloses(transport: HTTPTestTransport) async throws {
        let allowed = HTTPConnectionLimits().maxRequestsPerConnection
        try await withHTTPTestClient(transport) { client in
            client.send(String(repeating: "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", count: allowed + 1))
            for _ in 1..<allowed {
                let response = client.readResponse()
                #expect(response?.status == 200)
                #expect(!Self.closes(response))
            }
            let last = client.readResponse()
            #expect(last?.status == 200)
            #expect(Self.closes(last))
            #expect(client.readsEnd())   // the request past the limit is not served
        }
    }
}
