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

    /// More than one chunk is queued (a gathered send is worth it).
    var hasSeveralChunks: Bool { chunks.count - head > 1 }

    /// Copies up to `buffer.count` bytes from the front, across chunks, into `buffer`;
    /// returns how many. Nothing is consumed.
    func gather(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var copied = 0
        var index = head
        var start = offset
        while index < chunks.count, copied < buffer.count {
            let take = min(chunks[index].count - start, buffer.count - copied)
            chunks[index].withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: buffer[copied..<(copied + take)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<(start + take)]))
            }
            copied += take
            index += 1
            start = 0
        }
        return copied
    }

    /// Drops `n` bytes from the front, across chunks (n ≤ count).
    mutating func consume(_ n: Int) {
        var left = min(n, count)
        while left > 0 {
            let take = min(left, chunks[head].count - offset)
            offset += take
            count -= take
            left -= take
            if offset == chunks[head].count {
                chunks[head] = []
                head += 1
                offset = 0
            }
        }
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 {
            chunks.removeFirst(head)
            head = 0
        }
    }

    mutating func removeAll() {
        chunks = []
        head = 0
        offset = 0
        count = 0
    }
}
