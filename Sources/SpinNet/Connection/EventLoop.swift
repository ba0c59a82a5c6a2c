import Dispatch
import Synchronization

/// One serial Dispatch queue that drives many connections, with the read buffers its
/// connections share. Everything a connection owns is touched only on its loop's
/// queue, so a loop is the unit of mutual exclusion: no locks on the I/O path.
///
/// A server makes `ServerConfiguration.eventQueueCount` loops (one per core by
/// default) and assigns accepted connections round-robin.
final class EventLoop: @unchecked Sendable {  // the buffers are used only on `queue`
    private static let key = DispatchSpecificKey<Int>()
    private static let nextID = Atomic<Int>(1)

    let queue: DispatchQueue
    private let id: Int
    /// Ciphertext or plaintext straight from `recv`.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Plaintext out of `SSL_read`.
    let plaintextBuffer: UnsafeMutableRawBufferPointer
    /// Several small queued chunks copied together for one `send`.
    let gatherBuffer: UnsafeMutableRawBufferPointer

    init(label: String, bufferSize: Int) {
        id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: Self.key, value: id)
        readBuffer = .allocate(byteCount: bufferSize, alignment: 16)
        plaintextBuffer = .allocate(byteCount: bufferSize, alignment: 16)
        gatherBuffer = .allocate(byteCount: Self.gatherSize, alignment: 16)
    }

    /// Bytes gathered per `send` at most. 64 KiB: many small writes (a head, then a
    /// body) leave in one syscall and, with TCP_NODELAY, in as few segments as fit.
    static let gatherSize = 64 * 1024

    deinit {
        readBuffer.deallocate()
        plaintextBuffer.deallocate()
        gatherBuffer.deallocate()
    }

    /// True when the caller runs on this loop's queue.
    var inLoop: Bool { DispatchQueue.getSpecific(key: Self.key) == id }

    /// Runs `body` now when already on the queue, else asynchronously on it.
    func execute(_ body: @escaping @Sendable () -> Void) {
        if inLoop { body() } else { queue.async(execute: body) }
    }
}
