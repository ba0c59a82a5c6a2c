// A fixed-response HTTP server on SpinNet, for `net-vs-nginx.sh` to run under wrk
// beside nginx. Every request head (bytes up to CRLFCRLF) gets the same 204; no HTTP
// parsing: this measures the socket runtime, not a parser.
//
//   swift run -c release spin-net-benchmark [--host 127.0.0.1] [--port 0] [--queues N]
//                                           [--certificate chain.pem --key key.pem]
//
// Prints `listening <host> <port>` once bound; stops on SIGINT/SIGTERM.
import Dispatch
import Foundation
import SpinNet

/// Counts CRLFCRLF across reads (a head may be split anywhere) and answers each one;
/// pipelined heads in one read get their responses in one write.
final class FixedResponder: ConnectionHandler {
    static let response = Array("HTTP/1.1 204 No Content\r\nServer: spin-net\r\nConnection: keep-alive\r\n\r\n".utf8)
    private static let terminator: [UInt8] = [13, 10, 13, 10]
    private var matched = 0

    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        var heads = 0
        for byte in bytes {
            if byte == Self.terminator[matched] {
                matched += 1
                if matched == 4 {
                    heads += 1
                    matched = 0
                }
            } else {
                matched = byte == 13 ? 1 : 0
            }
        }
        guard heads > 0 else { return }
        if heads == 1 {
            connection.write(Self.response)
        } else {
            connection.write(Array([[UInt8]](repeating: Self.response, count: heads).joined()))
        }
    }
}

var host = "127.0.0.1"
var port = 0
var queues: Int?
var certificate: String?
var key: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--host": host = arguments.next() ?? host
    case "--port": port = Int(arguments.next() ?? "") ?? port
    case "--queues": queues = Int(arguments.next() ?? "")
    case "--certificate": certificate = arguments.next()
    case "--key": key = arguments.next()
    default:
        FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
        exit(2)
    }
}

// No deadline is armed (wrk keeps its connections busy for the whole run) and no
// request is counted: SpinNet knows no requests.
let server = SocketServer(
    configuration: ServerConfiguration(host: host, port: port, eventLoopCount: queues),
    tls: certificate.map { TLSConfiguration(certificateChainPath: $0, privateKeyPath: key ?? "") },
    handlerFactory: { _ in FixedResponder() })
let address: SocketAddress
do {
    address = try server.start()
} catch {
    FileHandle.standardError.write(Data("spin-net-benchmark: \(error)\n".utf8))
    exit(1)
}
FileHandle.standardOutput.write(Data("listening \(address.host) \(address.port) queues \(server.configuration.eventLoopCount)\n".utf8))

signal(SIGINT, SIG_IGN)
signal(SIGTERM, SIG_IGN)
let stopSources = [SIGINT, SIGTERM].map { signalNumber in
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
    source.setEventHandler {
        server.shutdown(deadline: .seconds(1)) { exit(0) }
    }
    source.resume()
    return source
}
withExtendedLifetime(stopSources) { dispatchMain() }
