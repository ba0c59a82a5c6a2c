/// A complete application message (RFC 6455 §6.2), reassembled from its frames and
/// decompressed. Text is guaranteed valid UTF-8.
package enum WebSocketMessage: Hashable, Sendable {
    case text(String)
    case binary([UInt8])
}
