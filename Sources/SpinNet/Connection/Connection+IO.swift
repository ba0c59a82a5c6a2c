
/// Reading and writing the socket (through TLS when it speaks it), on the loop.
extension Connection: LoopWatcher {
    /// The socket takes output again.
    func loopWritable() {
        flush(fromWrite: false)
    }

    /// The socket is readable (or hung up): reads up to four buffers' worth, so one busy
    /// peer cannot hold the loop from the others for long (level-triggered: the rest is
    /// reported on the next turn).
    func loopReadable() {
        guard lifecycle == .open else { return }
        let buffer = loop.readBuffer(count: limits.readBufferSize)
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
        let status = tls.receive(bytes, scratch: loop.plaintextBuffer(count: limits.readBufferSize)) { plaintext.append(contentsOf: $0) }
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
            updateInterest()
        }
        if lingering {
            closeNow(closeReason)
        } else if writeShut {
            closeNow(wantsClose ? closeReason : .peerClosed)
        } else {
            callHandler { $0.didReceiveEnd(on: self) }
        }
    }

    /// Watches for input again (after `pauseReading`, or to linger).
    func resumeRead() {
        guard lifecycle == .open, readSuspended, !readEnded else { return }
        readSuspended = false
        updateInterest()
    }

    /// Tells the loop what the connection waits for now; a failed `epoll_ctl` closes it.
    func updateInterest() {
        guard lifecycle == .open, let registration else { return }
        if let code = loop.setInterest(registration, reading: !readSuspended, writing: writeResumed) {
            closeNow(.ioFailed(.ioFailed(call: "epoll_ctl", errno: code)))
        }
    }

    /// Sends as much as the socket takes. `fromWrite`: called inside `write` (maybe
    /// inside a handler callback), so `didBecomeWritable` is deferred to avoid
    /// re-entering the handler.
    func flush(fromWrite: Bool) {
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
                    switch sendFront(of: &ciphertext) {
                    case .sent(let n): progressed = progressed || n > 0
                    case .blocked: blocked = true; break send
                    case .failed(let result): return closeNow(Self.closeReason(result, call: "send"))
                    }
                } else {
                    break send
                }
            } else {
                guard !writeShut, !output.isEmpty else { break send }
                switch sendFront(of: &output) {
                case .sent(let n):
                    progressed = progressed || n > 0
                    consumed += n
                case .blocked: blocked = true; break send
                case .failed(let result): return closeNow(Self.closeReason(result, call: "send"))
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
        if blocked != writeResumed {
            writeResumed = blocked
            updateInterest()
            guard lifecycle == .open else { return }
        }
        rearmTimer()
        if notify {
            if fromWrite {
                loop.enqueue {
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

    /// What one `sendFront` did.
    private enum SendStep { case sent(Int), blocked, failed(Syscall.IOResult) }

    /// One `send` from the front of `queue`, consuming what the socket took: a lone
    /// chunk directly, several small ones gathered into the loop's buffer first. (A
    /// failure is the caller's to close on: `queue` is borrowed here.)
    private func sendFront(of queue: inout OutputQueue) -> SendStep {
        let result: Syscall.IOResult
        if queue.hasSeveralChunks, let first = queue.first, first.count < EventLoop.gatherSize {
            let count = queue.gather(into: loop.gatherBuffer)
            result = Syscall.send(fd: fd, bytes: UnsafeRawBufferPointer(rebasing: loop.gatherBuffer[0..<count]))
        } else if let first = queue.first {
            result = first.withUnsafeBytes { Syscall.send(fd: fd, bytes: $0) }
        } else {
            return .sent(0)
        }
        switch result {
        case .bytes(let n):
            queue.consume(n)
            return .sent(n)
        case .wouldBlock:
            return .blocked
        case .reset, .failed:
            return .failed(result)
        }
    }
}
