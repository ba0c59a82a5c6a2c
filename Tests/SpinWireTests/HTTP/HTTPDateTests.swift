import Testing
@testable import SpinWire

struct HTTPDateTests {
    @Test func rfcExample_IsFormattedAsIMFFixdate() {
        // RFC 9110 §5.6.7: Sun, 06 Nov 1994 08:49:37 GMT = 784111777.
        #expect(HTTPDate.imfFixdate(secondsSince1970: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test func epochAndLeapDays_AreRight() {
        #expect(HTTPDate.imfFixdate(secondsSince1970: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.imfFixdate(secondsSince1970: 951_825_600) == "Tue, 29 Feb 2000 12:00:00 GMT")
        #expect(HTTPDate.imfFixdate(secondsSince1970: 4_133_980_799) == "Fri, 31 Dec 2100 23:59:59 GMT")
        #expect(HTTPDate.imfFixdate(secondsSince1970: 4_107_542_399) == "Sun, 28 Feb 2100 23:59:59 GMT")
        #expect(HTTPDate.imfFixdate(secondsSince1970: 1_709_210_096) == "Thu, 29 Feb 2024 12:34:56 GMT")
    }

    @Test func cache_ReturnsTheValueForTheSecondAsked() {
        var cache = HTTPDateCache()
        #expect(cache.imfFixdate(secondsSince1970: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(cache.imfFixdate(secondsSince1970: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(cache.imfFixdate(secondsSince1970: 1) == "Thu, 01 Jan 1970 00:00:01 GMT")
    }
}
