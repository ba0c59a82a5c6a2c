/// Bytes accepted by `Connection.write` and not yet sent (plain) or encrypted (TLS),
/// as a FIFO of chunks with a read offset into the first. Queue-confined.
struct OutputQueue {
    private var chunks: [[UInt8]] = []
    private var head = 0
    private var offset = 0
    /// Bytes not yet consumed.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        count += bytes.count
    }

    /// The unconsumed part of the first chunk.
    var first: ArraySlice<UInt8>? {
        head < chunks.count ? chunks[head][offset...] : nil
    }

    /// Drops `n` bytes from the front (n ≤ the first chunk's remaining length).
    mutating func consume(_ n: Int) {
        guard n > 0 else { return }
        offset += n
        count -= n
        if offset == chunks[head].count {
            chunks[head] = []
            head += 1
            offset = 0
            if head == chunks.count {
                chunks.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 {
                chunks.removeFirst(head)
                head = 0
            }
        }
    }

    mutating func removeAll() {
        chunks = []
        head = 0
        offset = 0
        count = 0
    }
}
