import Foundation
import Logging
import Testing
@testable import SpinServer

@Suite struct JSONLogHandlerTests {
    @Test func event_IsOneJSONObjectOnOneLine_WithTimeLevelLabelMessage() throws {
        let capture = LogCapture()
        capture.jsonLogger().info("listening on http://127.0.0.1:8080")
        #expect(capture.written == [
            #"{"time":"2023-11-14T22:13:20.123Z","level":"info","label":"spin-server","message":"listening on http://127.0.0.1:8080"}"# + "\n",
        ])
    }

    @Test func metadata_IsFlattenedIntoTheObject() throws {
        let capture = LogCapture()
        var logger = capture.jsonLogger(label: "api")
        logger[metadataKey: "spin"] = "counter"
        logger.warning("slow apply", metadata: [
            "request": ["id": "7", "route": "/v1/spins/{name}"],
            "tags": ["a", "b"],
            "sequence": .stringConvertible(42),
        ])
        let object = try capture.object()
        #expect(object["level"] as? String == "warning")
        #expect(object["label"] as? String == "api")
        #expect(object["spin"] as? String == "counter")
        #expect(object["request.id"] as? String == "7")
        #expect(object["request.route"] as? String == "/v1/spins/{name}")
        #expect(object["tags"] as? [String] == ["a", "b"])
        #expect(object["sequence"] as? Int == 42)
        #expect(object.count == 9)
    }

    @Test func numbersLoggedAsNumbers_AreJSONNumbers_OtherValuesStrings() throws {
        let capture = LogCapture()
        capture.jsonLogger().info("answered", metadata: [
            "status": .stringConvertible(202),
            "sequence": .stringConvertible(UInt64(12)),
            "duration_ms": .stringConvertible(0.125),
            "ratio": .stringConvertible(Double.nan),
            "text": "42",
        ])
        let line = try #require(capture.written.first)
        #expect(line.contains(#""status":202,"#))
        #expect(line.contains(#""duration_ms":0.125,"#))
        let object = try capture.object()
        #expect(object["sequence"] as? Int == 12)
        #expect(object["ratio"] as? String == "nan")   // JSON has no NaN: kept as text
        #expect(object["text"] as? String == "42")     // a string stays a string
    }

    @Test func metadataNamedLikeAField_DoesNotOverwriteIt() throws {
        let capture = LogCapture()
        capture.jsonLogger().info("the real message", metadata: ["message": "impostor", "level": "x"])
        let object = try capture.object()
        #expect(object["message"] as? String == "the real message")
        #expect(object["level"] as? String == "info")
        #expect(object["metadata.message"] as? String == "impostor")
        #expect(object["metadata.level"] as? String == "x")
    }

    @Test func callMetadata_WinsOverLoggerMetadata() throws {
        let capture = LogCapture()
        var logger = capture.jsonLogger()
        logger[metadataKey: "spin"] = "counter"
        logger.info("x", metadata: ["spin": "levels"])
        #expect(try capture.object()["spin"] as? String == "levels")
    }

    @Test func quotesNewlinesAndControlCharacters_AreEscaped_SoTheLineStaysOneValidObject() throws {
        let capture = LogCapture()
        capture.jsonLogger().error("a \"quoted\" \\ path\nsecond line\u{01}\ttab é", metadata: ["key\"x": "v\nw"])
        let line = try #require(capture.written.first)
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(line.hasSuffix("}\n"))
        let object = try capture.object()
        #expect(object["message"] as? String == "a \"quoted\" \\ path\nsecond line\u{01}\ttab é")
        #expect(object["key\"x"] as? String == "v\nw")
    }

    @Test func eventsBelowTheLevel_AreNotWritten() {
        let capture = LogCapture()
        let logger = capture.jsonLogger(level: .warning)
        logger.info("quiet")
        logger.debug("quieter")
        logger.warning("loud")
        #expect(capture.written.count == 1)
        #expect(capture.written.first?.contains("\"loud\"") == true)
    }
}
