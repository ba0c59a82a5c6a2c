@testable import SpinNet
@testable import SpinConcurrency

/// What a handler saw, in order, shared with the test.
final class EventLog: Sendable {
    enum Event: Equatable, Sendable {
        case opened
        case received(Int)
        case ended
        case writable
        case deadlineReached
        case shutdownRequested
        case closed(CloseReason)
    }

    private let events = Protected<[Event]>([])

    func record(_ event: Event) { events.withLock { $0.append(event) } }
    var all: [Event] { events.withLock { $0 } }
    var closeReasons: [CloseReason] {
        all.compactMap { if case .closed(let reason) = $0 { reason } else { nil } }
    }
    func count(_ event: Event) -> Int { all.filter { $0 == event }.count }
}

/// Echoes every byte back; records events; on the peer's FIN closes after flushing.
/// A raw byte stream: no deadline unless `deadline` is given, then one that long after
/// the accept.
final class EchoHandler: ConnectionHandler {
    let log: EventLog
    let deadline: Duration?
    init(log: EventLog, deadline: Duration? = nil) { self.log = log; self.deadline = deadline }

    func didOpen(_ connection: Connection) {
        log.record(.opened)
        if let deadline { connection.setDeadline(.at(connection.openedAt + deadline)) }
    }
    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        log.record(.received(bytes.count))
        connection.write(bytes)
    }
    func didReceiveEnd(on connection: Connection) {
        log.record(.ended)
        connection.closeAfterFlush()
    }
    func didReachDeadline(on connection: Connection) { log.record(.deadlineReached) }
    func shutdownRequested(on connection: Connection) {
        log.record(.shutdownRequested)
        connection.closeAfterFlush()
    }
    func didClose(_ connection: Connection, reason: CloseReason) { log.record(.closed(reason)) }
}

/// Answers every request head (bytes up to CRLFCRLF) with a fixed response: the
/// benchmark's server, and what curl talks to in the TLS tests. The first head is due
/// `headTimeout` after the accept (a TLS handshake included); after that there is no
/// deadline.
final class FixedResponseHandler: ConnectionHandler {
    static let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello".utf8)
    private var buffer: [UInt8] = []
    let log: EventLog?
    let headTimeout: Duration
    init(log: EventLog? = nil, headTimeout: Duration = .seconds(60)) { self.log = log; self.headTimeout = headTimeout }

    func didOpen(_ connection: Connection) { connection.setDeadline(.at(connection.openedAt + headTimeout)) }
    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        buffer += bytes
        while let end = headEnd() {
            buffer.removeFirst(end)
            connection.setDeadline(.none)
            connection.write(Self.response)
        }
    }
    func didClose(_ connection: Connection, reason: CloseReason) { log?.record(.closed(reason)) }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 3..<buffer.count where buffer[i - 3] == 13 && buffer[i - 2] == 10 && buffer[i - 1] == 13 && buffer[i] == 10 {
            return i + 1
        }
        return nil
    }
}

extension SocketServer {
    /// A started server on port 0 of `host` with `handler` for every connection.
    static func make(
        host: String = "127.0.0.1",
        maxConnections: Int = 10_000,
        limits: ConnectionLimits = ConnectionLimits(),
        tls: TLSConfiguration? = nil,
        handler: @escaping @Sendable (Connection) -> ConnectionHandler
    ) throws -> (SocketServer, SocketAddress) {
        let server = SocketServer(
            configuration: ServerConfiguration(host: host, port: 0, maxConnections: maxConnections, limits: limits),
            tls: tls, handlerFactory: handler)
        let address = try server.start()
        return (server, address)
    }

    /// Shuts down and waits for the completion.
    func stop(deadline: Duration = .seconds(2)) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            shutdown(deadline: deadline) { continuation.resume() }
        }
    }
}
