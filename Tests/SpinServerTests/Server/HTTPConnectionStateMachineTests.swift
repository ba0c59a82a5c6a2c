import SpinNet
@testable import SpinServer
import SpinWire
import Testing

private typealias Machine = HTTPConnectionStateMachine<TestInstant>

private func makeMachine(
    head: Duration = .seconds(10), keepAlive: Duration = .seconds(15), bodyRate: Int = 240,
    grace: Duration = .seconds(5), maxRequests: Int = 1000, streamIdle: Duration = .seconds(120),
    parser: HTTPRequestParser.Limits = .default
) -> Machine {
    Machine(limits: HTTPConnectionLimits(
        headTimeout: head, keepAliveTimeout: keepAlive, minimumBodyRate: bodyRate, bodyRateGracePeriod: grace,
        maxRequestsPerConnection: maxRequests, streamIdleTimeout: streamIdle, parser: parser), now: .zero)
}

private func get(_ path: String = "/", _ extra: String = "") -> [UInt8] {
    Array("GET \(path) HTTP/1.1\r\nHost: x\r\n\(extra)\r\n".utf8)
}

private func post(length: Int, _ extra: String = "") -> [UInt8] {
    Array("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\n\(extra)\r\n".utf8)
}

/// The path of a dispatched request, or nil for any other action.
private func dispatched(_ action: Machine.Action) -> String? {
    if case .dispatch(let request) = action { request.target.path } else { nil }
}

@Suite struct HTTPConnectionStateMachineTests {
    // MARK: Deadlines

    @Test func newConnection_IsDueItsFirstHeadFromTheAccept_AndClosesSilentlyAtIt() {
        var machine = makeMachine(head: .seconds(10))
        #expect(machine.state == .idle(since: at(0), servedRequests: false))
        #expect(machine.deadline == .at(at(10)))
        #expect(machine.deadlineReached(now: at(10)) == .wait)   // nothing asked, nothing answered
        #expect(machine.state == .closed)
        #expect(machine.deadline == .none)
    }

    @Test func firstHead_IsDueFromTheAccept_NotFromItsFirstByte_AndTimesOutWith408() {
        var machine = makeMachine(head: .seconds(10))
        #expect(machine.received(Array("GET / HT".utf8), now: at(3)) == .wait)
        #expect(machine.state == .readingHead(since: at(0)))
        #expect(machine.deadline == .at(at(10)))
        #expect(machine.received(Array("TP/1.1\r\n".utf8), now: at(9)) == .wait)  // more bytes do not extend it
        #expect(machine.deadline == .at(at(10)))
        #expect(machine.deadlineReached(now: at(10)) == .timeOut(.head))
        #expect(machine.state == .closed)
    }

    @Test func completeRequest_IsDispatched_WithNoDeadlineWhileProcessing() {
        var machine = makeMachine()
        #expect(dispatched(machine.received(get("/a"), now: at(1))) == "/a")
        #expect(machine.state == .processing)
        #expect(machine.deadline == .none)   // a long poll is fine
        #expect(machine.dispatchReturned(now: at(1)) == .wait)
        #expect(machine.keepAlive)
    }

    @Test func answerWritten_StartsTheKeepAliveWait_ThenALaterHeadGetsItsOwnClock() {
        var machine = makeMachine(head: .seconds(10), keepAlive: .seconds(15))
        _ = machine.received(get(), now: at(1))
        _ = machine.dispatchReturned(now: at(1))
        #expect(machine.responseWritten(keepAlive: true, now: at(4)) == .wait)
        #expect(machine.state == .idle(since: at(4), servedRequests: true))
        #expect(machine.deadline == .afterDrain(.seconds(15)))   // counted once the answer has left
        #expect(machine.received(Array("GET".utf8), now: at(20)) == .wait)
        #expect(machine.state == .readingHead(since: at(20)))
        #expect(machine.deadline == .at(at(30)))
        #expect(machine.deadlineReached(now: at(30)) == .timeOut(.head))
    }

    @Test func keepAliveWait_Reached_ClosesSilently() {
        var machine = makeMachine()
        _ = machine.received(get(), now: at(0))
        _ = machine.dispatchReturned(now: at(0))
        _ = machine.responseWritten(keepAlive: true, now: at(0))
        #expect(machine.deadlineReached(now: at(15)) == .wait)
        #expect(machine.state == .closed)
    }

    @Test func body_AtTheMinimumRate_StaysAlive_BelowIt_TimesOutWith408AfterTheGrace() {
        var machine = makeMachine(bodyRate: 100, grace: .seconds(5))
        #expect(machine.received(post(length: 2000), now: at(0)) == .wait)
        #expect(machine.state == .readingBody(since: at(0), received: 0))
        #expect(machine.deadline == .at(at(5)))   // nothing received yet: the grace period is all it gets
        #expect(machine.received([UInt8](repeating: 0x61, count: 800), now: at(4)) == .wait)  // 800 B earn 8 s
        #expect(machine.deadline == .at(at(8)))
        #expect(machine.deadlineReached(now: at(8)) == .timeOut(.body))
        #expect(machine.state == .closed)
    }

    @Test func bodyComplete_StopsTheBodyClock_AndTheRequestIsDispatched() {
        var machine = makeMachine(bodyRate: 100)
        _ = machine.received(post(length: 3), now: at(0))
        #expect(dispatched(machine.received(Array("abc".utf8), now: at(1))) == "/e")
        #expect(machine.deadline == .none)
        #expect(machine.requestCount == 1)
    }

    @Test func zeroBodyRate_DisablesTheBodyDeadline() {
        var machine = makeMachine(bodyRate: 0)
        _ = machine.received(post(length: 10), now: at(0))
        #expect(machine.deadline == .none)
    }

    @Test func expectContinue_AsksForA100_ThenReadsTheBody() {
        var machine = makeMachine()
        #expect(machine.received(post(length: 3, "Expect: 100-continue\r\n"), now: at(0)) == .writeContinue)
        #expect(machine.next(now: at(0)) == .wait)
        #expect(machine.state == .readingBody(since: at(0), received: 0))
        #expect(dispatched(machine.received(Array("abc".utf8), now: at(1))) == "/e")
    }

    // MARK: Keep-alive and pipelining

    @Test func lastAllowedRequest_IsAnsweredWithConnectionClose_ThenCloses() {
        var machine = makeMachine(maxRequests: 2)
        _ = machine.received(get(), now: at(0))
        #expect(machine.keepAlive)
        _ = machine.dispatchReturned(now: at(0))
        _ = machine.responseWritten(keepAlive: true, now: at(0))
        _ = machine.received(get(), now: at(1))
        #expect(!machine.keepAlive)
        #expect(machine.requestCount == 2)
        #expect(machine.responseWritten(keepAlive: machine.keepAlive, now: at(1)) == .closeAfterFlush)
        #expect(machine.state == .closed)
    }

    @Test func requestAskingToClose_IsNotKeptAlive() {
        var machine = makeMachine()
        _ = machine.received(get("/", "Connection: close\r\n"), now: at(0))
        #expect(!machine.keepAlive)
    }

    @Test func pipelinedRequests_AreDispatchedOneAtATime_InOrder() {
        var machine = makeMachine()
        #expect(dispatched(machine.received(get("/1") + get("/2"), now: at(0))) == "/1")
        #expect(machine.dispatchReturned(now: at(0)) == .wait)   // /2 waits for /1's answer
        #expect(machine.received(get("/3"), now: at(1)) == .wait)
        #expect(dispatched(machine.responseWritten(keepAlive: true, now: at(2))) == "/2")
        #expect(machine.dispatchReturned(now: at(2)) == .wait)
        #expect(dispatched(machine.responseWritten(keepAlive: true, now: at(3))) == "/3")
    }

    @Test func answerWrittenInsideTheDispatch_DoesNotRecurse_TheDispatchReturnGoesOn() {
        var machine = makeMachine()
        #expect(dispatched(machine.received(get("/1") + get("/2"), now: at(0))) == "/1")
        #expect(machine.responseWritten(keepAlive: true, now: at(0)) == .wait)   // still inside the dispatch
        #expect(machine.state == .readingHead(since: at(0)))   // the pipelined head is due from now
        #expect(dispatched(machine.dispatchReturned(now: at(0))) == "/2")
    }

    @Test func tooMuchPipelinedInput_PausesReading_UntilTheAnswerIsWritten() {
        var machine = makeMachine(parser: HTTPRequestParser.Limits(maxHeaderBytes: 64, maxBodySize: 16))
        _ = machine.received(get("/1"), now: at(0))
        _ = machine.dispatchReturned(now: at(0))
        #expect(machine.received(get("/2") + get("/3") + get("/4"), now: at(0)) == .pauseReading)
        #expect(machine.received(get("/5"), now: at(0)) == .wait)   // paused once
        #expect(machine.responseWritten(keepAlive: true, now: at(1)) == .resumeReading)
        #expect(dispatched(machine.next(now: at(1))) == "/2")
    }

    // MARK: Half-close, shutdown

    @Test func peerEnd_AfterPipelinedRequests_AnswersEveryOne_ThenCloses() {
        var machine = makeMachine()
        _ = machine.received(get("/1") + get("/2"), now: at(0))
        _ = machine.dispatchReturned(now: at(0))
        #expect(machine.peerClosed(now: at(0)) == .wait)
        #expect(dispatched(machine.responseWritten(keepAlive: true, now: at(1))) == "/2")
        _ = machine.dispatchReturned(now: at(1))
        #expect(machine.responseWritten(keepAlive: true, now: at(2)) == .closeAfterFlush)
        #expect(machine.state == .closed)
    }

    @Test func peerEnd_WhileIdleOrInAHead_Closes() {
        var idle = makeMachine()
        #expect(idle.peerClosed(now: at(0)) == .closeAfterFlush)
        var inHead = makeMachine()
        _ = inHead.received(Array("GET / HTTP/1.1\r\n".utf8), now: at(0))
        #expect(inHead.peerClosed(now: at(0)) == .closeAfterFlush)
    }

    @Test func shutdown_WhileIdle_WaitsAMomentForARequestOnItsWay_ThenCloses() {
        let linger = Machine.shutdownLinger
        var idle = makeMachine()
        #expect(idle.shutdownRequested(now: at(5)) == .wait)
        #expect(idle.deadline == .at(at(5).advanced(by: linger)))
        #expect(idle.deadlineReached(now: at(5).advanced(by: linger)) == .close)
        #expect(idle.state == .closed)
        // A request that arrives meanwhile is answered, with Connection: close.
        var late = makeMachine()
        _ = late.shutdownRequested(now: at(5))
        #expect(dispatched(late.received(get("/1"), now: at(5))) == "/1")
        #expect(!late.keepAlive)
    }

    @Test func shutdown_WhileProcessing_AnswersWithConnectionClose() {
        var machine = makeMachine()
        _ = machine.received(get("/1") + get("/2"), now: at(0))
        _ = machine.dispatchReturned(now: at(0))
        #expect(machine.shutdownRequested(now: at(0)) == .wait)
        #expect(!machine.keepAlive)
        #expect(machine.responseWritten(keepAlive: machine.keepAlive, now: at(1)) == .closeAfterFlush)
    }

    // MARK: Errors, upgrades

    @Test func malformedRequest_IsRejected_AndNothingMoreIsParsed() {
        var machine = makeMachine()
        #expect(machine.received(Array("GET / HTTP/1.1\nHost: x\r\n\r\n".utf8), now: at(0)) == .reject(.bareLineFeed))
        #expect(machine.state == .closed)
        #expect(machine.received(get(), now: at(0)) == .wait)
    }

    @Test func webSocketUpgrade_HandsOverTheBytesPastTheRequest_AndOnlyTheStreamIdleLimitApplies() {
        var machine = makeMachine(streamIdle: .seconds(120))
        let upgrade = get("/s", "Upgrade: websocket\r\nConnection: Upgrade\r\n") + [0x81, 0x80]
        #expect(dispatched(machine.received(upgrade, now: at(0))) == "/s")
        #expect(machine.upgraded(now: at(0)) == [0x81, 0x80])
        #expect(machine.dispatchReturned(now: at(0)) == .wait)
        #expect(machine.state == .streaming)
        #expect(machine.deadline == .inactivity(.seconds(120)))
        #expect(machine.received([1, 2, 3], now: at(1)) == .wait)   // the stream's bytes, not HTTP
        #expect(machine.deadlineReached(now: at(121)) == .endIdleStream)
        #expect(machine.shutdownRequested(now: at(0)) == .shutDownStream)
        #expect(machine.peerClosed(now: at(122)) == .finishStream)
    }

    @Test func shutdownWhileAStreamRequestIsAnswered_ClosesTheStreamOnceItOpens() {
        var machine = makeMachine()
        _ = machine.received(get("/s", "Upgrade: websocket\r\nConnection: Upgrade\r\n"), now: at(0))
        #expect(machine.streamOpened() == .wait)   // not streaming yet
        #expect(machine.shutdownRequested(now: at(0)) == .wait)   // the answer is being made
        _ = machine.upgraded(now: at(1))
        #expect(machine.streamOpened() == .shutDownStream)

        var sse = makeMachine()
        _ = sse.received(get("/s", "Accept: text/event-stream\r\n"), now: at(0))
        #expect(sse.shutdownRequested(now: at(0)) == .wait)
        sse.startedEventStream(now: at(1))
        #expect(sse.streamOpened() == .shutDownStream)

        var calm = makeMachine()
        _ = calm.received(get("/s", "Accept: text/event-stream\r\n"), now: at(0))
        calm.startedEventStream(now: at(1))
        #expect(calm.streamOpened() == .wait)
    }

    @Test func eventStream_Streams_AndARefusedUpgrade_GoesOnParsingHTTP() {
        var sse = makeMachine()
        _ = sse.received(get("/s", "Accept: text/event-stream\r\n"), now: at(0))
        sse.startedEventStream(now: at(0))
        #expect(sse.state == .streaming)

        var refused = makeMachine()
        let upgrade = get("/s", "Upgrade: websocket\r\nConnection: Upgrade\r\n") + get("/next")
        _ = refused.received(upgrade, now: at(0))
        _ = refused.dispatchReturned(now: at(0))
        #expect(dispatched(refused.responseWritten(keepAlive: true, now: at(1))) == "/next")
    }

    @Test func closedConnection_IgnoresEverything() {
        var machine = makeMachine()
        machine.closed()
        #expect(machine.received(get(), now: at(0)) == .wait)
        #expect(machine.responseWritten(keepAlive: true, now: at(0)) == .wait)
        #expect(machine.deadlineReached(now: at(0)) == .wait)
        #expect(machine.peerClosed(now: at(0)) == .closeAfterFlush)
    }
}
