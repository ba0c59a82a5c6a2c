import Testing
@testable import SpinServer

@Suite struct SpinLoggingTests {
    @Test func spinLogging_MakesTheHandlerOfTheConfiguredFormatAndLevel() {
        let capture = LogCapture()
        let json = SpinLogging.handler(label: "a", log: .init(level: "error", format: .json), output: capture.output)
        #expect(json is JSONLogHandler)
        #expect(json.logLevel == .error)
        let text = SpinLogging.handler(label: "a", log: .init(level: "debug", format: .text), output: capture.output)
        #expect(text is TextLogHandler)
        #expect(text.logLevel == .debug)
    }
}
