/// IMF-fixdate (RFC 9110 §5.6.7), the only format a server may generate for `Date`:
/// `Sun, 06 Nov 1994 08:49:37 GMT`. Computed from Unix seconds with integer arithmetic
/// (no locale, no Foundation formatter, no time zone database).
package enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The IMF-fixdate of `secondsSince1970` (UTC).
    package static func imfFixdate(secondsSince1970 seconds: Int) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilDate(daysSince1970: days)
        let weekday = ((days % 7) + 7 + 4) % 7  // 1970-01-01 was a Thursday
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var yearText = String(year)
        while yearText.count < 4 { yearText = "0" + yearText }
        return "\(weekdays[weekday]), \(two(day)) \(months[month - 1]) \(yearText) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Howard Hinnant's `civil_from_days`: proleptic Gregorian (year, month 1-12, day 1-31).
    static func civilDate(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// The `Date` value formatted once per second (RFC 9110 §6.6.1 only asks for the time
/// the response was generated, to the second), as text and as the bytes of its field line.
package struct HTTPDateCache: Sendable {
    private var second = Int.min
    private var value = ""
    /// `Date: <IMF-fixdate>` CRLF, for `second`.
    private var fieldLine: [UInt8] = []

    package init() {}

    package mutating func imfFixdate(secondsSince1970 seconds: Int) -> String {
        refresh(seconds)
        return value
    }

    /// Appends the `Date` field line (`Date: Sun, 06 Nov 1994 08:49:37 GMT` CRLF).
    package mutating func appendDateField(secondsSince1970 seconds: Int, to output: inout [UInt8]) {
        refresh(seconds)
        output.append(contentsOf: fieldLine)
    }

    private mutating func refresh(_ seconds: Int) {
        guard seconds != second else { return }
        second = seconds
        value = HTTPDate.imfFixdate(secondsSince1970: seconds)
        fieldLine = Array("Date: \(value)\r\n".utf8)
    }
}
