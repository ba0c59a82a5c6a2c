/// Bytes accepted by `Connection.write` and not yet sent (plain) or encrypted (TLS),
/// as a FIFO of chunks with a read offset into the first. Loop-confined.
///
/// One chunk (the usual case: a response, a stream's frames of one turn) is held on its
/// own, so a queue that never holds two needs no array of chunks, and an idle
/// connection's empty queue holds no buffer at all.
struct OutputQueue {
    /// The only chunk, while `chunks` is empty.
    private var lone: [UInt8] = []
    /// Every chunk, from `head` on, once two were queued at once.
    private var chunks: [[UInt8]] = []
    private var head = 0
    /// Bytes of the first chunk already consumed.
    private var offset = 0
    /// Bytes not yet consumed.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        if count == 0 {
            lone = bytes
            offset = 0
        } else if chunks.isEmpty {
            chunks = [lone, bytes]
            lone = []
            head = 0
        } else {
            chunks.append(bytes)
        }
        count += bytes.count
    }

    /// The unconsumed part of the first chunk.
    var first: ArraySlice<UInt8>? {
        guard count > 0 else { return nil }
        return chunks.isEmpty ? lone[offset...] : chunks[head][offset...]
    }

    /// More than one chunk is queued (a gathered send is worth it).
    var hasSeveralChunks: Bool { chunks.count - head > 1 }

    /// Copies up to `buffer.count` bytes from the front, across chunks, into `buffer`;
    /// returns how many. Nothing is consumed.
    func gather(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var copied = 0
        var start = offset
        func copy(_ chunk: [UInt8]) {
            let take = min(chunk.count - start, buffer.count - copied)
            chunk.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: buffer[copied..<(copied + take)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<(start + take)]))
            }
            copied += take
            start = 0
        }
        guard count > 0 else { return 0 }
        if chunks.isEmpty {
            copy(lone)
        } else {
            var index = head
            while index < chunks.count, copied < buffer.count {
                copy(chunks[index])
                index += 1
            }
        }
        return copied
    }

    /// Drops `n` bytes from the front, across chunks (n ≤ count).
    mutating func consume(_ n: Int) {
        let take = min(n, count)
        guard take > 0 else { return }
        guard !chunks.isEmpty else {
            offset += take
            count -= take
            if count == 0 {
                lone = []
                offset = 0
            }
            return
        }
        var left = take
        while left > 0 {
            let step = min(left, chunks[head].count - offset)
            offset += step
            count -= step
            left -= step
            if offset == chunks[head].count {
                chunks[head] = []
                head += 1
                offset = 0
            }
        }
        if head == chunks.count {
            chunks = []
            head = 0
        } else if head >= 64 {
            chunks.removeFirst(head)
            head = 0
        }
    }

    mutating func removeAll() {
        lone = []
        chunks = []
        head = 0
        offset = 0
        count = 0
    }
}
