import Foundation
import Glibc

/// A TCP proxy on 127.0.0.1 that a test can cut: `cut()` ends every connection through
/// it at the TCP level (no WebSocket close frame) and stops listening (new connections are refused); `restore()` listens again on the
/// same port. Blocking sockets, a thread per direction: a test tool, not a server.
final class CuttableProxy: @unchecked Sendable {
    // `lock` guards `listener`, `connections`, `stalled` and `open`.
    private let lock = NSLock()
    private var listener: Int32 = -1
    private var connections: [Int32] = []
    /// Connections whose bytes are dropped instead of forwarded.
    private var stalled: Set<Int32> = []
    private var open = false
    /// Bytes forwarded from the server to clients so far.
    private var forwardedToClients = 0
    /// Connections forwarded so far.
    private var acceptedCount = 0
    /// Bytes to replace once in what the server sends, by as many others.
    private var tampering: (find: [UInt8], replacement: [UInt8])?
    private(set) var port = 0
    private let targetPort: Int

    init(to targetPort: Int) throws {
        self.targetPort = targetPort
        try restore()
    }

    deinit { cut() }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Bytes the server sent through the proxy so far (all connections).
    var bytesToClients: Int { lock.withLock { forwardedToClients } }

    /// Connections forwarded so far.
    var connectionsAccepted: Int { lock.withLock { acceptedCount } }

    /// The next time the server sends `find` (within one read), the client gets
    /// `replacement` instead (the same length: a frame's length stays right).
    func tamperOnce(replacing find: [UInt8], with replacement: [UInt8]) {
        precondition(find.count == replacement.count)
        lock.withLock { tampering = (find, replacement) }
    }

    /// Listens (again, on the same port after a cut) and forwards each connection.
    func restore() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        lock.withLock {
            listener = fd
            open = true
            port = Int(UInt16(bigEndian: address.sin_port))
        }
        Thread { [self] in acceptLoop(fd) }.start()
    }

    /// The connections open now go silent: what either side sends is dropped, and
    /// neither sees the connection end (a dead NAT entry, a pulled cable). New
    /// connections are forwarded as usual.
    func stall() {
        lock.withLock { stalled.formUnion(connections) }
    }

    /// Ends every connection (both directions) and stops listening.
    func cut() {
        let (fd, cutting) = lock.withLock { () -> (Int32, [Int32]) in
            defer { connections = []; open = false; listener = -1 }
            return (listener, connections)
        }
        for connection in cutting { shutdown(connection, Int32(SHUT_RDWR)) }
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop(_ listener: Int32) {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { break }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: targetPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            let accepted = lock.withLock { () -> Bool in
                guard open, connected == 0 else { return false }
                connections += [client, upstream]
                acceptedCount += 1
                return true
            }
            guard accepted else {
                close(client)
                close(upstream)
                continue
            }
            let ends = Ends()
            Thread { [self] in pump(from: client, to: upstream, ends, toClient: false) }.start()
            Thread { [self] in pump(from: upstream, to: client, ends, toClient: true) }.start()
        }
        close(listener)
    }

    /// Counts the pumps of one connection that are done.
    private final class Ends: @unchecked Sendable {
        var done = 0   // guarded by the proxy's lock
    }

    /// Copies bytes until either side ends, then ends both; the second pump to finish
    /// closes both descriptors (after taking them off the list `cut` uses).
    private func pump(from source: Int32, to sink: Int32, _ ends: Ends, toClient: Bool) {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let n = recv(source, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            if lock.withLock({ stalled.contains(source) }) { continue }
            if toClient { tamper(&buffer, count: n) }
            guard send(sink, buffer, n, Int32(MSG_NOSIGNAL)) == n else { break }
            if toClient { lock.withLock { forwardedToClients += n } }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(sink, Int32(SHUT_RDWR))
        let last = lock.withLock { () -> Bool in
            ends.done += 1
            guard ends.done == 2 else { return false }
            connections.removeAll { $0 == source || $0 == sink }
            stalled.subtract([source, sink])
            return true
        }
        if last {
            close(source)
            close(sink)
        }
    }

    private func tamper(_ buffer: inout [UInt8], count: Int) {
        lock.withLock {
            guard let (find, replacement) = tampering, count >= find.count else { return }
            for start in 0...(count - find.count) where buffer[start..<start + find.count].elementsEqual(find) {
                buffer.replaceSubrange(start..<start + find.count, with: replacement)
                tampering = nil
                return
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
