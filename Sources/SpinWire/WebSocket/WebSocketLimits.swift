/// Size limits of the WebSocket receive path. Every limit, when exceeded, fails the
/// connection with close code 1009 (RFC 6455 §7.4.1 "message too big").
///
/// The defaults fit the Spin server's traffic: clients send small JSON events and the
/// server streams state; nothing legitimate comes near megabytes. They bound the memory one
/// connection can make the server hold to about `maxFrameSize + maxDecompressedMessageSize`.
package struct WebSocketLimits: Hashable, Sendable {
    /// Largest payload of one frame, checked from the header before the payload is read (a
    /// frame is buffered whole before it is delivered). Default 1 MiB.
    package var maxFrameSize: Int
    /// Largest sum of the wire payloads of one message's frames. Default 4 MiB.
    package var maxMessageSize: Int
    /// Most frames in one message. Bounds per-frame overhead of a message trickled in
    /// one-byte fragments. Default 4096 (a 4 MiB message in 1 KiB fragments).
    package var maxFragmentCount: Int
    /// Largest size of a message after permessage-deflate inflation. Inflation stops as soon
    /// as this is passed, so a small compressed message cannot expand into gigabytes.
    /// Default 4 MiB.
    package var maxDecompressedMessageSize: Int

    package init(
        maxFrameSize: Int = 1 << 20,
        maxMessageSize: Int = 4 << 20,
        maxFragmentCount: Int = 4096,
        maxDecompressedMessageSize: Int = 4 << 20
    ) {
        self.maxFrameSize = maxFrameSize
        self.maxMessageSize = maxMessageSize
        self.maxFragmentCount = maxFragmentCount
        self.maxDecompressedMessageSize = maxDecompressedMessageSize
    }
}
