import Foundation
import Testing
@testable import SpinServer

@Suite struct LogFormattingTests {
    @Test func time_IsRFC3339UTCWithMilliseconds() {
        #expect(LogFormatting.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(LogFormatting.timestamp(LogCapture.fixedDate) == LogCapture.fixedTime)
        #expect(LogFormatting.timestamp(Date(timeIntervalSince1970: 1_700_000_000.9996)) == "2023-11-14T22:13:21.000Z")
    }

    @Test func jsonString_EscapesQuotesBackslashesAndControlCharacters() {
        #expect(LogFormatting.jsonString("a\"b\\c\nd\u{1F}é") == #""a\"b\\c\nd\u001fé""#)
    }
}
