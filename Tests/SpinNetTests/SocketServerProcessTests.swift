import Foundation
import Glibc
import Testing
@testable import SpinNet

/// Scenarios that need the whole process: real EMFILE lowers RLIMIT_NOFILE, and the
/// descriptor-leak check counts every open fd. Each runs in a child process (this test
/// binary again, filtered to the child test) and the parent checks that it passed.
@Suite struct SocketServerProcessTests {
    static let childVariable = "SPINNET_EMFILE_CHILD"

    @Test(arguments: ["emfileChildScenario", "descriptorLeakChildScenario"])
    func processWideScenario_PassesInAChildProcess(scenario: String) throws {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--testing-library", "swift-testing", "--filter", scenario]
        process.environment = ProcessInfo.processInfo.environment.merging([Self.childVariable: "1"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("\(scenario)() passed"), "\(text)")
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment[SocketServerProcessTests.childVariable] == "1"))
    func emfileChildScenario() async throws {
        let log = EventLog()
        let (server, address) = try SocketServer.make { _ in EchoHandler(log: log) }
        // Descriptors for every client first: the limit then leaves room for ~2 accepts.
        let clients = (0..<12).map { _ in TestClient(family: .ipv4) }
        let highest = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { Int($0) }.max() ?? 0
        var original = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &original)
        var lowered = original
        lowered.rlim_cur = rlim_t(highest + 8)
        #expect(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lowered) == 0)
        // Fill every free slot (holes included), then give exactly two back.
        var fillers: [Int32] = []
        while true {
            let fd = open("/dev/null", O_RDONLY)
            if fd < 0 { break }
            fillers.append(fd)
        }
        for fd in fillers.suffix(2) { close(fd) }
        fillers.removeLast(min(2, fillers.count))

        for (i, client) in clients.enumerated() {
            try client.connect(to: address)  // completes in the kernel backlog
            try client.send("c\(i);")
        }
        let backedOff = await eventually { server.statistics.acceptBackoffs > 0 }
        let acceptedWhileShort = server.statistics.accepted
        #expect(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &original) == 0)  // descriptors are available again
        for fd in fillers { close(fd) }
        #expect(backedOff)
        #expect(acceptedWhileShort < clients.count)

        for (i, client) in clients.enumerated() {
            #expect(String(decoding: client.receive(count: "c\(i);".utf8.count), as: UTF8.self) == "c\(i);")
        }
        #expect(server.statistics.accepted == clients.count)
        for client in clients { client.shutdownWrite() }
        await server.stop()
    }

    /// Every way a connection ends (FIN, RST, half-close, closeAfterFlush, TLS, over
    /// the limit, forced at shutdown) releases its descriptor: after `stop`, the
    /// process holds exactly the descriptors it held before.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[SocketServerProcessTests.childVariable] == "1"))
    func descriptorLeakChildScenario() async throws {
        /// Open sockets: what SpinNet opens (Dispatch and OpenSSL add timerfds, eventfds
        /// and epoll descriptors lazily, which are not ours to count).
        func openDescriptors() -> [String] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return names.compactMap { name in
                let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) ?? ""
                return target.hasPrefix("socket:") ? "\(name) -> \(target)" : nil
            }.sorted()
        }
        // Making the certificates runs the openssl CLI: Foundation's Process keeps a
        // socket pair of its own from then on. Not ours: take the baseline after it.
        _ = try TestCertificates.shared
        let before = openDescriptors()
        try await Self.exerciseEveryKindOfClose()
        try await Self.exerciseEveryKindOfClose()
        // Descriptors close in the sources' cancel handlers, just after didClose.
        let settled = await eventually { openDescriptors() == before }
        #expect(settled, "open descriptors: \(openDescriptors()) (before: \(before))")
    }

    private static func exerciseEveryKindOfClose() async throws {
        let tls = TLSConfiguration(certificateChainPath: try TestCertificates.shared.leaf,
                                   privateKeyPath: try TestCertificates.shared.leafKey)
        let log = EventLog()
        let (plain, plainAddress) = try SocketServer.make(maxConnections: 30) { _ in EchoHandler(log: log) }
        let (secure, secureAddress) = try SocketServer.make(tls: tls) { _ in FixedResponseHandler() }
        var clients: [TestClient] = []
        for i in 0..<40 {
            let client = try TestClient(plainAddress)
            switch i % 4 {
            case 0: client.abort()
            case 1: client.shutdownWrite()
            case 2: try client.send("x")
            default: clients.append(client)  // still open at shutdown: forced
            }
        }
        // A full TLS exchange, then one that never handshakes.
        let socket = try TestClient(secureAddress)
        let session = MemoryTLSClient(caFile: try TestCertificates.shared.ca)
        while !session.handshakeComplete {
            session.stepHandshake()
            try socket.send(session.drain())
            if session.handshakeComplete { break }
            guard let bytes = socket.receiveOnce(), !bytes.isEmpty else { break }
            session.feed(bytes)
        }
        session.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        try socket.send(session.drain())
        let silent = try TestClient(secureAddress)
        await plain.stop(deadline: .milliseconds(200))
        await secure.stop(deadline: .milliseconds(200))
        withExtendedLifetime((clients, socket, silent)) {}
    }
}
