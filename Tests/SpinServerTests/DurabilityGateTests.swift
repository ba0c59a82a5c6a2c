import Dispatch
import Foundation
import SpinCore
import SpinExamples
@testable import SpinServer
import SpinWire
import Testing
@testable import SpinConcurrency

@Suite(.timeLimit(.minutes(1)))
struct DurabilityGateTests {
    @Test func anAcknowledgement_WaitsUntilTheEventIsDurable() async throws {
        let host = try makeExampleHost()
        // A journal's feeds: nothing is durable until the test says so.
        let feeds = SpinFeeds(retain: 10, immediate: false)
        let feed = feeds.feed("levels")
        let observation = host.spin(named: "levels")!.observe { feed.applied($0) }
        let router = APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics(), feeds: feeds)
        _ = await waitForState(router, "levels") { $0["left"] as? Int == $0["right"] as? Int }
        let answered = Protected(false)
        let request = Task { () -> APIResponse in
            let response = await router.post("/v1/spins/levels/events", #"{"type":"set","left":2,"right":2}"#)
            answered.withLock { $0 = true }
            return response
        }
        // Applied (the state shows it) but not acknowledged until durable.
        _ = await waitForState(router, "levels") { $0["left"] as? Int == 2 && $0["right"] as? Int == 2 }
        #expect(feed.pendingCount > 0)
        try await Task.sleep(for: .milliseconds(50))
        #expect(!answered.withLock { $0 })
        feed.durable(through: .max)
        #expect(await request.value.status == 202)
        observation.cancel()
        host.stop()
    }

    @Test func eventsWaitingForTheDisk_AreBounded_By429() async throws {
        let host = try makeExampleHost()
        // A disk that never answers: nothing becomes durable.
        let feeds = SpinFeeds(retain: 10, immediate: false)
        let feed = feeds.feed("counter")
        let observation = host.spin(named: "counter")!.observe { feed.applied($0) }
        var limits = APIRouter.Limits()
        limits.inbox = 4
        let router = APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics(), limits: limits, feeds: feeds)
        let batch = try host.spin(named: "counter")!.decodeEvents(json: Array(#"[{"type":"increase"},{"type":"increase"}]"#.utf8))
        let refused = Protected<[String]>([])
        for _ in 0..<20 {
            router.acknowledgement.submit(batch, to: host.spin(named: "counter")!) { result in
                if case .failure(let error) = result { refused.withLock { $0.append(error.code) } }
            }
            // Each batch is applied before the next is offered, so only the disk holds them.
            while host.spin(named: "counter")!.pendingEvents > 0 { await Task.yield() }
        }
        // Four inboxes of client events, plus the ten the counter's feedback adds itself.
        #expect(feed.pendingCount <= 16 + 10)
        #expect(refused.withLock { $0 }.contains("inbox_full"))
        feed.durable(through: .max)
        observation.cancel()
        host.stop()
    }

    @Test func aStorageFailure_Answers503_AndReadyzTurns503() async throws {
        let host = try makeExampleHost()
        let feeds = SpinFeeds(retain: 10, immediate: false)
        let router = APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics(), feeds: feeds)
        feeds.feed("counter").fail(.storageFailed(spin: "counter", "No space left on device"), rolledBack: true)
        let refused = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#)
        #expect(refused.status == 503)
        #expect(refused.headers["Retry-After"] == "1")
        #expect(refused.errorCode == "storage_unavailable")
        let ready = await router.respond("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.errorCode == "storage_unavailable")
        feeds.feed("counter").recovered()
        #expect(await router.respond("GET", "/readyz").status == 200)
        host.stop()
    }

    @Test func aSpinStillHeldForItsStorage_Answers503ToRetry_NotTheRunawayGuards409() async throws {
        // The journal clears the feed's failure a moment before the host lets the Spin go
        // on: a request in between is told to retry, as during the failure.
        let host = try makeExampleHost()
        let router = makeRouter(host)
        let counter = try #require(host.spin(named: "counter"))
        let held = Protected(false)
        counter.hold(rollback: {
            let (sequence, state) = counter.snapshot()
            return (sequence, state, 0)
        }, then: { held.withLock { $0 = true } })
        while !held.withLock({ $0 }) { await Task.yield() }
        #expect(counter.isHeldForStorage)
        let refused = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#)
        #expect(refused.status == 503)
        #expect(refused.errorCode == "storage_unavailable")
        #expect(refused.headers["Retry-After"] == "1")
        counter.release()
        #expect(!counter.isHeldForStorage)
        #expect(await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#).status == 202)
        // Suspended by anyone else, it is the client's to resume.
        counter.suspend(reason: "a test")
        #expect(!counter.isHeldForStorage)
        let suspended = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#)
        #expect(suspended.status == 409)
        #expect(suspended.errorCode == "spin_suspended")
        host.stop()
    }
}

@Suite struct MetricsEscapeTests {
    @Test func labelValues_EscapeBackslashQuoteAndNewline() {
        let name = #"a\b"c"# + "\nd"
        let text = Metrics().render(spins: [Metrics.SpinReading(name: name, sequence: 3, pending: 0, suspended: false,
                                                                  durable: 3, storageFailing: false)])
        #expect(text.contains(#"spin_sequence{spin="a\\b\"c\nd"} 3"#))
    }
}
