import Testing
@testable import SpinWire

/// Each limit of `HTTPRequestParser.Limits`: at the limit is accepted, one past it is
/// refused with its own error and status, as soon as the excess is seen.
struct HTTPRequestParserLimitsTests {
    typealias T = HTTPTestSupport

    @Test func defaults_AreTheDocumentedValues() {
        let limits = HTTPRequestParser.Limits()
        #expect(limits.maxRequestLineLength == 8192)
        #expect(limits.maxHeaderCount == 100)
        #expect(limits.maxHeaderBytes == 16_384)
        #expect(limits.maxBodySize == 1_048_576)
        #expect(limits.maxChunkExtensionBytes == 4096)
        #expect(limits.maxTrailerBytes == 4096)
    }

    @Test func requestLine_AtTheLimit_IsAccepted() {
        let line = "GET /" + String(repeating: "a", count: 50 - 14) + " HTTP/1.1"
        #expect(line.utf8.count == 50)
        #expect(T.request("\(line)\r\nHost: a\r\n\r\n", limits: .init(maxRequestLineLength: 50)) != nil)
    }

    @Test func requestLine_OverTheLimit_IsRefusedWith414BeforeItEnds() {
        let limits = HTTPRequestParser.Limits(maxRequestLineLength: 50)
        let outcomes = T.parse("GET /" + String(repeating: "a", count: 60), limits: limits)
        #expect(outcomes == [.action(.error(.requestLineTooLong))])
        #expect(HTTPParserError.requestLineTooLong.status == 414)
    }

    @Test func endlessEmptyLines_BeforeTheRequestLine_AreBounded() {
        let limits = HTTPRequestParser.Limits(maxRequestLineLength: 20)
        #expect(T.error(String(repeating: "\r\n", count: 11), limits: limits) == .requestLineTooLong)
    }

    @Test func headerCount_AtTheLimit_IsAccepted() {
        let fields = (1...4).map { "X-\($0): v\r\n" }.joined()
        #expect(T.request("GET / HTTP/1.1\r\nHost: a\r\n\(fields)\r\n", limits: .init(maxHeaderCount: 5)) != nil)
    }

    @Test func headerCount_OverTheLimit_IsRefusedWith431() {
        let fields = (1...5).map { "X-\($0): v\r\n" }.joined()
        let error = T.error("GET / HTTP/1.1\r\nHost: a\r\n\(fields)\r\n", limits: .init(maxHeaderCount: 5))
        #expect(error == .tooManyHeaders)
        #expect(error?.status == 431)
    }

    @Test func headerBytes_AtTheLimit_AreAccepted() {
        // "Host: a\r\n" is 9 bytes, "X: 12345\r\n" 10.
        #expect(T.request("GET / HTTP/1.1\r\nHost: a\r\nX: 12345\r\n\r\n", limits: .init(maxHeaderBytes: 19)) != nil)
    }

    @Test func headerBytes_OverTheLimit_AreRefusedWith431BeforeTheHeadEnds() {
        let limits = HTTPRequestParser.Limits(maxHeaderBytes: 18)
        #expect(T.parse("GET / HTTP/1.1\r\nHost: a\r\nX: 12345", limits: limits) == [.action(.error(.headerSectionTooLarge))])
        #expect(HTTPParserError.headerSectionTooLarge.status == 431)
    }

    @Test func oneHugeHeaderLine_IsRefusedWithoutWaitingForItsEnd() {
        let outcomes = T.parse("GET / HTTP/1.1\r\nCookie: " + String(repeating: "c", count: 20_000))
        #expect(outcomes == [.action(.error(.headerSectionTooLarge))])
    }

    @Test func contentLength_AtTheLimit_IsAccepted() throws {
        let request = try #require(T.request("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789", limits: .init(maxBodySize: 10)))
        #expect(request.body.count == 10)
    }

    @Test func contentLength_OverTheLimit_IsRefusedWith413BeforeTheBody() {
        let outcomes = T.parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n", limits: .init(maxBodySize: 10))
        #expect(outcomes == [.action(.error(.bodyTooLarge))])
        #expect(HTTPParserError.bodyTooLarge.status == 413)
    }

    @Test func chunkedBody_AtTheLimit_IsAccepted() throws {
        let request = try #require(T.request("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n", limits: .init(maxBodySize: 10)))
        #expect(request.body.count == 10)
    }

    @Test func chunkedBody_WhoseSumPassesTheLimit_IsRefusedWith413() {
        let error = T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n01234\r\n6\r\n567890\r\n0\r\n\r\n", limits: .init(maxBodySize: 10))
        #expect(error == .bodyTooLarge)
    }

    @Test func defaultBodyLimit_AcceptsAOneMebibyteBody() throws {
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 1_048_576)
        let input = T.bytes("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1048576\r\n\r\n") + body
        let request = try #require(T.requests(T.parse(input, randomSplits: 2)).first)
        #expect(request.body == body)
    }

    @Test func chunkExtensions_SummedOverTheBody_AreBounded() {
        // Many tiny chunks each with a small extension: no single one is large, the sum is.
        let chunks = String(repeating: "1;ext=value\r\nx\r\n", count: 20)
        let input = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\(chunks)0\r\n\r\n"
        #expect(T.request(input, limits: .init(maxChunkExtensionBytes: 200)) != nil)
        let error = T.error(input, limits: .init(maxChunkExtensionBytes: 199))
        #expect(error == .chunkExtensionsTooLarge)
        #expect(error?.status == 413)
    }

    @Test func trailerSection_OverTheLimit_IsRefusedWith431() {
        let input = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Checksum: 0123456789\r\n\r\n"
        #expect(T.request(input, limits: .init(maxTrailerBytes: 24)) != nil)
        let error = T.error(input, limits: .init(maxTrailerBytes: 23))
        #expect(error == .trailerSectionTooLarge)
        #expect(error?.status == 431)
    }

    @Test func trailerCount_OverTheHeaderCountLimit_IsRefused() {
        let input = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        #expect(T.error(input, limits: .init(maxHeaderCount: 2)) == .trailerSectionTooLarge)
    }
}
