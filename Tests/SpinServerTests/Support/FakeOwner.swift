import Foundation
import Glibc
import SpinCore
@testable import SpinConcurrency

/// A listener on 127.0.0.1 that plays the owning node with canned answers: for each
/// connection it accepts, it reads one request head (and its `Content-Length` body),
/// keeps it in `requests`, and writes the next answer's pieces, then closes.
final class FakeOwner: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let received = Protected<[String]>([])

    /// Each answer is written in pieces, with a short pause between them. With no
    /// answers nothing is accepted: connections wait in the `backlog`, then (once it is
    /// full) the kernel drops new ones.
    init(answers: [[String]], backlog: Int32 = 8) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, backlog) == 0 else { throw POSIXError(.EADDRINUSE) }
        port = Int(UInt16(bigEndian: address.sin_port))
        let listener = fd
        let received = self.received
        Thread.detachNewThread {
            for pieces in answers {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                var timeout = timeval(tv_sec: 10, tv_usec: 0)
                _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                received.withLock { $0.append(Self.readRequest(client)) }
                for piece in pieces {
                    _ = piece.utf8CString.withUnsafeBytes { send(client, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) }
                    usleep(20_000)
                }
                close(client)
            }
        }
    }

    deinit { close(fd) }

    /// The requests received so far, as text.
    var requests: [String] { received.withLock { $0 } }

    private static func readRequest(_ client: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let length = text[..<end.lowerBound].split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) >= length { return text }
            }
            let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, 4096, 0) }
            guard n > 0 else { return text }
            bytes += chunk[0..<n]
        }
    }
}
