import Testing
@testable import SpinServer

/// `ClusterRouting.decide`: serve here, proxy to the owner, or 503 while no live node
/// holds the Spin's partition (partition 7 here).
@Suite struct ClusterRoutingTests {
    static let lease = Duration.seconds(9)

    static func decide(_ partition: Int = 7, at seconds: Double, serving: Set<Int> = [],
                       nodes: [View.Node] = [], leases: [View.Lease] = []) -> ClusterRouting {
        ClusterRouting.decide(partition: partition, now: at(seconds), serving: serving, view: View(nodes: nodes, leases: leases),
                              node: "a", leaseDuration: lease)
    }

    static let nodeB = View.Node(name: "b", advertise: "http://b.internal:8080", heartbeatAt: at(10))

    @Test func aSpinServedHere_IsLocal() {
        #expect(Self.decide(at: 10, serving: [7]) == .local)
    }

    @Test func aSpinServedHere_WhoseLeaseRanOutByThisNodesClock_IsPending_NotReadFromMemory() {
        // A node that was paused past its lease wakes: until its lease loop looks again
        // (and stops serving, or renews), nothing is answered from its memory.
        let mine = View.Lease(partition: 7, node: "a", epoch: 2, expiresAt: at(18))
        #expect(Self.decide(at: 12, serving: [7], leases: [mine]) == .local)
        #expect(Self.decide(at: 18, serving: [7], leases: [mine]) == .pending)
        #expect(Self.decide(at: 30, serving: [7], leases: [mine]) == .pending)
        // No row for it in the view (not read yet): served here, as before.
        #expect(Self.decide(at: 20, serving: [7]) == .local)
    }

    @Test func aSpinOwnedByALiveNode_IsProxiedToItsAdvertisedURL() {
        let lease = View.Lease(partition: 7, node: "b", epoch: 3, expiresAt: at(18))
        #expect(Self.decide(at: 12, nodes: [Self.nodeB], leases: [lease])
            == .proxy(node: "b", advertise: "http://b.internal:8080"))
    }

    @Test func aSpinWithoutALease_IsPending_ItsPlacedNodeTakesItAtOnce() {
        #expect(Self.decide(at: 12, nodes: [Self.nodeB]) == .pending)
    }

    @Test func anExpiredOrGivenBackLease_IsPending() {
        let lease = View.Lease(partition: 7, node: "b", epoch: 3, expiresAt: at(11))
        #expect(Self.decide(at: 12, nodes: [Self.nodeB], leases: [lease]) == .pending)
    }

    @Test func aLeaseOfANodeThatLeft_IsPending_ItGivesItBackAsItGoes() {
        let left = View.Node(name: "b", advertise: "http://b.internal:8080", heartbeatAt: nil)
        let lease = View.Lease(partition: 7, node: "b", epoch: 3, expiresAt: at(18))
        #expect(Self.decide(at: 12, nodes: [left], leases: [lease]) == .pending)
    }

    @Test func anOwnerThatStoppedHeartbeating_IsUnavailable_UntilItsLeaseRunsOut() {
        // b's heartbeat at 10 is older than 9 s at 19.5; its lease runs to 21.
        let lease = View.Lease(partition: 7, node: "b", epoch: 3, expiresAt: at(21))
        #expect(Self.decide(at: 19.5, nodes: [Self.nodeB], leases: [lease]) == .unavailable(retryAfterSeconds: 2))
    }

    @Test func aLeaseOfThisNode_NotYetServed_IsPending() {
        // Recovering from the journal, or being handed over from here.
        let lease = View.Lease(partition: 7, node: "a", epoch: 1, expiresAt: at(20))
        #expect(Self.decide(at: 12, leases: [lease]) == .pending)
    }

    @Test func retryAfter_IsWholeSeconds_RoundedUp_AtLeastOne() {
        #expect(ClusterRouting.wholeSeconds(.milliseconds(1)) == 1)
        #expect(ClusterRouting.wholeSeconds(.zero) == 1)
        #expect(ClusterRouting.wholeSeconds(.milliseconds(2500)) == 3)
        #expect(ClusterRouting.wholeSeconds(.seconds(4)) == 4)
    }

    @Test func spinUnavailable_Is503_WithRetryAfter() {
        let error = APIError.spinUnavailable("counter", retryAfter: 3)
        #expect(error.status == 503)
        #expect(error.code == "spin_unavailable")
        #expect(error.headers["Retry-After"] == "3")
    }
}

extension ClusterRoutingTests {
    @Test func aForwardedRequest_IsSentOnOnceMore_ThenServedHereOrWaits() {
        let lease = View.Lease(partition: 7, node: "b", epoch: 3, expiresAt: at(18))
        let view = View(nodes: [Self.nodeB], leases: [lease])
        func decide(serving: Set<Int>, hops: Int) -> ClusterRouting {
            ClusterRouting.decide(partition: 7, now: at(12), serving: serving, view: view, node: "a",
                                  leaseDuration: Self.lease, hops: hops)
        }
        // The node that forwarded it handed the Spin over meanwhile: on to the new owner.
        #expect(decide(serving: [], hops: 1) == .proxy(node: "b", advertise: "http://b.internal:8080"))
        #expect(decide(serving: [], hops: ClusterRouting.maxHops) == .pending)
        #expect(decide(serving: [7], hops: ClusterRouting.maxHops) == .local)
    }
}
