import Foundation
@testable import SpinServer
import Testing

/// The dashboard and the OpenAPI document come from SpinServer's resource bundle: the
/// dashboard is served byte for byte as its file in Sources/SpinServer, the OpenAPI
/// document is its file with the hosted Spins' paths and schemas added.
// Serialized: the raw clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct BundledResourceTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/SpinServer").standardized

    @Test(arguments: [("/", "Dashboard/dashboard.html")])
    func aResource_IsServedByteForByte_AsItsFile(path: String, file: String) async throws {
        let expected = Array(try Data(contentsOf: Self.sources.appendingPathComponent(file)))
        #expect(!expected.isEmpty)
        let (server, port) = try LiveServerTests.start()
        let client = try RawClient(port: port)
        client.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.status == 200)
        #expect(Array(response.body.utf8) == expected)
        await server.shutdown()
    }

    @Test func theOpenAPIDocument_IsItsFile_WithoutSpins() throws {
        let expected = Array(try Data(contentsOf: Self.sources.appendingPathComponent("OpenAPI/openapi.json")))
        #expect(!expected.isEmpty)
        #expect(OpenAPIDocument.render(spins: []) == expected)
        // With Spins, what the file has besides the one-Spin paths is all there.
        let host = try makeExampleHost(start: false)
        let served = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.render(spins: host.spins)))
            as? [String: Any])
        let file = try #require(try JSONSerialization.jsonObject(with: Data(expected)) as? [String: Any])
        let filePaths = (file["paths"] as? [String: Any] ?? [:]).keys.filter { !$0.hasPrefix("/v1/spins/{name}") }
        #expect(Set(filePaths).isSubset(of: Set((served["paths"] as? [String: Any] ?? [:]).keys)))
    }
}
