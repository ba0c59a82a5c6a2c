import Foundation
import Histogram
import NIOCore

/// The monotonic clock the generator stamps sends and receipts with, in nanoseconds.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    NIODeadline.now().uptimeNanoseconds
}

/// A latency histogram in nanoseconds (1 ns to 60 s, three significant digits).
func makeLatencyHistogram() -> Histogram<UInt64> {
    Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
}

/// Byte scanning of the small JSON messages and HTTP heads the generator reads: it
/// looks for a few fixed keys instead of decoding, so that parsing never limits a run.
enum Scan {
    /// The offset of the first `needle` in `bytes` at or after `start`.
    static func firstIndex(of needle: StaticString, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
        let count = needle.utf8CodeUnitCount
        guard count > 0, bytes.count >= count else { return nil }
        let first = needle.utf8Start[0]
        var index = start
        let last = bytes.count - count
        while index <= last {
            if bytes[index] == first, memcmp(bytes.baseAddress! + index, needle.utf8Start, count) == 0 {
                return index
            }
            index += 1
        }
        return nil
    }

    /// Whether `bytes` contain `needle`.
    static func contains(_ needle: StaticString, in bytes: UnsafeRawBufferPointer) -> Bool {
        firstIndex(of: needle, in: bytes) != nil
    }

    /// The unsigned integer right after `key` (spaces allowed), e.g. `"sequence":` → N.
    static func integer(after key: StaticString, in bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard var index = firstIndex(of: key, in: bytes) else { return nil }
        index += key.utf8CodeUnitCount
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        var value: UInt64 = 0
        var digits = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            value = value &* 10 &+ UInt64(bytes[index] - UInt8(ascii: "0"))
            index += 1
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}

/// Latency figures of a histogram in microseconds.
struct LatencySummary: Codable, Sendable {
    var p50_us: Double
    var p90_us: Double
    var p99_us: Double
    var p999_us: Double
    var max_us: Double

    init(_ histogram: Histogram<UInt64>) {
        func percentile(_ value: Double) -> Double {
            histogram.totalCount == 0 ? 0 : Double(histogram.valueAtPercentile(value)) / 1000
        }
        p50_us = percentile(50)
        p90_us = percentile(90)
        p99_us = percentile(99)
        p999_us = percentile(99.9)
        max_us = histogram.totalCount == 0 ? 0 : Double(histogram.max) / 1000
    }

    var text: String {
        String(format: "p50 %.0f µs, p90 %.0f µs, p99 %.0f µs, p99.9 %.0f µs, max %.0f µs",
               p50_us, p90_us, p99_us, p999_us, max_us)
    }
}

/// One result: printed as one JSON line on standard output (sorted keys), and as a human
/// line on standard error.
struct LoadResult: Encodable {
    var scenario: String
    var target: String
    var duration_s: Double?
    var connections: Int?
    var events: Int?
    var events_per_s: Double?
    var latency: LatencySummary?
    var errors: Int?
    /// On a fixed schedule: requests due before the run stopped that had no answer.
    var unanswered: Int?
    var reconnects: Int?
    var subscribers: Int?
    var rate: Double?
    var messages: Int?
    var messages_per_s: Double?
    var lost: Int?
    var behind: Int?
    var rss_before_kib: Int?
    var rss_after_kib: Int?
    var kib_per_connection: Double?

    func emit(human: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        if let data = try? encoder.encode(self) {
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }
        FileHandle.standardError.write(Data("\(scenario) [\(target)]: \(human)\n".utf8))
    }
}

/// A scenario that could not run (the run script counts it as a failure).
struct LoadError: Error, CustomStringConvertible {
    var description: String
}

/// The resident memory of process `pid` in KiB (`VmRSS` of `/proc/PID/status`).
func residentKiB(of pid: Int) throws -> Int {
    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
        if let digits, let kib = Int(digits) { return kib }
    }
    throw LoadError(description: "no VmRSS in /proc/\(pid)/status")
}
