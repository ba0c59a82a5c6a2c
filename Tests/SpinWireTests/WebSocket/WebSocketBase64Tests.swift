import Testing
@testable import SpinWire

@Suite struct WebSocketBase64Tests {
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                      ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func rfc4648TestVectors_EncodeAndDecode(plain: String, encoded: String) {
        #expect(WebSocketBase64.encode(Array(plain.utf8)) == encoded)
        #expect(WebSocketBase64.decode(encoded) == Array(plain.utf8))
    }

    @Test(arguments: ["Zg", "Zg=", "Z===", "Zm9v=Yg=", "Zh==", "Zm9vYmE!", "Zm9 v", "=Zm9"])
    func malformedOrNonCanonicalInput_IsRejected(text: String) {
        #expect(WebSocketBase64.decode(text) == nil)
    }

    @Test func everyByteValue_RoundTrips() {
        let bytes = (0...255).map { UInt8($0) }
        for length in 0...bytes.count where length % 17 == 0 || length < 5 {
            #expect(WebSocketBase64.decode(WebSocketBase64.encode(Array(bytes.prefix(length)))) == Array(bytes.prefix(length)))
        }
    }
}
