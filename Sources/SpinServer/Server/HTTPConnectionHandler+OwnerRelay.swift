/// A relayed request's end, as its `OwnerRelay` reports it: the state machine goes on
/// as for a request answered here.
extension HTTPConnectionHandler: OwnerRelayDelegate {
    func relayFailed(_ error: APIError) {
        guard let relayed else { return }
        self.relayed = nil
        respond(.error(error), to: relayed.request, keepAlive: relayed.keepAlive && machine.keepAlive)
    }

    func relayKeepsAlive() -> Bool {
        guard let relayed else { return false }
        return relayed.keepAlive && machine.keepAlive && relayed.request.keepAlive && !context.router.cluster.isLeaving
    }

    func relayWroteHead(status: Int, bytes: Int, mode: OwnerRelay.Mode) -> [UInt8] {
        guard let relayed else { return [] }
        observers.end(relayed.request, status: status, bytes: bytes, remote: connection.remoteAddress)
        switch mode {
        case .framed:
            return []
        case .upgraded:
            let leftover = machine.upgraded(now: .now)
            armDeadline()
            run(machine.streamOpened())
            return leftover
        case .streaming:
            machine.startedEventStream(now: .now)
            armDeadline()
            run(machine.streamOpened())
            return []
        }
    }

    func relayFinished(keepAlive: Bool) {
        relayed = nil
        run(machine.responseWritten(keepAlive: keepAlive, now: .now))
    }

    func relayEnded() {
        relayed = nil
        connection.closeAfterFlush()
    }
}
