import Foundation
import Logging

/// What the JSON and text handlers share: the timestamp, JSON string escaping and the
/// flattening of nested metadata into `key.sub` pairs.
enum LogFormatting {
    /// RFC 3339 in UTC with milliseconds (`2026-11-22T00:21:15.123Z`), the form log
    /// collectors parse without configuration.
    static func timestamp(_ date: Date) -> String {
        // Whole milliseconds first: splitting the Double into seconds and a fraction
        // would turn .123 into .122 (binary fractions are not decimal ones).
        timestamp(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }

    /// The same of a time in milliseconds since 1970 (a journaled event's, the history's `at`).
    static func timestamp(milliseconds totalMilliseconds: Int64) -> String {
        var seconds = time_t(totalMilliseconds.quotientAndRemainder(dividingBy: 1000).quotient)
        var milliseconds = Int(totalMilliseconds.quotientAndRemainder(dividingBy: 1000).remainder)
        if milliseconds < 0 { milliseconds += 1000; seconds -= 1 }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let year = Int(parts.tm_year) + 1900
        guard (0...9999).contains(year) else {
            return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", year, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                          Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds)
        }
        // Digit by digit: every log line and history entry has one, and `String(format:)`
        // took a quarter of a history page's CPU.
        return String(unsafeUninitializedCapacity: 24) { buffer in
            var index = 0
            func put(_ value: Int, digits: Int) {
                var divisor = 1
                for _ in 1..<digits { divisor *= 10 }
                while divisor > 0 {
                    buffer[index] = UInt8(ascii: "0") + UInt8(value / divisor % 10)
                    index += 1
                    divisor /= 10
                }
            }
            func put(_ character: Unicode.Scalar) {
                buffer[index] = UInt8(ascii: character)
                index += 1
            }
            put(year, digits: 4); put("-"); put(Int(parts.tm_mon) + 1, digits: 2); put("-"); put(Int(parts.tm_mday), digits: 2)
            put("T"); put(Int(parts.tm_hour), digits: 2); put(":"); put(Int(parts.tm_min), digits: 2); put(":")
            put(Int(parts.tm_sec), digits: 2); put("."); put(milliseconds, digits: 3); put("Z")
            return index
        }
    }

    /// A JSON string literal, quotes included (RFC 8259 §7: `"` and `\` escaped, control
    /// characters as `\uXXXX` or their short forms).
    static func jsonString(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }

    /// A metadata value flattened into the JSON field values it becomes.
    enum Flat: Equatable {
        case string(String)
        /// A number's JSON text: an integer, or a finite floating-point value.
        case number(String)
        case array([String])

        /// The value as text (the text format, and the JSON format's strings).
        var text: String {
            switch self {
            case .string(let text), .number(let text): text
            case .array(let items): "[" + items.joined(separator: ", ") + "]"
            }
        }
    }

    /// Flattens metadata: nested dictionaries become `parent.child` keys, arrays become
    /// arrays of their elements' text, numbers logged as numbers
    /// (`.stringConvertible(12)`, not `"\(12)"`) stay numbers, everything else becomes its
    /// description. Sorted by key so that the output is stable.
    static func flatten(_ metadata: Logger.Metadata) -> [(key: String, value: Flat)] {
        var result: [(key: String, value: Flat)] = []
        func visit(_ prefix: String, _ value: Logger.MetadataValue) {
            switch value {
            case .string(let text): result.append((prefix, .string(text)))
            case .stringConvertible(let value): result.append((prefix, flat(value)))
            case .array(let values): result.append((prefix, .array(values.map(text))))
            case .dictionary(let nested):
                for key in nested.keys.sorted() { visit(prefix + "." + key, nested[key]!) }
            }
        }
        for key in metadata.keys.sorted() { visit(key, metadata[key]!) }
        return result
    }

    /// A `stringConvertible` value: `.number` for integers and finite floating-point
    /// values (JSON has no NaN or infinity), else its description as a string.
    static func flat(_ value: any CustomStringConvertible & Sendable) -> Flat {
        if value is any BinaryInteger { return .number(value.description) }
        if let float = value as? any BinaryFloatingPoint {
            return float.isFinite ? .number(value.description) : .string(value.description)
        }
        return .string(value.description)
    }

    /// The text of a metadata value, for arrays and the text format.
    static func text(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let text): text
        case .stringConvertible(let value): value.description
        case .array(let values): "[" + values.map(text).joined(separator: ", ") + "]"
        case .dictionary(let nested):
            "[" + nested.keys.sorted().map { "\($0): \(text(nested[$0]!))" }.joined(separator: ", ") + "]"
        }
    }

    /// Handler metadata, then the provider's, then the call's: later ones win.
    static func merge(_ handler: Logger.Metadata, _ provider: Logger.MetadataProvider?,
                      _ call: Logger.Metadata?) -> Logger.Metadata {
        var merged = handler
        if let provided = provider?.get() { merged.merge(provided) { _, new in new } }
        if let call { merged.merge(call) { _, new in new } }
        return merged
    }
}
