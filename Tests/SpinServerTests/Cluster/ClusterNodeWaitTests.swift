import Dispatch
import SpinCore
import Testing
@testable import SpinServer
@testable import SpinConcurrency

/// `ClusterNode.wait`: a request about a Spin that is between two nodes waits for the
/// move to end (the lease loop publishes a new view), or is refused at its deadline.
@Suite struct ClusterNodeWaitTests {
    /// A node whose routing of every Spin is what `routing` holds now.
    static func node(_ routing: Protected<ClusterRouting>) -> ClusterNode {
        let node = ClusterNode(node: "a", advertise: "http://a:1", moveWait: .seconds(5))
        node.route { _, _ in routing.withLock { $0 } }
        return node
    }

    /// Collects what `resume` was called with, and when.
    final class Outcome: Sendable {
        private let value = Protected<ClusterRouting?>(nil)
        private let done = DispatchSemaphore(value: 0)
        func resume(_ routing: ClusterRouting) {
            value.withLock { precondition($0 == nil, "resumed twice"); $0 = routing }
            done.signal()
        }
        func result(within seconds: Double) -> ClusterRouting? {
            _ = done.wait(timeout: .now() + seconds)
            return value.withLock { $0 }
        }
        var now: ClusterRouting? { value.withLock { $0 } }
    }

    @Test func aWaitingRequest_GoesOn_WhenThePublishedViewEndsTheMove() {
        let routing = Protected(ClusterRouting.pending)
        let node = Self.node(routing)
        let outcome = Outcome()
        node.wait(for: "counter", hops: 0, until: .now.advanced(by: .seconds(30)), resume: outcome.resume)
        #expect(outcome.now == nil)
        #expect(node.waitingCount == 1)
        // A tick that changes nothing leaves it waiting.
        node.publish(.single(node: "a", advertise: "http://a:1", spins: []))
        #expect(outcome.now == nil)
        routing.withLock { $0 = .proxy(node: "b", advertise: "http://b:1") }
        node.publish(.single(node: "a", advertise: "http://a:1", spins: []))
        #expect(outcome.result(within: 5) == .proxy(node: "b", advertise: "http://b:1"))
        #expect(node.waitingCount == 0)
    }

    @Test func aWaitingRequest_IsRefusedAtItsDeadline() {
        let node = Self.node(Protected(.pending))
        let outcome = Outcome()
        node.wait(for: "counter", hops: 0, until: .now.advanced(by: .milliseconds(50)), resume: outcome.resume)
        #expect(outcome.result(within: 10) == .unavailable(retryAfterSeconds: 1))
        #expect(node.waitingCount == 0)
    }

    @Test func pastMaxWaiting_ARequestIsRefusedAtOnce() {
        let node = Self.node(Protected(.pending))
        for _ in 0..<ClusterNode.maxWaiting {
            node.wait(for: "counter", hops: 0, until: .now.advanced(by: .seconds(60))) { _ in }
        }
        let outcome = Outcome()
        node.wait(for: "counter", hops: 0, until: .now.advanced(by: .seconds(60)), resume: outcome.resume)
        #expect(outcome.now == .unavailable(retryAfterSeconds: 1))
        #expect(node.waitingCount == ClusterNode.maxWaiting)
    }

    @Test func standing_DecidesReadiness() {
        let node = ClusterNode(node: "a", advertise: "")
        #expect(node.problem == nil)
        node.stand(.joining)
        #expect(node.problem?.contains("owners") == true)
        node.stand(.member)
        #expect(node.problem == nil && !node.isLeaving)
        node.stand(.leaving)
        node.stand(.member)   // leaving is for good
        #expect(node.isLeaving)
        #expect(node.problem?.contains("leaving") == true)
    }
}
