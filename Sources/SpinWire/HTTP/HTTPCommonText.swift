/// The methods, field names and values most requests carry, as string literals: text spelled
/// exactly as one of them (same bytes, same case, since names keep their spelling) gets
/// the literal, which costs no allocation and no UTF-8 validation (literals are immortal);
/// any other text is decoded as usual. One switch on the length picks the candidates.
enum HTTPCommonText {
    /// The literal spelled as `bytes`, if `bytes` is a common field name.
    static func name(_ bytes: HTTPBytes) -> String? {
        switch bytes.count {
        case 4: return match(bytes, "Host") ?? match(bytes, "host")
        case 6: return match(bytes, "Accept") ?? match(bytes, "Origin") ?? match(bytes, "Cookie")
        case 10: return match(bytes, "User-Agent") ?? match(bytes, "Connection")
        case 12: return match(bytes, "Content-Type") ?? match(bytes, "content-type")
        case 13: return match(bytes, "Authorization")
        case 14: return match(bytes, "Content-Length") ?? match(bytes, "content-length")
        case 15: return match(bytes, "Accept-Encoding") ?? match(bytes, "Accept-Language")
        default: return nil
        }
    }

    /// The literal spelled as `bytes`, if `bytes` is a common field value.
    static func value(_ bytes: HTTPBytes) -> String? {
        switch bytes.count {
        case 3: return match(bytes, "*/*")
        case 5: return match(bytes, "close")
        case 7: return match(bytes, "chunked")
        case 10: return match(bytes, "keep-alive")
        case 16: return match(bytes, "application/json")
        default: return nil
        }
    }

    /// The literal spelled as `bytes`, if `bytes` is a registered method (RFC 9110 §9).
    static func method(_ bytes: HTTPBytes) -> String? {
        switch bytes.count {
        case 3: return match(bytes, "GET") ?? match(bytes, "PUT")
        case 4: return match(bytes, "POST") ?? match(bytes, "HEAD")
        case 5: return match(bytes, "PATCH")
        case 6: return match(bytes, "DELETE")
        case 7: return match(bytes, "OPTIONS")
        default: return nil
        }
    }

    /// `literal` when `bytes` spell it (a literal's bytes are read in place, never copied).
    @inline(__always)
    private static func match(_ bytes: HTTPBytes, _ literal: String) -> String? {
        let equal = literal.utf8.withContiguousStorageIfAvailable { text in
            guard text.count == bytes.count else { return false }
            var index = bytes.startIndex
            for expected in text {
                if bytes.base[index] != expected { return false }
                index += 1
            }
            return true
        }
        return equal == true ? literal : nil
    }
}
