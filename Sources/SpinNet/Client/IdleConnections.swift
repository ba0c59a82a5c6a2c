#if canImport(Glibc)
import Glibc

extension Connection {
    /// Takes a kept-alive outgoing connection parked under `key` on this connection's
    /// loop (`park`), newest first, and hands it to `handler` (which hears no `didOpen`;
    /// its deadline is cleared). A parked connection the peer closed, reset or wrote to
    /// meanwhile is closed and skipped, also when that news is still in the socket and
    /// not yet read by the loop (a peek at the socket tells). Nil when none is left:
    /// connect a new one. Call on this connection's loop.
    package func takeIdle(key: String, handler: ConnectionHandler) -> Connection? {
        loop.preconditionInLoop()
        while let connection = loop.idleConnections.pop(key) {
            guard connection.lifecycle == .open, connection.isQuiet else {
                connection.close()
                continue
            }
            connection.handler = handler
            connection.setDeadline(.none)
            return connection
        }
        return nil
    }

    /// Parks `connection` (an outgoing connection on this loop, between two exchanges,
    /// nothing pending either way) under `key` for `takeIdle`, for at most `idle`: then,
    /// or when the peer closes it or sends anything, it is closed. Beyond `limit` parked
    /// under one key it is closed at once. Call on this connection's loop.
    package func park(_ connection: Connection, key: String, idle: Duration, limit: Int) {
        loop.preconditionInLoop()
        precondition(connection.loop === loop, "a connection is parked on its own loop")
        guard connection.lifecycle == .open, !connection.readEnded, connection.output.isEmpty,
              loop.idleConnections.count(key) < limit else {
            connection.close()
            return
        }
        connection.handler = ParkedConnection(pool: loop.idleConnections, key: key)
        connection.resumeReading()
        connection.setDeadline(.at(.now + idle))
        loop.idleConnections.push(connection, key: key)
    }

    /// Nothing is waiting to be read and the peer has not ended or reset the
    /// connection: `recv` with `MSG_PEEK` would block.
    var isQuiet: Bool {
        var byte: UInt8 = 0
        let result = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        return result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }
}

/// The kept-alive outgoing connections of one loop, by key (an owner's host and port),
/// parked between exchanges (`Connection.park`, `Connection.takeIdle`). Loop-confined.
final class IdleConnections {
    private var parked: [String: [Connection]] = [:]

    func count(_ key: String) -> Int { parked[key]?.count ?? 0 }

    func push(_ connection: Connection, key: String) {
        parked[key, default: []].append(connection)
    }

    /// The most recently parked (the others age out first when fewer are needed).
    func pop(_ key: String) -> Connection? {
        guard let connection = parked[key]?.popLast() else { return nil }
        if parked[key]?.isEmpty == true { parked[key] = nil }
        return connection
    }

    func remove(_ connection: Connection, key: String) {
        guard let index = parked[key]?.firstIndex(where: { $0 === connection }) else { return }
        parked[key]?.remove(at: index)
        if parked[key]?.isEmpty == true { parked[key] = nil }
    }
}

/// The handler of a parked connection: anything from the peer (bytes nobody asked for,
/// its end) or the idle deadline closes it, and a closed one leaves the pool.
private final class ParkedConnection: ConnectionHandler {
    private let pool: IdleConnections
    private let key: String

    init(pool: IdleConnections, key: String) {
        self.pool = pool
        self.key = key
    }

    func didOpen(_ connection: Connection) {}
    func didReceive(_ bytes: [UInt8], on connection: Connection) { connection.close() }
    func didReceiveEnd(on connection: Connection) { connection.close() }
    func didReachDeadline(on connection: Connection) {}   // SpinNet closes it
    func shutdownRequested(on connection: Connection) { connection.close() }
    func didClose(_ connection: Connection, reason: CloseReason) { pool.remove(connection, key: key) }
}
#endif
