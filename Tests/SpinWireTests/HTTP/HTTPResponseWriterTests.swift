import Testing
@testable import SpinWire

struct HTTPResponseWriterTests {
    static let now = 784_111_777
    static let date = "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    func make(
        status: Int = 200, headers: HTTPHeaders = ["Content-Type": "application/json"], body: String = #"{"ok":true}"#,
        method: HTTPMethod = .get, version: HTTPVersion = .http1_1, keepAlive: Bool = true
    ) -> String {
        var writer = HTTPResponseWriter()
        return text(writer.response(
            HTTPResponseHead(status: HTTPStatus(code: status), headers: headers), body: Array(body.utf8),
            context: HTTPResponseContext(requestMethod: method, requestVersion: version, keepAlive: keepAlive),
            secondsSince1970: Self.now))
    }

    @Test func response_HasStatusLineDateHeadersLengthAndBody() {
        #expect(make() == "HTTP/1.1 200 OK\r\n\(Self.date)Content-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}")
    }

    @Test func aLastField_FollowsTheHeadsFields_AndMayNotFrameTheResponse() {
        var writer = HTTPResponseWriter()
        let context = HTTPResponseContext(requestMethod: .get, requestVersion: .http1_1, keepAlive: true)
        let head = HTTPResponseHead(status: .ok, headers: ["Content-Type": "application/json"])
        #expect(text(writer.response(head, body: Array("{}".utf8), context: context, secondsSince1970: Self.now,
                                     lastField: HTTPHeaders.Field(name: "X-Request-Id", value: "r-1")))
                == "HTTP/1.1 200 OK\r\n\(Self.date)Content-Type: application/json\r\nX-Request-Id: r-1\r\nContent-Length: 2\r\n\r\n{}")
        // The writer frames the response: a last field that would is left out, as in the head.
        #expect(text(writer.response(head, body: [], context: context, secondsSince1970: Self.now,
                                     lastField: HTTPHeaders.Field(name: "Content-Length", value: "9")))
                == "HTTP/1.1 200 OK\r\n\(Self.date)Content-Type: application/json\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func closingResponse_SaysConnectionClose() {
        #expect(make(status: 400, body: "", keepAlive: false) == "HTTP/1.1 400 Bad Request\r\n\(Self.date)Content-Type: application/json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    @Test func http10KeepAlive_SaysKeepAlive() {
        #expect(make(body: "", version: .http1_0).contains("Connection: keep-alive\r\n"))
        #expect(!make(body: "").contains("Connection:"))
    }

    @Test func headResponse_HasTheLengthButNoBody() {
        #expect(make(method: .head).hasSuffix("Content-Length: 11\r\n\r\n"))
    }

    @Test(arguments: [204, 304, 100])
    func responseWithoutContent_HasNeitherLengthNorBody(status: Int) {
        let response = make(status: status)
        #expect(!response.contains("Content-Length"))
        #expect(response.hasSuffix("\r\n\r\n"))
    }

    @Test func framingFieldsFromTheCaller_AreReplaced() {
        let response = make(headers: ["Content-Length": "999", "Transfer-Encoding": "chunked", "Connection": "keep-alive", "Date": "x", "X": "y"], body: "ab")
        #expect(response == "HTTP/1.1 200 OK\r\n\(Self.date)X: y\r\nContent-Length: 2\r\n\r\nab")
    }

    @Test func framingFieldsFromTheCaller_AreReplacedWhateverTheirCase() {
        let response = make(headers: ["content-LENGTH": "999", "DATE": "x", "Content-Lengths": "1", "Dates": "2"], body: "ab")
        #expect(response == "HTTP/1.1 200 OK\r\n\(Self.date)Content-Lengths: 1\r\nDates: 2\r\nContent-Length: 2\r\n\r\nab")
    }

    @Test func reasonPhraseWithControlCharacters_IsNeutralised() {
        var writer = HTTPResponseWriter()
        let head = HTTPResponseHead(status: HTTPStatus(code: 299, reasonPhrase: "Odd\r\nX: y"))
        let response = text(writer.response(head, context: HTTPResponseContext(), secondsSince1970: Self.now))
        #expect(response == "HTTP/1.1 299 Odd  X: y\r\n\(Self.date)Content-Length: 0\r\n\r\n")
    }

    @Test func oneWriter_WritesTheDateOfEachResponse() {
        var writer = HTTPResponseWriter()
        let head = HTTPResponseHead(status: .noContent)
        for seconds in [Self.now, Self.now, Self.now + 1, 0] {
            let response = text(writer.response(head, context: HTTPResponseContext(), secondsSince1970: seconds))
            #expect(response == "HTTP/1.1 204 No Content\r\nDate: \(HTTPDate.imfFixdate(secondsSince1970: seconds))\r\n\r\n")
        }
    }

    @Test func headerInjection_IsNeutralised() {
        let response = make(headers: ["X-Name": "a\r\nSet-Cookie: evil=1", "Bad Name": "v", "X\r\nY": "v"], body: "")
        #expect(response == "HTTP/1.1 200 OK\r\n\(Self.date)X-Name: a  Set-Cookie: evil=1\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func continueResponse_IsTheInterim100() {
        #expect(text(HTTPResponseWriter.continueResponse) == "HTTP/1.1 100 Continue\r\n\r\n")
    }

    @Test func streamingResponse_ToHTTP11_IsChunked() {
        var writer = HTTPResponseWriter()
        let stream = writer.streamingResponse(
            HTTPResponseHead(status: .ok, headers: ["Content-Type": "text/event-stream"]),
            context: HTTPResponseContext(), secondsSince1970: Self.now)
        #expect(text(stream.head) == "HTTP/1.1 200 OK\r\n\(Self.date)Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(stream.keepAlive)
        #expect(text(stream.body.encode(Array("data: {\"value\":1}\n\n".utf8))) == "13\r\ndata: {\"value\":1}\n\n\r\n")
        #expect(stream.body.encode([UInt8]()) == [])
        #expect(text(stream.body.end()) == "0\r\n\r\n")
        #expect(text(stream.body.end(trailers: ["X-Count": "1"])) == "0\r\nX-Count: 1\r\n\r\n")
    }

    @Test func streamingResponse_ToHTTP10_IsDelimitedByClose() {
        var writer = HTTPResponseWriter()
        let stream = writer.streamingResponse(
            HTTPResponseHead(status: .ok), context: HTTPResponseContext(requestVersion: .http1_0, keepAlive: true),
            secondsSince1970: Self.now)
        #expect(text(stream.head) == "HTTP/1.1 200 OK\r\n\(Self.date)Connection: close\r\n\r\n")
        #expect(!stream.keepAlive)
        #expect(stream.body.encode([1, 2]) == [1, 2])
        #expect(stream.body.end() == [])
    }

    @Test func streamingResponse_ToHEAD_WritesNoBody() {
        var writer = HTTPResponseWriter()
        let stream = writer.streamingResponse(HTTPResponseHead(status: .ok), context: HTTPResponseContext(requestMethod: .head), secondsSince1970: Self.now)
        #expect(stream.body.encode([1, 2, 3]) == [])
        #expect(stream.body.end() == [])
    }

    @Test func chunkedOutput_IsReadBackByOurParser() throws {
        var writer = HTTPResponseWriter()
        let stream = writer.streamingResponse(HTTPResponseHead(status: .ok), context: HTTPResponseContext(), secondsSince1970: Self.now)
        let pieces: [[UInt8]] = [Array("hello ".utf8), Array(repeating: 0x41, count: 300), Array("!".utf8)]
        let framed = pieces.flatMap { stream.body.encode($0) } + stream.body.end()
        let request = try #require(HTTPTestSupport.requests(HTTPTestSupport.parse(
            HTTPTestSupport.bytes("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n") + framed)).first)
        #expect(request.body == pieces.flatMap { $0 })
    }

    @Test func switchingProtocols_HasNoFramingFields() {
        var writer = HTTPResponseWriter()
        let head = text(writer.switchingProtocols(headers: ["Upgrade": "websocket", "Connection": "Upgrade"], secondsSince1970: Self.now))
        #expect(head == "HTTP/1.1 101 Switching Protocols\r\n\(Self.date)Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
    }

    @Test func errorResponse_CarriesTheParserErrorStatusAndJSON() {
        let error = HTTPParserError.headerSectionTooLarge
        var writer = HTTPResponseWriter()
        let response = text(writer.response(
            HTTPResponseHead(status: HTTPStatus(code: error.status), headers: ["Content-Type": "application/json"]),
            body: error.jsonBody, context: HTTPResponseContext(keepAlive: false), secondsSince1970: Self.now))
        #expect(response.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))
        #expect(response.hasSuffix("Connection: close\r\n\r\n{\"error\":{\"code\":\"header_section_too_large\",\"message\":\"The request header section is larger than the server accepts.\"}}"))
    }
}
