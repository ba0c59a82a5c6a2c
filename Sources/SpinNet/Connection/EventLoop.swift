import Dispatch
import Synchronization

/// One serial Dispatch queue that drives many connections, with the read buffers and the
/// one timer its connections share. Everything a connection owns is touched only on its
/// loop's queue, so a loop is the unit of mutual exclusion: no locks on the I/O path.
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

    /// Every connection's next deadline, earliest first; on `queue` only.
    private var deadlines = DeadlineHeap<ContinuousClock.Instant, Connection>()
    /// The loop's one timer, armed for the earliest deadline; made on first use.
    private var timer: DispatchSourceTimer?
    /// What `timer` is armed for.
    private var timerArmedFor: ContinuousClock.Instant?
    /// Reused by every firing.
    private var due: [Connection] = []

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
        timer?.cancel()
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

    // MARK: Timers (on `queue`)

    /// `connection.timerFired()` is called at `deadline` (a few ms late at most),
    /// replacing the deadline it had.
    func scheduleTimer(for connection: Connection, at deadline: ContinuousClock.Instant) {
        deadlines.schedule(connection, at: deadline)
        if let armed = timerArmedFor, armed <= deadline { return }
        arm(at: deadline)
    }

    /// Forgets `connection`'s deadline (it closed). The loop's timer may then fire for
    /// nothing, once.
    func cancelTimer(for connection: Connection) {
        deadlines.remove(connection)
    }

    private func arm(at deadline: ContinuousClock.Instant) {
        timerArmedFor = deadline
        let timer = self.timer ?? makeTimer()
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
        let nanoseconds = max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        timer.schedule(deadline: .now() + .nanoseconds(Int(nanoseconds)), leeway: .milliseconds(5))
    }

    private func makeTimer() -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in self?.timerFired() }
        timer.resume()
        self.timer = timer
        return timer
    }

    private func timerFired() {
        timerArmedFor = nil
        deadlines.popDue(now: .now, into: &due)
        for connection in due { connection.timerFired() }
        due.removeAll(keepingCapacity: true)
        if let earliest = deadlines.earliest {
            if let armed = timerArmedFor, armed <= earliest { return }
            arm(at: earliest)
        }
    }
}
