import Foundation
import Glibc
import SpinWire

/// A blocking IPv4 loopback client with receive timeouts, so that a broken server fails
/// a test instead of hanging it. Used from one test at a time.
final class RawClient: @unchecked Sendable {
    private(set) var fd: Int32
    /// Bytes received and not consumed yet.
    private var buffered: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 10, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    deinit { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// One recv into the buffer; false at EOF, timeout or error.
    @discardableResult
    func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65_536, 0) }
        guard n > 0 else { return false }
        buffered += chunk[0..<n]
        return true
    }

    /// Reads until what arrived (and was not consumed) contains `marker`; returns it all
    /// as text, or nil at EOF or timeout before the marker.
    func readText(until marker: String) -> String? {
        while true {
            let text = String(decoding: buffered, as: UTF8.self)
            if text.contains(marker) { return text }
            guard fill() else { return nil }
        }
    }

    /// Reads one HTTP response (head and a Content-Length body).
    func readResponse() -> (status: Int, headers: [(name: String, value: String)], body: String)? {
        while true {
            if let response = Self.takeResponse(from: &buffered) { return response }
            guard fill() else { return nil }
        }
    }

    /// True when the server closed the connection (EOF) with nothing left to read; false
    /// on bytes, a timeout or an error.
    func readsEnd() -> Bool {
        guard buffered.isEmpty else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }

    /// Takes one complete HTTP response (head and a Content-Length body) off the front of
    /// `buffer`, or nil while it is incomplete.
    static func takeResponse(from buffer: inout [UInt8]) -> (status: Int, headers: [(name: String, value: String)], body: String)? {
        guard let headEnd = buffer.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound else { return nil }
        let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let statusLine = lines.removeFirst()
        let status = Int(statusLine.split(separator: " ")[1]) ?? 0
        let headers = lines.map { line -> (name: String, value: String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        guard buffer.count >= headEnd + length else { return nil }
        let body = String(decoding: buffer[headEnd..<(headEnd + length)], as: UTF8.self)
        buffer.removeFirst(headEnd + length)
        return (status, headers, body)
    }

    /// Sends a WebSocket upgrade for `path` and reads the 101.
    func upgrade(_ path: String, extraHeaders: String = "") -> (status: Int, headers: [(name: String, value: String)])? {
        let handshake = WebSocketClientHandshake()
        var request = "GET \(path) HTTP/1.1\r\n"
        for header in handshake.requestHeaders(host: "127.0.0.1") { request += "\(header.name): \(header.value)\r\n" }
        request += extraHeaders + "\r\n"
        send(request)
        guard let response = readResponse() else { return nil }
        return (response.status, response.headers)
    }

    /// Feeds what arrives to a client-role session until it yields `count` messages, a
    /// close, or the socket times out.
    func readMessages(_ session: inout WebSocketSession, count: Int) -> (messages: [String], closeCode: UInt16?) {
        let outcome = readWebSocketMessages(&session, count: count)
        return (outcome.messages.compactMap { if case .text(let text) = $0 { text } else { nil } }, outcome.closeCode)
    }

    /// Sends `text` as one masked WebSocket text message of `session`.
    func sendText(_ text: String, on session: inout WebSocketSession) {
        for action in session.sendText(text) {
            if case .send(let bytes) = action { send(bytes) }
        }
    }

    /// Reads JSON text messages until one satisfies `done` (or the socket times out);
    /// returns all of them, that one last.
    func readJSON(_ session: inout WebSocketSession, until done: ([String: Any]) -> Bool) -> [[String: Any]] {
        var received: [[String: Any]] = []
        while !received.contains(where: done) {
            let more = readMessages(&session, count: 1).messages.map(\.jsonObject)
            guard !more.isEmpty else { break }
            received += more
        }
        return received
    }

    /// `readMessages` with binary messages too.
    func readWebSocketMessages(_ session: inout WebSocketSession, count: Int) -> (messages: [WebSocketMessage], closeCode: UInt16?) {
        var messages: [WebSocketMessage] = []
        var closeCode: UInt16?
        func drain() {
            let bytes = buffered
            buffered = []
            for action in session.receive(bytes) {
                switch action {
                case .message(let message): messages.append(message)
                case .peerClosed(let code, _): closeCode = code?.rawValue
                case .send(let reply): send(reply)
                default: break
                }
            }
        }
        drain()
        while messages.count < count && closeCode == nil {
            guard fill() else { break }
            drain()
        }
        return (messages, closeCode)
    }
}

extension String {
    var jsonObject: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(utf8)) as? [String: Any]) ?? [:]
    }
}
