
/// Opening, handler calls, deadlines and closing: the connection's life on its loop.
extension Connection {
    // MARK: - Server side

    /// Watches the descriptor, makes the handler and calls `didOpen`. On the loop.
    func start(handlerFactory: @Sendable (Connection) -> ConnectionHandler) {
        loop.preconditionInLoop()
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
        registration = loop.watch(fd: fd, watcher: self)
        updateInterest()
        handler = handlerFactory(self)
        guard lifecycle == .open else { return }  // epoll_ctl failed: didClose follows
        rearmTimer()
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

    // MARK: - Handler calls

    /// Queues `bytes` accepted by `write` (on the loop).
    func enqueue(_ bytes: [UInt8]) {
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
    func callHandler(_ body: (ConnectionHandler) -> Void) {
        guard let handler else { return }
        callbackDepth += 1
        body(handler)
        callbackDepth -= 1
        if callbackDepth == 0, flushDeferred {
            flushDeferred = false
            flush(fromWrite: true)
        }
    }

    // MARK: - Closing

    /// Moves `closeAfterFlush` / `shutdownWrite` forward once output is drained.
    func advanceClose() {
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
            resumeRead()
        } else if !wantsClose, readEnded {
            closeNow(.peerClosed)
        }
    }

    /// The one way a connection ends: the loop stops watching the descriptor, which is
    /// closed at once; buffers are freed; `didClose` is delivered later on the loop, so
    /// it never re-enters a handler callback.
    func closeNow(_ reason: CloseReason) {
        guard lifecycle == .open else { return }
        lifecycle = .closed
        account.withLock { account in
            account.acceptingWrites = false
            account.pending = 0
            account.owesWritable = false
        }
        if let registration {
            loop.unwatch(registration)
            self.registration = nil
        }
        Syscall.close(fd: fd)
        if timerArmedFor != nil {
            timerArmedFor = nil
            loop.cancelTimer(for: self)
        }
        output.removeAll()
        ciphertext.removeAll()
        tls = nil
        loop.enqueue {
            let handler = self.handler
            self.handler = nil  // breaks the handler ↔ connection cycle
            handler?.didClose(self, reason: reason)
            self.onClosed(self)
        }
    }

    // MARK: - Deadlines

    /// The loop reached the instant this connection asked for (it is out of the loop's
    /// heap now). On the loop.
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

    /// Asks the loop for the machine's next deadline, only when it is earlier than the
    /// one held (a later one is found when the early one fires and re-checks): most
    /// writes move no deadline earlier and cost no heap operation.
    func rearmTimer() {
        guard lifecycle == .open, let deadline = timers.nextDeadline else { return }
        if let armed = timerArmedFor, armed <= deadline { return }
        timerArmedFor = deadline
        loop.scheduleTimer(for: self, at: deadline)
    }
}
