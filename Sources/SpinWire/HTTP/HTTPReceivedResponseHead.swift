/// The head of an HTTP/1.1 response as a client receives it (RFC 9112 §4, §5): the status
/// line as sent, the status, and the header fields in order with their names as sent.
/// Pure: `SpinClient` reads its WebSocket upgrade's answer with it, and a cluster node
/// the answer of the node it relays a request to.
package struct HTTPReceivedResponseHead: Sendable {
    /// The status line, without its CRLF.
    package var statusLine: String
    /// The status code, 100 to 599.
    package var status: Int
    /// The header fields, in order; values without surrounding whitespace. Looked up by
    /// name as `HTTPHeaders` does (ASCII case-insensitive: `fields["Content-Length"]`).
    package var fields: HTTPHeaders

    /// Why bytes are not a response head.
    package struct Malformed: Error, Sendable {
        /// The status, when the status line was read.
        package var status: Int
        package var detail: String
    }

    /// The head at the start of `bytes` and its length with the blank line, or nil while
    /// it has not all arrived. Throws when the bytes are not a response head (RFC 9112
    /// §4: `HTTP/1.x`, a three-digit status; §5: every field line has a name and a colon)
    /// or the head is longer than `limit` bytes.
    package static func parse(_ bytes: [UInt8], limit: Int) throws(Malformed) -> (head: Self, length: Int)? {
        guard let end = Self.blankLine(in: bytes) else {
            guard bytes.count <= limit else { throw Malformed(status: 0, detail: "response head too long") }
            return nil
        }
        guard end <= limit else { throw Malformed(status: 0, detail: "response head too long") }
        // The lines, split at CRLF on the bytes (a relay parses a head per answer: no
        // generic string search here, one String per status line, name and value).
        var lineStart = 0
        var statusLine: String?
        var status = 0
        var fields = HTTPHeaders(minimumCapacity: 8)
        while lineStart <= end {
            var lineEnd = lineStart
            while lineEnd < end, !(bytes[lineEnd] == 13 && lineEnd + 1 < end && bytes[lineEnd + 1] == 10) { lineEnd += 1 }
            defer { lineStart = lineEnd + 2 }
            guard statusLine != nil else {
                let line = String(decoding: bytes[lineStart..<lineEnd], as: UTF8.self)
                statusLine = line
                // RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ]
                let parts = line.split(separator: " ", maxSplits: 2)
                guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let code = Int(parts[1]),
                      (100...599).contains(code) else {
                    throw Malformed(status: 0, detail: "not an HTTP/1.1 status line: \(line)")
                }
                status = code
                continue
            }
            guard lineEnd > lineStart else { continue }
            // RFC 9112 §5: field-line = field-name ":" OWS field-value OWS
            guard let colon = bytes[lineStart..<lineEnd].firstIndex(of: 58), colon != lineStart else {
                throw Malformed(status: status, detail: "malformed header line: \(String(decoding: bytes[lineStart..<lineEnd], as: UTF8.self))")
            }
            var valueStart = colon + 1
            var valueEnd = lineEnd
            while valueStart < valueEnd, bytes[valueStart] == 32 || bytes[valueStart] == 9 { valueStart += 1 }
            while valueEnd > valueStart, bytes[valueEnd - 1] == 32 || bytes[valueEnd - 1] == 9 { valueEnd -= 1 }
            fields.append(name: String(decoding: bytes[lineStart..<colon], as: UTF8.self),
                          value: String(decoding: bytes[valueStart..<valueEnd], as: UTF8.self))
        }
        guard let statusLine else { throw Malformed(status: 0, detail: "not an HTTP/1.1 status line: ") }
        return (Self(statusLine: statusLine, status: status, fields: fields), end + 4)
    }

    /// Where the first CRLF CRLF in `bytes` starts.
    private static func blankLine(in bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { buffer in
            var index = 0
            while index + 3 < buffer.count {
                if buffer[index + 3] == 10, buffer[index + 2] == 13, buffer[index + 1] == 10, buffer[index] == 13 { return index }
                index += 1
            }
            return nil
        }
    }
}
