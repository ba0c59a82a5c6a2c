import Foundation
import Glibc
@testable import SpinNet

/// A blocking BSD-socket client with a receive timeout, so a broken server fails a
/// test instead of hanging it.
final class TestClient: @unchecked Sendable {  // used from one test at a time
    enum ClientError: Error, Equatable { case connectFailed(Int32), sendFailed(Int32) }

    private(set) var fd: Int32

    convenience init(_ address: SocketAddress, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 10) throws {
        self.init(family: address.family, receiveBuffer: receiveBuffer, timeoutSeconds: timeoutSeconds)
        try connect(to: address)
    }

    /// A socket not connected yet (holds its descriptor from now on).
    init(family: SocketAddress.Family, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 10) {
        fd = socket(family == .ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func connect(to address: SocketAddress) throws {
        let ipv6 = address.family == .ipv6
        let result: Int32
        if ipv6 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = in_port_t(UInt16(address.port).bigEndian)
            _ = inet_pton(AF_INET6, address.host, &sin6.sin6_addr)
            result = withUnsafePointer(to: &sin6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(UInt16(address.port).bigEndian)
            _ = inet_pton(AF_INET, address.host, &sin.sin_addr)
            result = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard result == 0 else { throw ClientError.connectFailed(errno) }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw ClientError.sendFailed(errno) }
            offset += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// One recv: bytes, [] at EOF, nil on timeout or error.
    func receiveOnce(max: Int = 65_536) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: max)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
        if n < 0 { return nil }
        return Array(buffer[0..<n])
    }

    /// Reads until `count` bytes arrived, EOF, or timeout.
    func receive(count: Int) -> [UInt8] {
        var data: [UInt8] = []
        while data.count < count {
            guard let chunk = receiveOnce(max: min(65_536, count - data.count)), !chunk.isEmpty else { break }
            data += chunk
        }
        return data
    }

    /// Reads until `marker` appears, EOF, or timeout.
    func receive(until marker: String) -> String {
        var data: [UInt8] = []
        let needle = Array(marker.utf8)
        while !contains(data, needle) {
            guard let chunk = receiveOnce(), !chunk.isEmpty else { break }
            data += chunk
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads until EOF (`eof` true) or timeout/reset (`eof` false).
    func receiveToEnd() -> (bytes: [UInt8], eof: Bool) {
        var data: [UInt8] = []
        while true {
            guard let chunk = receiveOnce() else { return (data, false) }
            if chunk.isEmpty { return (data, true) }
            data += chunk
        }
    }

    func shutdownWrite() { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// SO_LINGER 0 + close: the kernel sends RST, the server sees a reset.
    func abort() {
        guard fd >= 0 else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        Glibc.close(fd)
        fd = -1
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return true
        }
        return false
    }
}

/// Polls `condition` every 10 ms until it holds or `seconds` pass; the bound only
/// stops a broken test from hanging, it measures nothing.
func eventually(_ seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
