/// Writing the head of a relayed message as bytes (`ProxiedRequest` to the owner,
/// `OwnerResponseHead.clientHead` back to the client): lines and `name: value` fields,
/// written as given, since their text came from a head this server's parser accepted or
/// from the server itself.
extension Array where Element == UInt8 {
    /// `text` and CRLF (an empty `text` ends the head).
    mutating func appendHeadLine(_ text: String) {
        append(contentsOf: text.utf8)
        append(contentsOf: [13, 10])
    }

    /// `name: value` and CRLF.
    mutating func appendHeadField(_ name: String, _ value: String) {
        append(contentsOf: name.utf8)
        append(contentsOf: [58, 32])
        appendHeadLine(value)
    }
}
