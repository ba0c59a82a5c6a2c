import Logging

/// Makes the log handler `spin-server` bootstraps swift-log with, from the `log` part of
/// the configuration:
///
/// ```swift
/// LoggingSystem.bootstrap { label in SpinLogging.handler(label: label, log: configuration.log) }
/// ```
package enum SpinLogging {
    /// A `JSONLogHandler` or a `TextLogHandler` at the configured level. An unknown level
    /// cannot reach here (loading rejects it); `info` is the fallback all the same.
    package static func handler(label: String, log: SpinServerConfiguration.Log,
                                output: LogOutput = .standardError) -> any LogHandler {
        let level = Logger.Level(rawValue: log.level) ?? .info
        return switch log.format {
        case .json: JSONLogHandler(label: label, level: level, output: output)
        case .text: TextLogHandler(label: label, level: level, output: output)
        }
    }
}
