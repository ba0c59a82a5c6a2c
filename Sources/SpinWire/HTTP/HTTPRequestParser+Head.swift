extension HTTPRequestParser {
    /// How the body is delimited (RFC 9112 §6.3).
    enum Framing: Equatable {
        case none
        case contentLength(Int)
        case chunked
    }

    /// The request head being parsed, with the facts about framing fields collected while
    /// each field line is read.
    struct HeadBuilder: Sendable {
        var method = HTTPMethod.get
        var target = HTTPRequestTarget(raw: "/", form: .origin, path: "/", query: nil)
        var version = HTTPVersion.http1_1
        var headers: HTTPHeaders
        /// Bytes of the field lines so far, CRLFs included.
        var headerBytes = 0

        var hostCount = 0
        var host = ""
        var hostIsValid = true
        var contentLengthValues: [String] = []
        var transferEncodingValues: [String] = []
        var connectionValues: [String] = []
        var expectValues: [String] = []
        var hasUpgrade = false

        // Decided by `framing(limits:)`.
        var keepAlive = true
        var expectsContinue = false
        var isUpgradeCandidate = false

        /// Empty; `fieldCapacity` reserves room for that many field lines. A parser holds
        /// an empty one between requests and after an upgrade, so an idle connection keeps
        /// no field storage.
        init(fieldCapacity: Int = 0) {
            headers = HTTPHeaders(minimumCapacity: fieldCapacity)
        }

        /// `request-line = method SP request-target SP HTTP-version` (RFC 9112 §3).
        mutating func parseRequestLine(_ line: HTTPBytes) throws(HTTPParserError) {
            guard let firstSpace = line.firstIndex(of: HTTPSyntax.sp) else { throw .invalidRequestLine }
            let methodBytes = line[line.startIndex..<firstSpace]
            let rest = line[(firstSpace + 1)...]
            guard let secondSpace = rest.firstIndex(of: HTTPSyntax.sp) else { throw .invalidRequestLine }
            let targetBytes = rest[rest.startIndex..<secondSpace]
            let versionBytes = rest[(secondSpace + 1)...]
            // RFC 9112 §3: one SP between parts; an empty part means extra whitespace.
            guard !methodBytes.isEmpty, !targetBytes.isEmpty else { throw .invalidRequestLine }

            // RFC 9110 §9.1: method = token.
            for byte in methodBytes where !HTTPSyntax.isToken(byte) { throw .invalidMethod }
            method = HTTPMethod(rawValue: HTTPCommonText.method(methodBytes) ?? String(decoding: methodBytes, as: UTF8.self))

            // RFC 9112 §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, "HTTP" case-sensitive.
            guard versionBytes.count == 8, versionBytes.starts(with: "HTTP/".utf8),
                  versionBytes[versionBytes.startIndex + 6] == UInt8(ascii: "."),
                  let major = Self.digit(versionBytes[versionBytes.startIndex + 5]),
                  let minor = Self.digit(versionBytes[versionBytes.startIndex + 7])
            else { throw .invalidVersion }
            // RFC 9110 §15.6.6: 505 for a major version we do not support (HTTP/2.0 and
            // HTTP/3.0 as text are not those protocols). RFC 9112 §2.3 and RFC 9110 §6.2:
            // a later minor version of HTTP/1 is processed as the highest we implement,
            // so HTTP/1.2 to HTTP/1.9 are read (and answered) as HTTP/1.1.
            guard major == 1 else { throw .unsupportedVersion }
            version = minor == 0 ? .http1_0 : .http1_1

            // RFC 9110 §9.3.6: CONNECT asks for a tunnel; an origin server answers 501.
            guard method != .connect else { throw .connectNotSupported }
            target = try HTTPRequestTarget.parse(targetBytes, method: method)
        }

        private static func digit(_ byte: UInt8) -> Int? {
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int(byte - UInt8(ascii: "0")) : nil
        }

        /// `field-line = field-name ":" OWS field-value OWS` (RFC 9112 §5), split and
        /// checked; the value is returned without its surrounding whitespace.
        static func splitField(_ line: HTTPBytes) throws(HTTPParserError) -> (name: HTTPBytes, value: HTTPBytes) {
            // RFC 9112 §5.2: obs-fold is rejected with 400; RFC 9112 §2.2: so is whitespace
            // before the first field line.
            guard let first = line.first, !HTTPSyntax.isWhitespace(first) else { throw .obsoleteLineFolding }
            var index = line.startIndex
            while index < line.endIndex && HTTPSyntax.isToken(line[index]) { index += 1 }
            guard index < line.endIndex, index > line.startIndex else { throw .invalidHeaderName }
            if line[index] != HTTPSyntax.colon {
                // RFC 9112 §5.1: no whitespace is allowed between field name and colon.
                if HTTPSyntax.isWhitespace(line[index]) {
                    var next = index
                    while next < line.endIndex && HTTPSyntax.isWhitespace(line[next]) { next += 1 }
                    if next < line.endIndex && line[next] == HTTPSyntax.colon { throw .whitespaceBeforeColon }
                }
                throw .invalidHeaderName
            }
            let name = line[line.startIndex..<index]
            var valueStart = index + 1
            var valueEnd = line.endIndex
            while valueStart < valueEnd && HTTPSyntax.isWhitespace(line[valueStart]) { valueStart += 1 }
            while valueEnd > valueStart && HTTPSyntax.isWhitespace(line[valueEnd - 1]) { valueEnd -= 1 }
            let value = line[valueStart..<valueEnd]
            // RFC 9110 §5.5: field-value = *field-content of VCHAR, obs-text, SP, HTAB.
            for byte in value where !HTTPSyntax.isFieldValue(byte) { throw .invalidHeaderValue }
            return (name, value)
        }

        /// Parses one header field line and records what framing needs to know about it.
        mutating func parseField(_ line: HTTPBytes) throws(HTTPParserError) {
            let (nameBytes, valueBytes) = try Self.splitField(line)
            let name = HTTPCommonText.name(nameBytes) ?? String(decoding: nameBytes, as: UTF8.self)
            let value = HTTPCommonText.value(valueBytes) ?? String(decoding: valueBytes, as: UTF8.self)
            headers.append(name: name, value: value)
            switch nameBytes.count {
            case 4 where HTTPSyntax.equalsIgnoringCase(nameBytes, "host"):
                hostCount += 1
                host = value
                hostIsValid = hostIsValid && HTTPHostSyntax.isValidAuthority(valueBytes, requirePort: false)
            case 6 where HTTPSyntax.equalsIgnoringCase(nameBytes, "expect"):
                expectValues.append(value)
            case 7 where HTTPSyntax.equalsIgnoringCase(nameBytes, "upgrade"):
                hasUpgrade = true
            case 10 where HTTPSyntax.equalsIgnoringCase(nameBytes, "connection"):
                connectionValues.append(value)
            case 14 where HTTPSyntax.equalsIgnoringCase(nameBytes, "content-length"):
                contentLengthValues.append(value)
            case 17 where HTTPSyntax.equalsIgnoringCase(nameBytes, "transfer-encoding"):
                transferEncodingValues.append(value)
            default:
                break
            }
        }

        /// Checks the head as a whole and decides the body framing (RFC 9112 §6.3).
        mutating func framing(limits: Limits) throws(HTTPParserError) -> Framing {
            // RFC 9112 §3.2: 400 for more than one Host, for an HTTP/1.1 request without
            // one, and for an invalid one.
            guard hostCount <= 1 else { throw .duplicateHost }
            guard hostCount == 1 || version == .http1_0 else { throw .missingHost }
            guard hostIsValid else { throw .invalidHost }

            let close = HTTPSyntax.listContains(connectionValues, "close")
            // RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive".
            if version == .http1_1 {
                keepAlive = !close
            } else {
                keepAlive = !close && HTTPSyntax.listContains(connectionValues, "keep-alive")
            }
            // RFC 9110 §7.8: Upgrade is honoured only with "upgrade" in Connection, and a
            // server MUST ignore it in an HTTP/1.0 request.
            isUpgradeCandidate = version == .http1_1 && hasUpgrade
                && HTTPSyntax.listContains(connectionValues, "upgrade")

            // RFC 9110 §10.1.1: 100-continue is the only expectation; an HTTP/1.0 request's
            // Expect is ignored.
            expectsContinue = false
            if version == .http1_1 && !expectValues.isEmpty {
                let members = expectValues.flatMap { HTTPSyntax.listMembers($0) }
                guard !members.isEmpty, members.allSatisfy({ $0.equalsIgnoringASCIICase("100-continue") })
                else { throw .unsupportedExpectation }
                expectsContinue = true
            }

            let framing = try bodyFraming(limits: limits)
            switch framing {
            case .none, .contentLength(0): expectsContinue = false
            default: break
            }
            return framing
        }

        private func bodyFraming(limits: Limits) throws(HTTPParserError) -> Framing {
            if !transferEncodingValues.isEmpty {
                // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means faulty framing.
                guard version == .http1_1 else { throw .transferEncodingInHTTP10 }
                // RFC 9112 §6.1: a server MAY reject Content-Length with Transfer-Encoding;
                // it is the CL.TE / TE.CL desync, so we always do.
                guard contentLengthValues.isEmpty else { throw .contentLengthWithTransferEncoding }
                let codings = transferEncodingValues.flatMap { HTTPSyntax.listMembers($0) }
                // RFC 9112 §6.3 rule 4: chunked must be the final coding, else 400.
                // (`gzip` alone is such a case: 400, not 501.)
                guard let last = codings.last, last.equalsIgnoringASCIICase("chunked") else {
                    throw .invalidTransferEncoding
                }
                // RFC 9112 §7.1: chunked is applied at most once.
                guard codings.count == 1 else {
                    if codings.dropLast().contains(where: { $0.equalsIgnoringASCIICase("chunked") }) {
                        throw .invalidTransferEncoding
                    }
                    // RFC 9112 §6.1: a coding we do not understand answers 501 (gzip, ...).
                    throw .unsupportedTransferCoding
                }
                return .chunked
            }
            guard !contentLengthValues.isEmpty else {
                // RFC 9112 §6.3 rule 7: a request without either has no body.
                return .none
            }
            // RFC 9110 §8.6: Content-Length = 1*DIGIT; a list or a repeat is collapsed by
            // some recipients (RFC 9112 §6.3 rule 5) but refused here.
            if contentLengthValues.count == 1, let length = Self.decimal(Substring(contentLengthValues[0])) {
                guard length <= limits.maxBodySize else { throw .bodyTooLarge }
                return .contentLength(length)
            }
            let members = contentLengthValues.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingHTTPWhitespace() }
            var lengths: [Int] = []
            for member in members {
                guard let length = Self.decimal(member) else { throw .invalidContentLength }
                lengths.append(length)
            }
            if lengths.count > 1 {
                throw lengths.allSatisfy({ $0 == lengths[0] }) ? .duplicateContentLength : .conflictingContentLength
            }
            guard lengths[0] <= limits.maxBodySize else { throw .bodyTooLarge }
            return .contentLength(lengths[0])
        }

        /// 1*DIGIT that fits in an Int; nil otherwise (signs, spaces, hex, overflow).
        private static func decimal(_ text: Substring) -> Int? {
            guard !text.isEmpty else { return nil }
            var value = 0
            for byte in text.utf8 {
                guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
                let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
                guard !overflow1 && !overflow2 else { return nil }
                value = sum
            }
            return value
        }

        func request(body: [UInt8], trailers: HTTPHeaders) -> HTTPRequest {
            HTTPRequest(
                method: method, target: target, version: version, headers: headers, body: body,
                trailers: trailers,
                // RFC 9112 §3.2.2: with an absolute-form target, the Host field is ignored.
                host: target.authority ?? host,
                keepAlive: keepAlive, expectsContinue: expectsContinue, isUpgradeCandidate: isUpgradeCandidate)
        }
    }
}
