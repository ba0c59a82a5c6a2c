import Foundation
import SpinCore
import SpinConcurrency

/// Where the log handlers write their lines: one `write` per event, so that lines from
/// different threads never interleave.
package struct LogOutput: Sendable {
    /// Receives one complete line, newline included.
    package let write: @Sendable (String) -> Void

    package init(write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    /// Standard error: logs stay apart from what a command prints on standard output
    /// (`--check-config`).
    package static let standardError = LogOutput { line in
        standardErrorLock.withLock { _ in
            FileHandle.standardError.write(Data(line.utf8))
        }
    }
}

/// Serialises writes to standard error across threads.
private let standardErrorLock = Protected(())
