/// What this endpoint is willing to agree to for permessage-deflate (RFC 7692), and how it
/// compresses. The defaults accept every well-formed offer and compress with zlib level 6.
package struct PerMessageDeflateConfiguration: Hashable, Sendable {
    /// Largest LZ77 window (8...15) the server compresses with. Lower saves memory per
    /// connection (zlib uses about `(1 << (bits + 2)) + (1 << (memLevel + 9))` bytes).
    package var serverMaxWindowBits: Int
    /// Largest window (8...15) the server asks the client to compress with; only sent when
    /// the client offered `client_max_window_bits` (RFC 7692 §7.1.2.2).
    package var clientMaxWindowBits: Int
    /// Always reset the server's compressor after each message (saves memory, costs ratio).
    package var serverNoContextTakeover: Bool
    /// Always ask the client to reset its compressor after each message.
    package var clientNoContextTakeover: Bool
    /// zlib compression level 0...9.
    package var compressionLevel: Int32
    /// zlib memLevel 1...9.
    package var memoryLevel: Int32
    /// Outgoing messages shorter than this are sent uncompressed (RSV1 clear), since the
    /// DEFLATE overhead outweighs any gain. RFC 7692 §6 lets each message choose.
    package var minimumCompressedSize: Int

    package init(serverMaxWindowBits: Int = 15, clientMaxWindowBits: Int = 15,
                 serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false,
                 compressionLevel: Int32 = 6, memoryLevel: Int32 = 8,
                 minimumCompressedSize: Int = 32) {
        precondition((8...15).contains(serverMaxWindowBits) && (8...15).contains(clientMaxWindowBits))
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientMaxWindowBits = clientMaxWindowBits
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
        self.compressionLevel = compressionLevel
        self.memoryLevel = memoryLevel
        self.minimumCompressedSize = minimumCompressedSize
    }
}

/// The agreed permessage-deflate parameters of one connection (RFC 7692 §7.1), as sent in
/// the server's `Sec-WebSocket-Extensions` response.
package struct PerMessageDeflateParameters: Hashable, Sendable {
    package var serverNoContextTakeover: Bool
    package var clientNoContextTakeover: Bool
    /// The window the server compresses with, and the value sent as `server_max_window_bits`
    /// when `announcesServerMaxWindowBits`.
    package var serverMaxWindowBits: Int
    /// The window the client compresses with; sent as `client_max_window_bits` when
    /// `announcesClientMaxWindowBits`.
    package var clientMaxWindowBits: Int
    package var announcesServerMaxWindowBits: Bool
    package var announcesClientMaxWindowBits: Bool
    /// Compression settings carried over from the configuration (not negotiated).
    package var compressionLevel: Int32
    package var memoryLevel: Int32
    package var minimumCompressedSize: Int

    package init(serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false,
                 serverMaxWindowBits: Int = 15, clientMaxWindowBits: Int = 15,
                 announcesServerMaxWindowBits: Bool = false,
                 announcesClientMaxWindowBits: Bool = false,
                 compressionLevel: Int32 = 6, memoryLevel: Int32 = 8,
                 minimumCompressedSize: Int = 32) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientMaxWindowBits = clientMaxWindowBits
        self.announcesServerMaxWindowBits = announcesServerMaxWindowBits
        self.announcesClientMaxWindowBits = announcesClientMaxWindowBits
        self.compressionLevel = compressionLevel
        self.memoryLevel = memoryLevel
        self.minimumCompressedSize = minimumCompressedSize
    }

    /// The `Sec-WebSocket-Extensions` response value, e.g.
    /// `permessage-deflate; server_no_context_takeover; client_max_window_bits=10`.
    package var responseHeaderValue: String {
        var parts = ["permessage-deflate"]
        if serverNoContextTakeover { parts.append("server_no_context_takeover") }
        if clientNoContextTakeover { parts.append("client_no_context_takeover") }
        if announcesServerMaxWindowBits { parts.append("server_max_window_bits=\(serverMaxWindowBits)") }
        if announcesClientMaxWindowBits { parts.append("client_max_window_bits=\(clientMaxWindowBits)") }
        return parts.joined(separator: "; ")
    }
}

/// Server-side negotiation of permessage-deflate (RFC 7692 §5, §7.1).
package enum PerMessageDeflateNegotiation {
    /// The extension token (RFC 7692 §7).
    package static let extensionName = "permessage-deflate"

    /// Accepts the first acceptable permessage-deflate offer among the client's
    /// `Sec-WebSocket-Extensions` header values, or nil (extension declined, the connection
    /// proceeds uncompressed).
    ///
    /// RFC 7692 §5: an offer is declined when it has an unknown parameter, an invalid value,
    /// or the same parameter twice; the server then considers the next offer.
    package static func negotiate(offers headerValues: [String],
                                  configuration: PerMessageDeflateConfiguration)
        -> PerMessageDeflateParameters?
    {
        for element in WebSocketExtensionHeader.parse(headerValues)
        where element.name.equalsIgnoringASCIICase(extensionName) {
            if let accepted = accept(element.parameters, configuration: configuration) {
                return accepted
            }
        }
        return nil
    }

    /// The response to one offer, or nil to decline it.
    static func accept(_ parameters: [(name: String, value: String?)],
                       configuration: PerMessageDeflateConfiguration)
        -> PerMessageDeflateParameters?
    {
        var seen = Set<String>()
        var serverNoContextTakeover = false
        var clientNoContextTakeover = false
        var offeredServerBits: Int?
        var offeredClientBits: Int?? = .none  // .some(nil): offered without a value
        for (rawName, value) in parameters {
            let name = rawName.lowercased()
            // RFC 7692 §5: "multiple extension parameters with the same name" → decline.
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "server_no_context_takeover":
                // RFC 7692 §7.1.1.1: this parameter has no value.
                guard value == nil else { return nil }
                serverNoContextTakeover = true
            case "client_no_context_takeover":
                // RFC 7692 §7.1.1.2: this parameter has no value.
                guard value == nil else { return nil }
                clientNoContextTakeover = true
            case "server_max_window_bits":
                // RFC 7692 §7.1.2.1: a value is required, an integer 8-15.
                guard let value, let bits = windowBits(value) else { return nil }
                offeredServerBits = bits
            case "client_max_window_bits":
                // RFC 7692 §7.1.2.2: the value is optional; if present, 8-15.
                if let value {
                    guard let bits = windowBits(value) else { return nil }
                    offeredClientBits = .some(bits)
                } else {
                    offeredClientBits = .some(nil)
                }
            default:
                // RFC 7692 §5: an unknown parameter → decline this offer.
                return nil
            }
        }
        var result = PerMessageDeflateParameters(
            compressionLevel: configuration.compressionLevel,
            memoryLevel: configuration.memoryLevel,
            minimumCompressedSize: configuration.minimumCompressedSize)
        // RFC 7692 §7.1.1.1: if offered, the server MUST include server_no_context_takeover.
        result.serverNoContextTakeover = serverNoContextTakeover || configuration.serverNoContextTakeover
        // RFC 7692 §7.1.1.2: the server MAY include client_no_context_takeover (offered or not);
        // an offered hint is echoed so both sides agree.
        result.clientNoContextTakeover = clientNoContextTakeover || configuration.clientNoContextTakeover
        // RFC 7692 §7.1.2.1: accept server_max_window_bits with the same or a smaller value.
        if let offeredServerBits {
            result.serverMaxWindowBits = min(offeredServerBits, configuration.serverMaxWindowBits)
            result.announcesServerMaxWindowBits = true
        } else {
            // Not offered: the response must not carry it, but a smaller window is always
            // safe for the client's inflater, so the server may still use one.
            result.serverMaxWindowBits = configuration.serverMaxWindowBits
        }
        // RFC 7692 §7.1.2.2: only if offered may the response carry client_max_window_bits,
        // with a value no larger than the offered one.
        switch offeredClientBits {
        case .none:
            result.clientMaxWindowBits = 15
        case .some(let offered):
            let limit = min(offered ?? 15, configuration.clientMaxWindowBits)
            result.clientMaxWindowBits = limit
            result.announcesClientMaxWindowBits = limit < 15 || offered != nil
        }
        return result
    }

    /// RFC 7692 §7.1.2.1 ABNF: `%x38-39 / "1" %x30-35` (8-15, no leading zero or sign);
    /// the value may also arrive as a quoted-string (RFC 7692 §7.1.2, RFC 6455 §9.1).
    static func windowBits(_ value: String) -> Int? {
        switch value {
        case "8": 8
        case "9": 9
        case "10": 10
        case "11": 11
        case "12": 12
        case "13": 13
        case "14": 14
        case "15": 15
        default: nil
        }
    }
}

/// Parser of `Sec-WebSocket-Extensions` values (RFC 6455 §9.1):
/// `extension-list = 1#( token *( ";" token [ "=" ( token / quoted-string ) ] ) )`.
enum WebSocketExtensionHeader {
    struct Element {
        var name: String
        var parameters: [(name: String, value: String?)]
    }

    /// The elements of all header values in order. A malformed element is skipped (it can
    /// only be declined); the others still count.
    static func parse(_ headerValues: [String]) -> [Element] {
        var result: [Element] = []
        for value in headerValues {
            for element in split(Array(value.utf8), on: UInt8(ascii: ",")) {
                if let parsed = parseElement(element) { result.append(parsed) }
            }
        }
        return result
    }

    private static func parseElement(_ bytes: [UInt8]) -> Element? {
        let pieces = split(bytes, on: UInt8(ascii: ";"))
        guard let first = pieces.first else { return nil }
        let name = trim(first)
        if name.isEmpty && pieces.count == 1 { return nil }  // empty list element: ignore
        guard isToken(name) else { return nil }
        var parameters: [(name: String, value: String?)] = []
        for piece in pieces.dropFirst() {
            let piece = trim(piece)
            if let equals = piece.firstIndex(of: UInt8(ascii: "=")) {
                let key = trim(Array(piece[..<equals]))
                var value = trim(Array(piece[(equals + 1)...]))
                guard isToken(key) else { return nil }
                if value.first == UInt8(ascii: "\"") {
                    guard let unquoted = unquote(value) else { return nil }
                    value = unquoted
                }
                guard isToken(value) else { return nil }
                parameters.append((String(decoding: key, as: UTF8.self),
                                   String(decoding: value, as: UTF8.self)))
            } else {
                guard isToken(piece) else { return nil }
                parameters.append((String(decoding: piece, as: UTF8.self), nil))
            }
        }
        return Element(name: String(decoding: name, as: UTF8.self), parameters: parameters)
    }

    /// Splits on `separator` outside quoted-strings.
    static func split(_ bytes: [UInt8], on separator: UInt8) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        var current: [UInt8] = []
        var inQuotes = false
        var escaped = false
        for byte in bytes {
            if inQuotes {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inQuotes = false }
                current.append(byte)
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = true
                current.append(byte)
            } else if byte == separator {
                parts.append(current)
                current = []
            } else {
                current.append(byte)
            }
        }
        parts.append(current)
        return parts
    }

    private static func unquote(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= 2, bytes.last == UInt8(ascii: "\"") else { return nil }
        var out: [UInt8] = []
        var escaped = false
        for byte in bytes[1..<(bytes.count - 1)] {
            if escaped { out.append(byte); escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { return nil } else { out.append(byte) }
        }
        return escaped ? nil : out
    }

    private static func trim(_ bytes: [UInt8]) -> [UInt8] {
        var slice = bytes[...]
        while let first = slice.first, first == 0x20 || first == 0x09 { slice.removeFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice.removeLast() }
        return Array(slice)
    }

    /// RFC 9110 §5.6.2 token: 1*tchar.
    static func isToken(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return false }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                continue
            default:
                guard Array("!#$%&'*+-.^_`|~".utf8).contains(byte) else { return false }
            }
        }
        return true
    }
}
