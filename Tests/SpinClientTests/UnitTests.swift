import Foundation
@testable import SpinClient
import Testing

/// The client's pure parts: back-off, resume position, message decoding, response heads.
struct ReconnectPolicyTests {
    @Test func delays_DoubleFromTheInitialOne_UpToTheMaximum() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(5), jitter: 0)
        let delays = (0..<9).map { policy.delay(attempt: $0, random: 0) }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800),
                           .milliseconds(1600), .milliseconds(3200), .seconds(5), .seconds(5), .seconds(5)])
        #expect(policy.delay(attempt: 10_000, random: 0) == .seconds(5))
    }

    @Test func jitter_SpreadsAWaitWithinItsBand() {
        let policy = ReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(5), jitter: 0.2)
        #expect(policy.delay(attempt: 0, random: -1) == .milliseconds(800))
        #expect(policy.delay(attempt: 0, random: 1) == .milliseconds(1200))
        #expect(policy.delay(attempt: 5, random: 1) == .seconds(6))
        for _ in 0..<100 {
            let delay = policy.delay(attempt: 0)
            #expect(delay >= .milliseconds(800) && delay <= .milliseconds(1200))
        }
    }
}

struct StreamPositionTests {
    /// Admits each message (snapshot or not, sequence, epoch) in turn: which were handed on.
    func admit(_ position: inout StreamPosition, _ messages: [(snapshot: Bool, sequence: UInt64, epoch: String)]) -> [Bool] {
        messages.map { position.admit(isSnapshot: $0.snapshot, sequence: $0.sequence, epoch: $0.epoch) }
    }

    func query(_ position: StreamPosition) -> [String] {
        position.resumeQuery.map { "\($0.name)=\($0.value)" }
    }

    @Test func aFreshStream_AsksForNoResume_ThenResumesAfterWhatItSaw() {
        var position = StreamPosition()
        #expect(position.resumeQuery.isEmpty)
        #expect(admit(&position, [(true, 4, "e1"), (false, 5, "e1")]) == [true, true])
        #expect(query(position) == ["since=5", "epoch=e1"])
    }

    @Test func aStateAlreadySeenInTheSameEpoch_IsDropped_ASnapshotNever() {
        var position = StreamPosition(since: 7)
        #expect(query(position) == ["since=7"])
        let handedOn = admit(&position, [(false, 7, "e1"), (false, 8, "e1"), (false, 8, "e1"), (true, 2, "e2"), (false, 3, "e2")])
        #expect(handedOn == [false, true, false, true, true])
        #expect(query(position) == ["since=3", "epoch=e2"])
    }

    @Test func anotherEpoch_IsNotADuplicate_EvenAtALowerSequence() {
        var position = StreamPosition()
        #expect(admit(&position, [(false, 9, "e1"), (false, 3, "e2")]) == [true, true])
    }
}

struct StreamMessageTests {
    struct Levels: Decodable, Equatable {
        var left: Int
        var right: Int
    }

    @Test func aStateMessage_CarriesTheStateAndTheEventAsSent() throws {
        let text = #"{"type":"state","sequence":12,"epoch":"ab","event":{"type":"set","left":1,"right":2},"state":{"left":1,"right":2}}"#
        guard case .update(let update) = try StreamMessage<Levels>.decode(Array(text.utf8)) else {
            Issue.record("not an update")
            return
        }
        #expect(update.kind == .state)
        #expect(update.sequence == 12)
        #expect(update.epoch == "ab")
        #expect(update.state == Levels(left: 1, right: 2))
        #expect(update.event.map { String(decoding: $0, as: UTF8.self) } == #"{"type":"set","left":1,"right":2}"#)
    }

    @Test func aSnapshot_HasNoEvent_AndOtherTypesAreSetAside() throws {
        let snapshot = #"{"type":"snapshot","sequence":0,"epoch":"ab","state":{"left":0,"right":0}}"#
        guard case .update(let update) = try StreamMessage<Levels>.decode(Array(snapshot.utf8)) else {
            Issue.record("not an update")
            return
        }
        #expect(update.kind == .snapshot)
        #expect(update.event == nil)
        let ack = #"{"type":"ack","id":"c1","sequence":3}"#
        guard case .other(let type) = try StreamMessage<Levels>.decode(Array(ack.utf8)) else {
            Issue.record("an ack was taken for a state")
            return
        }
        #expect(type == "ack")
    }

    @Test func aStateOfAnotherShape_OrNotJSON_IsUndecodable() {
        let wrong = #"{"type":"state","sequence":1,"epoch":"ab","event":{},"state":{"value":3}}"#
        #expect(throws: SpinClientError.self) { try StreamMessage<Levels>.decode(Array(wrong.utf8)) }
        #expect(throws: SpinClientError.self) { try StreamMessage<Levels>.decode(Array("{\"type\":".utf8)) }
    }
}

struct StreamReplyTests {
    @Test func anEventMessage_CarriesTheIdAndTheEventAsEncoded() throws {
        let text = try StreamReply.eventMessage(id: "c7", event: ["amount": 2])
        #expect(text == #"{"type":"event","id":"c7","event":{"amount":2}}"#)
    }

    @Test func onlyTheReplyToTheId_IsTaken_AckOrError() {
        let ack = Array(#"{"type":"ack","id":"c1","sequence":4}"#.utf8)
        let error = Array(#"{"type":"error","id":"c2","error":{"code":"invalid_event","message":"amount: missing"}}"#.utf8)
        let state = Array(#"{"type":"state","sequence":4,"epoch":"e","event":{},"state":{}}"#.utf8)
        #expect(StreamReply(to: "c1", in: ack) == .ack(sequence: 4))
        #expect(StreamReply(to: "c2", in: ack) == nil)
        #expect(StreamReply(to: "c2", in: error) == .refused(code: "invalid_event", message: "amount: missing"))
        #expect(StreamReply(to: "c1", in: state) == nil)
    }
}

struct ResponseHeadTests {
    @Test func aHead_IsParsedOnceComplete_WithItsLength() throws {
        let text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept:  abc= \r\n\r\n\u{81}"
        let bytes = Array(text.utf8)
        #expect(try ResponseHead.parse(Array(bytes.prefix(40))) == nil)
        let (head, length) = try #require(try ResponseHead.parse(bytes))
        #expect(head.status == 101)
        #expect(head.headers["sec-websocket-accept"] == "abc=")
        #expect(length == bytes.count - 2)
    }

    @Test func notAStatusLine_IsRefused() {
        #expect(throws: SpinClientError.self) { try ResponseHead.parse(Array("SSH-2.0-x\r\n\r\n".utf8)) }
    }
}

struct SpinClientErrorTests {
    @Test func anErrorBody_GivesCodeMessageAndRetryAfter() {
        let body = Array(#"{"error":{"code":"inbox_full","message":"too many"}}"#.utf8)
        let error = SpinClientError.from(status: 429, body: body, retryAfter: "2")
        #expect(error == .rejected(status: 429, code: "inbox_full", message: "too many", retryAfter: 2))
        #expect(error.isRetryable)
        #expect(!SpinClientError.from(status: 404, body: body, retryAfter: nil).isRetryable)
        #expect(SpinClientError.from(status: 502, body: Array("<html>".utf8), retryAfter: nil)
                == .unexpectedResponse(status: 502, detail: "<html>"))
    }

    @Test func pathSegments_ArePercentEncoded_AndTheQueryAppended() {
        let client = SpinClient(baseURL: URL(string: "http://127.0.0.1:8080/base")!)
        let url = client.makeURL(path: ["v1", "spins", "a b", "stream"], query: [URLQueryItem(name: "since", value: "3")])
        #expect(url.absoluteString == "http://127.0.0.1:8080/base/v1/spins/a%20b/stream?since=3")
    }
}

struct AcceptedTests {
    @Test func anIgnoredCount_IsRead_AndIsZeroWhenTheServerSendsNone() throws {
        let decoder = JSONDecoder()
        #expect(try decoder.decode(Accepted.self, from: Data(#"{"accepted":3,"ignored":1,"sequence":9}"#.utf8))
                == Accepted(accepted: 3, ignored: 1, sequence: 9))
        #expect(try decoder.decode(Accepted.self, from: Data(#"{"accepted":2,"sequence":4}"#.utf8))
                == Accepted(accepted: 2, sequence: 4))
    }
}

struct JWTExpiryTests {
    /// A token as an issuer writes it: the client reads `exp` only, and never verifies.
    static func token(_ claims: String) -> String {
        let payload = Data(claims.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return "eyJhbGciOiJIUzI1NiJ9.\(payload).c2ln"
    }

    @Test func theExpiry_IsReadFromTheTokensOwnClaims_ElseNone() {
        #expect(JWTExpiry.seconds(Self.token(#"{"sub":"a?~>","exp":1700000000}"#)) == 1_700_000_000)
        #expect(JWTExpiry.seconds(Self.token(#"{"sub":"a"}"#)) == nil)
        #expect(JWTExpiry.seconds("static-token") == nil)
        #expect(JWTExpiry.seconds("a.!!!.c") == nil)
    }

    @Test func aRefresh_IsDueAMinuteBefore_OrAQuarterOfAShortLifeBefore() {
        #expect(JWTExpiry.refreshTime(expiry: 1000, now: 0) == 940)
        #expect(JWTExpiry.refreshTime(expiry: 100, now: 0) == 75)
        #expect(JWTExpiry.refreshTime(expiry: 100, now: 200) == 100)
    }
}
