import Foundation

/// TEMPORARY (replaced by the pg-cluster branch's version at merge).
package final class PostgresClusterStore: ClusterStore {
    struct NotBuilt: Error {}
    package init(url: String, connectTimeout: Int = 5) {}
    package func open() throws { throw NotBuilt() }
    package func readCluster() throws -> ClusterRows { throw NotBuilt() }
    package func heartbeat(node: String, advertise: String) throws { throw NotBuilt() }
    package func acquire(spin: String, node: String, epoch: UInt64, seconds: Double) throws -> Date? { throw NotBuilt() }
    package func renew(spin: String, node: String, epoch: UInt64, seconds: Double) throws -> Date? { throw NotBuilt() }
    package func release(spin: String, node: String, epoch: UInt64) throws { throw NotBuilt() }
    package func publish(gear: String, node: String, payload: [UInt8]) throws -> Int64 { throw NotBuilt() }
    package func outbox(after: Int64, limit: Int) throws -> [OutboxEvent] { throw NotBuilt() }
    package func outboxEnd() throws -> Int64 { throw NotBuilt() }
    package func waitForPublish(timeout: Duration) throws -> Bool { throw NotBuilt() }
    package func close() {}
}
