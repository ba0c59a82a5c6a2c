import Dispatch
import Foundation

/// Runs `action` on a queue of its own each time the process receives `signal` (SIGHUP:
/// re-read the JWT keys), until `cancel()`.
///
/// The signal's default action (SIGHUP: terminate) is ignored while it is installed, so
/// that only the Dispatch source sees it; `cancel()` puts the previous disposition back.
package final class ReloadSignal: @unchecked Sendable {
    // @unchecked: the source is set once in init and only cancelled after.
    private let source: DispatchSourceSignal
    private let signalNumber: Int32
    private let previous: sighandler_t?

    package init(_ signalNumber: Int32, action: @escaping @Sendable () -> Void) {
        self.signalNumber = signalNumber
        previous = signal(signalNumber, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: signalNumber,
                                                 queue: DispatchQueue(label: "spin.reload-signal"))
        source.setEventHandler(handler: action)
        source.resume()
    }

    package func cancel() {
        guard !source.isCancelled else { return }
        source.cancel()
        signal(signalNumber, previous ?? SIG_DFL)
    }
}
