import Foundation

/// TEMPORARY (replaced by the pg-cluster branch's version at merge).
package final class LeaseFence: JournalFence, @unchecked Sendable {
    private let node: String
    private let lock = NSLock()
    private var epochs: [String: UInt64] = [:]

    package struct FencedOut: Error, CustomStringConvertible {
        package let node: String
        package let spin: String
        package let epoch: UInt64?
        package var description: String { "node \(node) no longer holds the lease of Spin \(spin)" }
    }

    package init(node: String) { self.node = node }

    package func serve(spin: String, epoch: UInt64) { lock.withLock { epochs[spin] = epoch } }
    package func stopServing(spin: String) { lock.withLock { _ = epochs.removeValue(forKey: spin) } }

    package func check(spin: String, connection: PostgresConnection) throws {
        guard let epoch = lock.withLock({ epochs[spin] }) else { throw FencedOut(node: node, spin: spin, epoch: nil) }
        let rows = try connection.query("SELECT 1 FROM spin_leases WHERE spin = $1 AND node = $2 AND epoch = $3 AND expires_at > now() FOR SHARE",
                                        [.text(spin), .text(node), .int64(Int64(epoch))])
        guard rows.count == 1 else { throw FencedOut(node: node, spin: spin, epoch: epoch) }
    }
}
