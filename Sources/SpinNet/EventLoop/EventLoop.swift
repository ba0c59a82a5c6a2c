#if canImport(Glibc)
import CLinux
import Glibc
import Synchronization
import SpinConcurrency

/// One thread that waits in `epoll_wait` for the sockets of many connections and runs
/// their work itself: a readable socket is read, its requests handled and its answers
/// written on the thread that was woken, with no other thread involved (run to
/// completion). Everything a connection owns is touched only on its loop's thread, so a
/// loop is the unit of mutual exclusion: reading, parsing, handling and the socket writes
/// take no lock. The one lock near the I/O path is `Connection.write`'s: any thread may
/// queue bytes, so it counts them under the connection's `Protected` account (a few
/// integer updates, no syscall) and hands the bytes to the loop to send.
///
/// One turn of the loop: wait (until a socket is ready, a deadline of one of its
/// connections comes, or work is handed to it), handle every ready socket, fire the due
/// deadlines (a turn later when the wait may have left ready sockets unread), run the
/// work handed to it, then run what asked to run at the end of the
/// turn (`atEndOfTurn`: a journal writes once for every request the turn applied). The
/// wait is skipped while work is waiting. Work handed in from another thread wakes a
/// sleeping loop through an eventfd, and only a sleeping one: a busy loop picks it up at
/// the end of its turn. What a loop hands to other loops at the end of its turn (events
/// for a Spin whose home is another loop, acknowledgements for another loop's
/// connections) is gathered and handed over once, when the turn's work is done: one
/// lock and at most one wake-up per other loop and turn, however many requests it was for.
///
/// Loops are shared by every server of the process (`EventLoop.loops(count:)`), like
/// the threads of a pool: they start when first asked for and live as long as the
/// process, so a server that stops leaves no thread to join.
final class EventLoop: @unchecked Sendable, TurnScheduler {  // loop-confined state is touched only on its thread
    private static let pool = Protected<[EventLoop]>([])

    /// The first `count` loops of the process, started on first use.
    static func loops(count: Int) -> [EventLoop] {
        pool.withLock { pool in
            while pool.count < count { pool.append(EventLoop(index: pool.count)) }
            return Array(pool.prefix(count))
        }
    }

    /// Bytes gathered per `send` at most. 64 KiB: many small writes (a head, then a
    /// body) leave in one syscall and, with TCP_NODELAY, in as few segments as fit.
    static let gatherSize = 64 * 1024
    /// Ready descriptors taken per `epoll_wait`.
    private static let eventCapacity = 256

    /// The loop's place in the pool (its thread is `spin-loop-<index>`).
    let index: Int
    private let epollFD: Int32
    /// Written to wake the loop from `epoll_wait` (epoll data 0).
    private let wakeFD: Int32
    /// The loop thread's `pthread_self()`, 0 until it runs.
    private let threadID = Atomic<UInt>(0)
    /// Work handed to the loop, in order; `sleeping` while the loop waits with nothing to do.
    private let inbox = Protected(Inbox())
    private struct Inbox {
        var tasks: [@Sendable () -> Void] = []
        var sleeping = false
    }

    // Confined to the loop's thread.
    private var running: [@Sendable () -> Void] = []
    private var endOfTurn: [() -> Void] = []
    /// Registrations unwatched during this turn: released once no event of this turn's
    /// batch can name them any more.
    private var retired: [LoopRegistration] = []
    /// Every connection's next deadline, earliest first.
    private var deadlines = DeadlineHeap<ContinuousClock.Instant, Connection>()
    /// When this turn's wait returned: when the loop learnt that this turn's sockets are
    /// readable (`Connection.turnStarted`; what a request's `parse` stage counts from).
    /// In `Monotonic` nanoseconds.
    private(set) var turnStarted: UInt64 = 0
    /// The last turn's wait may have left ready sockets unread: its deadlines wait a turn.
    private var timersDeferred = false
    private var due: [Connection] = []
    private var readStorage = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
    private var plaintextStorage = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
    /// Kept-alive outgoing connections between exchanges (`Connection.park`).
    let idleConnections = IdleConnections()
    /// Several small queued chunks copied together for one `send`.
    let gatherBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.gatherSize, alignment: 16)

    private init(index: Int) {
        self.index = index
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        precondition(epollFD >= 0 && wakeFD >= 0, "spin-loop-\(index): epoll_create1/eventfd failed (errno \(errno))")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = 0
        precondition(epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) == 0, "spin-loop-\(index): epoll_ctl failed (errno \(errno))")
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
            loop.run()
            return nil
        }, context)
        precondition(created == 0, "spin-loop-\(index): pthread_create failed (\(created))")
        pthread_detach(thread)
        EndOfTurn.addHome(self)
    }

    /// True when the caller runs on this loop's thread.
    var inLoop: Bool { threadID.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Stops the process when not called on the loop's thread (a bug in the caller).
    func preconditionInLoop(_ function: StaticString = #function) {
        precondition(inLoop, "\(function) must be called on the connection's event loop")
    }

    // MARK: Work

    /// Runs `body` now when already on the loop's thread, else on it soon (in order
    /// with other work handed to it).
    func execute(_ body: @escaping @Sendable () -> Void) {
        if inLoop { body() } else { enqueue(body) }
    }

    /// Runs `body` on the loop's thread after the work handed to it before, never at
    /// once (from the loop's thread too: at the end of this turn), so it never runs
    /// inside the caller.
    /// While the calling thread gathers (`HandOffs`: the end of a loop's turn, a journal's
    /// sync), `body` waits in its batch for this loop until the gathering ends.
    func enqueue(_ body: @escaping @Sendable () -> Void) {
        if let gathering = HandOffs.current { return gathering.add(body, for: self) }
        deliver { $0.append(body) }
    }

    /// Runs `work` on the loop's thread after the work handed to it before (a batch a
    /// gathering thread hands over): one lock, at most one wake-up.
    func enqueue(contentsOf work: [@Sendable () -> Void]) {
        deliver { $0.append(contentsOf: work) }
    }

    /// True while the loop waits in `epoll_wait` with nothing to do (or was woken and
    /// has not run since).
    var isIdle: Bool { inbox.withLock { $0.sleeping } }

    /// Puts work in the inbox (`add`) and wakes the loop if it sleeps: one lock, at most
    /// one eventfd write, for one piece of work or a turn's batch.
    private func deliver(_ add: (inout [@Sendable () -> Void]) -> Void) {
        let wakes = inbox.withLock { inbox -> Bool in
            add(&inbox.tasks)
            guard inbox.sleeping else { return false }
            inbox.sleeping = false
            return true
        }
        if wakes { _ = eventfd_write(wakeFD, 1) }
    }

    /// Runs `body` once at the end of the current turn, after every ready socket was
    /// handled and the work handed in ran (work it adds runs in the same turn). On the
    /// loop's thread; code that does not know the loop finds it as `EndOfTurn.current`.
    func atEndOfTurn(_ body: @escaping () -> Void) {
        endOfTurn.append(body)
    }

    // MARK: Descriptors (on the loop's thread)

    /// Starts watching `fd` for `watcher`, with no interest yet (`setInterest`). The
    /// registration keeps the watcher until `unwatch`.
    func watch(fd: Int32, watcher: any LoopWatcher) -> LoopRegistration {
        LoopRegistration(fd: fd, watcher: watcher)
    }

    /// Watches for readability and/or writability (level-triggered: a readable socket is
    /// reported on every turn until it is read dry or `reading` is false). A descriptor
    /// with neither is taken out of the epoll set, so a hung-up socket nobody reads
    /// cannot wake the loop over and over. Returns the errno of a failed `epoll_ctl`
    /// (the caller closes the descriptor), else nil.
    func setInterest(_ registration: LoopRegistration, reading: Bool, writing: Bool) -> Int32? {
        guard registration.watcher != nil else { return nil }
        registration.reading = reading
        registration.writing = writing
        guard reading || writing else {
            if registration.inEpoll {
                registration.inEpoll = false
                _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, registration.fd, nil)
            }
            return nil
        }
        var event = epoll_event()
        event.events = (reading ? EPOLLIN.rawValue : 0) | (writing ? EPOLLOUT.rawValue : 0)
        event.data.u64 = UInt64(UInt(bitPattern: registration.pointer))
        let operation = registration.inEpoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD
        guard epoll_ctl(epollFD, operation, registration.fd, &event) == 0 else { return errno }
        registration.inEpoll = true
        return nil
    }

    /// Stops watching: no callback reaches the watcher any more, and the descriptor may
    /// be closed at once.
    func unwatch(_ registration: LoopRegistration) {
        guard registration.watcher != nil else { return }
        if registration.inEpoll {
            registration.inEpoll = false
            _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, registration.fd, nil)
        }
        registration.reading = false
        registration.writing = false
        registration.watcher = nil
        retired.append(registration)
    }

    // MARK: Buffers (on the loop's thread)

    /// Scratch space for `recv`, `count` bytes (shared by the loop's connections; grown
    /// when a connection's limits ask for more).
    func readBuffer(count: Int) -> UnsafeMutableRawBufferPointer {
        Self.prefix(count, of: &readStorage)
    }

    /// Scratch space for plaintext out of `SSL_read`, `count` bytes.
    func plaintextBuffer(count: Int) -> UnsafeMutableRawBufferPointer {
        Self.prefix(count, of: &plaintextStorage)
    }

    private static func prefix(_ count: Int, of storage: inout UnsafeMutableRawBufferPointer) -> UnsafeMutableRawBufferPointer {
        if storage.count < count {
            storage.deallocate()
            storage = .allocate(byteCount: count, alignment: 16)
        }
        return UnsafeMutableRawBufferPointer(rebasing: storage[0..<count])
    }

    // MARK: Timers (on the loop's thread)

    /// `connection.timerFired()` is called at `deadline` (within a millisecond),
    /// replacing the deadline it had.
    func scheduleTimer(for connection: Connection, at deadline: ContinuousClock.Instant) {
        deadlines.schedule(connection, at: deadline)
    }

    /// Forgets `connection`'s deadline (it closed).
    func cancelTimer(for connection: Connection) {
        deadlines.remove(connection)
    }

    // MARK: The loop

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        CLinux_setThreadName("spin-loop-\(index)")
        EndOfTurn.install(self)
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Self.eventCapacity)
        while true {
            let count = epoll_wait(epollFD, events, Int32(Self.eventCapacity), waitTimeout())
            turnStarted = Monotonic.nanoseconds
            inbox.withLock { $0.sleeping = false }
            if count > 0 {
                for index in 0..<Int(count) { dispatch(events[index]) }
            }
            if !retired.isEmpty {
                for registration in retired { Unmanaged.passUnretained(registration).release() }
                retired.removeAll(keepingCapacity: true)
            }
            // Deadlines are judged once the sockets have been read. A wait that returned
            // every ready socket read them; one interrupted (EINTR: SIGSTOP then SIGCONT,
            // a paused container or VM) or full may leave bytes unread that arrived in
            // time, so its deadlines wait one turn: the next wait does not sleep (a
            // deadline is due) and hands over what is ready first. A client whose bytes
            // sat in the kernel while this process was stopped is not taken for a slow one.
            if (count >= 0 && count < Int32(Self.eventCapacity)) || timersDeferred {
                timersDeferred = false
                fireTimers()
            } else {
                timersDeferred = true
            }
            runTasks()
            // What the end of the turn hands to loops (this one too) is gathered and
            // handed over once it is done.
            if !endOfTurn.isEmpty { HandOffs.gathering { runEndOfTurn() } }
        }
    }

    /// How long the next `epoll_wait` may sleep: not at all when work waits, else until
    /// the earliest deadline (rounded up to a millisecond, so a deadline is never met by
    /// a wake-up just before it) or for ever. Announces the sleep to `enqueue`.
    private func waitTimeout() -> Int32 {
        var timeout: Int32 = -1
        if let earliest = deadlines.earliest {
            let (seconds, attoseconds) = ContinuousClock.now.duration(to: earliest).components
            if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
            let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            timeout = Int32(clamping: milliseconds)
        }
        let idle = inbox.withLock { inbox -> Bool in
            guard inbox.tasks.isEmpty else { return false }
            inbox.sleeping = true
            return true
        }
        return idle ? timeout : 0
    }

    private func dispatch(_ event: epoll_event) {
        let data = event.data.u64
        guard data != 0, let pointer = UnsafeRawPointer(bitPattern: UInt(data)) else {
            var value: eventfd_t = 0
            _ = eventfd_read(wakeFD, &value)
            return
        }
        let registration = Unmanaged<LoopRegistration>.fromOpaque(pointer).takeUnretainedValue()
        let flags = event.events
        let failed = flags & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
        if registration.reading, failed || flags & EPOLLIN.rawValue != 0 {
            registration.watcher?.loopReadable()
        }
        if registration.writing, failed || flags & EPOLLOUT.rawValue != 0 {
            registration.watcher?.loopWritable()
        }
    }

    private func fireTimers() {
        guard let earliest = deadlines.earliest, earliest <= .now else { return }
        deadlines.popDue(now: .now, into: &due)
        for connection in due { connection.timerFired() }
        due.removeAll(keepingCapacity: true)
    }

    private func runEndOfTurn() {
        while !endOfTurn.isEmpty {
            let hooks = endOfTurn
            endOfTurn.removeAll(keepingCapacity: true)
            for hook in hooks { hook() }
        }
    }

    /// Runs the work handed in before this point; work handed in meanwhile waits for
    /// the next turn (which then does not sleep), so sockets are not starved.
    private func runTasks() {
        inbox.withLock { inbox in
            if !inbox.tasks.isEmpty { swap(&running, &inbox.tasks) }
        }
        guard !running.isEmpty else { return }
        for task in running { task() }
        running.removeAll(keepingCapacity: true)
    }
}

/// What a loop calls when a watched descriptor is ready. On the loop's thread.
protocol LoopWatcher: AnyObject {
    func loopReadable()
    func loopWritable()
}

/// One descriptor a loop watches (`EventLoop.watch`): its interest and its watcher,
/// which it keeps until `unwatch`. Its address is the epoll event's data. Touched only
/// on its loop's thread.
final class LoopRegistration {
    let fd: Int32
    fileprivate var watcher: (any LoopWatcher)?
    fileprivate var reading = false
    fileprivate var writing = false
    fileprivate var inEpoll = false

    /// Holds one reference for the epoll set (from `watch` until a turn after `unwatch`,
    /// `EventLoop.retired`), so an event of the turn's batch never names a freed object.
    fileprivate init(fd: Int32, watcher: any LoopWatcher) {
        self.fd = fd
        self.watcher = watcher
        _ = Unmanaged.passRetained(self)
    }

    fileprivate var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
}
#endif
