import SpinConcurrency

/// One accepted TCP connection (plain or TLS), watched by its event loop (`EventLoop`:
/// readable, writable, its deadlines) and driven on the loop's thread. The handle the
/// layer above writes to. This file holds its state and the calls the layer above
/// makes; `Connection+IO` reads and writes the socket, `Connection+Lifecycle` opens,
/// times out and closes it.
///
/// Thread safety: every method may be called from any thread. `write`, `close`,
/// `closeAfterFlush`, `shutdownWrite`, `pauseReading` and `resumeReading` run at once
/// on the loop's thread and are handed to it from elsewhere, so calls from one thread
/// keep their order; calls from different threads are ordered by when they reach the
/// loop. `write`'s result is exact from any thread because the output account is
/// behind a mutex. `setDeadline` must be called on the loop (from a handler callback
/// or `execute`).
///
/// Lifecycle: accepted → `start` (handler made, `didOpen`) → open → closed
/// (`didClose`; the loop stops watching the descriptor before it is closed, so no
/// event can reach a reused descriptor's new owner).
///
/// `@unchecked Sendable`: all mutable state is confined to the loop's thread, except
/// `account`, which is `Protected`.
package final class Connection: @unchecked Sendable, DeadlineHeapMember {
    /// The peer, as the kernel reported it at accept.
    package let remoteAddress: SocketAddress?
    /// True when the connection speaks TLS.
    package let isTLS: Bool
    /// A process-unique number, for logs.
    package let id: UInt64
    /// When the connection was accepted (before any TLS handshake): a handler's first
    /// deadline counts from here.
    package let openedAt: ContinuousClock.Instant

    let loop: EventLoop
    let fd: Int32
    /// The limits, shared by every connection of a server (one reference per
    /// connection instead of a copy: idle connections are many).
    let sharedLimits: SharedConnectionLimits
    var limits: ConnectionLimits { sharedLimits.value }
    let tlsContext: TLSContext?
    let onClosed: @Sendable (Connection) -> Void

    /// Pending output, seen by writers on any thread.
    struct Account {
        var pending = 0
        var acceptingWrites = true
        /// A write answered `.aboveHighWatermark`; `didBecomeWritable` is owed.
        var owesWritable = false
    }
    let account = Protected(Account())

    enum Lifecycle { case new, open, closed }

    // Confined to the loop's thread.
    var lifecycle = Lifecycle.new
    var handler: ConnectionHandler?
    /// The loop's watch on the descriptor (nil before `start` and after the close).
    var registration: LoopRegistration?
    /// Not watching for input (paused, or the peer ended).
    var readSuspended = false
    /// Watching for the socket to take output again (it refused some).
    var writeResumed = false
    /// The instant the loop holds for this connection (`EventLoop.scheduleTimer`).
    var timerArmedFor: ContinuousClock.Instant?
    /// The connection's place in its loop's deadline heap; only the heap writes it.
    var deadlineHeapIndex: Int?
    var timers: ConnectionDeadlines<ContinuousClock.Instant>
    var output = OutputQueue()
    var tls: TLSSession?
    /// TLS records the socket refused, waiting for it. Plaintext is encrypted only
    /// while this and the write BIO hold under 64 KiB, so the watermarks, which count
    /// plaintext, bound ciphertext too (64 KiB plus one chunk).
    var ciphertext = OutputQueue()
    var wantsClose = false
    var wantsWriteShutdown = false
    var closeReason = CloseReason.closedLocally
    var writeShut = false
    var readEnded = false
    var lingering = false
    /// Close right after the write side is shut, without lingering: set when an idle
    /// connection reaches its deadline and the handler writes no last word, so there is
    /// no response a reset could destroy and its slot is freed at once.
    var skipLinger = false
    /// A write was queued inside a handler callback (to tell whether `didReachDeadline`
    /// wrote a last word).
    var wroteInCallback = false
    var shutdownNotified = false
    var closeNotifyQueued = false
    /// Handler callbacks in progress on this connection (writes made inside one are
    /// flushed together when it returns).
    var callbackDepth = 0
    var flushDeferred = false

    init(
        fd: Int32, remoteAddress: SocketAddress?, id: UInt64, loop: EventLoop,
        limits: SharedConnectionLimits, tls: TLSContext?,
        onClosed: @escaping @Sendable (Connection) -> Void
    ) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.id = id
        self.loop = loop
        self.sharedLimits = limits
        self.tlsContext = tls
        self.isTLS = tls != nil
        self.onClosed = onClosed
        let now = ContinuousClock.now
        self.openedAt = now
        self.timers = ConnectionDeadlines(writeStallTimeout: limits.value.writeStallTimeout,
                                          lingerTimeout: limits.value.lingerTimeout, now: now)
    }

    // MARK: - Writing

    /// Queues `bytes` for sending, in call order. See `WriteResult`. Beyond
    /// `maxPendingOutput` the connection is closed (`.outputLimitExceeded`) and this
    /// returns `.closed`.
    @discardableResult
    package func write(_ bytes: [UInt8]) -> WriteResult {
        let count = bytes.count
        enum Verdict { case result(WriteResult), overLimit }
        let verdict: Verdict = account.withLock { account in
            guard account.acceptingWrites else { return .result(.closed) }
            account.pending += count
            if account.pending > limits.maxPendingOutput {
                account.acceptingWrites = false
                return .overLimit
            }
            if account.pending > limits.highWatermark {
                account.owesWritable = true
                return .result(.aboveHighWatermark)
            }
            return .result(.accepted)
        }
        switch verdict {
        case .overLimit:
            loop.execute { self.closeNow(.outputLimitExceeded) }
            return .closed
        case .result(.closed):
            return .closed
        case .result(let result):
            if count > 0 {
                loop.execute { self.enqueue(bytes) }
            }
            return result
        }
    }

    /// `write(Array(bytes))`.
    @discardableResult
    package func write(_ bytes: ArraySlice<UInt8>) -> WriteResult {
        write(Array(bytes))
    }

    /// Bytes accepted by `write` and not yet handed to the kernel (TLS: not yet
    /// encrypted). For metrics and tests.
    package var pendingOutputBytes: Int { account.withLock { $0.pending } }

    /// How many more bytes `write` accepts before it answers `.aboveHighWatermark` (0
    /// when it already would): lets a layer that batches writes stop where one write at a
    /// time would have been told to wait.
    package var writeRoom: Int { account.withLock { max(0, limits.highWatermark - $0.pending) } }

    // MARK: - Closing

    /// Closes now: queued output is dropped, `didClose(.closedLocally)` follows.
    package func close() {
        account.withLock { $0.acceptingWrites = false }
        loop.execute { self.closeNow(.closedLocally) }
    }

    /// Sends what is queued, then (TLS: close_notify) FIN, then waits up to
    /// `lingerTimeout` for the peer's FIN while discarding its bytes, then closes.
    /// Later writes answer `.closed`.
    package func closeAfterFlush() {
        account.withLock { $0.acceptingWrites = false }
        loop.execute {
            guard self.lifecycle == .open, !self.wantsClose else { return }
            self.wantsClose = true
            self.advanceClose()
        }
    }

    /// Half-close: sends what is queued, then (TLS: close_notify) FIN; reading goes on
    /// and the connection closes when the peer closes too. Later writes answer `.closed`.
    package func shutdownWrite() {
        account.withLock { $0.acceptingWrites = false }
        loop.execute {
            guard self.lifecycle == .open else { return }
            self.wantsWriteShutdown = true
            self.advanceClose()
        }
    }

    // MARK: - Reading control

    /// Stops reading (the peer's sends then block on TCP flow control) until
    /// `resumeReading`. For a layer above whose consumer is slow.
    package func pauseReading() {
        loop.execute {
            guard self.lifecycle == .open, !self.readSuspended, !self.readEnded, !self.lingering else { return }
            self.readSuspended = true
            self.updateInterest()
        }
    }

    /// Undoes `pauseReading`.
    package func resumeReading() {
        loop.execute { self.resumeRead() }
    }

    // MARK: - Deadline

    /// Arms the handler's deadline, replacing the previous one; `.none` disarms it. When
    /// it passes, the handler hears `didReachDeadline` (and may write a last word), then
    /// the connection closes. Call on the connection's loop.
    package func setDeadline(_ deadline: ConnectionDeadline<ContinuousClock.Instant>) {
        loop.preconditionInLoop()
        guard lifecycle == .open else { return }
        timers.set(deadline, now: .now)
        rearmTimer()
    }

    /// Arms the handler's alarm: at `instant` the handler hears `didReachAlarm` and the
    /// connection goes on (a stream's next ping). Replaces the previous alarm; nil
    /// disarms it. One timer serves the alarm and the deadlines, so a stream needs no
    /// timer of its own. Call on the connection's loop.
    package func setAlarm(at instant: ContinuousClock.Instant?) {
        loop.preconditionInLoop()
        guard lifecycle == .open else { return }
        timers.setAlarm(instant)
        rearmTimer()
    }

    /// The ALPN protocol agreed in the TLS handshake. Call on the connection's loop.
    package var negotiatedProtocol: String? {
        loop.preconditionInLoop()
        return tls?.negotiatedProtocol
    }

    /// When the current turn of the connection's loop began: when the loop learnt that
    /// the bytes its callbacks are handed now were readable. Read on the connection's
    /// loop (the HTTP layer times a request's stages from it), in `Monotonic` nanoseconds.
    package var turnStarted: UInt64 { loop.turnStarted }

    /// Runs `body` on the connection's loop, where the handler's callbacks run: the
    /// layer above hops there with results that arrive elsewhere (a Spin applied an
    /// event), so its per-connection state stays confined to one thread. Runs at once
    /// when already on it.
    package func execute(_ body: @escaping @Sendable () -> Void) {
        loop.execute(body)
    }

    /// Runs `body` on the connection's loop, never at once: after the work handed to
    /// the loop before it (from the loop itself: at the end of this turn). For a caller
    /// that holds a lock, or that must not be re-entered.
    package func executeLater(_ body: @escaping @Sendable () -> Void) {
        loop.enqueue(body)
    }

    /// Hands the connection to `handler` from the next callback on (the layer above
    /// switches protocols: an upgraded connection's stream). `handler` hears no
    /// `didOpen`; it hears `didClose`. Call on the connection's loop.
    package func replaceHandler(_ handler: ConnectionHandler) {
        loop.preconditionInLoop()
        guard lifecycle == .open else { return }
        self.handler = handler
    }

    /// Why the connection closes after `recv`/`send` answered `result` (`.reset` or
    /// `.failed`).
    static func closeReason(_ result: Syscall.IOResult, call: String) -> CloseReason {
        switch result {
        case .reset(let code): .reset(errno: code)
        case .failed(let code): .ioFailed(.ioFailed(call: call, errno: code))
        case .bytes, .wouldBlock: preconditionFailure("\(call) did not fail")
        }
    }
}
