import Dispatch
import SpinCore

/// One accepted TCP connection (plain or TLS), driven by Dispatch read and write sources
/// and its event loop's timer, on the loop's serial queue. The handle the layer above
/// writes to.
///
/// Thread safety: every method may be called from any thread or queue. `write`,
/// `close`, `closeAfterFlush`, `shutdownWrite`, `pauseReading` and `resumeReading` run
/// at once on the connection's queue and hop to it from elsewhere, so calls from one
/// thread keep their order; calls from different threads are ordered by when they reach
/// the queue. `write`'s result is exact from any thread because the output account is
/// behind a mutex. `setDeadline` must be called on the queue (from a handler callback
/// or `execute`).
///
/// Lifecycle: accepted → `start` (handler made, `didOpen`) → open → closed
/// (`didClose`, descriptor released after every Dispatch source watching it is
/// cancelled, never before: closing an fd a source still watches could hit a reused
/// descriptor).
///
/// `@unchecked Sendable`: all mutable state is confined to `loop.queue`, except
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
    private let fd: Int32
    let limits: ConnectionLimits
    private let tlsContext: TLSContext?
    private let onClosed: @Sendable (Connection) -> Void

    /// Pending output, seen by writers on any thread.
    private struct Account {
        var pending = 0
        var acceptingWrites = true
        /// A write answered `.aboveHighWatermark`; `didBecomeWritable` is owed.
        var owesWritable = false
    }
    private let account = Protected(Account())

    private enum Lifecycle { case new, open, closed }

    // Queue-confined state.
    private var lifecycle = Lifecycle.new
    private var handler: ConnectionHandler?
    private var readSource: DispatchSourceRead?
    /// Made the first time the socket refuses output (most connections never need it:
    /// an idle stream saves the source's few hundred bytes).
    private var writeSource: DispatchSourceWrite?
    /// Closes the descriptor once every source made for it is cancelled.
    private var closer: DescriptorCloser?
    private var readSuspended = false
    private var writeResumed = false
    /// The instant the loop's timer holds for this connection (`EventLoop.scheduleTimer`).
    private var timerArmedFor: ContinuousClock.Instant?
    /// The connection's place in its loop's deadline heap; only the heap writes it.
    var deadlineHeapIndex: Int?
    private var timers: ConnectionDeadlines<ContinuousClock.Instant>
    private var output = OutputQueue()
    private var tls: TLSSession?
    /// TLS records the socket refused, waiting for it. Plaintext is encrypted only
    /// while this and the write BIO hold under 64 KiB, so the watermarks, which count
    /// plaintext, bound ciphertext too (64 KiB plus one chunk).
    private var ciphertext = OutputQueue()
    private var wantsClose = false
    private var wantsWriteShutdown = false
    private var closeReason = CloseReason.closedLocally
    private var writeShut = false
    private var readEnded = false
    private var lingering = false
    /// Close right after the write side is shut, without lingering: set when an idle
    /// connection reaches its deadline and the handler writes no last word, so there is
    /// no response a reset could destroy and its slot is freed at once.
    private var skipLinger = false
    /// A write was queued inside a handler callback (to tell whether `didReachDeadline`
    /// wrote a last word).
    private var wroteInCallback = false
    private var shutdownNotified = false
    private var closeNotifyQueued = false
    /// Handler callbacks in progress on this connection (writes made inside one are
    /// flushed together when it returns).
    private var callbackDepth = 0
    private var flushDeferred = false

    init(
        fd: Int32, remoteAddress: SocketAddress?, id: UInt64, loop: EventLoop,
        limits: ConnectionLimits, tls: TLSContext?,
        onClosed: @escaping @Sendable (Connection) -> Void
    ) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.id = id
        self.loop = loop
        self.limits = limits
        self.tlsContext = tls
        self.isTLS = tls != nil
        self.onClosed = onClosed
        let now = ContinuousClock.now
        self.openedAt = now
        self.timers = ConnectionDeadlines(writeStallTimeout: limits.writeStallTimeout,
                                          lingerTimeout: limits.lingerTimeout, now: now)
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
            self.readSource?.suspend()
        }
    }

    /// Undoes `pauseReading`.
    package func resumeReading() {
        loop.execute { self.resumeReadSource() }
    }

    // MARK: - Deadline

    /// Arms the handler's deadline, replacing the previous one; `.none` disarms it. When
    /// it passes, the handler hears `didReachDeadline` (and may write a last word), then
    /// the connection closes. Call on the connection's queue.
    package func setDeadline(_ deadline: ConnectionDeadline<ContinuousClock.Instant>) {
        dispatchPrecondition(condition: .onQueue(loop.queue))
        guard lifecycle == .open else { return }
        timers.set(deadline, now: .now)
        rearmTimer()
    }

    /// Arms the handler's alarm: at `instant` the handler hears `didReachAlarm` and the
    /// connection goes on (a stream's next ping). Replaces the previous alarm; nil
    /// disarms it. One timer serves the alarm and the deadlines, so a stream needs no
    /// timer of its own. Call on the connection's queue.
    package func setAlarm(at instant: ContinuousClock.Instant?) {
        dispatchPrecondition(condition: .onQueue(loop.queue))
        guard lifecycle == .open else { return }
        timers.setAlarm(instant)
        rearmTimer()
    }

    /// The ALPN protocol agreed in the TLS handshake. Call on the connection's queue.
    package var negotiatedProtocol: String? {
        dispatchPrecondition(condition: .onQueue(loop.queue))
        return tls?.negotiatedProtocol
    }

    /// Runs `body` on the connection's queue, where the handler's callbacks run: the
    /// layer above hops there with results that arrive elsewhere (a Spin applied an
    /// event), so its per-connection state stays confined to one queue. Runs at once
    /// when already on it.
    package func execute(_ body: @escaping @Sendable () -> Void) {
        loop.execute(body)
    }

    /// The connection's serial queue (for timers the layer above schedules on it).
    package var queue: DispatchQueue { loop.queue }

    /// Why the connection closes after `recv`/`send` answered `result` (`.reset` or
    /// `.failed`).
    private static func closeReason(_ result: Syscall.IOResult, call: String) -> CloseReason {
        switch result {
        case .reset(let code): .reset(errno: code)
        case .failed(let code): .ioFailed(.ioFailed(call: call, errno: code))
        case .bytes, .wouldBlock: preconditionFailure("\(call) did not fail")
        }
    }

    // MARK: - Server side

    /// Arms the sources, makes the handler and calls `didOpen`. On the queue.
    func start(handlerFactory: @Sendable (Connection) -> ConnectionHandler) {
        dispatchPrecondition(condition: .onQueue(loop.queue))
        guard lifecycle == .new else { return }
        lifecycle = .open
        if let tlsContext {
            guard let session = TLSSession(context: tlsContext) else {
                handler = handlerFactory(self)
                closeNow(.tlsFailed(.contextFailed(openSSL: TLSContext.drainErrors())))
                return
            }
            tls = session
        }
        let closer = DescriptorCloser(fd: fd)
        self.closer = closer
        let read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: loop.queue)
        closer.watch(read)
        read.setEventHandler { [weak self] in self?.readable() }
        readSource = read
        read.resume()
        rearmTimer()

        handler = handlerFactory(self)
        callHandler { $0.didOpen(self) }
    }

    /// Graceful shutdown, step one: ask the handler to finish.
    func requestShutdown() {
        loop.execute {
            guard self.lifecycle == .open, !self.shutdownNotified else { return }
            self.shutdownNotified = true
            self.callHandler { $0.shutdownRequested(on: self) }
        }
    }

    /// Graceful shutdown, last step, or a test hook.
    func forceClose(_ reason: CloseReason) {
        account.withLock { $0.acceptingWrites = false }
        loop.execute { self.closeNow(reason) }
    }

    // MARK: - Queue-side machinery

    private func enqueue(_ bytes: [UInt8]) {
        guard lifecycle == .open else { return }
        output.append(bytes)
        if callbackDepth > 0 {
            flushDeferred = true  // sent with the callback's other writes when it returns
            wroteInCallback = true
        } else {
            flush(fromWrite: true)
        }
    }

    /// Calls the handler; writes it makes are flushed together when it returns.
    private func callHandler(_ body: (ConnectionHandler) -> Void) {
        guard let handler else { return }
        callbackDepth += 1
        body(handler)
        callbackDepth -= 1
        if callbackDepth == 0, flushDeferred {
            flushDeferred = false
            flush(fromWrite: true)
        }
    }

    /// One `send` from the front of `queue`: a lone chunk directly, several small ones
    /// gathered into the loop's buffer first.
    private func sendFront(of queue: OutputQueue) -> Syscall.IOResult {
        if queue.hasSeveralChunks, let first = queue.first, first.count < EventLoop.gatherSize {
            let count = queue.gather(into: loop.gatherBuffer)
            return Syscall.send(fd: fd, bytes: UnsafeRawBufferPointer(rebasing: loop.gatherBuffer[0..<count]))
        }
        guard let first = queue.first else { return .bytes(0) }
        return first.withUnsafeBytes { Syscall.send(fd: fd, bytes: $0) }
    }

    private func readable() {
        guard lifecycle == .open else { return }
        let buffer = loop.readBuffer
        for _ in 0..<4 {
            let result = Syscall.receive(fd: fd, into: buffer)
            switch result {
            case .bytes(0):
                peerEnded()
                return
            case .bytes(let n):
                process(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                guard lifecycle == .open, !readSuspended, !readEnded, n == buffer.count else { return }
            case .wouldBlock:
                return
            case .reset, .failed:
                closeNow(Self.closeReason(result, call: "recv"))
                return
            }
        }
    }

    private func process(_ bytes: UnsafeRawBufferPointer) {
        if lingering { return }  // closing: the peer's last bytes are read and dropped
        guard let tls else {
            deliver(Array(bytes))
            return
        }
        var plaintext: [UInt8] = []
        let status = tls.receive(bytes, scratch: loop.plaintextBuffer) { plaintext.append(contentsOf: $0) }
        flush(fromWrite: false)  // handshake replies, and output queued before it completed
        if !plaintext.isEmpty {
            guard lifecycle == .open, !lingering else { return }
            deliver(plaintext)
        }
        switch status {
        case .ok:
            break
        case .closeNotify:
            peerEnded()
        case .failed(let error):
            closeNow(.tlsFailed(error))
        }
    }

    private func deliver(_ bytes: [UInt8]) {
        // Activity only pushes a deadline later: the armed timer re-checks when it fires.
        if timers.tracksInput, !bytes.isEmpty { timers.bytesReceived(now: .now) }
        callHandler { $0.didReceive(bytes, on: self) }
    }

    /// FIN or close_notify from the peer.
    private func peerEnded() {
        guard lifecycle == .open, !readEnded else { return }
        readEnded = true
        if !readSuspended {
            readSuspended = true
            readSource?.suspend()
        }
        if lingering {
            closeNow(closeReason)
        } else if writeShut {
            closeNow(wantsClose ? closeReason : .peerClosed)
        } else {
            callHandler { $0.didReceiveEnd(on: self) }
        }
    }

    private func resumeReadSource() {
        guard lifecycle == .open, readSuspended, !readEnded else { return }
        readSuspended = false
        readSource?.resume()
    }

    /// Sends as much as the socket takes. `fromWrite`: called inside `write` (maybe
    /// inside a handler callback), so `didBecomeWritable` is deferred to avoid
    /// re-entering the handler.
    private func flush(fromWrite: Bool) {
        guard lifecycle == .open else { return }
        var consumed = 0
        var progressed = false
        var blocked = false
        send: while true {
            if let tls {
                if ciphertext.count + tls.pendingOutput < EventLoop.gatherSize, tls.handshakeComplete,
                   !writeShut, let chunk = output.first {
                    // Encrypt ahead while little ciphertext waits: small writes become
                    // records sent together; the bound stays one chunk past 64 KiB.
                    if let error = tls.send(chunk) {
                        closeNow(.tlsFailed(error))
                        return
                    }
                    consumed += chunk.count
                    output.consume(chunk.count)
                } else if ciphertext.isEmpty, tls.hasOutput {
                    // Straight from the BIO through the loop's buffer; only what the
                    // socket refuses is copied into the queue.
                    let buffer = loop.gatherBuffer
                    let count = tls.readOutput(into: buffer)
                    let result = Syscall.send(fd: fd, bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                    switch result {
                    case .bytes(let n):
                        progressed = progressed || n > 0
                        if n < count { ciphertext.append(Array(buffer[n..<count])) }
                    case .wouldBlock:
                        ciphertext.append(Array(buffer[0..<count]))
                        blocked = true
                        break send
                    case .reset, .failed:
                        closeNow(Self.closeReason(result, call: "send"))
                        return
                    }
                } else if tls.hasOutput {
                    ciphertext.append(tls.takeOutput())
                } else if !ciphertext.isEmpty {
                    let result = sendFront(of: ciphertext)
                    switch result {
                    case .bytes(let n):
                        progressed = progressed || n > 0
                        ciphertext.consume(n)
                    case .wouldBlock:
                        blocked = true
                        break send
                    case .reset, .failed:
                        closeNow(Self.closeReason(result, call: "send"))
                        return
                    }
                } else {
                    break send
                }
            } else {
                guard !writeShut, !output.isEmpty else { break send }
                let result = sendFront(of: output)
                switch result {
                case .bytes(let n):
                    progressed = progressed || n > 0
                    consumed += n
                    output.consume(n)
                case .wouldBlock:
                    blocked = true
                    break send
                case .reset, .failed:
                    closeNow(Self.closeReason(result, call: "send"))
                    return
                }
            }
        }

        var notify = false
        if consumed > 0 {
            let low = limits.lowWatermark
            notify = account.withLock { account in
                account.pending = max(0, account.pending - consumed)
                if account.owesWritable, account.pending <= low {
                    account.owesWritable = false
                    return true
                }
                return false
            }
        }
        let drained = output.isEmpty && ciphertext.isEmpty
        timers.outputChanged(pendingAfter: !drained, progressed: progressed, now: .now)
        if blocked {
            if !writeResumed {
                writeResumed = true
                makeWriteSourceIfNeeded().resume()
            }
        } else if writeResumed {
            writeResumed = false
            writeSource?.suspend()
        }
        rearmTimer()
        if notify {
            if fromWrite {
                loop.queue.async {
                    guard self.lifecycle == .open else { return }
                    self.callHandler { $0.didBecomeWritable(self) }
                }
            } else {
                callHandler { $0.didBecomeWritable(self) }
            }
        }
        if drained, lifecycle == .open, wantsClose || wantsWriteShutdown {
            advanceClose()
        }
    }

    /// The write source, made (suspended) on first use.
    private func makeWriteSourceIfNeeded() -> DispatchSourceWrite {
        if let writeSource { return writeSource }
        let write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: loop.queue)
        closer?.watch(write)
        write.setEventHandler { [weak self] in self?.flush(fromWrite: false) }
        writeSource = write
        return write
    }

    /// Moves `closeAfterFlush` / `shutdownWrite` forward once output is drained.
    private func advanceClose() {
        guard lifecycle == .open else { return }
        let drained = output.isEmpty && ciphertext.isEmpty
        if !writeShut {
            guard drained else { return }  // flush() calls back when it is
            if let tls, tls.handshakeComplete, !closeNotifyQueued {
                closeNotifyQueued = true
                tls.shutdown()
                if tls.hasOutput {
                    flush(fromWrite: false)  // sends close_notify; re-enters here when done
                    return
                }
            }
            writeShut = true
            Syscall.shutdownWrite(fd: fd)
        }
        if wantsClose, !lingering {
            if readEnded || skipLinger {
                closeNow(closeReason)
                return
            }
            // Lingering close: keep reading (and dropping) until the peer's FIN, so
            // the kernel does not answer its late bytes with a reset that could
            // destroy the response it has not read yet.
            lingering = true
            timers.closingStarted(now: .now)
            rearmTimer()
            resumeReadSource()
        } else if !wantsClose, readEnded {
            closeNow(.peerClosed)
        }
    }

    /// The loop's timer reached the instant this connection asked for (it is out of the
    /// loop's heap now). On the queue.
    func timerFired() {
        timerArmedFor = nil
        guard lifecycle == .open else { return }
        if timers.takeAlarm(now: .now) {
            callHandler { $0.didReachAlarm(on: self) }
            guard lifecycle == .open else { return }
        }
        switch timers.check(now: .now) {
        case nil:
            rearmTimer()
        case let kind?:
            if wantsClose || kind != .deadline {
                closeNow(wantsClose ? closeReason : .timedOut(kind))
                return
            }
            closeReason = .timedOut(kind)
            wroteInCallback = false
            callHandler { $0.didReachDeadline(on: self) }  // may write a last word (408)
            guard lifecycle == .open else { return }
            account.withLock { $0.acceptingWrites = false }
            // That last word gets `lingerTimeout` to leave, then the close is forced. A
            // connection that got no last word and has nothing pending has nothing to
            // protect.
            skipLinger = !wroteInCallback && output.isEmpty && ciphertext.isEmpty
            timers.closingStarted(now: .now)
            rearmTimer()
            if !wantsClose {
                wantsClose = true
                advanceClose()
            }
        }
    }

    /// Asks the loop's timer for the machine's next deadline, only when it is earlier
    /// than the one held (a later one is found when the early one fires and re-checks):
    /// most writes move no deadline earlier and cost no heap operation.
    private func rearmTimer() {
        guard lifecycle == .open, let deadline = timers.nextDeadline else { return }
        if let armed = timerArmedFor, armed <= deadline { return }
        timerArmedFor = deadline
        loop.scheduleTimer(for: self, at: deadline)
    }

    /// The one way a connection ends: sources cancelled (the fd closes after both
    /// cancel handlers ran), buffers freed, `didClose` delivered on a later turn of
    /// the queue so it never re-enters a handler callback.
    private func closeNow(_ reason: CloseReason) {
        guard lifecycle == .open else { return }
        lifecycle = .closed
        account.withLock { account in
            account.acceptingWrites = false
            account.pending = 0
            account.owesWritable = false
        }
        if let read = readSource {
            if readSuspended { read.resume() }
            read.cancel()
        } else {
            Syscall.close(fd: fd)  // never armed (TLS session creation failed)
        }
        if let write = writeSource {
            if !writeResumed { write.resume() }
            write.cancel()
        }
        if timerArmedFor != nil {
            timerArmedFor = nil
            loop.cancelTimer(for: self)
        }
        readSource = nil
        writeSource = nil
        closer = nil
        output.removeAll()
        ciphertext.removeAll()
        tls = nil
        loop.queue.async {
            let handler = self.handler
            self.handler = nil  // breaks the handler ↔ connection cycle
            handler?.didClose(self, reason: reason)
            self.onClosed(self)
        }
    }
}

/// Closes a descriptor once every Dispatch source watching it has been cancelled.
/// Used only on the connection's queue (sources are made and cancel handlers run there).
private final class DescriptorCloser: @unchecked Sendable {  // confined to the connection's queue
    private let fd: Int32
    private var remaining = 0

    init(fd: Int32) {
        self.fd = fd
    }

    /// Counts `source` as watching the descriptor until its cancel handler runs.
    func watch(_ source: some DispatchSourceProtocol) {
        remaining += 1
        source.setCancelHandler { self.sourceCancelled() }
    }

    private func sourceCancelled() {
        remaining -= 1
        if remaining == 0 { Syscall.close(fd: fd) }
    }
}
