import Foundation
import Logging

/// A swift-log handler that writes one readable line per event (`--log-format text`,
/// the default):
///
/// ```text
/// 2026-11-22T00:21:15.123Z info spin-server: listening on http://127.0.0.1:8080 port=8080
/// ```
///
/// Time, level, label, the message, then `key=value` metadata sorted by key (values
/// with spaces or quotes are quoted). Line breaks inside a message are written as `\n`,
/// so that one event is always one line.
package struct TextLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    package var logLevel: Logger.Level

    private let label: String
    private let output: LogOutput
    private let now: @Sendable () -> Date

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

    /// The line for `event`, without the newline.
    func line(for event: LogEvent) -> String {
        var line = LogFormatting.timestamp(now()) + " " + event.level.rawValue + " " + label + ": "
            + Self.singleLine(event.message.description)
        if let error = event.error {
            line += " error=" + Self.quotedIfNeeded(String(describing: error))
        }
        let merged = LogFormatting.merge(metadata, metadataProvider, event.metadata)
        for (key, value) in LogFormatting.flatten(merged) {
            line += " " + key + "=" + Self.quotedIfNeeded(value.text)
        }
        return line
    }

    static func singleLine(_ text: String) -> String {
        guard text.contains(where: { $0 == "\n" || $0 == "\r" }) else { return text }
        return text.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Quotes (as a JSON string) values that would not read back as one token.
    static func quotedIfNeeded(_ text: String) -> String {
        let plain = !text.isEmpty && !text.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }
        return plain ? text : LogFormatting.jsonString(text)
    }
}
