import SpinWire

extension OwnerRelay {
    /// What a relay does when the owner's connection ends (closed, reset, timed out)
    /// before the head of its answer arrived.
    enum NoAnswer: Equatable {
        /// Send the request again, on a new connection.
        case retry
        /// 503 `spin_unavailable` with `Retry-After: 1`: nothing was applied.
        case unavailable
        /// 502 `proxy_outcome_unknown`: the owner may have applied it.
        case outcomeUnknown

        /// - Parameters:
        ///   - sent: some of the request was handed to the connection.
        ///   - reused: the connection was kept alive from an earlier exchange, so the
        ///     owner may have been closing it (idle, or stopping) as the request left.
        ///   - retried: this is already the second connection.
        ///   - partial: some of the answer arrived.
        ///   - ownerClosed: the owner ended or reset the connection (not this node's
        ///     response timeout).
        ///
        /// A request never sent is sent once more when its connection was a kept-alive
        /// one (a fresh one may work), else unavailable. A POST that was sent is never
        /// sent again (an event must not be applied twice): its outcome is unknown. A
        /// read (GET, HEAD, OPTIONS: safe, RFC 9110 §9.2.1) sent on a kept-alive
        /// connection the owner closed without a byte of answer is sent once more; any
        /// other request (and a read that timed out) is unavailable, as before.
        static func decide(method: HTTPMethod, sent: Bool, reused: Bool, retried: Bool, partial: Bool,
                           ownerClosed: Bool) -> NoAnswer {
            guard sent else { return reused && !retried ? .retry : .unavailable }
            if method == .post { return .outcomeUnknown }
            let safe = method == .get || method == .head || method == .options
            return safe && reused && ownerClosed && !retried && !partial ? .retry : .unavailable
        }
    }
}
