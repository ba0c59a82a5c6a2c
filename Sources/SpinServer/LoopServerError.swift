/// Why the server did not start, or did not stop cleanly. Each case keeps the error that
/// caused it (`underlying`), as it was thrown.
public enum LoopServerError: Error, CustomStringConvertible {
    /// The listening socket could not be opened on `host:port`.
    case cannotListen(host: String, port: Int, underlying: any Error)
    /// The stored Spins could not be read back (their store, journals or snapshots).
    case cannotRecover(underlying: any Error)
    /// A cluster node could not read the Gear outbox of the cluster's store.
    case cannotReadGearOutbox(underlying: any Error)
    /// A cluster node's settings disagree with the cluster's (its `cluster.partitions`
    /// with the count its database records while other nodes run).
    case cannotJoinCluster(underlying: any Error)
    /// At shutdown, the journal could not make every applied event durable.
    case cannotPersist(underlying: any Error)
    case alreadyStarted

    public var description: String {
        switch self {
        case .cannotListen(let host, let port, let underlying): "cannot serve on \(host):\(port): \(underlying)"
        case .cannotRecover(let underlying): "cannot recover the stored Spins: \(underlying)"
        case .cannotReadGearOutbox(let underlying): "cannot recover the stored Spins: cannot read the Gear outbox: \(underlying)"
        case .cannotJoinCluster(let underlying): "cannot join the cluster: \(underlying)"
        case .cannotPersist(let underlying): "could not make every applied event durable: \(underlying)"
        case .alreadyStarted: "the server is already started"
        }
    }
}
