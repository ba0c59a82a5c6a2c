import Testing
@testable import SpinServer

@Suite struct ConnectionLimitReporterTests {
    private func make(_ capture: LogCapture, metrics: Metrics = Metrics()) -> ConnectionLimitReporter {
        ConnectionLimitReporter(metrics: metrics, logger: capture.textLogger(), maxConnections: 3,
                                interval: .seconds(10))
    }

    @Test func everyPause_IsCounted_ButLoggedAtMostOncePerInterval() {
        let capture = LogCapture()
        let metrics = Metrics()
        let reporter = make(capture, metrics: metrics)
        let start = ContinuousClock.now
        reporter.limitReached(open: 3, now: start)
        reporter.limitReached(open: 3, now: start.advanced(by: .seconds(1)))
        reporter.limitReached(open: 3, now: start.advanced(by: .seconds(9)))
        #expect(capture.written.count == 1)
        reporter.limitReached(open: 3, now: start.advanced(by: .seconds(10)))
        #expect(capture.written.count == 2)
        #expect(capture.written[0].contains("connection limit reached: 3 open (limits.maxConnections 3)"))
        #expect(capture.written[0].contains("(1 time since the last message)"))
        #expect(capture.written[1].contains("(3 times since the last message)"))
        #expect(metrics.render(spins: []).contains("\nspin_connections_limited_total 4\n"))
    }

    @Test func metrics_WithoutAnyPause_RenderTheCounterAtZero() {
        let text = Metrics().render(spins: [])
        #expect(text.contains("# TYPE spin_connections_limited_total counter\nspin_connections_limited_total 0\n"))
    }
}
