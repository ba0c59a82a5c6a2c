import Testing
@testable import SpinWire

struct HTTPParserErrorTests {
    @Test func everyCase_MapsToAnHTTPErrorStatus() {
        let allowed: Set<Int> = [400, 413, 414, 417, 431, 501, 505]
        for error in HTTPParserError.allCases {
            #expect(allowed.contains(error.status), "\(error) → \(error.status)")
        }
    }

    @Test func codes_AreUniqueSnakeCase() {
        let codes = HTTPParserError.allCases.map(\.code)
        #expect(Set(codes).count == codes.count)
        for code in codes {
            #expect(code.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) }, "\(code)")
        }
    }

    @Test func statuses_MatchTheirMeaning() {
        #expect(HTTPParserError.tooManyHeaders.status == 431)
        #expect(HTTPParserError.bodyTooLarge.status == 413)
        #expect(HTTPParserError.requestLineTooLong.status == 414)
        #expect(HTTPParserError.unsupportedTransferCoding.status == 501)
        #expect(HTTPParserError.unsupportedVersion.status == 505)
        #expect(HTTPParserError.bareLineFeed.status == 400)
    }

    @Test func jsonBody_HasCodeAndMessage() {
        #expect(String(decoding: HTTPParserError.missingHost.jsonBody, as: UTF8.self)
            == #"{"error":{"code":"missing_host","message":"An HTTP/1.1 request must have a Host header."}}"#)
    }

    @Test func messages_NeedNoJSONEscaping() {
        for error in HTTPParserError.allCases {
            #expect(!error.message.contains("\"") && !error.message.contains("\\"), "\(error)")
        }
    }
}
