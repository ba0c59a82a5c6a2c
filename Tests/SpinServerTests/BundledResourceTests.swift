import Foundation
@testable import SpinServer
import Testing

/// The dashboard comes from SpinServer's resource bundle: it is served byte for byte as
/// its file in Sources/SpinServer.
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
}
