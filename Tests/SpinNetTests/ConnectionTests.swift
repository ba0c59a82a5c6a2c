import Foundation
import Glibc
import Testing
@testable import SpinNet
@testable import SpinConcurrency

/// Writes `total` bytes of a known pattern, respecting the watermarks unless told
/// not to, then closes after flushing. Shares what it saw through `Stats`.
private final class Producer: ConnectionHandler {
    final class Stats: Sendable {
        struct Values { var maxPending = 0; var writable = 0; var sent = 0; var results: [WriteResult] = []; var closed: CloseReason? }
        let values = Protected(Values())
        let connection = Protected<Connection?>(nil)
    }
    let stats: Stats
    let total: Int
    let chunkSize: Int
    let respectWatermarks: Bool
    private var sent = 0

    init(stats: Stats, total: Int, chunkSize: Int = 64 * 1024, respectWatermarks: Bool = true) {
        self.stats = stats
        self.total = total
        self.chunkSize = chunkSize
        self.respectWatermarks = respectWatermarks
    }

    static func pattern(at index: Int) -> UInt8 { UInt8(index % 251) }

    func didOpen(_ connection: Connection) {
        stats.connection.withLock { $0 = connection }
        pump(connection)
    }
    func didReceive(_ bytes: [UInt8], on connection: Connection) {}
    func didBecomeWritable(_ connection: Connection) {
        stats.values.withLock { $0.writable += 1 }
        pump(connection)
    }
    func didClose(_ connection: Connection, reason: CloseReason) {
        stats.values.withLock { $0.closed = reason }
    }

    private func pump(_ connection: Connection) {
        while sent < total {
            let count = min(chunkSize, total - sent)
            let chunk = (sent..<(sent + count)).map(Self.pattern(at:))
            let result = connection.write(chunk)
            sent += count
            let pending = connection.pendingOutputBytes
            stats.values.withLock {
                $0.sent = sent
                $0.maxPending = max($0.maxPending, pending)
                if $0.results.last != result { $0.results.append(result) }
            }
            if result == .closed { return }
            if result == .aboveHighWatermark, respectWatermarks { return }
        }
        connection.closeAfterFlush()
    }
}

@Suite struct ConnectionTests {
    @Test func slowReader_PendingOutputStaysBounded_WritableFires_AllBytesArrive() async throws {
        let stats = Producer.Stats()
        // No write-stall timeout within reach: in the full suite this test's client may
        // wait its turn on the cooperative pool for more than the default 30 s after the
        // producer stalls, and that timeout (which has tests of its own) would close the
        // connection with what the kernel holds (about 3.6 MiB) still to be read.
        let limits = ConnectionLimits(highWatermark: 256 * 1024, lowWatermark: 64 * 1024, writeStallTimeout: .seconds(3600))
        let total = 8 * 1024 * 1024
        let (server, address) = try SocketServer.make(limits: limits) { _ in Producer(stats: stats, total: total) }
        let client = try TestClient(address, receiveBuffer: 16 * 1024)
        // The client reads nothing yet: the producer must stop at the high watermark.
        #expect(await eventually { stats.values.withLock { $0.results.contains(.aboveHighWatermark) } })
        try await Task.sleep(for: .milliseconds(200))
        let pendingWhileStalled = stats.connection.withLock { $0?.pendingOutputBytes } ?? -1
        #expect(pendingWhileStalled <= limits.highWatermark + 64 * 1024)
        // Kernel buffers (a few MiB at most) took some; the producer waits for the rest.
        #expect(stats.values.withLock { $0.sent } < total)

        let received = client.receiveToEnd()
        #expect(received.eof)
        #expect(received.bytes.count == total)
        #expect(received.bytes.enumerated().allSatisfy { $0.element == Producer.pattern(at: $0.offset) })
        let values = stats.values.withLock { $0 }
        #expect(values.writable > 0)
        #expect(values.maxPending <= limits.highWatermark + 64 * 1024)
        client.shutdownWrite()
        #expect(await eventually { stats.values.withLock { $0.closed } == .closedLocally })
        await server.stop()
    }

    @Test func producerIgnoringWatermarks_IsClosedAtHardLimit() async throws {
        let stats = Producer.Stats()
        let limits = ConnectionLimits(highWatermark: 128 * 1024, lowWatermark: 32 * 1024, maxPendingOutput: 1024 * 1024)
        let (server, address) = try SocketServer.make(limits: limits) { _ in
            Producer(stats: stats, total: 64 * 1024 * 1024, respectWatermarks: false)
        }
        let client = try TestClient(address, receiveBuffer: 4 * 1024)
        #expect(await eventually { stats.values.withLock { $0.closed } == .outputLimitExceeded })
        let values = stats.values.withLock { $0 }
        #expect(values.results.last == .closed)
        #expect(values.maxPending <= limits.maxPendingOutput)
        _ = client.receiveToEnd()
        await server.stop()
    }

    @Test func peerVanishingMidWrite_ClosesWithReset_ServerKeepsServing() async throws {
        let stats = Producer.Stats()
        let (server, address) = try SocketServer.make { _ in Producer(stats: stats, total: Int.max / 2) }
        let client = try TestClient(address)
        #expect(client.receive(count: 100_000).count == 100_000)
        client.abort()
        #expect(await eventually {
            if case .reset = stats.values.withLock({ $0.closed }) { return true }
            return false
        }, "closed: \(String(describing: stats.values.withLock { $0.closed })), results: \(stats.values.withLock { $0.results })")
        let next = try TestClient(address)
        let bytes = next.receive(count: 1000)
        #expect(bytes.count == 1000)
        #expect(bytes.enumerated().allSatisfy { $0.element == Producer.pattern(at: $0.offset) })
        next.abort()
        await server.stop(deadline: .milliseconds(100))
    }

    @Test func writesFromAnotherThread_ArriveWholeAndInOrder() async throws {
        final class Holder: ConnectionHandler {
            func didOpen(_ connection: Connection) {}
            func didReceive(_ bytes: [UInt8], on connection: Connection) {}
        }
        let slot = Protected<Connection?>(nil)
        let (server, address) = try SocketServer.make { connection in
            slot.withLock { $0 = connection }
            return Holder()
        }
        let client = try TestClient(address)
        #expect(await eventually { slot.withLock { $0 != nil } })
        let connection = try #require(slot.withLock { $0 })
        let expected = (0..<2000).map { "line \($0)\n" }.joined()
        // A plain thread, not a Task: the test itself blocks a cooperative thread.
        DispatchQueue.global().async {
            for i in 0..<2000 { connection.write(Array("line \(i)\n".utf8)) }
            connection.closeAfterFlush()
        }
        let received = client.receiveToEnd()
        #expect(String(decoding: received.bytes, as: UTF8.self) == expected)
        #expect(received.eof)
        await server.stop()
    }

    @Test func silentConnection_ClosesAtItsDeadlineFromAccept_WithoutLingering_Live() async throws {
        let log = EventLog()
        let limits = ConnectionLimits(lingerTimeout: .seconds(8))
        let (server, address) = try SocketServer.make(limits: limits) { _ in
            EchoHandler(log: log, deadline: .milliseconds(200))
        }
        let clock = ContinuousClock()
        let opened = clock.now
        let client = try TestClient(address)
        let end = client.receiveToEnd()
        // Closed at the deadline, not after lingering: the handler wrote no last word,
        // nothing is owed to it, and its slot is free at once.
        #expect(clock.now - opened < .seconds(5))
        #expect(end.eof)
        #expect(end.bytes.isEmpty)
        #expect(await eventually { log.closeReasons == [.timedOut(.deadline)] })
        #expect(log.all.contains(.deadlineReached))
        await server.stop()
    }

    @Test func deadlineReached_HandlerWritesALastWord_ItArrivesBeforeTheClose_Live() async throws {
        final class Answer408: ConnectionHandler {
            let log: EventLog
            init(log: EventLog) { self.log = log }
            func didOpen(_ connection: Connection) { connection.setDeadline(.at(connection.openedAt + .milliseconds(300))) }
            func didReceive(_ bytes: [UInt8], on connection: Connection) {}
            func didReachDeadline(on connection: Connection) {
                log.record(.deadlineReached)
                connection.write(Array("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".utf8))
            }
            func didClose(_ connection: Connection, reason: CloseReason) { log.record(.closed(reason)) }
        }
        let log = EventLog()
        let (server, address) = try SocketServer.make { _ in Answer408(log: log) }
        let client = try TestClient(address)
        try client.send("GET / HTTP/1.1\r\nHost: slow")
        let answer = client.receiveToEnd()
        #expect(String(decoding: answer.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408 "))
        #expect(answer.eof)
        client.shutdownWrite()
        #expect(await eventually { log.closeReasons == [.timedOut(.deadline)] })
        await server.stop()
    }

    @Test func pausedReading_DeliversNothing_UntilResumed() async throws {
        final class Pauser: ConnectionHandler {
            let log: EventLog
            init(log: EventLog) { self.log = log }
            func didOpen(_ connection: Connection) { connection.pauseReading() }
            func didReceive(_ bytes: [UInt8], on connection: Connection) { log.record(.received(bytes.count)) }
        }
        let log = EventLog()
        let slot = Protected<Connection?>(nil)
        let (server, address) = try SocketServer.make { connection in
            slot.withLock { $0 = connection }
            return Pauser(log: log)
        }
        let client = try TestClient(address)
        try client.send("held back")
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.all.isEmpty)
        slot.withLock { $0?.resumeReading() }
        #expect(await eventually { log.all == [.received(9)] })
        await server.stop(deadline: .milliseconds(100))
    }
}

extension ConnectionTests {
    /// A head and a body written separately inside one callback leave together, in
    /// order, and many tiny writes still arrive whole.
    @Test(arguments: [false, true])
    func manySmallWritesInOneCallback_ArriveWholeAndInOrder(viaTLS: Bool) async throws {
        final class Chatty: ConnectionHandler {
            func didReceive(_ bytes: [UInt8], on connection: Connection) {
                guard String(decoding: bytes, as: UTF8.self).contains("\r\n\r\n") else { return }
                connection.write(Array("HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n".utf8))
                for i in 0..<1000 { connection.write(Array(String(format: "%03d", i % 1000).utf8)) }
            }
        }
        let tls = viaTLS ? TLSConfiguration(certificateChainPath: try TestCertificates.shared.leaf,
                                            privateKeyPath: try TestCertificates.shared.leafKey) : nil
        let (server, address) = try SocketServer.make(tls: tls) { _ in Chatty() }
        let url = "\(viaTLS ? "https" : "http")://localhost:\(address.port)/"
        let result = try run("curl", ["-sS", "--cacert", try TestCertificates.shared.ca, "--max-time", "10", url])
        #expect(result.stdout == (0..<1000).map { String(format: "%03d", $0) }.joined(), "\(result.stderr)")
        await server.stop()
    }
}

extension ConnectionTests {
    @Test func peerThatStopsReading_IsClosedAfterWriteStallTimeout_Live() async throws {
        let stats = Producer.Stats()
        let limits = ConnectionLimits(writeStallTimeout: .milliseconds(300))
        let (server, address) = try SocketServer.make(limits: limits) { _ in Producer(stats: stats, total: Int.max / 2) }
        let client = try TestClient(address, receiveBuffer: 4 * 1024)
        #expect(await eventually { stats.values.withLock { $0.closed } == .timedOut(.writeStalled) })
        #expect(stats.values.withLock { $0.results.contains(.aboveHighWatermark) })
        _ = client.receiveOnce()
        await server.stop()
    }
}

extension ConnectionTests {
    @Test func inactivityDeadline_TrafficKeepsTheConnection_SilenceClosesIt_Live() async throws {
        final class Idle: ConnectionHandler {
            let log: EventLog
            init(log: EventLog) { self.log = log }
            func didOpen(_ connection: Connection) { connection.setDeadline(.inactivity(.seconds(3))) }
            func didReceive(_ bytes: [UInt8], on connection: Connection) { connection.write(bytes) }
            func didReachDeadline(on connection: Connection) { log.record(.deadlineReached) }
            func didClose(_ connection: Connection, reason: CloseReason) { log.record(.closed(reason)) }
        }
        let log = EventLog()
        let (server, address) = try SocketServer.make { _ in Idle(log: log) }
        let client = try TestClient(address)
        for _ in 0..<20 {   // 4 s of traffic, never 3 s of silence
            try client.send("x")
            #expect(client.receive(count: 1) == Array("x".utf8))
            usleep(200_000)   // this thread's own sleep: the cooperative pool is busy with blocking clients
        }
        #expect(log.all.isEmpty)
        let end = client.receiveToEnd()   // silence: closed at the deadline, nothing written
        #expect(end.eof)
        #expect(await eventually { log.all == [.deadlineReached, .closed(.timedOut(.deadline))] })
        await server.stop()
    }
}
