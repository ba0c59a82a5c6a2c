import Testing
@testable import SpinWire

/// The request line, header syntax and framing rules of `HTTPRequestParser+Head.swift`:
/// one test per rule, each with the raw bytes an attacker or a broken client sends.
struct HTTPRequestParserHeadTests {
    typealias T = HTTPTestSupport

    // MARK: Request line (RFC 9112 §3)

    @Test(arguments: ["GET  / HTTP/1.1", "GET /  HTTP/1.1", " GET / HTTP/1.1", "GET /HTTP/1.1", "GET"])
    func requestLine_WithoutExactlyOneSpaceBetweenParts_IsRejected(line: String) {
        let error = T.error("\(line)\r\nHost: a\r\n\r\n")
        #expect(error == .invalidRequestLine || error == .invalidVersion)
        #expect(error?.status == 400)
    }

    @Test(arguments: ["G(ET", "GE\u{7F}T", "G@T", "GÉT"])
    func method_WithNonTokenCharacter_IsRejected(method: String) {
        #expect(T.error("\(method) / HTTP/1.1\r\nHost: a\r\n\r\n") == .invalidMethod)
    }

    @Test func unknownTokenMethod_IsParsedForTheRouterToAnswer() throws {
        #expect(try #require(T.request("PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n")).method.rawValue == "PROPFIND")
    }

    @Test(arguments: ["HTTP/1.1 ", "http/1.1", "HTTP/1", "HTTP/1.10", "HTTP/a.b", "HTTP/1,1", "HTTPS/1.1"])
    func malformedVersion_IsRejected(version: String) {
        #expect(T.error("GET / \(version)\r\nHost: a\r\n\r\n") == .invalidVersion)
    }

    @Test(arguments: ["HTTP/2.0", "HTTP/0.9", "HTTP/3.0", "HTTP/2.1", "HTTP/9.9"])
    func otherMajorVersion_IsRefusedWith505(version: String) {
        let error = T.error("GET / \(version)\r\nHost: a\r\n\r\n")
        #expect(error == .unsupportedVersion)
        #expect(error?.status == 505)
    }

    // RFC 9112 §2.3: a later HTTP/1 minor version is processed as HTTP/1.1.
    @Test(arguments: ["HTTP/1.2", "HTTP/1.5", "HTTP/1.9"])
    func laterMinorVersion_IsReadAsHTTP11(version: String) throws {
        let request = try #require(T.request("GET / \(version)\r\nHost: a\r\n\r\n"))
        #expect(request.version == .http1_1)
        #expect(request.keepAlive)  // 1.1 semantics: persistent by default
        #expect(T.error("GET / \(version)\r\n\r\n") == .missingHost)  // and Host is required
    }

    @Test func http10_StaysHTTP10() throws {
        let request = try #require(T.request("GET / HTTP/1.0\r\n\r\n"))
        #expect(request.version == .http1_0)
        #expect(!request.keepAlive)
    }

    @Test(arguments: ["/a b", "/a\u{01}", "/caf\u{E9}", "/a#frag", "/a\u{7F}"])
    func target_WithForbiddenCharacter_IsRejected(target: String) {
        let error = T.error("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(error == .invalidTarget || error == .invalidVersion)
    }

    @Test func target_WithBrowserStyleRawCharacters_IsAccepted() throws {
        let request = try #require(T.request("GET /search?q={a|b}&x[]=1^2 HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(request.target.query == "q={a|b}&x[]=1^2")
    }

    @Test func absoluteForm_TakesTheHostFromTheTarget() throws {
        // RFC 9112 §3.2.2: the Host header is ignored in favour of the target's authority.
        let request = try #require(T.request("GET http://api.example.com:8080/v1/spins?x=1 HTTP/1.1\r\nHost: other\r\n\r\n"))
        #expect(request.target.form == .absolute)
        #expect(request.target.scheme == "http")
        #expect(request.host == "api.example.com:8080")
        #expect(request.target.path == "/v1/spins")
        #expect(request.target.query == "x=1")
    }

    @Test func absoluteForm_WithoutPath_HasRootPath() throws {
        let request = try #require(T.request("OPTIONS HTTPS://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        #expect(request.target.path == "/")
        #expect(request.target.scheme == "https")
    }

    @Test(arguments: ["http://user:pw@example.com/", "http:///path", "ftp://example.com/", "http://exa mple/"])
    func absoluteForm_WithUserinfoEmptyHostOrOtherScheme_IsRejected(target: String) {
        let error = T.error("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(error == .invalidTarget || error == .invalidVersion)
    }

    @Test func asteriskForm_WithOptions_IsAccepted() throws {
        let request = try #require(T.request("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(request.target.form == .asterisk)
    }

    @Test func asteriskForm_WithOtherMethod_IsRejected() {
        #expect(T.error("GET * HTTP/1.1\r\nHost: a\r\n\r\n") == .asteriskFormWithoutOptions)
    }

    @Test func authorityForm_WithoutConnect_IsRejected() {
        #expect(T.error("GET example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n") == .authorityFormWithoutConnect)
    }

    @Test func connect_IsRefusedWith501() {
        let error = T.error("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        #expect(error == .connectNotSupported)
        #expect(error?.status == 501)
    }

    // MARK: Line endings (RFC 9112 §2.2)

    @Test(arguments: [
        "GET / HTTP/1.1\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n\n",
        "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
    ])
    func bareLF_IsRejectedEverywhereInTheHead(input: String) {
        #expect(T.error(input) == .bareLineFeed)
    }

    @Test func bareLF_AfterChunkSize_IsRejected() {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n") == .bareLineFeed)
    }

    @Test func bareLF_InTrailers_IsRejected() {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\n\r\n") == .bareLineFeed)
    }

    @Test(arguments: [
        "GET / HTTP/1.1\rHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\rb\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n\r\r\n",
    ])
    func bareCR_IsRejected(input: String) {
        #expect(T.error(input) == .bareCarriageReturn)
    }

    @Test func bareCR_InChunkSizeLine_IsRejected() {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\rabc\r\n0\r\n\r\n") == .bareCarriageReturn)
    }

    // MARK: Header fields (RFC 9110 §5, RFC 9112 §5)

    @Test func obsFold_IsRejected() {
        #expect(T.error("GET / HTTP/1.1\r\nHost: a\r\nX-Long: part one\r\n  part two\r\n\r\n") == .obsoleteLineFolding)
    }

    @Test func whitespaceBeforeFirstHeader_IsRejected() {
        #expect(T.error("GET / HTTP/1.1\r\n Host: a\r\n\r\n") == .obsoleteLineFolding)
    }

    @Test(arguments: ["Host : a", "Content-Length\t: 5", "X-A  : b"])
    func whitespaceBeforeColon_IsRejected(line: String) {
        #expect(T.error("GET / HTTP/1.1\r\n\(line)\r\nHost: a\r\n\r\n") == .whitespaceBeforeColon)
    }

    @Test(arguments: ["X(A): b", "X\"A: b", ": b", "NoColon", "X A: b", "X/A: b", "Ümlaut: b", "X\u{0}A: b"])
    func headerName_WithNonTokenCharacter_IsRejected(line: String) {
        #expect(T.error("GET / HTTP/1.1\r\n\(line)\r\nHost: a\r\n\r\n") == .invalidHeaderName)
    }

    @Test(arguments: [0x00, 0x01, 0x08, 0x0B, 0x0C, 0x1F, 0x7F] as [UInt8])
    func headerValue_WithControlCharacter_IsRejected(control: UInt8) {
        let input = T.bytes("GET / HTTP/1.1\r\nHost: a\r\nX-A: b") + [control] + T.bytes("c\r\n\r\n")
        #expect(T.error(input) == .invalidHeaderValue)
    }

    @Test func headerValue_WithTabsSpacesAndObsText_IsAcceptedAndTrimmed() throws {
        let input = T.bytes("GET / HTTP/1.1\r\nHost: a\r\nX-A: \t a\tb  c \t\r\nX-Latin: caf") + [0xE9] + T.bytes("\r\n\r\n")
        let request = try #require(T.requests(T.parse(input)).first)
        #expect(request.headers["x-a"] == "a\tb  c")
        #expect(request.headers["X-Latin"] != nil)
    }

    @Test func emptyHeaderValue_IsAccepted() throws {
        #expect(try #require(T.request("GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n\r\n")).headers["x-empty"] == "")
    }

    @Test func repeatedHeaders_KeepOrderAndAllValues() throws {
        let request = try #require(T.request("GET / HTTP/1.1\r\nHost: a\r\nAccept: a\r\nX: 1\r\naccept: b\r\n\r\n"))
        #expect(request.headers.values(for: "ACCEPT") == ["a", "b"])
        #expect(request.headers.map(\.name) == ["Host", "Accept", "X", "accept"])
    }

    @Test func commonAndUncommonFields_KeepTheirSpellingAndValues() throws {
        let request = try #require(T.request(
            "POST / HTTP/1.1\r\nhost: a\r\nCONTENT-TYPE: application/json\r\nContent-Type: Application/JSON\r\n"
            + "Accept: */*\r\nAccept: */*;q=1\r\nX-Accept: close\r\nContent-length: 0\r\n\r\n"))
        #expect(request.method == .post)
        #expect(request.headers.map { "\($0.name): \($0.value)" } == [
            "host: a", "CONTENT-TYPE: application/json", "Content-Type: Application/JSON", "Accept: */*",
            "Accept: */*;q=1", "X-Accept: close", "Content-length: 0",
        ])
    }

    // MARK: Host (RFC 9112 §3.2)

    @Test func http11_WithoutHost_IsRejected() {
        #expect(T.error("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n") == .missingHost)
    }

    @Test func repeatedHost_IsRejected() {
        #expect(T.error("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n") == .duplicateHost)
    }

    @Test func repeatedHost_InHTTP10_IsRejected() {
        #expect(T.error("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n") == .duplicateHost)
    }

    @Test(arguments: ["a b", "a/b", "a@b", "[::1", "a:80:90", "a:port", "a:123456"])
    func invalidHost_IsRejected(host: String) {
        #expect(T.error("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n") == .invalidHost)
    }

    @Test(arguments: ["", "localhost", "127.0.0.1:8080", "[::1]:443", "api.example.com", "xn--bcher-kva.example"])
    func validHost_IsAccepted(host: String) throws {
        #expect(try #require(T.request("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n")).host == host)
    }

    // MARK: Framing and request smuggling (RFC 9112 §6)

    @Test func contentLengthWithTransferEncoding_IsRejected() {
        let error = T.error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(error == .contentLengthWithTransferEncoding)
        #expect(error?.status == 400)
    }

    @Test func transferEncodingBeforeContentLength_IsRejectedToo() {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n") == .contentLengthWithTransferEncoding)
    }

    @Test(arguments: ["Content-Length: 5\r\nContent-Length: 5", "Content-Length: 5, 5", "content-length: 5\r\nCONTENT-LENGTH: 5"])
    func duplicateContentLength_IsRejected(fields: String) {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\n\(fields)\r\n\r\nhello") == .duplicateContentLength)
    }

    @Test(arguments: ["Content-Length: 5\r\nContent-Length: 6", "Content-Length: 5, 6", "Content-Length: 0\r\nContent-Length: 5"])
    func conflictingContentLength_IsRejected(fields: String) {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\n\(fields)\r\n\r\nhello!") == .conflictingContentLength)
    }

    @Test(arguments: ["-1", "+5", "0x10", "5 5", "", "1.0", "5,", "99999999999999999999999", "١"])
    func invalidContentLength_IsRejected(value: String) {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \(value)\r\n\r\n") == .invalidContentLength)
    }

    @Test(arguments: ["chunked, chunked", "chunked\r\nTransfer-Encoding: chunked", "gzip", "chunked, gzip", "chunked;q=1", "", ",", "xchunked", "\"chunked\""])
    func transferEncoding_NotEndingInOneChunked_IsRejectedWith400(value: String) {
        let error = T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \(value)\r\n\r\n0\r\n\r\n")
        #expect(error == .invalidTransferEncoding)
        #expect(error?.status == 400)
    }

    @Test(arguments: ["gzip, chunked", "identity, chunked", "deflate\r\nTransfer-Encoding: chunked"])
    func transferCoding_OtherThanChunked_IsRefusedWith501(value: String) {
        let error = T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \(value)\r\n\r\n0\r\n\r\n")
        #expect(error == .unsupportedTransferCoding)
        #expect(error?.status == 501)
    }

    @Test func transferEncodingInHTTP10_IsRejected() {
        #expect(T.error("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == .transferEncodingInHTTP10)
    }

    @Test(arguments: ["", "x", "-1", " 5", "0x5", "5 ", "5\t"])
    func invalidChunkSize_IsRejected(size: String) {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n") == .invalidChunkSize)
    }

    @Test func chunkSize_WithMoreThan16HexDigits_IsTooLarge() {
        let error = T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n")
        #expect(error == .chunkSizeTooLarge)
        #expect(error?.status == 413)
    }

    @Test func chunkSize_OverflowingIntoSmallValue_IsNotAccepted() {
        // 2^64 + 5 would wrap to 5 in a parser that ignores overflow.
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n") == .chunkSizeTooLarge)
    }

    @Test func chunkSize_LargerThanBodyLimit_IsRejectedBeforeItsData() {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\n") == .bodyTooLarge)
    }

    @Test(arguments: [[0x00] as [UInt8], [0x7F], [0x01]])
    func chunkExtension_WithControlCharacter_IsRejected(control: [UInt8]) {
        let input = T.bytes("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;a") + control + T.bytes("\r\nx\r\n0\r\n\r\n")
        #expect(T.error(input) == .invalidChunkExtension)
    }

    @Test(arguments: ["abcX", "abc\rX", "abc\nX", "abcd\r\n"])
    func chunkData_NotFollowedByCRLF_IsRejected(data: String) {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n\(data)0\r\n\r\n") == .invalidChunkTerminator)
    }

    @Test func trailerWithObsFold_IsRejected() {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: a\r\n b\r\n\r\n") == .obsoleteLineFolding)
    }

    @Test func smugglingPayload_CLTE_DoesNotYieldASecondRequest() {
        // The classic CL.TE desync: a front end using Content-Length forwards the smuggled
        // "GPOST" as body; one using chunked sees a second request. We refuse the first.
        let outcomes = T.parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nSMUGGLED")
        #expect(outcomes == [.action(.error(.contentLengthWithTransferEncoding))])
    }

    @Test func smugglingPayload_TEObfuscatedWithSpace_IsRejected() {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n") == .whitespaceBeforeColon)
    }

    @Test func smugglingPayload_TEWithVerticalTab_IsRejected() {
        #expect(T.error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \u{0B}chunked\r\n\r\n0\r\n\r\n") == .invalidHeaderValue)
    }
}
