import Foundation
import Logging
import Testing
@testable import SpinServer

@Suite struct TextLogHandlerTests {
    @Test func event_IsOneReadableLine() {
        let capture = LogCapture()
        capture.textLogger().info("listening on http://127.0.0.1:8080")
        #expect(capture.written == ["2023-11-14T22:13:20.123Z info spin-server: listening on http://127.0.0.1:8080\n"])
    }

    @Test func metadata_FollowsAsSortedKeyValuePairs_QuotedWhenNeeded() {
        let capture = LogCapture()
        var logger = capture.textLogger(label: "api")
        logger[metadataKey: "spin"] = "counter"
        logger.warning("slow", metadata: ["reason": "disk is slow", "request": ["id": "7"]])
        #expect(capture.written == [
            #"2023-11-14T22:13:20.123Z warning api: slow reason="disk is slow" request.id=7 spin=counter"# + "\n",
        ])
    }

    @Test func newlinesInAMessage_AreEscaped_SoOneEventIsOneLine() {
        let capture = LogCapture()
        capture.textLogger().error("first\nsecond")
        #expect(capture.written == ["2023-11-14T22:13:20.123Z error spin-server: first\\nsecond\n"])
    }

    @Test func eventsBelowTheLevel_AreNotWritten() {
        let capture = LogCapture()
        capture.textLogger(level: .error).warning("quiet")
        #expect(capture.written.isEmpty)
    }
}
