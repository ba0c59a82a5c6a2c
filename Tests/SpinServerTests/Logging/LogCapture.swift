import Foundation
import Logging
import SpinCore
import Testing
@testable import SpinServer
@testable import SpinConcurrency

/// Collects what a log handler writes, and makes loggers that write into it at a fixed
/// time (2023-11-14T22:13:20.123Z).
final class LogCapture: Sendable {
    private let lines = Protected<[String]>([])

    static let fixedDate = Date(timeIntervalSince1970: 1_700_000_000.123)
    static let fixedTime = "2023-11-14T22:13:20.123Z"

    var output: LogOutput { LogOutput { line in self.lines.withLock { $0.append(line) } } }
    var written: [String] { lines.withLock { $0 } }

    func jsonLogger(label: String = "spin-server", level: Logger.Level = .info) -> Logger {
        let output = output
        return Logger(label: label) { label in
            JSONLogHandler(label: label, level: level, output: output, now: { LogCapture.fixedDate })
        }
    }

    func textLogger(label: String = "spin-server", level: Logger.Level = .info) -> Logger {
        let output = output
        return Logger(label: label) { label in
            TextLogHandler(label: label, level: level, output: output, now: { LogCapture.fixedDate })
        }
    }

    /// The one written line parsed as a JSON object.
    func object(at index: Int = 0) throws -> [String: Any] {
        let line = try #require(written.indices.contains(index) ? written[index] : nil)
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }
}
