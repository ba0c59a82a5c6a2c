import Foundation
import Logging

/// A swift-log handler that writes one JSON object per line (`--log-format json`):
///
/// ```json
/// {"time":"2026-11-22T00:21:15.123Z","level":"info","label":"spin-server","message":"listening on http://127.0.0.1:8080","port":"8080"}
/// ```
///
/// Fields: `time` (RFC 3339, UTC, milliseconds), `level`, `label`, `message`, `error`
/// when the event carries one, then the metadata flattened into the same object
/// (nested dictionaries as `parent.child`, arrays as arrays of strings, numbers logged as
/// numbers — `.stringConvertible(12)` — unquoted). A metadata key
/// that collides with one of those fields is written as `metadata.<key>`, so no field is
/// ever overwritten and the object never holds a key twice.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    package var logLevel: Logger.Level

    private let label: String
    private let output: LogOutput
    private let now: @Sendable () -> Date

    /// - Parameter now: the clock for `time`; tests pass a fixed date.
    package init(label: String, level: Logger.Level = .info, output: LogOutput = .standardError,
                 metadataProvider: Logger.MetadataProvider? = nil, now: @escaping @Sendable () -> Date = Date.init) {
        self.label = label
        self.logLevel = level
        self.output = output
        self.metadataProvider = metadataProvider
        self.now = now
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        output.write(line(for: event) + "\n")
    }

    static let reservedKeys: Set<String> = ["time", "level", "label", "message", "error"]

    /// The JSON object for `event`, without the newline.
    func line(for event: LogEvent) -> String {
        var fields: [String] = [
            "\"time\":" + LogFormatting.jsonString(LogFormatting.timestamp(now())),
            "\"level\":" + LogFormatting.jsonString(event.level.rawValue),
            "\"label\":" + LogFormatting.jsonString(label),
            "\"message\":" + LogFormatting.jsonString(event.message.description),
        ]
        if let error = event.error {
            fields.append("\"error\":" + LogFormatting.jsonString(String(describing: error)))
        }
        let merged = LogFormatting.merge(metadata, metadataProvider, event.metadata)
        var used = Self.reservedKeys
        for (key, value) in LogFormatting.flatten(merged) {
            var name = key
            while used.contains(name) { name = "metadata." + name }
            used.insert(name)
            let json = switch value {
            case .string(let text): LogFormatting.jsonString(text)
            case .number(let text): text
            case .array(let items): "[" + items.map(LogFormatting.jsonString).joined(separator: ",") + "]"
            }
            fields.append(LogFormatting.jsonString(name) + ":" + json)
        }
        return "{" + fields.joined(separator: ",") + "}"
    }
}
