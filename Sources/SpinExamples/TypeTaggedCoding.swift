/// Events of the examples are JSON objects `{"type":"name", ...fields}` (DESIGN.md §3).
/// These helpers encode and decode the `type` member; a missing or unknown type is a
/// `DecodingError` whose coding path names `type`, which the server reports as 422.
enum TypeTagKey: String, CodingKey {
    case type
}

extension KeyedDecodingContainer where K == TypeTagKey {
    /// Decodes `type` and checks it is one of `known`.
    func decodeTag(of typeName: String, known: [String]) throws -> String {
        let tag = try decode(String.self, forKey: .type)
        guard known.contains(tag) else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: self,
                debugDescription: "unknown \(typeName) type \"\(tag)\"; expected one of \(known.joined(separator: ", "))")
        }
        return tag
    }
}
