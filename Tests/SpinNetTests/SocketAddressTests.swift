import Testing
@testable import SpinNet

@Suite struct SocketAddressTests {
    @Test(arguments: [("127.0.0.1", SocketAddress.Family.ipv4, "127.0.0.1:80"),
                      ("::1", .ipv6, "[::1]:80"), ("[::1]", .ipv6, "[::1]:80"),
                      ("0.0.0.0", .ipv4, "0.0.0.0:80"), ("::", .ipv6, "[::]:80")])
    func numericHost_IsParsed_WithFamilyAndDescription(host: String, family: SocketAddress.Family, text: String) throws {
        let address = try SocketAddress(host: host, port: 80)
        #expect(address.family == family)
        #expect(address.description == text)
    }

    @Test(arguments: ["localhost", "256.1.1.1", "1.2.3", ":::1", ""])
    func nonNumericOrMalformedHost_IsRejected(host: String) {
        #expect(throws: SocketError.invalidAddress("\(host):80")) { try SocketAddress(host: host, port: 80) }
    }

    @Test(arguments: [-1, 65_536])
    func portOutOfRange_IsRejected(port: Int) {
        #expect(throws: SocketError.self) { try SocketAddress(host: "127.0.0.1", port: port) }
    }
}
