import COpenSSL
import SpinTesting
import Testing
@testable import SpinNet

@Suite struct TLSSessionTests {
    let context: TLSContext

    init() throws {
        let certificates = try TestCertificates.shared
        context = try TLSContext(configuration: TLSConfiguration(
            certificateChainPath: certificates.leaf, privateKeyPath: certificates.leafKey))
    }

    @Test func newSession_HasNoOutput_AndNoHandshakeYet() throws {
        let session = try #require(TLSSession(context: context))
        #expect(!session.handshakeComplete)
        #expect(!session.hasOutput)
        #expect(session.negotiatedProtocol == nil)
    }

    @Test func plainHTTPBytes_FailTheHandshake_WithOpenSSLText() throws {
        let session = try #require(TLSSession(context: context))
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)
        defer { scratch.deallocate() }
        let status = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8).withUnsafeBytes {
            session.receive($0, scratch: scratch) { _ in Issue.record("plaintext out of garbage") }
        }
        guard case .failed(.handshakeFailed(let text)) = status else {
            Issue.record("expected a handshake failure, got \(status)")
            return
        }
        #expect(text.contains("error:"))
    }

    /// Random bytes (some starting like a TLS handshake record) never crash the
    /// session and never yield plaintext: each input ends `.ok` (waiting for more) or
    /// `.failed(.handshakeFailed)`.
    @Test(arguments: [11 as UInt64, 12, 13, 14])
    func randomCiphertext_NeverCrashes_NeverYieldsPlaintext(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)
        defer { scratch.deallocate() }
        for _ in 0..<500 {
            let session = try #require(TLSSession(context: context))
            var input = (0..<Int.random(in: 1...600, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if Bool.random(using: &random) {
                // A plausible record header: handshake, TLS 1.0-1.2 record version.
                input.replaceSubrange(0..<min(3, input.count), with: [22, 3, UInt8.random(in: 1...3, using: &random)].prefix(input.count))
            }
            let status = input.withUnsafeBytes {
                session.receive($0, scratch: scratch) { _ in Issue.record("plaintext out of garbage") }
            }
            switch status {
            case .ok, .failed(.handshakeFailed): break
            default: Issue.record("unexpected \(status)")
            }
        }
    }
}

extension TLSSessionTests {
    /// Moves ciphertext both ways until neither side has anything to say; returns
    /// the plaintext the server produced.
    private func pump(_ client: MemoryTLSClient, _ server: TLSSession, scratch: UnsafeMutableRawBufferPointer) -> (String, TLSSession.ReceiveStatus) {
        var plaintext = ""
        var status = TLSSession.ReceiveStatus.ok
        for _ in 0..<20 {
            if !client.handshakeComplete { client.stepHandshake() }
            let toServer = client.drain()
            status = toServer.withUnsafeBytes {
                server.receive($0, scratch: scratch) { plaintext += String(decoding: $0, as: UTF8.self) }
            }
            let toClient = server.takeOutput()
            client.feed(toClient)
            if toServer.isEmpty, toClient.isEmpty, client.handshakeComplete { break }
        }
        return (plaintext, status)
    }

    @Test func memoryClient_CompletesHandshake_VerifiesChain_AgreesOnHTTP11() throws {
        let server = try #require(TLSSession(context: context))
        let client = MemoryTLSClient(caFile: try TestCertificates.shared.ca)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)
        defer { scratch.deallocate() }
        _ = pump(client, server, scratch: scratch)
        #expect(server.handshakeComplete)
        #expect(client.handshakeComplete)
        #expect(client.verifyResult == Int(X509_V_OK))
        #expect(server.negotiatedProtocol == "http/1.1")
    }

    @Test func clientOfferingOnlyH2_IsServedWithoutALPN() throws {
        let server = try #require(TLSSession(context: context))
        let client = MemoryTLSClient(caFile: try TestCertificates.shared.ca, alpn: ["h2"])
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)
        defer { scratch.deallocate() }
        _ = pump(client, server, scratch: scratch)
        #expect(server.handshakeComplete)
        #expect(server.negotiatedProtocol == nil)
    }

    @Test func dataBothWays_ThenServerShutdown_ClientSeesCloseNotify() throws {
        let server = try #require(TLSSession(context: context))
        let client = MemoryTLSClient(caFile: try TestCertificates.shared.ca)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)
        defer { scratch.deallocate() }
        _ = pump(client, server, scratch: scratch)

        client.write("ping")
        let (received, status) = pump(client, server, scratch: scratch)
        #expect(received == "ping")
        #expect(status == .ok)

        #expect(server.send(Array("pong".utf8)[...]) == nil)
        server.shutdown()
        client.feed(server.takeOutput())
        #expect(client.read() == .data("pong"))
        #expect(client.read() == .closeNotify)
    }

    @Test func clientCloseNotify_IsReportedToTheServer() throws {
        let server = try #require(TLSSession(context: context))
        let client = MemoryTLSClient(caFile: try TestCertificates.shared.ca)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)
        defer { scratch.deallocate() }
        _ = pump(client, server, scratch: scratch)
        _ = SSL_shutdown(client.ssl)
        let (_, status) = pump(client, server, scratch: scratch)
        #expect(status == .closeNotify)
    }

    @Test func clientTrustingAnotherCA_FailsVerification() throws {
        let server = try #require(TLSSession(context: context))
        // The leaf is not a CA: trusting it as one must not verify the chain.
        let client = MemoryTLSClient(caFile: try TestCertificates.shared.garbage)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)
        defer { scratch.deallocate() }
        _ = pump(client, server, scratch: scratch)
        #expect(!client.handshakeComplete)
    }
}
