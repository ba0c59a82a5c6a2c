import Logging

/// The log handlers of `spin-server`, for any program that hosts Spins: text lines or one
/// JSON object per line on standard error, at the configured level.
///
/// ```swift
/// SpinLogging.bootstrap(log: configuration.log)   // once per process, before any Logger
/// ```
public enum SpinLogging {
    /// Bootstraps swift-log with `handler(label:log:)` for every label. swift-log allows
    /// one bootstrap per process: call it once, before the first `Logger` is made.
    public static func bootstrap(log: SpinServerConfiguration.Log) {
        LoggingSystem.bootstrap { label in handler(label: label, log: log) }
    }

    /// A `JSONLogHandler` or a `TextLogHandler` at the configured level, writing to
    /// standard error. An unknown level cannot come from loading (it rejects it); `info`
    /// is the fallback all the same.
    public static func handler(label: String, log: SpinServerConfiguration.Log) -> any LogHandler {
        handler(label: label, log: log, output: .standardError)
    }

    /// The same, writing to `output` (tests read the lines).
    package static func handler(label: String, log: SpinServerConfiguration.Log,
                                output: LogOutput) -> any LogHandler {
        let level = Logger.Level(rawValue: log.level) ?? .info
        return switch log.format {
        case .json: JSONLogHandler(label: label, level: level, output: output)
        case .text: TextLogHandler(label: label, level: level, output: output)
        }
    }
}
