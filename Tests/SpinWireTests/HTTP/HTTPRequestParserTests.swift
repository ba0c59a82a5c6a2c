import Testing
@testable import SpinWire

/// Actions, bodies and connection handling of `HTTPRequestParser`. Every input goes
/// through `HTTPTestSupport.parse`, which also checks byte-at-a-time and random splits.
struct HTTPRequestParserTests {
    typealias T = HTTPTestSupport

    @Test func simpleGet_IsParsedIntoMethodTargetVersionAndHeaders() throws {
        let request = try #require(T.request("GET /v1/spins?limit=5 HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\n\r\n"))
        #expect(request.method == .get)
        #expect(request.target.path == "/v1/spins")
        #expect(request.target.query == "limit=5")
        #expect(request.version == .http1_1)
        #expect(request.host == "localhost:8080")
        #expect(request.headers["accept"] == "*/*")
        #expect(request.body.isEmpty)
        #expect(request.keepAlive)
        #expect(!request.expectsContinue)
        #expect(!request.isUpgradeCandidate)
    }

    @Test func incompleteHead_AsksForMoreData() {
        var parser = HTTPRequestParser()
        #expect(parser.parse(T.bytes("GET / HTTP/1.1\r\nHost: a\r\n")) == .needMoreData)
        #expect(parser.parse(T.bytes("\r\n")) == .request(HTTPRequest(method: .get, target: HTTPRequestTarget(origin: "/"), headers: ["Host": "a"], host: "a")))
        #expect(parser.next() == .needMoreData)
    }

    @Test func contentLengthBody_IsAggregated() throws {
        let request = try #require(T.request("POST /v1/spins/counter/events HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 19\r\n\r\n{\"type\":\"increase\"}"))
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"type":"increase"}"#)
    }

    @Test func contentLengthZero_GivesEmptyBody() throws {
        let request = try #require(T.request("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"))
        #expect(request.body.isEmpty)
    }

    @Test func chunkedBody_IsDechunked() throws {
        let request = try #require(T.request(
            "POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"))
        #expect(String(decoding: request.body, as: UTF8.self) == "hello, world")
        #expect(request.trailers.isEmpty)
    }

    @Test func chunkedBody_WithUppercaseHexAndLeadingZeros_IsAccepted() throws {
        let body = String(repeating: "x", count: 26)
        let request = try #require(T.request(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n001A\r\n\(body)\r\n0000\r\n\r\n"))
        #expect(request.body.count == 26)
    }

    @Test func chunkedBody_WithTrailers_KeepsTrailersApartFromHeaders() throws {
        let request = try #require(T.request(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: Checksum\r\n\r\n3\r\nabc\r\n0\r\nChecksum: 900150983cd24fb0\r\nX-Done:  yes \r\n\r\n"))
        #expect(request.body == T.bytes("abc"))
        #expect(request.trailers["checksum"] == "900150983cd24fb0")
        #expect(request.trailers["X-Done"] == "yes")
        #expect(request.headers["Checksum"] == nil)
    }

    @Test func chunkedBody_WithExtensions_IgnoresThem() throws {
        let request = try #require(T.request(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;name=value ; flag\r\nabc\r\n2 ;q=\"x;y\"\r\nde\r\n0;last\r\n\r\n"))
        #expect(request.body == T.bytes("abcde"))
    }

    @Test func pipelinedRequests_AreReturnedInOrder() {
        let input = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
            + "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz"
            + "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nq\r\n0\r\n\r\n"
            + "GET /d HTTP/1.1\r\nHost: a\r\n\r\n"
        let requests = T.requests(T.parse(input))
        #expect(requests.map(\.target.path) == ["/a", "/b", "/c", "/d"])
        #expect(requests.map { String(decoding: $0.body, as: UTF8.self) } == ["", "xyz", "q", ""])
    }

    @Test func pipelinedRequests_AreParsedOneAtATimeByNext() {
        var parser = HTTPRequestParser()
        parser.feed(T.bytes("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3"))
        guard case .request(let first) = parser.next() else { Issue.record("no first request"); return }
        #expect(first.target.path == "/1")
        guard case .request(let second) = parser.next() else { Issue.record("no second request"); return }
        #expect(second.target.path == "/2")
        #expect(parser.next() == .needMoreData)
        #expect(parser.bufferedByteCount == 6)
    }

    @Test func emptyLinesBeforeRequestLine_AreIgnored() {
        // RFC 9112 §2.2: e.g. the CRLF some clients send after a POST body.
        let requests = T.requests(T.parse("POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(requests.map(\.target.path) == ["/a", "/b"])
    }

    @Test func badRequestAfterGoodOnes_AnswersTheGoodOnesThenFails() {
        let outcomes = T.parse("GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\nGET /c HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(T.requests(outcomes).map(\.target.path) == ["/a"])
        #expect(outcomes.last == .action(.error(.whitespaceBeforeColon)))
        #expect(outcomes.count == 2)
    }

    @Test func bodyBytesLookingLikeARequest_StayBody() throws {
        // The body is framed by Content-Length; a request inside it is just bytes.
        let inner = "GET /admin HTTP/1.1\r\nHost: a\r\n\r\n"
        let requests = T.requests(T.parse("POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: \(inner.utf8.count)\r\n\r\n\(inner)"))
        #expect(requests.count == 1)
        #expect(String(decoding: try #require(requests.first).body, as: UTF8.self) == inner)
    }

    // MARK: Connection

    @Test func http11_KeepsAliveByDefault() throws {
        #expect(try #require(T.request("GET / HTTP/1.1\r\nHost: a\r\n\r\n")).keepAlive)
    }

    @Test func connectionClose_EndsTheConnectionAfterThatRequest() {
        let outcomes = T.parse("GET /a HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(outcomes.count == 2)
        #expect(T.requests(outcomes).map(\.keepAlive) == [false])
        #expect(outcomes.last == .action(.finished))
    }

    @Test func http10_ClosesByDefault() throws {
        let outcomes = T.parse("GET / HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n")
        let request = try #require(T.requests(outcomes).first)
        #expect(request.version == .http1_0)
        #expect(!request.keepAlive)
        #expect(request.host == "")
        #expect(outcomes.last == .action(.finished))
    }

    @Test func http10_WithKeepAlive_StaysOpen() {
        let requests = T.requests(T.parse("GET /a HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n"))
        #expect(requests.map(\.keepAlive) == [true, false])
    }

    @Test func http10_WithContentLength_ReadsTheBody() throws {
        let request = try #require(T.request("POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nok"))
        #expect(request.body == T.bytes("ok"))
    }

    @Test func bytesAfterFinished_AreDropped() {
        var parser = HTTPRequestParser()
        parser.feed(T.bytes("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"))
        guard case .request = parser.next() else { Issue.record("no request"); return }
        #expect(parser.next() == .finished)
        parser.feed(T.bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(parser.next() == .finished)
        #expect(parser.bufferedByteCount == 0)
    }

    // MARK: Expect: 100-continue

    @Test func expectContinue_WithBody_AsksToSendContinueBeforeTheBody() {
        var parser = HTTPRequestParser()
        #expect(parser.parse(T.bytes("PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n")) == .sendContinue)
        #expect(parser.next() == .needMoreData)
        guard case .request(let request) = parser.parse(T.bytes("hi")) else { Issue.record("no request"); return }
        #expect(request.expectsContinue)
        #expect(request.body == T.bytes("hi"))
    }

    @Test func expectContinue_IsAskedForEvenWhenTheBodyIsAlreadyBuffered() {
        let outcomes = T.parse("POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n")
        #expect(outcomes.count == 2)
        #expect(outcomes.first == .action(.sendContinue))
    }

    @Test func expectContinue_WithoutBody_DoesNotAskForContinue() throws {
        let outcomes = T.parse("GET /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n")
        #expect(outcomes.count == 1)
        #expect(try #require(T.requests(outcomes).first).expectsContinue == false)
    }

    @Test func expectContinue_InHTTP10_IsIgnored() {
        let outcomes = T.parse("POST /x HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx")
        #expect(!outcomes.contains(.action(.sendContinue)))
        #expect(outcomes.count == 2)  // the request, then .finished (1.0 closes)
        #expect(T.requests(outcomes).first?.expectsContinue == false)
    }

    @Test func expectOtherThanContinue_IsRefusedWith417() {
        let error = T.error("POST /x HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx")
        #expect(error == .unsupportedExpectation)
        #expect(error?.status == 417)
    }

    @Test func expectContinue_WithTooLargeBody_IsRefusedBeforeContinue() {
        let outcomes = T.parse("POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\n\r\n")
        #expect(outcomes == [.action(.error(.bodyTooLarge))])
    }

    // MARK: Upgrade

    @Test func websocketUpgrade_PausesAndHandsOverTheBytesAfterTheRequest() throws {
        let input = "GET /v1/spins/counter/stream HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n\u{81}\u{05}hello"
        let outcomes = T.parse(input)
        #expect(outcomes.count == 3)
        let request = try #require(T.requests(outcomes).first)
        #expect(request.isUpgradeCandidate)
        #expect(outcomes[1] == .action(.pausedForUpgrade))
        #expect(outcomes[2] == .handedOver(Array("\u{81}\u{05}hello".utf8)))
    }

    @Test func acceptedUpgrade_FinishesTheParser() {
        var parser = HTTPRequestParser()
        parser.feed(T.bytes("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"))
        guard case .request = parser.next() else { Issue.record("no request"); return }
        #expect(parser.next() == .pausedForUpgrade)
        parser.feed([0x88, 0x00])
        #expect(parser.acceptUpgrade() == [0x88, 0x00])
        #expect(parser.next() == .finished)
    }

    @Test func declinedUpgrade_GoesOnParsingHTTP() {
        var parser = HTTPRequestParser()
        parser.feed(T.bytes("GET /a HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n"))
        guard case .request = parser.next() else { Issue.record("no request"); return }
        #expect(parser.next() == .pausedForUpgrade)
        parser.declineUpgrade()
        guard case .request(let second) = parser.next() else { Issue.record("no second request"); return }
        #expect(second.target.path == "/b")
    }

    @Test func upgradeWithoutConnectionUpgrade_IsNotACandidate() throws {
        #expect(try #require(T.request("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n")).isUpgradeCandidate == false)
    }

    @Test func upgradeInHTTP10_IsIgnored() throws {
        // RFC 9110 §7.8: a server MUST ignore Upgrade in an HTTP/1.0 request.
        let request = try #require(T.request("GET / HTTP/1.0\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"))
        #expect(!request.isUpgradeCandidate)
    }

    @Test func phase_FollowsTheRequestForTheServersTimeouts() {
        var parser = HTTPRequestParser()
        #expect(parser.phase == .idle)
        #expect(parser.parse(T.bytes("POST / HTTP/1.1\r\nHost: a\r\n")) == .needMoreData)
        #expect(parser.phase == .head)
        #expect(parser.parse(T.bytes("Content-Length: 2\r\n\r\nx")) == .needMoreData)
        #expect(parser.phase == .body)
        guard case .request = parser.parse(T.bytes("y")) else { Issue.record("no request"); return }
        #expect(parser.phase == .idle)
        _ = parser.parse(T.bytes("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"))
        #expect(parser.next() == .pausedForUpgrade)
        #expect(parser.phase == .upgradePending)
        _ = parser.acceptUpgrade()
        #expect(parser.phase == .done)
    }

    // MARK: Errors and end of input

    @Test func afterAnError_TheParserStaysFailed() {
        var parser = HTTPRequestParser()
        #expect(parser.parse(T.bytes("GET / HTTP/1.1\r\nBad Header: x\r\n\r\n")) == .error(.invalidHeaderName))
        #expect(parser.parse(T.bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n")) == .error(.invalidHeaderName))
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func endOfInput_BetweenRequests_IsClean() {
        var parser = HTTPRequestParser()
        _ = parser.parse(T.bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(parser.next() == .needMoreData)
        #expect(parser.endOfInput() == nil)
    }

    @Test func endOfInput_InTheMiddleOfABody_IsIncomplete() {
        var parser = HTTPRequestParser()
        #expect(parser.parse(T.bytes("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab")) == .needMoreData)
        #expect(parser.endOfInput() == .incompleteRequest)
        #expect(parser.next() == .error(.incompleteRequest))
    }
}
