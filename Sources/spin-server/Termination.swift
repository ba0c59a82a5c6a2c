import Dispatch
import Foundation
import SpinCore

/// Waits for SIGTERM or SIGINT. The signals' default action (die at once) is turned off
/// first, and Dispatch sources deliver them instead, so that the server can shut down
/// gracefully. A second signal during the shutdown ends the process at once (exit 1).
final class Termination: @unchecked Sendable {
    // @unchecked: `sources` is written once in init and never changed; `count` is `Protected`.
    private var sources: [any DispatchSourceSignal] = []
    private let count = Protected(0)
    private let stream: AsyncStream<Int32>

    init() {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { self.received(number, continuation: continuation) }
            source.resume()
            sources.append(source)
        }
    }

    private func received(_ number: Int32, continuation: AsyncStream<Int32>.Continuation) {
        let seen = count.withLock { value -> Int in
            value += 1
            return value
        }
        if seen == 1 {
            continuation.yield(number)
        } else {
            FileHandle.standardError.write(Data("spin-server: \(Self.name(number)) again: exiting without waiting\n".utf8))
            exit(1)
        }
    }

    /// The first signal received.
    func wait() async -> Int32 {
        for await number in stream { return number }
        return SIGTERM
    }

    static func name(_ number: Int32) -> String {
        switch number {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        default: "signal \(number)"
        }
    }
}
