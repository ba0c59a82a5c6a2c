import Foundation

/// The head of an HTTP/1.1 response (RFC 9112 §4, §5), as far as the WebSocket upgrade
/// needs it: the status and the header fields.
struct ResponseHead {
    /// The status code.
    var status: Int
    /// The header fields, in order, names as sent.
    var headers: [(name: String, value: String)]

    /// The largest head accepted: the server's are a few hundred bytes.
    static let maxLength = 16 << 10

    /// The first value of header `name` (case-insensitive), trimmed.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The head at the start of `bytes` and its length (with the blank line), or nil when
    /// it has not all arrived. Throws when it is not a response head or is too long.
    static func parse(_ bytes: [UInt8]) throws(SpinClientError) -> (head: ResponseHead, length: Int)? {
        guard let end = Self.endOfHead(bytes) else {
            guard bytes.count <= maxLength else { throw .unexpectedResponse(status: 0, detail: "response head too long") }
            return nil
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        // RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ]
        let statusLine = lines.first.map { $0.split(separator: " ", maxSplits: 2) } ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]),
              (100...599).contains(status) else {
            throw .unexpectedResponse(status: 0, detail: "not an HTTP/1.1 status line: \(lines.first ?? "")")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            // RFC 9112 §5: field-line = field-name ":" OWS field-value OWS
            guard let colon = line.firstIndex(of: ":") else {
                throw .unexpectedResponse(status: status, detail: "malformed header line: \(line)")
            }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((name: String(line[..<colon]), value: value))
        }
        return (ResponseHead(status: status, headers: headers), end + 4)
    }

    /// The index of the `\r\n\r\n` that ends the head.
    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
