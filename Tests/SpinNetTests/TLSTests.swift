import COpenSSL
import Foundation
import Glibc
import Testing
@testable import SpinNet
@testable import SpinConcurrency

@Suite struct TLSTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates.shared
    }

    private func configuration(certificate: String? = nil, key: String? = nil) -> TLSConfiguration {
        TLSConfiguration(certificateChainPath: certificate ?? certificates.leaf, privateKeyPath: key ?? certificates.leafKey)
    }

    @Test func validChainAndKey_BuildAContext() throws {
        _ = try TLSContext(configuration: configuration())
    }

    @Test func missingCertificate_ReportsPathAndErrno() {
        #expect(throws: TLSError.certificateFileUnreadable(path: "/nonexistent/cert.pem", errno: ENOENT)) {
            try TLSContext(configuration: configuration(certificate: "/nonexistent/cert.pem"))
        }
    }

    @Test func missingKey_ReportsPathAndErrno() {
        #expect(throws: TLSError.privateKeyFileUnreadable(path: "/nonexistent/key.pem", errno: ENOENT)) {
            try TLSContext(configuration: configuration(key: "/nonexistent/key.pem"))
        }
    }

    @Test func garbageCertificate_IsInvalid_WithOpenSSLText() {
        do {
            _ = try TLSContext(configuration: configuration(certificate: certificates.garbage))
            Issue.record("a garbage certificate was accepted")
        } catch {
            guard case .certificateInvalid(let path, let text) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(path == certificates.garbage)
            #expect(text.contains("error:"))
        }
    }

    @Test func garbageKey_IsInvalid() {
        #expect {
            try TLSContext(configuration: configuration(key: certificates.garbage))
        } throws: { error in
            if case .privateKeyInvalid(let path, _) = error as? TLSError { return path == certificates.garbage }
            return false
        }
    }

    @Test func keyOfAnotherCertificate_IsAMismatch() {
        #expect {
            try TLSContext(configuration: configuration(key: certificates.otherKey))
        } throws: { error in
            if case .privateKeyMismatch(_, let key, let text) = error as? TLSError {
                return key == certificates.otherKey && text.contains("error:")
            }
            return false
        }
    }

    @Test func serverStart_WithBadKey_ThrowsTheTLSError() {
        let server = SocketServer(
            configuration: ServerConfiguration(host: "127.0.0.1", port: 0),
            tls: configuration(key: certificates.otherKey), handlerFactory: { _ in FixedResponseHandler() })
        #expect(throws: TLSError.self) { try server.start() }
    }

    @Test(arguments: ["127.0.0.1", "::1"])
    func curlWithCACert_GetsTheResponse_OverHTTP11ALPN(host: String) async throws {
        let (server, address) = try SocketServer.make(host: host, tls: configuration()) { _ in FixedResponseHandler() }
        let url = host == "::1" ? "https://[::1]:\(address.port)/" : "https://127.0.0.1:\(address.port)/"
        let result = try run("curl", ["-sS", "-v", "--cacert", certificates.ca, "--max-time", "10", url])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "hello")
        #expect(result.stderr.contains("ALPN: server accepted http/1.1"))
        #expect(result.stderr.contains("SSL certificate verify ok"))
        await server.stop()
    }

    @Test func plainAndTLSServers_SideBySide_BothAnswerCurl() async throws {
        let (tlsServer, tlsAddress) = try SocketServer.make(tls: configuration()) { _ in FixedResponseHandler() }
        let (plainServer, plainAddress) = try SocketServer.make { _ in FixedResponseHandler() }
        let secure = try run("curl", ["-sS", "--cacert", certificates.ca, "--max-time", "10",
                                      "https://localhost:\(tlsAddress.port)/a", "https://localhost:\(tlsAddress.port)/b"])
        let plain = try run("curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(plainAddress.port)/"])
        #expect(secure.stdout == "hellohello", "\(secure.stderr)")  // two requests, one kept-alive connection
        #expect(plain.stdout == "hello", "\(plain.stderr)")
        #expect(tlsServer.statistics.accepted == 1)
        await tlsServer.stop()
        await plainServer.stop()
    }

    @Test func opensslSClient_VerifiesChain_NegotiatesALPN_AndSeesCleanClose() async throws {
        final class AnswerAndClose: ConnectionHandler {
            let log: EventLog
            init(log: EventLog) { self.log = log }
            func didReceive(_ bytes: [UInt8], on connection: Connection) {
                if String(decoding: bytes, as: UTF8.self).hasSuffix("\r\n\r\n") {
                    connection.write(Array("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".utf8))
                    connection.closeAfterFlush()
                }
            }
            func didClose(_ connection: Connection, reason: CloseReason) { log.record(.closed(reason)) }
        }
        let log = EventLog()
        let (server, address) = try SocketServer.make(tls: configuration()) { _ in AnswerAndClose(log: log) }
        let result = try run("openssl", [
            "s_client", "-connect", "127.0.0.1:\(address.port)", "-CAfile", certificates.ca,
            "-servername", "localhost", "-alpn", "http/1.1", "-verify_return_error", "-ign_eof",
        ], input: "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Verify return code: 0 (ok)"))
        #expect(result.stdout.contains("ALPN protocol: http/1.1"))
        #expect(result.stdout.contains("HTTP/1.1 200 OK"))
        #expect(await eventually { log.closeReasons == [.closedLocally] })
        await server.stop()
    }

    @Test func tls11Client_IsRefused() async throws {
        let log = EventLog()
        let (server, address) = try SocketServer.make(tls: configuration()) { _ in FixedResponseHandler(log: log) }
        let result = try run("openssl", [
            "s_client", "-connect", "127.0.0.1:\(address.port)", "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0",
        ], input: "")
        #expect(result.status != 0)
        #expect(!result.stdout.contains("BEGIN CERTIFICATE"))
        await server.stop(deadline: .milliseconds(100))
    }

    @Test func context_OffersOnlyAEADSuites_ECDHEForTLS12() throws {
        let context = try TLSContext(configuration: configuration())
        let ssl = try #require(SSL_new(context.context))
        defer { SSL_free(ssl) }
        var names: [String] = []
        while let name = SSL_get_cipher_list(ssl, Int32(names.count)) { names.append(String(cString: name)) }
        let tls13 = names.filter { $0.hasPrefix("TLS_") }
        let tls12 = names.filter { !$0.hasPrefix("TLS_") }
        #expect(!tls13.isEmpty)
        #expect(tls12 == TLSContext.tls12Ciphers.split(separator: ":").map(String.init))
        for name in tls12 {
            #expect(name.hasPrefix("ECDHE-") && (name.contains("-GCM-") || name.hasSuffix("CHACHA20-POLY1305")), "\(name)")
        }
        for name in tls13 { #expect(name.contains("GCM") || name.contains("CHACHA20") || name.contains("CCM"), "\(name)") }
    }

    /// One test, the suites one after the other: each `openssl` run blocks a thread of
    /// the cooperative pool, and parallel cases would starve the other live tests.
    @Test func tls12Client_IsServedOnlyWithAnECDHEAEADSuite() async throws {
        let log = EventLog()
        let (server, address) = try SocketServer.make(tls: configuration()) { _ in FixedResponseHandler(log: log) }
        for (cipher, isServed) in [
            ("AES128-SHA", false), ("ECDHE-ECDSA-AES128-SHA", false), ("ECDHE-ECDSA-AES256-SHA384", false),
            ("ECDHE-ECDSA-AES128-GCM-SHA256", true), ("ECDHE-ECDSA-CHACHA20-POLY1305", true),
        ] {
            let result = try run("openssl", [
                "s_client", "-connect", "127.0.0.1:\(address.port)", "-tls1_2", "-cipher", "\(cipher)@SECLEVEL=0",
                "-CAfile", certificates.ca, "-servername", "localhost",
            ], input: "")
            #expect((result.status == 0) == isServed, "\(cipher): \(result.stdout)\n\(result.stderr)")
            if isServed { #expect(result.stdout.contains("Cipher is \(cipher)")) }
        }
        await server.stop(deadline: .milliseconds(100))
    }

    @Test func silentTLSClient_WithoutAHandshake_IsClosedAtTheHeadDeadline() async throws {
        let log = EventLog()
        let (server, address) = try SocketServer.make(tls: configuration()) { _ in
            FixedResponseHandler(log: log, headTimeout: .milliseconds(300))
        }
        let opened = ContinuousClock.now
        let client = try TestClient(address)
        #expect(client.receiveToEnd().eof)  // not a byte of TLS, and no reset
        #expect(ContinuousClock.now - opened < .seconds(5))
        #expect(await eventually { log.closeReasons == [.timedOut(.deadline)] })
        await server.stop()
    }

    @Test func tlsClient_ThatHandshakesButNeverFinishesAHead_GetsTheHeadTimeoutFromAccept() async throws {
        let log = EventLog()
        let (server, address) = try SocketServer.make(tls: configuration()) { _ in
            FixedResponseHandler(log: log, headTimeout: .milliseconds(800))
        }
        let opened = ContinuousClock.now
        // s_client handshakes, sends half a head, and waits (-ign_eof) until the server closes.
        let result = try run("openssl", [
            "s_client", "-connect", "127.0.0.1:\(address.port)", "-CAfile", certificates.ca,
            "-servername", "localhost", "-ign_eof", "-quiet",
        ], input: "GET / HTTP/1.1\r\nHost: localhost\r\n", timeout: 10)
        #expect(ContinuousClock.now - opened < .seconds(8), "\(result.stderr)")
        #expect(await eventually { log.closeReasons == [.timedOut(.deadline)] })
        await server.stop()
    }

    @Test func plainHTTPOnTheTLSPort_FailsTheHandshake_ConnectionCloses() async throws {
        let log = EventLog()
        let (server, address) = try SocketServer.make(tls: configuration()) { _ in FixedResponseHandler(log: log) }
        let client = try TestClient(address)
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = client.receiveToEnd()
        #expect(await eventually { log.closeReasons.count == 1 })
        guard case .tlsFailed(.handshakeFailed(let text)) = log.closeReasons.first else {
            Issue.record("expected a handshake failure, got \(log.closeReasons)")
            return
        }
        #expect(text.contains("error:"))
        await server.stop()
    }
}

/// Serves one large body, respecting the watermarks, then closes after flushing.
final class LargeBody: ConnectionHandler {
    let size: Int
    final class Stats: Sendable {
        let maxPending = Protected(0)
        let writable = Protected(0)
        let aboveHighWatermark = Protected(false)
    }
    private var sent = -1
    private let stats: Stats
    init(stats: Stats, size: Int) { self.stats = stats; self.size = size }

    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        guard sent < 0, String(decoding: bytes, as: UTF8.self).contains("\r\n\r\n") else { return }
        connection.setDeadline(.none)  // the head deadline stops
        connection.write(Array("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\nConnection: close\r\n\r\n".utf8))
        sent = 0
        pump(connection)
    }
    func didBecomeWritable(_ connection: Connection) {
        stats.writable.withLock { $0 += 1 }
        pump(connection)
    }
    private func pump(_ connection: Connection) {
        while sent < size {
            let count = min(32 * 1024, size - sent)
            let result = connection.write([UInt8](repeating: UInt8(ascii: "x"), count: count))
            sent += count
            let pending = connection.pendingOutputBytes
            stats.maxPending.withLock { $0 = max($0, pending) }
            if result != .accepted {
                stats.aboveHighWatermark.withLock { $0 = true }
                return
            }
        }
        connection.closeAfterFlush()
    }
}

extension TLSTests {
    @Test func largeBodyOverTLS_ToCurl_ArrivesWhole() async throws {
        let stats = LargeBody.Stats()
        let limits = ConnectionLimits(highWatermark: 128 * 1024, lowWatermark: 32 * 1024)
        let size = 16 * 1024 * 1024
        let (server, address) = try SocketServer.make(limits: limits, tls: configuration()) { _ in
            LargeBody(stats: stats, size: size)
        }
        let result = try run("curl", [
            "-sS", "--cacert", certificates.ca, "--max-time", "30",
            "-o", "/dev/null", "-w", "%{size_download} %{http_code}",
            "https://localhost:\(address.port)/big",
        ], timeout: 40)
        #expect(result.stdout == "\(size) 200", "\(result.stderr)")
        #expect(stats.maxPending.withLock { $0 } <= limits.highWatermark + 32 * 1024)
        await server.stop()
    }
}

extension TLSTests {
    /// A real socket with a 16 KiB receive buffer and a TLS client driven by hand: the
    /// test decides when to read, so the server must stop at the high watermark.
    @Test func slowTLSReader_PendingOutputStaysBounded_WritableFires() async throws {
        let stats = LargeBody.Stats()
        // No write-stall timeout within reach: the client may wait its turn on the busy
        // cooperative pool for longer than the default 30 s (see ConnectionTests).
        let limits = ConnectionLimits(highWatermark: 128 * 1024, lowWatermark: 32 * 1024, writeStallTimeout: .seconds(3600))
        let size = 6 * 1024 * 1024  // beyond the kernel send buffer (tcp_wmem max 4 MiB)
        let (server, address) = try SocketServer.make(limits: limits, tls: configuration()) { _ in
            LargeBody(stats: stats, size: size)
        }
        let socket = try TestClient(address, receiveBuffer: 16 * 1024)
        let tls = MemoryTLSClient(caFile: certificates.ca)
        while !tls.handshakeComplete {
            tls.stepHandshake()
            try socket.send(tls.drain())
            if tls.handshakeComplete { break }
            let bytes = try #require(socket.receiveOnce())
            try #require(!bytes.isEmpty)
            tls.feed(bytes)
        }
        tls.write("GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n")
        try socket.send(tls.drain())

        #expect(await eventually { stats.aboveHighWatermark.withLock { $0 } })
        var plaintext = 0
        var sawCloseNotify = false
        reading: while true {
            guard let bytes = socket.receiveOnce(), !bytes.isEmpty else { break }
            tls.feed(bytes)
            while true {
                switch tls.read() {
                case .data(let text): plaintext += text.utf8.count
                case .wantMore: continue reading
                case .closeNotify: sawCloseNotify = true; break reading
                case .failed: break reading
                }
            }
        }
        let header = "HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\nConnection: close\r\n\r\n"
        #expect(plaintext == header.utf8.count + size)
        #expect(sawCloseNotify)
        #expect(stats.writable.withLock { $0 } > 0)
        #expect(stats.maxPending.withLock { $0 } <= limits.highWatermark + 32 * 1024)
        socket.shutdownWrite()
        await server.stop()
    }
}
