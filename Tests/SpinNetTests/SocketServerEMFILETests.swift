import Foundation
import Glibc
import Testing
@testable import SpinNet

/// Real EMFILE: the scenario lowers RLIMIT_NOFILE, which is process-wide, so it runs
/// in a child process (this test binary again, filtered to the child test) and the
/// parent checks that it passed.
@Suite struct SocketServerEMFILETests {
    static let childVariable = "SPINNET_EMFILE_CHILD"

    @Test func outOfDescriptors_Real_ListenerPausesAndRecovers_InAChildProcess() throws {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--testing-library", "swift-testing", "--filter", "emfileChildScenario"]
        process.environment = ProcessInfo.processInfo.environment.merging([Self.childVariable: "1"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("emfileChildScenario() passed"), "\(text)")
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment[SocketServerEMFILETests.childVariable] == "1"))
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
}
